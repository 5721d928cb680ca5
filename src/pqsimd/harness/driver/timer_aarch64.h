/* aarch64: the best counter this process may read, chosen once by pqsimd_timer_init
 * (timer_aarch64.c), in this order:
 *   pmccntr         the PMU cycle counter read with `mrs pmccntr_el0`, when perf_event_open grants
 *                   user access to a cycles event on it (Linux >= 5.17: sysctl
 *                   kernel.perf_user_access=1); read through the perf mmap page's seqlock, so a
 *                   context switch (the kernel saves and restores the counter) is accounted for
 *   perf-read       the same cycles event read with read(2): exact, but a system call per read
 *                   (both count this thread's user-mode cycles: time in the kernel, e.g. an
 *                   interrupt during a sample, is not in them, unlike the TSC or cntvct)
 *   cntvct          the generic timer (cntvct_el0, always readable; cntfrq_el0 Hz: 24 MHz on
 *                   Apple M1, 54 MHz on a Raspberry Pi 4, 1 GHz from Armv8.6; 62.5 MHz in qemu)
 * PQSIMD_TIMER=pmccntr|perf-read|cntvct asks for one; PQSIMD_TIMER=pmccntr-direct reads
 * pmccntr_el0 without perf, for kernels where a module enabled EL0 access. A counter that is not
 * usable (no PMU, no access, SIGILL, not counting) is never fatal: the next one is used, and the
 * calibration JSON says which one is read and why the better ones are not.
 */
#ifndef PQSIMD_TIMER_AARCH64_H
#define PQSIMD_TIMER_AARCH64_H
#include <linux/perf_event.h>
#include <stdint.h>

enum { PQSIMD_A64_CNTVCT, PQSIMD_A64_PMCCNTR, PQSIMD_A64_PMCCNTR_DIRECT, PQSIMD_A64_PERF_READ };
extern int pqsimd_a64_timer;
extern volatile struct perf_event_mmap_page *pqsimd_a64_perf_page;

void pqsimd_timer_init(void);
const char *pqsimd_timer_name(void);
uint64_t pqsimd_a64_perf_read(void);

static inline uint64_t pqsimd_a64_cntvct(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

static inline uint64_t pqsimd_a64_pmccntr(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, pmccntr_el0" : "=r"(v));
    return v;
}

/* The perf event's value: the kernel's offset plus the live counter (the mmap page protocol). */
static inline uint64_t pqsimd_a64_pmccntr_user(void) {
    volatile struct perf_event_mmap_page *pc = pqsimd_a64_perf_page;
    uint32_t seq;
    uint64_t count;
    do {
        seq = pc->lock;
        __asm__ volatile("" ::: "memory");
        count = (uint64_t)pc->offset;
        if (pc->index) {
            unsigned shift = 64 - pc->pmc_width; /* sign-extend a narrower counter */
            count += (uint64_t)((int64_t)(pqsimd_a64_pmccntr() << shift) >> shift);
        }
        __asm__ volatile("" ::: "memory");
    } while (pc->lock != seq);
    return count;
}

static inline uint64_t pqsimd_clock_raw(void) {
    switch (pqsimd_a64_timer) {
    case PQSIMD_A64_PMCCNTR: return pqsimd_a64_pmccntr_user();
    case PQSIMD_A64_PMCCNTR_DIRECT: return pqsimd_a64_pmccntr();
    case PQSIMD_A64_PERF_READ: return pqsimd_a64_perf_read();
    default: return pqsimd_a64_cntvct();
    }
}

/* isb before: earlier instructions complete before the read; after: later ones wait for it. */
static inline uint64_t pqsimd_clock_start(void) {
    __asm__ volatile("isb" ::: "memory");
    uint64_t v = pqsimd_clock_raw();
    __asm__ volatile("isb" ::: "memory");
    return v;
}

static inline uint64_t pqsimd_clock_stop(void) {
    return pqsimd_clock_start();
}

#define PQSIMD_ADD_CHAIN_100(x, y) __asm__ volatile(".rept 100\n\tadd %0, %0, %1\n\t.endr" : "+r"(x) : "r"(y))

#endif
