/* pqsimd harness: one executable per (variant, compiler), all parameter sets inside.
 *
 *   harness list
 *   harness calibrate
 *   harness run --scheme S [--ops a,b] --spins S --reps R [--warmup W] [--batch auto|K]
 *               [--target TICKS] [--cpu N]        TSV on stdout, calibration JSON first line
 *               [--counters cycles,instructions,...]  perf_event_open group (perf.h)
 *   harness vectors --scheme S                   hex "d z m" lines on stdin
 *   harness count --scheme S --op OP --calls N   runs OP N times inside pqsimd_measure
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "runner.h"
#include "timer.h"

uint64_t pqsimd_auto_batch(const pqsimd_op *op, uint64_t target, double overhead);
void pqsimd_run_op(FILE *out, const pqsimd_op *op, uint64_t k, int warmup, int spins, int reps);
double pqsimd_call_overhead(double overhead);
void pqsimd_loop_overhead(double *median, uint64_t *minimum);

/* Timer calibration, with the overhead taken through the runner's own sample loop. */
static void calibrate(pqsimd_calibration *cal) {
    pqsimd_calibrate(cal);
    pqsimd_loop_overhead(&cal->overhead, &cal->overhead_min);
}

static int die(const char *msg, const char *arg) {
    fprintf(stderr, "harness: %s%s\n", msg, arg ? arg : "");
    return 2;
}

static pqsimd_scheme *find_scheme(const char *name) {
    for (pqsimd_scheme *s = pqsimd_schemes(); s; s = s->next) {
        if (strcmp(s->name, name) == 0) {
            return s;
        }
    }
    return NULL;
}

static const pqsimd_op *find_op(const pqsimd_scheme *s, const char *name) {
    for (int i = 0; i < s->n_ops; i++) {
        if (strcmp(s->ops[i].name, name) == 0) {
            return &s->ops[i];
        }
    }
    return NULL;
}

static const char *opt(int argc, char **argv, const char *key, const char *dflt) {
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], key) == 0) {
            return argv[i + 1];
        }
    }
    return dflt;
}

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

extern pqsimd_counters *pqsimd_active_counters; /* runner.c */
static pqsimd_counters counters;
static int counters_requested;

static void print_calibration(FILE *out, const pqsimd_calibration *cal, int cpu) {
    double cpt, cpt_best;
    pqsimd_core_per_tsc(&cpt, &cpt_best);
    fprintf(out,
            "{\"overhead\": %.1f, \"overhead_min\": %llu, \"granularity\": %llu, \"tsc_hz\": %.0f, "
            "\"call_overhead\": %.3f, \"cpu\": %d, \"core_per_tsc\": %.4f, \"core_per_tsc_best\": %.4f",
            cal->overhead, (unsigned long long)cal->overhead_min, (unsigned long long)cal->granularity,
            cal->tsc_hz, pqsimd_call_overhead(cal->overhead), cpu, cpt, cpt_best);
    if (counters_requested) {
        fprintf(out, ", \"counters\": ");
        pqsimd_counters_json(out, &counters);
    }
    fprintf(out, "}\n");
}

static int cmd_list(void) {
    for (pqsimd_scheme *s = pqsimd_schemes(); s; s = s->next) {
        for (int i = 0; i < s->n_ops; i++) {
            printf("%s\t%s\t%s\n", s->name, s->impl, s->ops[i].name);
        }
    }
    return 0;
}

