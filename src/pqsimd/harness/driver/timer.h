/* The driver's clock and the calibration every job records before it times anything.
 *
 * One timer per ISA, chosen at compile time (as google/benchmark's cycleclock.h does): each
 * timer_<isa>.h provides
 *   pqsimd_clock_start(), pqsimd_clock_stop()  fenced reads around a timed region
 *   pqsimd_clock_raw()                         an unfenced read (for the counter's step)
 *   PQSIMD_ADD_CHAIN_100(x, y)                 100 dependent register adds, one core cycle each
 *   pqsimd_timer_init(), pqsimd_timer_name()   which counter this process reads (an ISA may
 *                                              choose at run time, e.g. aarch64: PMU cycles when
 *                                              the kernel grants user access, else the generic timer)
 * A new ISA is one more header here. Everything else reads the clock through pqsimd_timer_start(),
 * pqsimd_timer_stop() and pqsimd_timer_raw() below, which round every read down to a multiple of
 * pqsimd_timer_quantum when it is above 1 (`pqsimd run --timer-quantum TICKS`: a deliberately coarse
 * clock, to test what the analysis makes of one).
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

/* 0 or 1: reads as the clock gives them; above 1: every read rounded down to a multiple of it. */
extern uint64_t pqsimd_timer_quantum;

static inline uint64_t pqsimd_quantized(uint64_t v) {
    uint64_t q = pqsimd_timer_quantum;
    return q > 1 ? v - v % q : v;
}
static inline uint64_t pqsimd_timer_start(void) { return pqsimd_quantized(pqsimd_clock_start()); }
static inline uint64_t pqsimd_timer_stop(void) { return pqsimd_quantized(pqsimd_clock_stop()); }
static inline uint64_t pqsimd_timer_raw(void) { return pqsimd_quantized(pqsimd_clock_raw()); }

enum { PQSIMD_TOP_DELTAS = 8 };

/* How often each back-to-back delta occurred: the most frequent ones, most frequent first. */
typedef struct {
    int n;
    uint64_t value[PQSIMD_TOP_DELTAS];
    uint64_t count[PQSIMD_TOP_DELTAS];
} pqsimd_deltas;

typedef struct {
    double overhead;      /* median ticks of an empty timed region (main.c re-measures it through the runner's sample loop) */
    uint64_t overhead_min;
    /* The clock's step: every reading moves by a multiple of it, so a sample of n steps is known to
     * +-1/n. Measured as the largest divisor of the most frequent increment that divides (nearly)
     * every delta of back-to-back reads, fenced and unfenced; not the smallest delta, which is the
     * read's latency (an Intel TSC stepping by 2 shows fenced deltas of 40-60). A clock slower than
     * its reads whose increments share no divisor (a scaled TSC stepping by 25 or 26) has the most
     * frequent increment as its step. */
    uint64_t step;
    uint64_t read_min;    /* the smallest nonzero delta of two unfenced reads (their latency, or the step) */
    double repeat_share;  /* share of unfenced back-to-back reads that returned the same value */
    pqsimd_deltas fenced; /* deltas of fenced start/stop pairs (what an empty sample reads) */
    pqsimd_deltas raw;    /* increments of consecutive distinct unfenced reads */
    double tsc_hz;        /* the counter's ticks per second against CLOCK_MONOTONIC_RAW */
} pqsimd_calibration;

/* Selects the counter (pqsimd_timer_init) and measures it. */
void pqsimd_calibrate(pqsimd_calibration *cal);
/* The step's fields of the calibration JSON, each preceded by ", ": step, granularity (the same
 * number, the name older readers know), read_min_delta, repeat_share, step_deltas, timer_quantum. */
void pqsimd_step_json(FILE *out, const pqsimd_calibration *cal);
/* JSON object (no newline) naming the counter: {"name": "tsc"}, or on aarch64 e.g.
 * {"name": "cntvct", "nominal_hz": 62500000, "not_used": "pmccntr: perf_event_open ENOSYS"}. */
void pqsimd_timer_json(FILE *out);

#endif
