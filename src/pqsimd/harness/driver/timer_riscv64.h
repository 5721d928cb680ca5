/* riscv64: the counter this process may read, chosen once by pqsimd_timer_init (timer_riscv64.c):
 *   rdcycle   the cycle CSR (Zicntr), when user mode may read it: Linux >= 6.6 traps it unless
 *             sysctl kernel.perf_user_access=2 (legacy), so a SIGILL on the first read selects
 *   rdtime    the time CSR (always readable from user mode on Linux; its rate is the platform's
 *             timebase, e.g. 10 MHz on QEMU's virt board, 24 MHz on a SpacemiT K1: many cycles a tick)
 * PQSIMD_TIMER=rdcycle|rdtime asks for one. Under qemu-user both read the host's clock: nothing an
 * emulator reads is a time of the guest code (pqsimd never times under emulation).
 * RISC-V has no instruction that waits for earlier instructions to complete before a CSR read (no
 * lfence/isb): `fence rw,rw` orders the read with memory accesses, which is the most the ISA offers.
 */
#ifndef PQSIMD_TIMER_RISCV64_H
#define PQSIMD_TIMER_RISCV64_H
#include <stdint.h>

enum { PQSIMD_RV_RDTIME, PQSIMD_RV_RDCYCLE };
extern int pqsimd_rv_timer;

void pqsimd_timer_init(void);
const char *pqsimd_timer_name(void);

static inline uint64_t pqsimd_rv_rdcycle(void) {
    uint64_t v;
    __asm__ volatile("rdcycle %0" : "=r"(v));
    return v;
}

static inline uint64_t pqsimd_rv_rdtime(void) {
    uint64_t v;
    __asm__ volatile("rdtime %0" : "=r"(v));
    return v;
}

static inline uint64_t pqsimd_clock_raw(void) {
    return pqsimd_rv_timer == PQSIMD_RV_RDCYCLE ? pqsimd_rv_rdcycle() : pqsimd_rv_rdtime();
}

static inline uint64_t pqsimd_clock_start(void) {
    __asm__ volatile("fence rw, rw" ::: "memory");
    uint64_t v = pqsimd_clock_raw();
    __asm__ volatile("fence rw, rw" ::: "memory");
    return v;
}

static inline uint64_t pqsimd_clock_stop(void) {
    return pqsimd_clock_start();
}

#define PQSIMD_ADD_CHAIN_100(x, y) __asm__ volatile(".rept 100\n\tadd %0, %0, %1\n\t.endr" : "+r"(x) : "r"(y))

#endif
