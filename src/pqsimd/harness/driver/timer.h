/* The driver's clock and the calibration every job records before it times anything.
 *
 * One timer per ISA, chosen at compile time (as google/benchmark's cycleclock.h does): each
 * timer_<isa>.h provides
 *   pqsimd_timer_start(), pqsimd_timer_stop()  fenced reads around a timed region
 *   pqsimd_timer_raw()                         an unfenced read (the counter's granularity)
 *   PQSIMD_ADD_CHAIN_100(x, y)                 100 dependent register adds, one core cycle each
 *   pqsimd_timer_init(), pqsimd_timer_name()   which counter this process reads (an ISA may
 *                                              choose at run time, e.g. aarch64: PMU cycles when
 *                                              the kernel grants user access, else the generic timer)
 * A new ISA is one more header here.
 */
#ifndef PQSIMD_TIMER_H
#define PQSIMD_TIMER_H
#include <stdint.h>
#include <stdio.h>

#if defined(__x86_64__)
#include "timer_x86_64.h"
#elif defined(__aarch64__)
#include "timer_aarch64.h"
#else
#error "pqsimd: no timer for this ISA (add harness/driver/timer_<isa>.h)"
#endif

typedef struct {
    double overhead;      /* median ticks of an empty timed region (main.c re-measures it through the runner's sample loop) */
    uint64_t overhead_min;
    uint64_t granularity; /* smallest nonzero delta between two reads */
    double tsc_hz;        /* the counter's ticks per second against CLOCK_MONOTONIC_RAW */
} pqsimd_calibration;

/* Selects the counter (pqsimd_timer_init) and measures it. */
void pqsimd_calibrate(pqsimd_calibration *cal);
/* JSON object (no newline) naming the counter: {"name": "tsc"}, or on aarch64 e.g.
 * {"name": "cntvct", "nominal_hz": 62500000, "not_used": "pmccntr: perf_event_open ENOSYS"}. */
void pqsimd_timer_json(FILE *out);

#endif
