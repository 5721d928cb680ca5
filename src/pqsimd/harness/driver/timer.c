#define _GNU_SOURCE
#include "timer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

/* Does g divide all but at most 1% of the nonzero deltas of both sets? (A rare odd delta, e.g. a
 * read that straddles a counter update in a VM, must not turn a step of 26 into 1.) */
static int divides_nearly_all(uint64_t g, const uint64_t *a, int na, const uint64_t *b, int nb) {
    int miss = 0, seen = 0;
    for (int i = 0; i < na; i++) {
        seen += a[i] != 0;
        miss += a[i] % g != 0;
    }
    for (int i = 0; i < nb; i++) {
        seen += b[i] != 0;
        miss += b[i] % g != 0;
    }
    return (uint64_t)miss * 100 <= (uint64_t)seen;
}

/* The largest divisor of `mode` that divides nearly every delta of both sets (1 if none above 1). */
static uint64_t common_step(uint64_t mode, const uint64_t *a, int na, const uint64_t *b, int nb) {
    uint64_t best = 1;
    for (uint64_t i = 1; i * i <= mode; i++) {
        if (mode % i) {
            continue;
        }
        uint64_t pair[2] = {mode / i, i};
        for (int t = 0; t < 2; t++) {
            if (pair[t] > best && divides_nearly_all(pair[t], a, na, b, nb)) {
                best = pair[t];
            }
        }
    }
    return best;
}

void pqsimd_calibrate(pqsimd_calibration *cal) {
    enum { N = 20001, MIN_RAW = 256 };
    static uint64_t d[N], inc[N];

    pqsimd_timer_init();

    /* Overhead: what an empty timed region costs, as the runner sees it. */
    for (int i = 0; i < N; i++) {
        uint64_t t0 = pqsimd_timer_start();
        uint64_t t1 = pqsimd_timer_stop();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof d[0], cmp_u64);
    cal->overhead = (double)d[N / 2];
    cal->overhead_min = d[0];
    top_deltas(d, N, &cal->fenced);

    /* Increments of consecutive distinct unfenced reads; a coarse clock (cntvct, --timer-quantum)
     * makes each one wait for the next step, so they stop after ~50 ms once MIN_RAW are in. */
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
    qsort(inc, (size_t)n, sizeof inc[0], cmp_u64);
    cal->read_min = inc[0];
    cal->repeat_share = (double)repeats / n;
    top_deltas(inc, n, &cal->raw);

    uint64_t mode = cal->raw.n ? cal->raw.value[0] : 1;
    uint64_t step = common_step(mode, d, N, inc, n);
    if (step == 1 && cal->repeat_share >= 0.5) {
        step = mode; /* reads see every update of a clock whose updates share no divisor */
    }
    if (pqsimd_timer_quantum > 1 && step % pqsimd_timer_quantum) {
        step = pqsimd_timer_quantum; /* every reading is a multiple of it, whatever the deltas showed */
    }
    cal->step = step;

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
    fprintf(out, ", \"step_deltas\": {\"fenced\": ");
    deltas_json(out, &cal->fenced);
    fprintf(out, ", \"raw\": ");
    deltas_json(out, &cal->raw);
    fprintf(out, "}, \"timer_quantum\": %llu", (unsigned long long)pqsimd_timer_quantum);
}

#if defined(__x86_64__)
void pqsimd_timer_json(FILE *out) {
    fprintf(out, "{\"name\": \"%s\"}", pqsimd_timer_name());
}
#endif
