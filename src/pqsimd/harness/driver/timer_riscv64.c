/* riscv64: choosing the counter (see timer_riscv64.h). Compiled on every ISA, empty elsewhere. */
#define _GNU_SOURCE
#include "timer.h"

#if defined(__riscv) && __riscv_xlen == 64
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pqsimd_rv_timer = PQSIMD_RV_RDTIME;
static int initialised;
static char not_used[256]; /* why the better counter is not read */

static sigjmp_buf probe_env;

static void on_sigill(int sig) {
    (void)sig;
    siglongjmp(probe_env, 1);
}

/* Reads the cycle CSR twice around some work, with SIGILL caught (user access not enabled).
 * 1: readable and counting; 0: SIGILL; -1: readable but not counting. */
static int probe_rdcycle(void) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigill;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGILL, &sa, &old);
    volatile int result = 0;
    if (sigsetjmp(probe_env, 1) == 0) {
        uint64_t a = pqsimd_rv_rdcycle(), x = 1, y = 3;
        for (int i = 0; i < 100; i++) {
            PQSIMD_ADD_CHAIN_100(x, y);
        }
        uint64_t b = pqsimd_rv_rdcycle();
        result = (b != a && x) ? 1 : -1;
    }
    sigaction(SIGILL, &old, NULL);
    return result;
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
