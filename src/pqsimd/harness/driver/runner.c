#include "runner.h"

#include "count_marker.h"

#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "vector_state.h"

__attribute__((noinline)) void pqsimd_measure(const pqsimd_op *op, uint64_t k) {
    void (*call)(void) = op->call;
    PQSIMD_COUNT_START(); /* the QEMU plugin counts between the markers (callgrind: the function) */
    for (uint64_t i = 0; i < k; i++) {
        call();
    }
    PQSIMD_COUNT_STOP();
}

/* One timed sample of k back-to-back calls, raw ticks (overhead included).
 * Not inlined and cache-line aligned: calibration and every op of every variant run this loop. */
__attribute__((noinline, aligned(64))) static uint64_t sample(const pqsimd_op *op, uint64_t k) {
    void (*call)(void) = op->call;
    uint64_t t0 = pqsimd_timer_start();
    for (uint64_t i = 0; i < k; i++) {
        call();
    }
    uint64_t t1 = pqsimd_timer_stop();
    return t1 - t0;
}

__attribute__((noinline, aligned(64))) static void internal_empty(void) { __asm__ volatile("" ::: "memory"); }

/* Median of 9 samples; a sample of more than ~20 ms (5e7 ticks) is long enough to stand for
 * itself, so slow ops (signing at -O0: seconds) are not run nine times just to be sized. */
uint64_t pqsimd_median_sample(const pqsimd_op *op, uint64_t k) {
    uint64_t s[9];
    s[0] = sample(op, k);
    if (s[0] > 50000000u) {
        return s[0];
    }
    for (int i = 1; i < 9; i++) {
        s[i] = sample(op, k);
    }
    qsort(s, 9, sizeof s[0], pqsimd_cmp_u64);
    return s[4];
}

/* The TSC steps in coarse units and a fenced read costs several of them, so short ops are
 * timed in batches: the smallest k whose sample lasts at least `target` ticks. */
uint64_t pqsimd_auto_batch(const pqsimd_op *op, uint64_t target, double overhead, uint64_t *median_raw) {
    uint64_t k = 1;
    for (;;) {
        uint64_t raw = pqsimd_median_sample(op, k);
        if (median_raw) {
            *median_raw = raw;
        }
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
        k = next > (1u << 24) ? (1u << 24) : next;
    }
    return k;
}

uint64_t pqsimd_batch_target(uint64_t requested, uint64_t step) {
    uint64_t floor = PQSIMD_AIM_CLOCK_STEPS * (step ? step : 1);
    return requested > floor ? requested : floor;
}


/* The read overhead as the runner sees it: the very sample loop with zero calls (k = 0), so the
 * subtraction removes exactly what every sample carries besides its calls. */
static void loop_overhead(double *median, uint64_t *minimum) {
    enum { N = 20001 };
    static uint64_t s[N];
    const pqsimd_op op = {"internal_empty", NULL, internal_empty};
    for (int i = 0; i < N; i++) {
        s[i] = sample(&op, 0);
    }
    qsort(s, N, sizeof s[0], pqsimd_cmp_u64);
    *median = (double)s[N / 2];
    *minimum = s[0];
}

void pqsimd_calibrate_runner(pqsimd_calibration *cal) {
    pqsimd_calibrate(cal);
    loop_overhead(&cal->overhead, &cal->overhead_min);
}

double pqsimd_call_overhead(double overhead) {
    enum { N = 101, K = 1000 };
    const pqsimd_op op = {"internal_empty", NULL, internal_empty};
    uint64_t s[N];
    for (int i = 0; i < N; i++) {
        s[i] = sample(&op, K);
    }
    qsort(s, N, sizeof s[0], pqsimd_cmp_u64);
    return ((double)s[N / 2] - overhead) / K;
}

/* splitmix64: the paired design's per-spin order, reproducible from the job's seed. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle(int *order, int n, uint64_t *state) {
    for (int i = 0; i < n; i++) {
        order[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random(state) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Untimed calls of the op for at least `ticks`: caches, predictors and the vector units reach
 * the op's steady state before its samples (a long scalar op may have run just before). */
static void warm(const pqsimd_op *op, double ticks) {
    uint64_t t0 = pqsimd_timer_start();
    do {
        op->call();
    } while ((double)(pqsimd_timer_stop() - t0) < ticks);
}

static void emit(FILE *out, const pqsimd_runner *r, const char *name, int variant, int spin, int pos,
                 uint64_t k, const uint64_t *s, uint64_t null_raw, const uint64_t *cv, const int *valid, int reps) {
    for (int rep = 0; rep < reps; rep++) {
        fprintf(out, "%s\t%d\t%d\t%d\t%d\t%llu\t%llu\t%llu", name, variant, spin, rep, pos, (unsigned long long)k,
                (unsigned long long)s[rep], (unsigned long long)null_raw);
        if (r->counters) {
            pqsimd_counters_tsv(out, r->counters, cv + PQSIMD_MAX_COUNTERS * rep, valid[rep]);
        }
        fputc('\n', out);
    }
}

/* The null: the median of NULL_SAMPLES samples of k calls of an empty function in the variant's own
 * shared object, through the very same loop, taken right after an op's reps. On machine B an empty
 * call costs 3.5-3.8 TSC ticks into the driver's own code but 5.6-5.8 into a variant's object, and
 * either moves with the core clock (the TSC does not), so a call cost measured once per job on the
 * driver's function left ~2 ticks per call in every op; a null of the same object, the same k and
 * the same moment leaves the op's own time. */
