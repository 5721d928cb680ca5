#define _GNU_SOURCE
#include "timer.h"

#include <stdlib.h>
#include <time.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Unfenced: for the granularity only, where read cost must not hide the counter's step. */
static inline uint64_t raw_tsc(void) {
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pqsimd_calibrate(pqsimd_calibration *cal) {
    enum { N = 20001 };
    static uint64_t d[N];

    /* Overhead: what an empty timed region costs, as the runner sees it. */
    for (int i = 0; i < N; i++) {
        uint64_t t0 = pqsimd_tsc_start();
        uint64_t t1 = pqsimd_tsc_stop();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof d[0], cmp_u64);
    cal->overhead = (double)d[N / 2];
    cal->overhead_min = d[0];

    /* Granularity: the counter's step, seen as the smallest nonzero difference. */
    uint64_t g = UINT64_MAX;
    for (int i = 0; i < N; i++) {
        uint64_t a = raw_tsc(), b = raw_tsc();
        while (b == a) {
            b = raw_tsc();
        }
        if (b - a < g) {
            g = b - a;
        }
    }
    cal->granularity = g;

    /* Frequency: ticks per second of CLOCK_MONOTONIC_RAW over ~50 ms. */
    double s0 = now_seconds();
    uint64_t t0 = pqsimd_tsc_start();
    while (now_seconds() - s0 < 0.05) {
    }
    double s1 = now_seconds();
    uint64_t t1 = pqsimd_tsc_stop();
    cal->tsc_hz = (double)(t1 - t0) / (s1 - s0);
}
