/* The runner: one sample loop for every op, its calibration, and the two designs.
 *
 * separate: one variant per process (the paper's design): per op, warmup spins then spins of R
 *           back-to-back samples.
 * paired:   every variant of the job in one process: per op and spin, the variants in a seeded
 *           random order, each preceded by an untimed warm-up of that op, then its R samples.
 *
 * Layouts: with L > 1 the variants are builds x L relinked copies (build-major); the order is drawn
 * over builds and spin s times copy s mod L of each, so a job averages over L layouts at no extra
 * cost. Each copy runs with its own stack offset, and the vector state is cleared (vzeroupper)
 * before every build's turn, outside the timed region: what ran before leaves no dirty upper
 * halves behind.
 */
#ifndef PQSIMD_RUNNER_H
#define PQSIMD_RUNNER_H
#include <stdint.h>
#include <stdio.h>

#include "../pqsimd.h"
#include "perf.h"
#include "timer.h"

/* A batch of "-" in the spec: the variant does not time this op (its op table lacks it). */
#define PQSIMD_NOT_TIMED UINT64_MAX

enum { PQSIMD_SEPARATE = 0, PQSIMD_PAIRED = 1 };

/* One op of the job as every loaded variant provides it (ops[v] NULL: not timed in that variant). */
typedef struct {
    const char *name;
    int spins, reps, warmup;
    int nowarm;            /* paired: skip the untimed warm-up */
    uint64_t *batch;       /* per variant: calls per sample; 0 = choose (auto) */
    const pqsimd_op **ops; /* per variant */
} pqsimd_job_op;

typedef struct {
    int design;
    int n_variants;
    int layouts;              /* copies per build (1: none); n_variants is a multiple of it */
    const uint64_t *stack;    /* per variant: bytes of stack below the runner's frame (NULL: none) */
    const int *batch_of;      /* per variant: the variant whose auto batch it takes (NULL: its own) */
    const char *const *paths; /* per variant: its shared object (named if the process dies) */
    void (*const *null_calls)(void); /* per variant: its empty function (null samples; NULL: the driver's own) */
    uint64_t order_state;   /* paired: the per-spin order's generator (splitmix64), seeded by the job, continued across ops */
    double warm_ticks;      /* paired: untimed warm-up before each variant's samples */
    uint64_t target;        /* auto batching: ticks a sample should last at least */
    double overhead;        /* read overhead through the sample loop (ticks) */
    pqsimd_counters *counters; /* NULL unless a counter group is open */
} pqsimd_runner;

/* Calls op k times. Not inlined, so callgrind can toggle collection on exactly this; on aarch64
 * the loop sits between the QEMU plugin's marker instructions (count_marker.h). */
void pqsimd_measure(const pqsimd_op *op, uint64_t k);

/* Timer calibration with the read overhead taken through the runner's own sample loop. */
void pqsimd_calibrate_runner(pqsimd_calibration *cal);
/* The batch loop's own cost per call (loop + indirect call + return of an empty function). */
double pqsimd_call_overhead(double overhead);
/* Smallest k whose sample lasts at least `target` ticks; *median_raw (if not NULL) gets the median
 * sample of that k, so a probe need not time it again. */
uint64_t pqsimd_auto_batch(const pqsimd_op *op, uint64_t target, double overhead, uint64_t *median_raw);

/* A sample of n clock steps is known to +-1/n: samples should span at least 1,000 steps (0.1%),
 * whatever the step (1 tick, 2, or 26 on some TSCs; 30-145 core cycles for a slow generic timer).
 * Auto batching aims at twice that: a VM's jobs read the same op up to 2x faster than the probe that
 * sized them did (machine states; measured on machine C), and such a job's samples still span 1,000. */
#define PQSIMD_MIN_CLOCK_STEPS 1000
#define PQSIMD_AIM_CLOCK_STEPS 2000
uint64_t pqsimd_batch_target(uint64_t requested, uint64_t step);
/* Median raw ticks of 9 samples of k calls. */
uint64_t pqsimd_median_sample(const pqsimd_op *op, uint64_t k);

/* Times one op in the runner's design; TSV rows "op variant spin rep pos batch raw null [counters]",
 * null being the same moment's sample of `batch` calls of the variant's empty function. */
void pqsimd_run_op(FILE *out, pqsimd_runner *r, pqsimd_job_op *op);

#endif
