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

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* %XX -> the byte, in place; -1 on a malformed escape or a NUL byte */
static int unescape(char *s) {
    char *out = s;
    for (char *in = s; *in; in++) {
        if (*in == '%') {
            int hi = hexval(in[1]), lo = hi < 0 ? -1 : hexval(in[2]);
            if (lo < 0 || (hi == 0 && lo == 0)) {
                return -1;
            }
            *out++ = (char)(hi * 16 + lo);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    return 0;
}

/* Splits a line into words (a growing array: no limit); returns the count, or -1 if out of memory. */
static int split(char *line, char ***words, int *cap) {
    int n = 0;
    for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        if (n == *cap) {
            int grown = *cap ? 2 * *cap : 16;
            char **w = realloc(*words, sizeof **words * (size_t)grown);
            if (!w) {
                return -1;
            }
            *words = w;
            *cap = grown;
        }
        (*words)[n++] = t;
    }
    return n;
}

static int read_op(int no, char **tok, int n, pqsimd_spec *spec) {
    int nv = spec->n_variants;
    int nowarm = n == 6 + nv && strcmp(tok[n - 1], "nowarm") == 0;
    if (n != 5 + nv + nowarm) {
        fprintf(stderr, "driver: spec line %d: op %s has %d words for %d variants; it needs NAME SPINS REPS WARMUP, "
                "one batch per variant (variants first), [nowarm]\n", no, n > 1 ? tok[1] : "?", n, nv);
        return 2;
    }
    pqsimd_spec_op *grown = realloc(spec->ops, sizeof *spec->ops * (size_t)(spec->n_ops + 1));
    if (!grown) {
        return bad(no, "out of memory", NULL);
    }
    spec->ops = grown;
    pqsimd_spec_op *op = &spec->ops[spec->n_ops++];
    memset(op, 0, sizeof *op);
    op->nowarm = nowarm;
    op->name = strdup(tok[1]);
    op->batch = calloc((size_t)nv, sizeof *op->batch);
    if (!op->name || !op->batch || unescape(op->name)) {
        return bad(no, "bad op name ", tok[1]);
    }
    if (positive(tok[2], 1, &op->spins) || positive(tok[3], 1, &op->reps) || positive(tok[4], 0, &op->warmup)) {
        return bad(no, "spins and reps must be >= 1, warmup >= 0: ", tok[1]);
    }
    for (int v = 0; v < nv; v++) {
        const char *b = tok[5 + v];
        if (strcmp(b, "auto") == 0) {
            op->batch[v] = 0;
        } else if (strcmp(b, "-") == 0) {
            op->batch[v] = PQSIMD_NOT_TIMED;
        } else {
            char *end;
            unsigned long long k = strtoull(b, &end, 10);
            if (*end != '\0' || k < 1 || k > (1u << 24)) {
                return bad(no, "batch must be auto, - or 1..2^24, got ", b);
            }
            op->batch[v] = k;
        }
    }
    return 0;
}

/* stack OFFSET... : one per variant (given before), each a multiple of 16 below 1 MiB. */
static int read_stack(int no, char **tok, int n, pqsimd_spec *spec) {
    if (spec->n_variants == 0 || n != 1 + spec->n_variants || spec->stack) {
        return bad(no, "stack needs one offset per variant, after the variant lines, once", NULL);
    }
    spec->stack = calloc((size_t)spec->n_variants, sizeof *spec->stack);
    if (!spec->stack) {
        return bad(no, "out of memory", NULL);
    }
    for (int v = 0; v < spec->n_variants; v++) {
        char *end;
        unsigned long long off = strtoull(tok[1 + v], &end, 10);
        if (*end != '\0' || off % 16 || off >= (1u << 20)) {
            return bad(no, "a stack offset must be a multiple of 16 below 1048576, got ", tok[1 + v]);
        }
        spec->stack[v] = off;
    }
    return 0;
}

/* batch_of V... : per variant (given before), the variant whose auto batch it takes (itself, or an
 * earlier variant that takes its own): an A/A duplicate and every layout copy are sized exactly like
 * their original, so no comparison of the same code measures a batch-size effect. */
static int read_batch_of(int no, char **tok, int n, pqsimd_spec *spec) {
    if (spec->n_variants == 0 || n != 1 + spec->n_variants || spec->batch_of) {
        return bad(no, "batch_of needs one variant index per variant, after the variant lines, once", NULL);
    }
    spec->batch_of = calloc((size_t)spec->n_variants, sizeof *spec->batch_of);
    if (!spec->batch_of) {
        return bad(no, "out of memory", NULL);
    }
    for (int v = 0; v < spec->n_variants; v++) {
        char *end;
        long src = strtol(tok[1 + v], &end, 10);
        if (*end != '\0' || src < 0 || src > v || (src < v && spec->batch_of[src] != src)) {
            return bad(no, "batch_of: each variant names itself or an earlier variant that names itself, got ",
                       tok[1 + v]);
        }
        spec->batch_of[v] = (int)src;
    }
    return 0;
}

int pqsimd_read_spec(FILE *in, pqsimd_spec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->cpu = -1;
    spec->target = 1000;
    spec->design = PQSIMD_SEPARATE;
    spec->layouts = 1;
    char *line = NULL, **tok = NULL;
    size_t cap = 0;
    int tok_cap = 0, no = 0, rc = 0;
    while (!rc && getline(&line, &cap, in) > 0) {
        no++;
        int n = split(line, &tok, &tok_cap);
        if (n < 0) {
            rc = bad(no, "out of memory", NULL);
            break;
        }
        if (n == 0 || tok[0][0] == '#') {
            continue;
        }
        const char *key = tok[0];
        if (strcmp(key, "op") == 0) {
            rc = read_op(no, tok, n, spec);
            continue;
        }
        if (strcmp(key, "stack") == 0) {
            rc = read_stack(no, tok, n, spec);
            continue;
        }
        if (strcmp(key, "batch_of") == 0) {
            rc = read_batch_of(no, tok, n, spec);
            continue;
        }
        if (n != 2) {
            rc = bad(no, "expected KEY VALUE: ", key);
            break;
        }
        char *val = tok[1];
        if (unescape(val)) {
            rc = bad(no, "malformed %-escape in ", key);
        } else if (strcmp(key, "design") == 0) {
            if (strcmp(val, "paired") == 0) {
                spec->design = PQSIMD_PAIRED;
            } else if (strcmp(val, "separate") == 0) {
                spec->design = PQSIMD_SEPARATE;
            } else {
                rc = bad(no, "design must be paired or separate, got ", val);
            }
        } else if (strcmp(key, "scheme") == 0) {
            spec->scheme = strdup(val);
        } else if (strcmp(key, "variant") == 0) {
            char **grown = realloc(spec->variants, sizeof *spec->variants * (size_t)(spec->n_variants + 1));
            if (spec->n_ops || spec->stack) {
                rc = bad(no, "variants must come before ops and stack", NULL);
            } else if (!grown) {
                rc = bad(no, "out of memory", NULL);
            } else {
                spec->variants = grown;
                spec->variants[spec->n_variants++] = strdup(val);
            }
        } else if (strcmp(key, "layouts") == 0) {
            if (positive(val, 1, &spec->layouts) || spec->layouts > 64) {
                rc = bad(no, "layouts must be 1..64, got ", val);
            }
        } else if (strcmp(key, "cpu") == 0) {
            spec->cpu = atoi(val);
        } else if (strcmp(key, "seed") == 0) {
            spec->seed = strtoull(val, NULL, 10);
        } else if (strcmp(key, "warmup_ns") == 0) {
            spec->warmup_ns = strtod(val, NULL);
        } else if (strcmp(key, "target") == 0) {
            spec->target = strtoull(val, NULL, 10);
        } else if (strcmp(key, "timer_quantum") == 0) {
            spec->timer_quantum = strtoull(val, NULL, 10);
        } else if (strcmp(key, "counters") == 0) {
            spec->counters = strdup(val);
        } else {
            rc = bad(no, "unknown key ", key);
        }
    }
    free(line);
    free(tok);
    if (rc) {
        return rc;
    }
    if (!spec->scheme || spec->n_variants == 0 || spec->n_ops == 0) {
        return bad(no, "a spec needs a scheme, at least one variant and one op", NULL);
    }
    if (spec->n_variants % spec->layouts) {
        return bad(no, "the variants must be whole builds: a multiple of layouts", NULL);
    }
    if (spec->design == PQSIMD_SEPARATE && spec->n_variants != spec->layouts) {
        return bad(no, "the separate design times exactly one build (its layouts) per process", NULL);
    }
    return 0;
}
