/* Hardware counters via perf_event_open (grouped, user space only), and the core/TSC ratio.
 *
 * `harness run --counters cycles,instructions,...` opens one event group before timing. If the
 * kernel refuses (ENOENT in most VMs: no virtual PMU; EACCES/EPERM with perf_event_paranoid too
 * high), nothing is counted, the calibration JSON says why, and timing goes on unchanged. When
 * the group is open, each TSV sample line gets one extra column per event (same order as the
 * calibration JSON's "counters.events"), "NA" where the group was not on the PMU the whole time.
 */
#ifndef PQSIMD_PERF_H
#define PQSIMD_PERF_H
#include <stdint.h>
#include <stdio.h>

#define PQSIMD_MAX_COUNTERS 8

typedef struct {
    int n;                                  /* events in the group (0 when unavailable) */
    int fds[PQSIMD_MAX_COUNTERS];
    const char *names[PQSIMD_MAX_COUNTERS]; /* canonical names, e.g. "branch-misses" */
    int err;                                /* errno of the failed open, 0 if open */
    const char *failed;                     /* event whose open failed */
    char requested[256];
    uint64_t overhead[PQSIMD_MAX_COUNTERS]; /* median count of an empty start/stop */
} pqsimd_counters;

/* Opens the comma list as one group; returns 0 or the errno (c->err, c->failed say which). */
int pqsimd_counters_open(pqsimd_counters *c, const char *list);
void pqsimd_counters_close(pqsimd_counters *c);
void pqsimd_counters_start(const pqsimd_counters *c);
/* Stops the group and stores one value per event; returns 0, or -1 if the group was
 * multiplexed or not scheduled (values unusable). */
int pqsimd_counters_stop(const pqsimd_counters *c, uint64_t *values);
/* Median counts of an empty start/stop pair, into c->overhead. */
void pqsimd_counters_calibrate(pqsimd_counters *c);
/* JSON object (no newline): {"requested": [...], "available": bool, ...}. */
void pqsimd_counters_json(FILE *out, const pqsimd_counters *c);
/* Extra TSV columns of one sample ("\t<v>" per event or "\tNA"). */
void pqsimd_counters_tsv(FILE *out, const pqsimd_counters *c, const uint64_t *values, int valid);

/* Core cycles per TSC tick, from a chain of dependent register adds (one core cycle each)
 * timed with the TSC: median and best of several trials. Works without any PMU access. */
void pqsimd_core_per_tsc(double *median, double *best);

#endif