enum { NULL_SAMPLES = 3 };

static uint64_t null_sample(void (*call)(void), uint64_t k) {
    const pqsimd_op op = {"null", NULL, call ? call : internal_empty};
    uint64_t s[NULL_SAMPLES];
    for (int i = 0; i < NULL_SAMPLES; i++) {
        s[i] = sample(&op, k);
    }
    qsort(s, NULL_SAMPLES, sizeof s[0], pqsimd_cmp_u64);
    return s[NULL_SAMPLES / 2];
}

static void reps_of(const pqsimd_runner *r, const pqsimd_op *op, uint64_t k, int reps, uint64_t *s, uint64_t *cv,
                    int *valid) {
    pqsimd_counters *pc = r->counters;
    for (int rep = 0; rep < reps; rep++) {
        if (pc) {
            pqsimd_counters_start(pc);
        }
        s[rep] = sample(op, k);
        if (pc) {
            valid[rep] = pqsimd_counters_stop(pc, cv + PQSIMD_MAX_COUNTERS * rep) == 0;
        }
    }
}

/* One variant's turn in a spin: warm-up (paired), its reps, then its null. */
__attribute__((noinline)) static void turn(const pqsimd_runner *r, const pqsimd_job_op *op, int v, uint64_t *s,
                                           uint64_t *cv, int *valid, uint64_t *null_raw) {
    pqsimd_clear_vector_state();
    if (r->design == PQSIMD_PAIRED && r->warm_ticks > 0 && !op->nowarm) {
        warm(op->ops[v], r->warm_ticks);
    }
    reps_of(r, op->ops[v], op->batch[v], op->reps, s, cv, valid);
    *null_raw = null_sample(r->null_calls ? r->null_calls[v] : NULL, op->batch[v]);
}

/* The turn with `offset` bytes more stack below this frame: the variant's stack data moves with its
 * layout. Not inlined, so the alloca is given back at every return. */
__attribute__((noinline)) static void turn_at(size_t offset, const pqsimd_runner *r, const pqsimd_job_op *op, int v,
                                              uint64_t *s, uint64_t *cv, int *valid, uint64_t *null_raw) {
    volatile char *pad = __builtin_alloca(offset + 16);
    pad[0] = 0;
    turn(r, op, v, s, cv, valid, null_raw);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

void pqsimd_run_op(FILE *out, pqsimd_runner *r, pqsimd_job_op *op) {
    int nv = r->n_variants;
    int layouts = r->layouts > 0 ? r->layouts : 1;
    int nb = nv / layouts; /* builds */
    int reps = op->reps;
    for (int v = 0; v < nv; v++) {
        pqsimd_guard_at(v, r->paths[v], op->name);
        if (op->ops[v] && op->ops[v]->setup) {
            op->ops[v]->setup();
        }
    }
    for (int v = 0; v < nv; v++) {
        int from = r->batch_of ? r->batch_of[v] : v;
        if (!op->ops[v] || op->batch[v] != 0) {
            continue;
        }
        if (from != v && op->ops[from] && op->batch[from] != 0 && op->batch[from] != PQSIMD_NOT_TIMED) {
            op->batch[v] = op->batch[from]; /* the same code sized once (an earlier variant) */
            continue;
        }
        pqsimd_guard_at(v, r->paths[v], op->name);
        op->batch[v] = pqsimd_auto_batch(op->ops[v], r->target, r->overhead, NULL);
    }
    /* all samples of a spin are kept in memory and printed after it: no I/O between samples */
    uint64_t *s = malloc(sizeof(uint64_t) * (size_t)reps * (size_t)nv);
    uint64_t *nulls = malloc(sizeof(uint64_t) * (size_t)nv);
    uint64_t *cv = r->counters ? malloc(sizeof(uint64_t) * PQSIMD_MAX_COUNTERS * (size_t)reps * (size_t)nv) : NULL;
    int *valid = r->counters ? calloc((size_t)reps * (size_t)nv, sizeof(int)) : NULL;
    int *order = malloc(sizeof(int) * (size_t)nb);
    for (int spin = -op->warmup; spin < op->spins; spin++) {
        if (r->design == PQSIMD_PAIRED) {
            shuffle(order, nb, &r->order_state);
        } else {
            for (int b = 0; b < nb; b++) {
                order[b] = b;
            }
        }
        int copy = ((spin % layouts) + layouts) % layouts;
        for (int pos = 0; pos < nb; pos++) {
            int v = order[pos] * layouts + copy;
            if (!op->ops[v]) {
                continue;
            }
            pqsimd_guard_at(v, r->paths[v], op->name);
            turn_at(r->stack ? (size_t)r->stack[v] : 0, r, op, v, s + (size_t)v * reps,
                    cv ? cv + (size_t)v * reps * PQSIMD_MAX_COUNTERS : NULL, valid ? valid + (size_t)v * reps : NULL,
                    &nulls[v]);
        }
        pqsimd_clear_vector_state();
        for (int pos = 0; pos < nb; pos++) {
            int v = order[pos] * layouts + copy;
            if (!op->ops[v]) {
                continue;
            }
            emit(out, r, op->name, v, spin, pos, op->batch[v], s + (size_t)v * reps, nulls[v],
                 cv ? cv + (size_t)v * reps * PQSIMD_MAX_COUNTERS : NULL, valid ? valid + (size_t)v * reps : NULL, reps);
        }
    }
    free(s);
    free(nulls);
    free(cv);
    free(valid);
    free(order);
    pqsimd_guard_at(-1, NULL, "(between ops)");
}
