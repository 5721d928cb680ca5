#define _GNU_SOURCE
#include "timer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pqsimd_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

uint64_t pqsimd_timer_quantum;

/* The most frequent values of a sorted array (zeros left out: a clock slower than its reads). */
static void top_deltas(const uint64_t *d, int n, pqsimd_deltas *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && d[j] == d[i]) {
            j++;
        }
        uint64_t count = (uint64_t)(j - i);
        if (d[i] != 0) {
            int at = out->n < PQSIMD_TOP_DELTAS ? out->n++ : PQSIMD_TOP_DELTAS;
            while (at > 0 && out->count[at - 1] < count) {
                if (at < PQSIMD_TOP_DELTAS) {
                    out->value[at] = out->value[at - 1];
                    out->count[at] = out->count[at - 1];
                }
                at--;
            }
            if (at < PQSIMD_TOP_DELTAS) {
                out->value[at] = d[i];
                out->count[at] = count;
            }
        }
        i = j;
    }
}

/* How many of the nonzero values of a sorted array g does not divide, and how many are nonzero. */
static void off_lattice(uint64_t g, const uint64_t *a, int n, uint64_t *miss, uint64_t *seen) {
    for (int i = 0; i < n; i++) {
        *seen += a[i] != 0;
        *miss += a[i] != 0 && a[i] % g != 0;
    }
}

/* Distinct nonzero values of a sorted array that are multiples of g. */
static uint64_t distinct_multiples(uint64_t g, const uint64_t *sorted, int n) {
    uint64_t k = 0;
    for (int i = 0; i < n; i++) {
        k += sorted[i] != 0 && sorted[i] % g == 0 && (i == 0 || sorted[i] != sorted[i - 1]);
    }
    return k;
}

/* Could k distinct readings of a finer clock all be multiples of g by chance? About g^-(k-1) of such
 * sets are; the lattice is taken only where that is below 1 in PQSIMD_LATTICE_CHANCE. */
static int beyond_chance(uint64_t g, uint64_t k) {
    double odds = 1.0;
    for (uint64_t i = 1; i < k && odds < PQSIMD_LATTICE_CHANCE; i++) {
        odds *= (double)g;
    }
    return odds >= PQSIMD_LATTICE_CHANCE;
}

/* A difference of two readings above this is not a step's multiple but a clock that jumped. */
#define PQSIMD_LATTICE_MAX_READING ((uint64_t)1 << 40)

uint64_t pqsimd_lattice(const uint64_t *a, int na, const uint64_t *b, int nb, int need_evidence) {
    /* Every reading on the lattice is a multiple of its step, and off-lattice readings are rare, so
     * the step divides at least one of the most frequent values: only their divisors are candidates. */
    pqsimd_deltas top[2];
    top_deltas(a, na, &top[0]);
    top_deltas(b, nb, &top[1]);
    uint64_t best = 1;
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < top[t].n; k++) {
            uint64_t v = top[t].value[k];
            if (v > PQSIMD_LATTICE_MAX_READING) {
                continue; /* a clock that went backwards wraps to ~2^64: no step, and its divisors take hours */
            }
            for (uint64_t i = 1; i <= v / i; i++) { /* i * i would overflow */
                if (v % i) {
                    continue;
                }
                uint64_t pair[2] = {v / i, i};
                for (int c = 0; c < 2; c++) {
                    uint64_t g = pair[c], miss = 0, seen = 0;
                    if (g <= best) {
                        continue;
                    }
                    off_lattice(g, a, na, &miss, &seen);
                    off_lattice(g, b, nb, &miss, &seen);
                    if (miss * PQSIMD_LATTICE_OFF_PER <= seen &&
                        (!need_evidence || beyond_chance(g, distinct_multiples(g, a, na) + distinct_multiples(g, b, nb)))) {
                        best = g;
                    }
                }
            }
        }
    }
    return best;
}

void pqsimd_step_from(pqsimd_calibration *cal, const uint64_t *fenced, int nf, const uint64_t *spread, int ns,
                      const uint64_t *inc, int ni) {
    top_deltas(fenced, nf, &cal->fenced);
    top_deltas(spread, ns, &cal->spread);
    top_deltas(inc, ni, &cal->raw);
    uint64_t fenced_step = pqsimd_lattice(fenced, nf, spread, ns, 1);
    cal->step_unfenced = pqsimd_lattice(inc, ni, NULL, 0, 0);
    cal->step = fenced_step;
    cal->step_from = "fenced";
    if (cal->step == 1 && cal->repeat_share >= 0.5 && cal->raw.n) {
        /* reads see every update of a clock slower than its reads whose updates share no divisor
         * (a scaled counter stepping by 25 or 26): its typical update is what a sample resolves */
        cal->step = cal->raw.value[0];
        cal->step_from = "unfenced";
    }
    if (pqsimd_timer_quantum > 1 && cal->step % pqsimd_timer_quantum) {
        cal->step = pqsimd_timer_quantum; /* every reading is a multiple of it, whatever the deltas showed */
        cal->step_from = "quantum";
    }
    uint64_t miss = 0, seen = 0;
    off_lattice(cal->step, spread, ns, &miss, &seen);
    cal->spread_on_lattice = seen ? 1.0 - (double)miss / (double)seen : 0.0;
    cal->spread_distinct = (int)distinct_multiples(1, spread, ns);
}

