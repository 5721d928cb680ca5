#define _GNU_SOURCE
#include "spec.h"

#include <stdlib.h>
#include <string.h>

static int bad(int line, const char *what, const char *arg) {
    fprintf(stderr, "driver: spec line %d: %s%s\n", line, what, arg ? arg : "");
    return 2;
}

static int positive(const char *s, int minimum, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < minimum || v > 100000000) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

int pqsimd_read_spec(FILE *in, pqsimd_spec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->cpu = -1;
    spec->target = 1000;
    spec->design = PQSIMD_SEPARATE;
    char *line = NULL;
    size_t cap = 0;
    int no = 0;
    while (getline(&line, &cap, in) > 0) {
        no++;
        char *tok[4 + PQSIMD_MAX_VARIANTS];
        int n = 0;
        for (char *t = strtok(line, " \t\r\n"); t && n < 4 + PQSIMD_MAX_VARIANTS; t = strtok(NULL, " \t\r\n")) {
            tok[n++] = t;
        }
        if (n == 0 || tok[0][0] == '#') {
            continue;
        }
        const char *key = tok[0];
        if (strcmp(key, "op") == 0) {
            if (spec->n_ops >= PQSIMD_MAX_OPS) {
                return bad(no, "too many ops", NULL);
            }
            int nowarm = n == 6 + spec->n_variants && strcmp(tok[n - 1], "nowarm") == 0;
            if (n != 5 + spec->n_variants + nowarm) {
                return bad(no, "op needs NAME SPINS REPS WARMUP, one batch per variant (variants first), [nowarm]", NULL);
            }
            pqsimd_spec_op *op = &spec->ops[spec->n_ops++];
            op->nowarm = nowarm;
            op->name = strdup(tok[1]);
            if (positive(tok[2], 1, &op->spins) || positive(tok[3], 1, &op->reps) || positive(tok[4], 0, &op->warmup)) {
                return bad(no, "spins and reps must be >= 1, warmup >= 0: ", tok[1]);
            }
            for (int v = 0; v < spec->n_variants; v++) {
                const char *b = tok[5 + v];
                if (strcmp(b, "auto") == 0) {
                    op->batch[v] = 0;
                } else {
                    char *end;
                    unsigned long long k = strtoull(b, &end, 10);
                    if (*end != '\0' || k < 1 || k > (1u << 24)) {
                        return bad(no, "batch must be auto or 1..2^24, got ", b);
                    }
                    op->batch[v] = k;
                }
            }
            continue;
        }
        if (n != 2) {
            return bad(no, "expected KEY VALUE: ", key);
        }
        const char *val = tok[1];
        if (strcmp(key, "design") == 0) {
            if (strcmp(val, "paired") == 0) {
                spec->design = PQSIMD_PAIRED;
            } else if (strcmp(val, "separate") == 0) {
                spec->design = PQSIMD_SEPARATE;
            } else {
                return bad(no, "design must be paired or separate, got ", val);
            }
        } else if (strcmp(key, "scheme") == 0) {
            spec->scheme = strdup(val);
        } else if (strcmp(key, "variant") == 0) {
            if (spec->n_ops) {
                return bad(no, "variants must come before ops", NULL);
            }
            if (spec->n_variants >= PQSIMD_MAX_VARIANTS) {
                return bad(no, "too many variants", NULL);
            }
            spec->variants[spec->n_variants++] = strdup(val);
        } else if (strcmp(key, "cpu") == 0) {
            spec->cpu = atoi(val);
        } else if (strcmp(key, "seed") == 0) {
            spec->seed = strtoull(val, NULL, 10);
        } else if (strcmp(key, "warmup_ns") == 0) {
            spec->warmup_ns = strtod(val, NULL);
        } else if (strcmp(key, "target") == 0) {
            spec->target = strtoull(val, NULL, 10);
        } else if (strcmp(key, "counters") == 0) {
            spec->counters = strdup(val);
        } else {
            return bad(no, "unknown key ", key);
        }
    }
    free(line);
    if (!spec->scheme || spec->n_variants == 0 || spec->n_ops == 0) {
        return bad(no, "a spec needs a scheme, at least one variant and one op", NULL);
    }
    if (spec->design == PQSIMD_SEPARATE && spec->n_variants != 1) {
        return bad(no, "the separate design times exactly one variant per process", NULL);
    }
    return 0;
}
