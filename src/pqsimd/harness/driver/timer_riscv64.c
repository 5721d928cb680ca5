/* riscv64: choosing the counter (see timer_riscv64.h). Compiled on every ISA, empty elsewhere. */
#define _GNU_SOURCE
#include "timer.h"

#if defined(__riscv) && __riscv_xlen == 64
#include "counter_probe.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pqsimd_rv_timer = PQSIMD_RV_RDTIME;
static int initialised;
static char not_used[256]; /* why the better counter is not read */

/* the counter read twice around some work, SIGILL caught (counter_probe.h): 1 counting, 0 SIGILL, -1 not counting */
static int probe_rdcycle(void) {
    return pqsimd_probe_counter(pqsimd_rv_rdcycle);
}

static int try_rdcycle(void) {
    int r = probe_rdcycle();
    if (r <= 0) {
        snprintf(not_used, sizeof not_used, "rdcycle: %s",
                 r == 0 ? "raised SIGILL (Linux >= 6.6: sysctl kernel.perf_user_access=2 allows it)"
                        : "the cycle CSR does not count");
        return 0;
    }
    pqsimd_rv_timer = PQSIMD_RV_RDCYCLE;
    return 1;
}

void pqsimd_timer_init(void) {
    if (initialised) {
        return;
    }
    initialised = 1;
    const char *want = getenv("PQSIMD_TIMER");
    if (!want || !*want || strcmp(want, "auto") == 0 || strcmp(want, "rdcycle") == 0) {
        try_rdcycle();
    } else if (strcmp(want, "rdtime") != 0) {
        snprintf(not_used, sizeof not_used, "PQSIMD_TIMER: unknown counter (auto, rdcycle, rdtime)");
    }
}

const char *pqsimd_timer_name(void) {
    return pqsimd_rv_timer == PQSIMD_RV_RDCYCLE ? "rdcycle" : "rdtime";
}

void pqsimd_timer_json(FILE *out) {
    fprintf(out, "{\"name\": \"%s\", \"not_used\": \"%s\"}", pqsimd_timer_name(), not_used);
}
#else
typedef int pqsimd_timer_riscv64_unused; /* ISO C: a translation unit declares something */
#endif
