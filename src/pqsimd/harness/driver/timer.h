/* The driver's clock and the calibration every job records before it times anything.
 *
 * One timer per ISA, chosen at compile time (as google/benchmark's cycleclock.h does): each
 * timer_<isa>.h provides
 *   pqsimd_clock_start(), pqsimd_clock_stop()  fenced reads around a timed region
 *   pqsimd_clock_raw()                         an unfenced read (for the counter's step)
 *   PQSIMD_ADD_CHAIN_100(x, y)                 100 dependent register adds, one core cycle each
 *   pqsimd_timer_init(), pqsimd_timer_name()   which counter this process reads (an ISA may
 *                                              choose at run time, e.g. aarch64: PMU cycles when
 *                                              the kernel grants user access, else the generic timer;
 *                                              riscv64: rdcycle where the kernel allows it, else rdtime)
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
#elif defined(__riscv) && __riscv_xlen == 64
#include "timer_riscv64.h"
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

/* qsort's comparison of uint64_t, ascending. */
int pqsimd_cmp_u64(const void *a, const void *b);

enum { PQSIMD_TOP_DELTAS = 8 };

/* How often each back-to-back delta occurred: the most frequent ones, most frequent first. */
typedef struct {
    int n;
    uint64_t value[PQSIMD_TOP_DELTAS];
    uint64_t count[PQSIMD_TOP_DELTAS];
} pqsimd_deltas;

/* The lattice rule, shared with stats/lattice.py (the same rule applied to a job's own samples):
 * a step g holds when at most 1 in PQSIMD_LATTICE_OFF_PER nonzero readings is not a multiple of it
 * (a read straddling a counter update in a VM must not turn a step of 26 into 1), and when the k
 * distinct readings on it could not all be multiples of g by chance: g^(k-1) >= PQSIMD_LATTICE_CHANCE
 * (step 2 needs 21 distinct values, step 26 six). */
#define PQSIMD_LATTICE_OFF_PER 100
#define PQSIMD_LATTICE_CHANCE 1e6

typedef struct {
    double overhead;      /* median ticks of an empty timed region (main.c re-measures it through the runner's sample loop) */
    uint64_t overhead_min;
    /* The clock's step: every sample moves by a multiple of it, so a sample of n steps is known to
     * +-1/n. Measured on fenced readings, the very differences samples are made of: the lattice of
     * back-to-back fenced deltas and of fenced samples of loops of many lengths (`spread`). Not the
     * smallest delta, which is the read's latency (an Intel TSC stepping by 2 shows fenced deltas of
     * 40-60), and not the unfenced increments, which can see one update as two (a Zen TSC stepping
     * by 26 shows 1 + 25 in ~10% of them): those are only a cross-check (`step_unfenced`), and the
     * step of a clock slower than its reads whose updates share no divisor. */
    uint64_t step;
    const char *step_from;    /* "fenced", "unfenced" (a clock slower than its reads), "quantum" */
    uint64_t step_unfenced;   /* the lattice of the unfenced increments alone (the old estimate: 1 on a Zen TSC) */
    double spread_on_lattice; /* share of the spread samples that are multiples of `step` */
    int spread_distinct;      /* distinct values among them: the evidence the lattice rests on */
    uint64_t read_min;    /* the smallest nonzero delta of two unfenced reads (their latency, or the step) */
    double repeat_share;  /* share of unfenced back-to-back reads that returned the same value */
    pqsimd_deltas fenced; /* deltas of fenced start/stop pairs (what an empty sample reads) */
    pqsimd_deltas spread; /* fenced samples of loops of 0..8,128 iterations */
    pqsimd_deltas raw;    /* increments of consecutive distinct unfenced reads */
    double tsc_hz;        /* the counter's ticks per second against CLOCK_MONOTONIC_RAW */
} pqsimd_calibration;

/* The lattice step of readings a and b (sorted; zeros ignored) under the rule above: the largest
 * divisor of one of their most frequent values that divides all but a negligible share (and, with
 * need_evidence, could not do so by chance); 1 if none. */
uint64_t pqsimd_lattice(const uint64_t *a, int na, const uint64_t *b, int nb, int need_evidence);
/* The step and its evidence from sorted fenced back-to-back deltas, fenced spread samples and
 * unfenced increments (cal->repeat_share set): what pqsimd_calibrate measures, and what
 * `driver step` replays from a recorded host's files. */
void pqsimd_step_from(pqsimd_calibration *cal, const uint64_t *fenced, int nf, const uint64_t *spread, int ns,
                      const uint64_t *inc, int ni);

/* Selects the counter (pqsimd_timer_init) and measures it. */
void pqsimd_calibrate(pqsimd_calibration *cal);
/* The step's fields of the calibration JSON, each preceded by ", ": step, granularity (the same
 * number, the name older readers know), read_min_delta, repeat_share, step_from, step_unfenced,
 * spread_on_lattice, spread_distinct, step_deltas, timer_quantum. */
void pqsimd_step_json(FILE *out, const pqsimd_calibration *cal);
/* JSON object (no newline) naming the counter: {"name": "tsc"}, or on aarch64 e.g.
 * {"name": "cntvct", "nominal_hz": 62500000, "not_used": "pmccntr: perf_event_open ENOSYS"}. */
void pqsimd_timer_json(FILE *out);

#endif