static int cmd_run(int argc, char **argv) {
    const char *scheme_name = opt(argc, argv, "--scheme", NULL);
    if (!scheme_name) {
        return die("run needs --scheme", NULL);
    }
    pqsimd_scheme *s = find_scheme(scheme_name);
    if (!s) {
        return die("unknown scheme ", scheme_name);
    }
    int spins = atoi(opt(argc, argv, "--spins", "200"));
    int reps = atoi(opt(argc, argv, "--reps", "20"));
    int warmup = atoi(opt(argc, argv, "--warmup", "5"));
    const char *batch = opt(argc, argv, "--batch", "auto");
    uint64_t target = strtoull(opt(argc, argv, "--target", "1000"), NULL, 10);
    int cpu = atoi(opt(argc, argv, "--cpu", "-1"));
    if (spins < 1 || reps < 1 || warmup < 0) {
        return die("--spins and --reps must be >= 1, --warmup >= 0", NULL);
    }
    if (cpu >= 0 && pin(cpu) != 0) {
        return die("cannot pin to CPU ", opt(argc, argv, "--cpu", ""));
    }

    /* Resolve the op list first, so a typo fails before anything is timed. */
    const pqsimd_op *ops[256];
    int n = 0;
    const char *list = opt(argc, argv, "--ops", NULL);
    if (list) {
        char *copy = strdup(list);
        for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
            const pqsimd_op *op = find_op(s, tok);
            if (!op) {
                return die("unknown op ", tok);
            }
            if (n < 256) {
                ops[n++] = op;
            }
        }
        free(copy);
    } else {
        for (int i = 0; i < s->n_ops && n < 256; i++) {
            ops[n++] = &s->ops[i];
        }
    }

    const char *counter_list = opt(argc, argv, "--counters", NULL);
    if (counter_list) {
        /* Unavailable counters are recorded in the calibration JSON, and timing goes on. */
        counters_requested = 1;
        if (pqsimd_counters_open(&counters, counter_list) == -1) {
            return die("--counters: unknown event in ", counter_list);
        }
        if (counters.n > 0) {
            pqsimd_counters_calibrate(&counters);
            pqsimd_active_counters = &counters;
        }
    }

    pqsimd_calibration cal;
    calibrate(&cal);
    print_calibration(stdout, &cal, cpu);
    for (int i = 0; i < n; i++) {
        if (ops[i]->setup) {
            ops[i]->setup();
        }
        uint64_t k = strcmp(batch, "auto") == 0 ? pqsimd_auto_batch(ops[i], target, cal.overhead)
                                                 : strtoull(batch, NULL, 10);
        if (k < 1) {
            return die("--batch must be auto or a positive integer, got ", batch);
        }
        pqsimd_run_op(stdout, ops[i], k, warmup, spins, reps);
        fflush(stdout);
    }
    return 0;
}

static int cmd_vectors(int argc, char **argv) {
    const char *scheme_name = opt(argc, argv, "--scheme", NULL);
    pqsimd_scheme *s = scheme_name ? find_scheme(scheme_name) : NULL;
    if (!s) {
        return die("vectors needs a known --scheme", NULL);
    }
    return s->vectors(stdin, stdout);
}

static int cmd_count(int argc, char **argv) {
    pqsimd_scheme *s = find_scheme(opt(argc, argv, "--scheme", ""));
    if (!s) {
        return die("count needs a known --scheme", NULL);
    }
    const pqsimd_op *op = find_op(s, opt(argc, argv, "--op", ""));
    if (!op) {
        return die("count needs a known --op", NULL);
    }
    uint64_t calls = strtoull(opt(argc, argv, "--calls", "10"), NULL, 10);
    if (op->setup) {
        op->setup();
    }
    op->call(); /* warm: first-call effects (lazy binding) stay outside the counted region */
    pqsimd_measure(op, calls);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        return die("usage: harness list|calibrate|run|vectors|count ...", NULL);
    }
    if (strcmp(argv[1], "list") == 0) {
        return cmd_list();
    }
    if (strcmp(argv[1], "calibrate") == 0) {
        pqsimd_calibration cal;
        calibrate(&cal);
        print_calibration(stdout, &cal, -1);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0) {
        return cmd_run(argc, argv);
    }
    if (strcmp(argv[1], "vectors") == 0) {
        return cmd_vectors(argc, argv);
    }
    if (strcmp(argv[1], "count") == 0) {
        return cmd_count(argc, argv);
    }
    return die("unknown command ", argv[1]);
}
