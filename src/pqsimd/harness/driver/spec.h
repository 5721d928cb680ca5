/* A job spec: what one driver process times. Plain text, one directive per line, written by
 * pqsimd/run/spec.py:
 *
 *   design paired|separate
 *   scheme ml-kem-512
 *   variant /study/bin/ref.gcc-12.ml-kem.so (one line per variant, in index order)
 *   layouts 2                               (optional: the variants are builds x 2 layouts, build-major;
 *                                           each spin times one layout of every build: spin mod 2)
 *   stack 0 528 ...                         (optional, after the variants: per variant, bytes of stack
 *                                           below the driver's frame before its calls: a multiple of 16)
 *   batch_of 0 0 2 2 0 0                    (optional, after the variants: per variant, the variant whose
 *                                           auto batch it takes: layout copies and A/A duplicates)
 *   cpu 1                                   (-1: do not pin)
 *   seed 1234                               (paired: the per-spin order)
 *   warmup_ns 50000                         (paired: untimed warm-up before each variant's reps)
 *   target 1000                             (auto batching: ticks per sample; at least 1,000 clock steps)
 *   counters cycles,instructions            (optional perf_event_open group)
 *   timer_quantum 26                        (optional: every clock read rounded down to a multiple of it)
 *   op NAME SPINS REPS WARMUP BATCH... [nowarm]   (one batch per variant: a number, "auto", or
 *                                           "-": that variant does not time this op; nowarm:
 *                                           skip the paired warm-up, the op is longer than it)
 *
 * Values are percent-encoded (%XX for any byte outside letters, digits and "/._+-"), so a path
 * with spaces, quotes or non-ASCII bytes is one word. No limit on the number of variants, ops or
 * words per line.
 */
#ifndef PQSIMD_SPEC_H
#define PQSIMD_SPEC_H
#include <stdint.h>
#include <stdio.h>

#include "runner.h"

typedef struct {
    char *name;
    int spins, reps, warmup;
    int nowarm;      /* paired: no untimed warm-up (one call of the op outlasts it anyway) */
    uint64_t *batch; /* one per variant: 0 = auto, PQSIMD_NOT_TIMED = "-" */
} pqsimd_spec_op;

typedef struct {
    int design;
    char *scheme;
    int n_variants;
    char **variants;
    int layouts;     /* copies of each build, consecutive in `variants` (1: no layouts) */
    uint64_t *stack; /* per variant: stack offset in bytes (NULL: none) */
    int *batch_of;   /* per variant: whose auto batch it takes (NULL: its own) */
    int cpu;
    uint64_t seed;
    double warmup_ns;
    uint64_t target;
    char *counters;
    uint64_t timer_quantum; /* 0: the clock as it is */
    int n_ops;
    pqsimd_spec_op *ops;
} pqsimd_spec;

/* Returns 0, or prints "driver: spec line N: ..." and returns 2. */
int pqsimd_read_spec(FILE *in, pqsimd_spec *spec);

#endif
