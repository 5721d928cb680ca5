/* pqsimd driver: built once with one fixed toolchain; loads variants (shared objects) and times
 * them with identical code, whatever compiler built the variants.
 *
 *   driver list LIB...                      "lib scheme impl kind op..." per scheme
 *   driver calibrate [QUANTUM]              calibration JSON (QUANTUM: reads rounded down to multiples of it)
 *   driver step FENCED SPREAD RAW [REPEAT]  the step estimated from recorded readings (files of integers:
 *                                           fenced back-to-back deltas, fenced samples of many lengths,
 *                                           unfenced increments; REPEAT: their repeat share): a replayed host
 *   driver run SPEC|-                       calibration JSON line, then TSV samples (runner.h)
 *   driver probe SPEC|-                     per op and variant: "op variant batch median_raw"
 *   driver gate LIB SCHEME                  the kind's gate vectors (gate.h), stdin -> stdout
 *   driver smoke LIB SCHEME                 every op once: "op ns" per op (the gate's op check)
 *   driver count LIB SCHEME OP CALLS...     per pair, OP CALLS times inside pqsimd_measure (callgrind)
 *   driver where LIB SCHEME                 per op: "op offset" of its function in LIB (a layout's record)
 *   driver stack LIB SCHEME [OP...]         per op: "op bytes_a5 bytes_5a", its peak stack (stack.h)
 *   driver ct LIB SCHEME OP V [SECRET...]   one call with its secrets marked, inputs of variation V (ct.h)
 *   driver ct-time LIB SCHEME OP N SEED [S...] dudect's fixed-vs-random timing of the op (ct.h)
 *   driver sitetrace LIB SCHEME OP V SITE... -- S... what each ct site does, natively (sitetrace.c)
 *   driver buffers LIB SCHEME               the op table's named buffers (ct.h)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "ct.h"
#include "gate.h"
#include "guard.h"
#include "loader.h"
#include "perf.h"
#include "runner.h"
#include "spec.h"
#include "stack.h"
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
            "{\"overhead\": %.1f, \"overhead_min\": %llu, \"tsc_hz\": %.0f, "
            "\"call_overhead\": %.3f, \"cpu\": %d, \"core_per_tsc\": %.4f, \"core_per_tsc_best\": %.4f",
            cal->overhead, (unsigned long long)cal->overhead_min, cal->tsc_hz, pqsimd_call_overhead(cal->overhead), cpu,
            cpt, cpt_best);
    pqsimd_step_json(out, cal);
    fprintf(out, ", \"timer\": ");
    pqsimd_timer_json(out);
    if (spec) {
        fprintf(out, ", \"design\": \"%s\", \"warmup_ns\": %.0f, \"warmup_ticks\": %.0f, \"seed\": %llu, "
                "\"batch_target\": %llu",
                spec->design == PQSIMD_PAIRED ? "paired" : "separate", spec->warmup_ns,
                spec->warmup_ns * cal->tsc_hz * 1e-9, (unsigned long long)spec->seed,
                (unsigned long long)pqsimd_batch_target(spec->target, cal->step));
    }
    if (counters) {
        fprintf(out, ", \"counters\": ");
        pqsimd_counters_json(out, counters);
    }
    fprintf(out, "}\n");
}

/* argv[2] LIB and argv[3] SCHEME of the gate, smoke and count commands: loaded and found, or 2. */
static int open_scheme(int argc, char **argv, int need, const char *usage, pqsimd_loaded *v,
                       const pqsimd_scheme **s) {
    if (argc < need) {
        return die(usage, NULL);
    }
    if (pqsimd_load(v, argv[2])) {
        return 2;
    }
    *s = pqsimd_find_scheme(v, argv[3]);
    if (!*s) {
        return die("unknown scheme ", argv[3]);
    }
    return 0;
}

/* An op table entry must have a plain name and a function: an n_ops larger than the op array
 * reads past its end (garbage, or a crash the guard names as "op (op table)"). */
