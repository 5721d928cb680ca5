/* pqsimd driver: built once with one fixed toolchain; loads variants (shared objects) and times
 * them with identical code, whatever compiler built the variants.
 *
 *   driver list LIB...                      "lib scheme impl kind op..." per scheme
 *   driver calibrate                        calibration JSON
 *   driver run SPEC|-                       calibration JSON line, then TSV samples (runner.h)
 *   driver probe SPEC|-                     per op and variant: "op variant batch median_raw"
 *   driver gate LIB SCHEME                  the kind's gate vectors (gate.h), stdin -> stdout
 *   driver count LIB SCHEME OP CALLS        OP CALLS times inside pqsimd_measure (callgrind)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "loader.h"
#include "perf.h"
#include "runner.h"
#include "spec.h"
#include "timer.h"

static int die(const char *msg, const char *arg) {
    fprintf(stderr, "driver: %s%s\n", msg, arg ? arg : "");
    return 2;
}

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static void print_calibration(FILE *out, const pqsimd_calibration *cal, int cpu, const pqsimd_counters *counters,
                              const pqsimd_spec *spec) {
    double cpt, cpt_best;
    pqsimd_core_per_tsc(&cpt, &cpt_best);
    fprintf(out,
            "{\"overhead\": %.1f, \"overhead_min\": %llu, \"granularity\": %llu, \"tsc_hz\": %.0f, "
            "\"call_overhead\": %.3f, \"cpu\": %d, \"core_per_tsc\": %.4f, \"core_per_tsc_best\": %.4f",
            cal->overhead, (unsigned long long)cal->overhead_min, (unsigned long long)cal->granularity,
            cal->tsc_hz, pqsimd_call_overhead(cal->overhead), cpu, cpt, cpt_best);
    fprintf(out, ", \"timer\": ");
    pqsimd_timer_json(out);
    if (spec) {
        fprintf(out, ", \"design\": \"%s\", \"warmup_ns\": %.0f, \"warmup_ticks\": %.0f, \"seed\": %llu, "
                "\"batch_target\": %llu",
                spec->design == PQSIMD_PAIRED ? "paired" : "separate", spec->warmup_ns,
                spec->warmup_ns * cal->tsc_hz * 1e-9, (unsigned long long)spec->seed,
                (unsigned long long)pqsimd_batch_target(spec->target, cal->granularity));
    }
    if (counters) {
        fprintf(out, ", \"counters\": ");
        pqsimd_counters_json(out, counters);
    }
    fprintf(out, "}\n");
}

static int cmd_list(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        pqsimd_loaded v;
        if (pqsimd_load(&v, argv[i])) {
            return 2;
        }
        for (const pqsimd_scheme *s = v.entry->schemes(); s; s = s->next) {
            printf("%d\t%s\t%s\t%d", i - 2, s->name, s->impl, s->kind);
            for (int k = 0; k < s->n_ops; k++) {
                printf("\t%s", s->ops[k].name);
            }
            putchar('\n');
        }
    }
    return 0;
}

static FILE *open_spec(const char *path) {
    return strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
}

/* Loads the spec's variants and resolves every op in each; a variant without the op skips it. */
static int prepare(const pqsimd_spec *spec, pqsimd_loaded *loaded, pqsimd_job_op *ops) {
    for (int v = 0; v < spec->n_variants; v++) {
        if (pqsimd_load(&loaded[v], spec->variants[v])) {
            return 2;
        }
    }
    for (int i = 0; i < spec->n_ops; i++) {
        pqsimd_job_op *op = &ops[i];
        memset(op, 0, sizeof *op);
        op->name = spec->ops[i].name;
        op->spins = spec->ops[i].spins;
        op->reps = spec->ops[i].reps;
        op->warmup = spec->ops[i].warmup;
        op->nowarm = spec->ops[i].nowarm;
        int found = 0;
        for (int v = 0; v < spec->n_variants; v++) {
            const pqsimd_scheme *s = pqsimd_find_scheme(&loaded[v], spec->scheme);
            if (!s) {
                fprintf(stderr, "driver: variant %s has no scheme %s\n", spec->variants[v], spec->scheme);
                return 2;
            }
            op->ops[v] = pqsimd_find_op(s, op->name);
            op->batch[v] = spec->ops[i].batch[v];
            found += op->ops[v] != NULL;
        }
        if (!found) {
            return die("no variant has op ", op->name);
        }
    }
    return 0;
}

