/* One probe for a user-mode cycle counter that may trap (aarch64 pmccntr_el0, riscv64 rdcycle): read it
 * twice around 10,000 dependent adds with SIGILL caught, since the kernel decides whether user code may
 * read it. Included by the ISA's timer_<isa>.c after timer.h (PQSIMD_ADD_CHAIN_100). */
#ifndef PQSIMD_COUNTER_PROBE_H
#define PQSIMD_COUNTER_PROBE_H

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

static sigjmp_buf pqsimd_probe_env;

static void pqsimd_probe_on_sigill(int sig) {
    (void)sig;
    siglongjmp(pqsimd_probe_env, 1);
}

/* 1: readable and counting; 0: SIGILL; -1: readable but not counting. */
static int pqsimd_probe_counter(uint64_t (*read)(void)) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pqsimd_probe_on_sigill;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGILL, &sa, &old);
    volatile int result = 0;
    if (sigsetjmp(pqsimd_probe_env, 1) == 0) {
        uint64_t a = read(), x = 1, y = 3;
        for (int i = 0; i < 100; i++) {
            PQSIMD_ADD_CHAIN_100(x, y);
        }
        uint64_t b = read();
        result = (b != a && x) ? 1 : -1;
    }
    sigaction(SIGILL, &old, NULL);
    return result;
}

#endif