static int check_table(const char *path, const pqsimd_scheme *s) {
    for (int k = 0; k < s->n_ops; k++) {
        const char *name = s->ops[k].name;
        size_t len = name ? strnlen(name, 65) : 0;
        int plain = len > 0 && len <= 64;
        for (size_t i = 0; plain && i < len; i++) {
            char c = name[i];
            plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    c == '+';
        }
        if (!plain || !s->ops[k].call) {
            fprintf(stderr, "driver: %s: op table of %s: entry %d of n_ops = %d has no %s (is n_ops larger than the op "
                    "array?)\n", path, s->name, k, s->n_ops, plain ? "function" : "plain name");
            return 2;
        }
    }
    return 0;
}

/* A file of whitespace-separated non-negative integers, sorted; NULL (with a line) if unreadable. */
static uint64_t *read_readings(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "driver: cannot read %s\n", path);
        return NULL;
    }
    int cap = 1024;
    uint64_t *a = malloc(sizeof *a * (size_t)cap);
    char word[32];
    int bad_word = 0;
    *n = 0;
    while (a && fscanf(f, "%31s", word) == 1) {
        /* digits only: fscanf's %llu would take "-5" as 2^64 - 5 */
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(word, &end, 10);
        if (word[0] < '0' || word[0] > '9' || *end || errno) {
            bad_word = 1;
            break;
        }
        if (*n == cap) {
            uint64_t *b = realloc(a, sizeof *a * (size_t)(cap *= 2));
            if (!b) {
                free(a);
                a = NULL;
                break;
            }
            a = b;
        }
        a[(*n)++] = v;
    }
    int bad = !a || bad_word || !feof(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "driver: %s: not a list of non-negative integers\n", path);
        free(a);
        return NULL;
    }
    qsort(a, (size_t)*n, sizeof *a, pqsimd_cmp_u64);
    return a;
}

static int cmd_step(int argc, char **argv) {
    if (argc < 5) {
        return die("usage: driver step FENCED SPREAD RAW [REPEAT_SHARE [QUANTUM]]", NULL);
    }
    int n[3];
    uint64_t *r[3] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        r[i] = read_readings(argv[2 + i], &n[i]);
        rc = r[i] == NULL;
    }
    if (!rc) {
        pqsimd_calibration cal;
        memset(&cal, 0, sizeof cal);
        cal.repeat_share = argc > 5 ? strtod(argv[5], NULL) : 0.0;
        pqsimd_timer_quantum = argc > 6 ? strtoull(argv[6], NULL, 10) : 0;
        cal.read_min = n[2] ? r[2][0] : 0;
        pqsimd_step_from(&cal, r[0], n[0], r[1], n[1], r[2], n[2]);
        printf("{\"replayed\": true");
        pqsimd_step_json(stdout, &cal);
        printf("}\n");
    }
    for (int i = 0; i < 3; i++) {
        free(r[i]);
    }
    return rc ? 2 : 0;
}

static int cmd_list(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        pqsimd_loaded v;
        if (pqsimd_load(&v, argv[i])) {
            return 2;
        }
        pqsimd_guard_at(i - 2, argv[i], "(op table)");
        for (const pqsimd_scheme *s = v.entry->schemes(); s; s = s->next) {
            if (check_table(argv[i], s)) {
                return 2;
            }
            printf("%d\t%s\t%s\t%d", i - 2, s->name, s->impl, s->kind);
            for (int k = 0; k < s->n_ops; k++) {
                printf("\t%s", s->ops[k].name);
            }
            putchar('\n');
        }
    }
    return 0;
}

/* Every op of the scheme once (setup, one call), with its wall time: a crash or a hang is named
 * by the guard before any timing job meets it. */
