#define _GNU_SOURCE
#include "timer.h"

#include <stdlib.h>
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

void pqsimd_calibrate(pqsimd_calibration *cal) {
    enum { N = 20001 };
    static uint64_t d[N];

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

    /* Granularity: the counter's step, seen as the smallest nonzero difference. */
    uint64_t g = UINT64_MAX;
    for (int i = 0; i < N; i++) {
        uint64_t a = pqsimd_timer_raw(), b = pqsimd_timer_raw();
        while (b == a) {
            b = pqsimd_timer_raw();
        }
        if (b - a < g) {
            g = b - a;
        }
    }
    cal->granularity = g;

    /* Frequency: ticks per second of CLOCK_MONOTONIC_RAW over ~50 ms. */
    double s0 = now_seconds();
    uint64_t t0 = pqsimd_timer_start();
    while (now_seconds() - s0 < 0.05) {
    }
    double s1 = now_seconds();
    uint64_t t1 = pqsimd_timer_stop();
    cal->tsc_hz = (double)(t1 - t0) / (s1 - s0);
}

#if defined(__x86_64__)
void pqsimd_timer_json(FILE *out) {
    fprintf(out, "{\"name\": \"%s\"}", pqsimd_timer_name());
}
#endif