/* A fenced sample of k dependent register updates: the spread set, samples of many lengths. */
static uint64_t spread_sample(int k) {
    uint64_t x = 0;
    uint64_t t0 = pqsimd_timer_start();
    for (int j = 0; j < k; j++) {
        __asm__ volatile("" : "+r"(x));
        x += (uint64_t)j;
    }
    uint64_t t1 = pqsimd_timer_stop();
    __asm__ volatile("" ::"r"(x));
    return t1 - t0;
}

void pqsimd_calibrate(pqsimd_calibration *cal) {
    enum { N = 20001, NS = 4096, MIN_RAW = 256 };
    static uint64_t d[N], inc[N], spread[NS];

    pqsimd_timer_init();

    /* Overhead: what an empty timed region costs, as the runner sees it. */
    for (int i = 0; i < N; i++) {
        uint64_t t0 = pqsimd_timer_start();
        uint64_t t1 = pqsimd_timer_stop();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof d[0], pqsimd_cmp_u64);
    cal->overhead = (double)d[N / 2];
    cal->overhead_min = d[0];

    /* Fenced samples of 0..8,128 loop iterations: every sample a job takes is such a difference of
     * a fenced start and stop, so their lattice is what the samples resolve; the many lengths (a
     * clock stepping by 26 still shows hundreds of distinct values) make a common divisor above 1
     * impossible by chance. */
    for (int i = 0; i < NS; i++) {
        spread[i] = spread_sample((i * 37) % 509 * 16);
    }
    qsort(spread, NS, sizeof spread[0], pqsimd_cmp_u64);

    /* Increments of consecutive distinct unfenced reads (a cross-check, and the step of a clock
     * slower than its reads); a coarse clock (cntvct, --timer-quantum) makes each one wait for the
     * next step, so they stop after ~50 ms once MIN_RAW are in. */
    int n = 0, repeats = 0;
    double s_start = now_seconds();
    while (n < N && (n < MIN_RAW || (n % 64) || now_seconds() - s_start < 0.05)) {
        uint64_t a = pqsimd_timer_raw(), b = pqsimd_timer_raw();
        repeats += b == a;
        while (b == a) {
            b = pqsimd_timer_raw();
        }
        inc[n++] = b - a;
    }
    qsort(inc, (size_t)n, sizeof inc[0], pqsimd_cmp_u64);
    cal->read_min = inc[0];
    cal->repeat_share = (double)repeats / n;
    pqsimd_step_from(cal, d, N, spread, NS, inc, n);

    /* Frequency: ticks per second of CLOCK_MONOTONIC_RAW over ~50 ms. */
    double s0 = now_seconds();
    uint64_t t0 = pqsimd_timer_start();
    while (now_seconds() - s0 < 0.05) {
    }
    double s1 = now_seconds();
    uint64_t t1 = pqsimd_timer_stop();
    cal->tsc_hz = (double)(t1 - t0) / (s1 - s0);
}

static void deltas_json(FILE *out, const pqsimd_deltas *d) {
    fputc('[', out);
    for (int i = 0; i < d->n; i++) {
        fprintf(out, "%s[%llu, %llu]", i ? ", " : "", (unsigned long long)d->value[i], (unsigned long long)d->count[i]);
    }
    fputc(']', out);
}

void pqsimd_step_json(FILE *out, const pqsimd_calibration *cal) {
    fprintf(out, ", \"step\": %llu, \"granularity\": %llu, \"read_min_delta\": %llu, \"repeat_share\": %.4f",
            (unsigned long long)cal->step, (unsigned long long)cal->step, (unsigned long long)cal->read_min,
            cal->repeat_share);
    fprintf(out, ", \"step_from\": \"%s\", \"step_unfenced\": %llu, \"spread_on_lattice\": %.6f, "
            "\"spread_distinct\": %d", cal->step_from, (unsigned long long)cal->step_unfenced, cal->spread_on_lattice,
            cal->spread_distinct);
    fprintf(out, ", \"step_deltas\": {\"fenced\": ");
    deltas_json(out, &cal->fenced);
    fprintf(out, ", \"spread\": ");
    deltas_json(out, &cal->spread);
    fprintf(out, ", \"raw\": ");
    deltas_json(out, &cal->raw);
    fprintf(out, "}, \"timer_quantum\": %llu", (unsigned long long)pqsimd_timer_quantum);
}

#if defined(__x86_64__)
void pqsimd_timer_json(FILE *out) {
    fprintf(out, "{\"name\": \"%s\"}", pqsimd_timer_name());
}
#endif
