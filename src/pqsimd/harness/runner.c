#include "runner.h"

#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "timer.h"

static pqsimd_scheme *registry;

/* Set by main when `run --counters` opened a counter group; NULL otherwise. */
pqsimd_counters *pqsimd_active_counters;

void pqsimd_register(pqsimd_scheme *scheme) {
    /* Append, so schemes list in link order (512, 768, 1024). */
    pqsimd_scheme **p = &registry;
    while (*p) {
        p = &(*p)->next;
    }
    scheme->next = NULL;
    *p = scheme;
}

pqsimd_scheme *pqsimd_schemes(void) {
    return registry;
}

__attribute__((noinline)) void pqsimd_measure(const pqsimd_op *op, uint64_t k) {
    void (*call)(void) = op->call;
    for (uint64_t i = 0; i < k; i++) {
        call();
    }
}

/* One timed sample of k back-to-back calls, raw ticks (overhead included). */
/* Not inlined and cache-line aligned: calibration and every op run this very loop. */
__attribute__((noinline, aligned(64))) static uint64_t sample(const pqsimd_op *op, uint64_t k) {
    void (*call)(void) = op->call;
    uint64_t t0 = pqsimd_tsc_start();
    for (uint64_t i = 0; i < k; i++) {
        call();
    }
    uint64_t t1 = pqsimd_tsc_stop();
    return t1 - t0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t median_sample(const pqsimd_op *op, uint64_t k) {
    uint64_t s[9];
    for (int i = 0; i < 9; i++) {
        s[i] = sample(op, k);
    }
    qsort(s, 9, sizeof s[0], cmp_u64);
    return s[4];
}

/* Smallest k whose sample lasts at least `target` ticks (the TSC steps in coarse units
 * and a fenced read costs several of them, so short ops are timed in batches). */
uint64_t pqsimd_auto_batch(const pqsimd_op *op, uint64_t target, double overhead) {
    uint64_t k = 1;
    for (;;) {
        uint64_t raw = median_sample(op, k);
        if (raw >= target || k >= (1u << 24)) {
            break;
        }
        double body = (double)raw - overhead;
        uint64_t next;
        if (body <= (double)k) {
            next = k * 16;
        } else {
            /* aim 10% above target from the measured cost per call */
            next = (uint64_t)((double)k * 1.1 * ((double)target - overhead) / body) + 1;
            if (next <= k) {
                next = k * 2;
            }
        }
        k = next;
    }
    return k;
}

__attribute__((noinline, aligned(64))) static void internal_empty(void) { __asm__ volatile("" ::: "memory"); }

/* The read overhead as the runner sees it: the very sample loop with zero calls (k = 0), so the
 * subtraction removes exactly what every sample carries besides its calls. */
void pqsimd_loop_overhead(double *median, uint64_t *minimum) {
    enum { N = 20001 };
    static uint64_t s[N];
    const pqsimd_op op = {"internal_empty", NULL, internal_empty};
    for (int i = 0; i < N; i++) {
        s[i] = sample(&op, 0);
    }
    qsort(s, N, sizeof s[0], cmp_u64);
    *median = (double)s[N / 2];
    *minimum = s[0];
}

/* What the batch loop itself costs per call (loop + indirect call + return), measured on an
 * empty function; the analysis subtracts it so per-call numbers are the op's own cost. */
double pqsimd_call_overhead(double overhead) {
    enum { N = 101, K = 1000 };
    const pqsimd_op op = {"internal_empty", NULL, internal_empty};
    uint64_t s[N];
    for (int i = 0; i < N; i++) {
        s[i] = sample(&op, K);
    }
    qsort(s, N, sizeof s[0], cmp_u64);
    return ((double)s[N / 2] - overhead) / K;
}

void pqsimd_run_op(FILE *out, const pqsimd_op *op, uint64_t k, int warmup, int spins, int reps) {
    if (op->setup) {
        op->setup();
    }
    uint64_t *s = malloc(sizeof(uint64_t) * (size_t)reps);
    pqsimd_counters *pc = pqsimd_active_counters; /* counters: read around the timed region */
    uint64_t *cv = pc ? malloc(sizeof(uint64_t) * PQSIMD_MAX_COUNTERS * (size_t)reps) : NULL;
    int *valid = pc ? malloc(sizeof(int) * (size_t)reps) : NULL;
    for (int spin = -warmup; spin < spins; spin++) {
        for (int rep = 0; rep < reps; rep++) {
            if (pc) {
                pqsimd_counters_start(pc);
            }
            s[rep] = sample(op, k);
            if (pc) {
                valid[rep] = pqsimd_counters_stop(pc, cv + PQSIMD_MAX_COUNTERS * rep) == 0;
            }
        }
        /* Print after the spin, so no I/O sits between samples. */
        for (int rep = 0; rep < reps; rep++) {
            fprintf(out, "%s\t%d\t%d\t%llu\t%llu", op->name, spin, rep, (unsigned long long)k,
                    (unsigned long long)s[rep]);
            if (pc) {
                pqsimd_counters_tsv(out, pc, cv + PQSIMD_MAX_COUNTERS * rep, valid[rep]);
            }
            fputc('\n', out);
        }
    }
    free(s);
    free(cv);
    free(valid);
}