static int cmd_run(int argc, char **argv, int probe) {
    if (argc < 3) {
        return die(probe ? "probe needs a spec file (or -)" : "run needs a spec file (or -)", NULL);
    }
    FILE *in = open_spec(argv[2]);
    if (!in) {
        return die("cannot read spec ", argv[2]);
    }
    static pqsimd_spec spec;
    if (pqsimd_read_spec(in, &spec)) {
        return 2;
    }
    if (spec.cpu >= 0 && pin(spec.cpu) != 0) {
        return die("cannot pin to the spec's CPU", NULL);
    }
    static pqsimd_loaded loaded[PQSIMD_MAX_VARIANTS];
    static pqsimd_job_op ops[PQSIMD_MAX_OPS];
    if (prepare(&spec, loaded, ops)) {
        return 2;
    }
    pqsimd_timer_init(); /* before the counters' calibration reads it */
    static pqsimd_counters counters;
    pqsimd_counters *active = NULL;
    if (spec.counters) {
        /* Unavailable counters are recorded in the calibration JSON, and timing goes on. */
        if (pqsimd_counters_open(&counters, spec.counters) == -1) {
            return die("counters: unknown event in ", spec.counters);
        }
        if (counters.n > 0) {
            pqsimd_counters_calibrate(&counters);
            active = &counters;
        }
    }
    pqsimd_calibration cal;
    pqsimd_calibrate_runner(&cal);
    print_calibration(stdout, &cal, spec.cpu, spec.counters ? &counters : NULL, &spec);
    pqsimd_runner r = {
        .design = spec.design,
        .n_variants = spec.n_variants,
        .order_state = spec.seed,
        .warm_ticks = spec.warmup_ns * cal.tsc_hz * 1e-9,
        .target = pqsimd_batch_target(spec.target, cal.granularity),
        .overhead = cal.overhead,
        .counters = active,
    };
    for (int i = 0; i < spec.n_ops; i++) {
        if (probe) {
            for (int v = 0; v < spec.n_variants; v++) {
                const pqsimd_op *op = ops[i].ops[v];
                if (!op) {
                    continue;
                }
                if (op->setup) {
                    op->setup();
                }
                uint64_t raw = 0;
                uint64_t k = ops[i].batch[v] ? ops[i].batch[v] : pqsimd_auto_batch(op, r.target, r.overhead, &raw);
                if (ops[i].batch[v]) {
                    raw = pqsimd_median_sample(op, k);
                }
                printf("%s\t%d\t%llu\t%llu\n", op->name, v, (unsigned long long)k, (unsigned long long)raw);
            }
        } else {
            pqsimd_run_op(stdout, &r, &ops[i]);
        }
        fflush(stdout);
    }
    return 0;
}

static int cmd_gate(int argc, char **argv) {
    if (argc < 4) {
        return die("usage: gate LIB SCHEME", NULL);
    }
    pqsimd_loaded v;
    if (pqsimd_load(&v, argv[2])) {
        return 2;
    }
    const pqsimd_scheme *s = pqsimd_find_scheme(&v, argv[3]);
    if (!s) {
        return die("unknown scheme ", argv[3]);
    }
    return pqsimd_gate(&v, s, stdin, stdout);
}

static int cmd_count(int argc, char **argv) {
    if (argc < 6) {
        return die("usage: count LIB SCHEME OP CALLS", NULL);
    }
    pqsimd_loaded v;
    if (pqsimd_load(&v, argv[2])) {
        return 2;
    }
    const pqsimd_scheme *s = pqsimd_find_scheme(&v, argv[3]);
    if (!s) {
        return die("unknown scheme ", argv[3]);
    }
    const pqsimd_op *op = pqsimd_find_op(s, argv[4]);
    if (!op) {
        return die("unknown op ", argv[4]);
    }
    uint64_t calls = strtoull(argv[5], NULL, 10);
    if (op->setup) {
        op->setup();
    }
    op->call(); /* warm: first-call effects (lazy binding) stay outside the counted region */
    pqsimd_measure(op, calls);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        return die("usage: driver list|calibrate|run|probe|gate|count ...", NULL);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "list") == 0) {
        return cmd_list(argc, argv);
    }
    if (strcmp(cmd, "calibrate") == 0) {
        pqsimd_calibration cal;
        pqsimd_calibrate_runner(&cal);
        print_calibration(stdout, &cal, -1, NULL, NULL);
        return 0;
    }
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "probe") == 0) {
        return cmd_run(argc, argv, strcmp(cmd, "probe") == 0);
    }
    if (strcmp(cmd, "gate") == 0) {
        return cmd_gate(argc, argv);
    }
    if (strcmp(cmd, "count") == 0) {
        return cmd_count(argc, argv);
    }
    return die("unknown command ", cmd);
}
