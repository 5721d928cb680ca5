/* Fenced TSC reads and the calibration every job records before it times anything. */
#ifndef PQSIMD_TIMER_H
#define PQSIMD_TIMER_H
#include <stdint.h>

/* lfence before and after rdtsc: earlier instructions retire first, later ones wait. */
static inline uint64_t pqsimd_tsc_start(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* rdtscp waits for the timed code to finish; the trailing lfence keeps later code out. */
static inline uint64_t pqsimd_tsc_stop(void) {
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

typedef struct {
    double overhead;      /* median ticks of an empty timed region (main.c re-measures it through the runner's sample loop) */
    uint64_t overhead_min;
    uint64_t granularity; /* smallest nonzero delta between two reads */
    double tsc_hz;        /* TSC frequency against CLOCK_MONOTONIC_RAW */
} pqsimd_calibration;

void pqsimd_calibrate(pqsimd_calibration *cal);

#endif