static int cmd_smoke(int argc, char **argv) {
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    if (open_scheme(argc, argv, 4, "usage: smoke LIB SCHEME", &v, &s)) {
        return 2;
    }
    pqsimd_guard_at(0, argv[2], "(op table)");
    if (check_table(argv[2], s)) {
        return 2;
    }
    for (int k = 0; k < s->n_ops; k++) {
        const pqsimd_op *op = &s->ops[k];
        pqsimd_guard_at(0, argv[2], op->name);
        if (op->setup) {
            op->setup();
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        op->call();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%s\t%lld\n", op->name,
               (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (long long)(t1.tv_nsec - t0.tv_nsec));
        fflush(stdout);
    }
    return 0;
}

static FILE *open_spec(const char *path) {
    return strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
}

/* Loads the spec's variants and resolves every op in each. The spec says which variants time
 * an op ("-": not this one); a variant that lacks an op the spec times is an error, so pqsimd and
 * the driver always agree on how many samples a job gives. */
static int prepare(const pqsimd_spec *spec, pqsimd_loaded *loaded, pqsimd_job_op *ops) {
    for (int v = 0; v < spec->n_variants; v++) {
        pqsimd_guard_at(v, spec->variants[v], "(loading)");
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
        op->batch = calloc((size_t)spec->n_variants, sizeof *op->batch);
        op->ops = calloc((size_t)spec->n_variants, sizeof *op->ops);
        if (!op->batch || !op->ops) {
            return die("out of memory", NULL);
        }
        int found = 0;
        for (int v = 0; v < spec->n_variants; v++) {
            const pqsimd_scheme *s = pqsimd_find_scheme(&loaded[v], spec->scheme);
            if (!s) {
                fprintf(stderr, "driver: variant %s has no scheme %s\n", spec->variants[v], spec->scheme);
                return 2;
            }
            if (spec->ops[i].batch[v] == PQSIMD_NOT_TIMED) {
                continue;
            }
            op->ops[v] = pqsimd_find_op(s, op->name);
            if (!op->ops[v]) {
                fprintf(stderr, "driver: variant %s has no op %s, which the spec times (rebuild it, or mark it \"-\")\n",
                        spec->variants[v], op->name);
                return 2;
            }
            op->batch[v] = spec->ops[i].batch[v];
            found++;
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
    pqsimd_loaded *loaded = calloc((size_t)spec.n_variants, sizeof *loaded);
    pqsimd_job_op *ops = calloc((size_t)spec.n_ops, sizeof *ops);
    if (!loaded || !ops) {
        return die("out of memory", NULL);
    }
    if (prepare(&spec, loaded, ops)) {
        return 2;
    }
    pqsimd_timer_quantum = spec.timer_quantum;
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
    void (**null_calls)(void) = calloc((size_t)spec.n_variants, sizeof *null_calls);
    for (int v = 0; v < spec.n_variants && null_calls; v++) {
        null_calls[v] = loaded[v].entry->null_call;
    }
    pqsimd_runner r = {
        .design = spec.design,
        .n_variants = spec.n_variants,
        .layouts = spec.layouts,
        .stack = spec.stack,
        .batch_of = spec.batch_of,
        .paths = (const char *const *)spec.variants,
        .null_calls = (void (*const *)(void))null_calls,
        .order_state = spec.seed,
        .warm_ticks = spec.warmup_ns * cal.tsc_hz * 1e-9,
        .target = pqsimd_batch_target(spec.target, cal.step),
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
                pqsimd_guard_at(v, spec.variants[v], op->name);
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
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    if (open_scheme(argc, argv, 4, "usage: gate LIB SCHEME", &v, &s)) {
        return 2;
    }
    pqsimd_guard_at(0, argv[2], "(gate vectors)");
    return pqsimd_gate(&v, s, stdin, stdout);
}

/* Each (OP, CALLS) pair in order: the op's setup, a warm call, then CALLS calls inside
 * pqsimd_measure. Several pairs share one process, so callgrind's start-up is paid once per build
 * and set, not per op (it dumps after each pqsimd_measure: one region per pair). */
static int cmd_count(int argc, char **argv) {
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    if (open_scheme(argc, argv, 6, "usage: count LIB SCHEME OP CALLS [OP CALLS]...", &v, &s)) {
        return 2;
    }
    if ((argc - 4) % 2 != 0) {
        return die("usage: count LIB SCHEME OP CALLS [OP CALLS]...", NULL);
    }
    Dl_info where;
    if (getenv("PQSIMD_PRINT_BASE") && s->n_ops && dladdr((const void *)(uintptr_t)s->ops[0].call, &where)) {
        /* the library's load address: an emulator's addresses become the library's own (hazard sites) */
        printf("pqsimd-base\t%llx\n", (unsigned long long)(uintptr_t)where.dli_fbase);
        fflush(stdout);
    }
    for (int a = 4; a < argc; a += 2) {
        const pqsimd_op *op = pqsimd_find_op(s, argv[a]);
        if (!op) {
            return die("unknown op ", argv[a]);
        }
        char *end = NULL;
        errno = 0;
        uint64_t calls = strtoull(argv[a + 1], &end, 10);
        if (errno || end == argv[a + 1] || *end || argv[a + 1][0] == '-') {
            return die("count: CALLS must be a count of calls, got ", argv[a + 1]);
        }
        pqsimd_guard_at(0, argv[2], op->name);
        if (op->setup) {
            op->setup();
        }
        op->call(); /* warm: first-call effects (lazy binding) stay outside the counted region */
        pqsimd_measure(op, calls);
    }
    return 0;
}

/* Where each op's function sits in the loaded library (offset from its load address): what a
 * layout moved, recorded with every job that timed it. */
static int cmd_where(int argc, char **argv) {
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    if (open_scheme(argc, argv, 4, "usage: where LIB SCHEME", &v, &s)) {
        return 2;
    }
    for (int k = 0; k < s->n_ops; k++) {
        Dl_info info;
        if (!dladdr((const void *)(uintptr_t)s->ops[k].call, &info) || !info.dli_fbase) {
            return die("cannot locate op ", s->ops[k].name);
        }
        printf("%s\t%llu\n", s->ops[k].name,
               (unsigned long long)((uintptr_t)s->ops[k].call - (uintptr_t)info.dli_fbase));
    }
    return 0;
}

/* The peak stack of each op (all, or those named): setup, a warm call on the driver's own stack, then
 * one call on the private stack painted 0xA5 and one painted 0x5A (stack.c). */
static int cmd_stack(int argc, char **argv) {
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    if (open_scheme(argc, argv, 4, "usage: stack LIB SCHEME [OP...]", &v, &s)) {
        return 2;
    }
    pqsimd_guard_at(0, argv[2], "(op table)");
    if (check_table(argv[2], s)) {
        return 2;
    }
    for (int k = 0; k < (argc > 4 ? argc - 4 : s->n_ops); k++) {
        const pqsimd_op *op = argc > 4 ? pqsimd_find_op(s, argv[4 + k]) : &s->ops[k];
        if (!op) {
            return die("unknown op ", argv[4 + k]);
        }
        pqsimd_guard_at(0, argv[2], op->name);
        if (op->setup) {
            op->setup();
        }
        op->call(); /* warm: lazy binding and first-call effects stay outside the painted call */
        long a = pqsimd_stack_peak(op, 0xA5), b = pqsimd_stack_peak(op, 0x5A);
        if (a == -1 || b == -1) {
            return die("cannot map a private stack for op ", op->name);
        }
        if (a == -2 || b == -2) {
            fprintf(stderr, "driver: op %s wrote its whole private stack (%zu bytes)\n", op->name, PQSIMD_STACK_BYTES);
            return 2;
        }
        printf("%s\t%ld\t%ld\n", op->name, a, b);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        return die("usage: driver list|calibrate|step|run|probe|gate|smoke|count|where|stack|ct|ct-time|sitetrace|buffers ...", NULL);
    }
    const char *cmd = argv[1];
    pqsimd_guard_install();
    if (strcmp(cmd, "smoke") == 0) {
        return cmd_smoke(argc, argv);
    }
    if (strcmp(cmd, "list") == 0) {
        return cmd_list(argc, argv);
    }
    if (strcmp(cmd, "calibrate") == 0) {
        pqsimd_calibration cal;
        pqsimd_timer_quantum = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
        pqsimd_calibrate_runner(&cal);
        print_calibration(stdout, &cal, -1, NULL, NULL);
        return 0;
    }
    if (strcmp(cmd, "step") == 0) {
        return cmd_step(argc, argv);
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
    if (strcmp(cmd, "where") == 0) {
        return cmd_where(argc, argv);
    }
    if (strcmp(cmd, "stack") == 0) {
        return cmd_stack(argc, argv);
    }
    if (strcmp(cmd, "ct") == 0) {
        return pqsimd_cmd_ct(argc, argv);
    }
    if (strcmp(cmd, "ct-time") == 0) {
        return pqsimd_cmd_ct_time(argc, argv);
    }
    if (strcmp(cmd, "sitetrace") == 0) {
        return pqsimd_cmd_sitetrace(argc, argv);
    }
    if (strcmp(cmd, "buffers") == 0) {
        return pqsimd_cmd_buffers(argc, argv);
    }
    return die("unknown command ", cmd);
}
