/* x86-64: the TSC, fenced (included by timer.h). */
#ifndef PQSIMD_TIMER_X86_64_H
#define PQSIMD_TIMER_X86_64_H
#include <stdint.h>

/* lfence before and after rdtsc: earlier instructions retire first, later ones wait. */
static inline uint64_t pqsimd_clock_start(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* rdtscp waits for the timed code to finish; the trailing lfence keeps later code out. */
static inline uint64_t pqsimd_clock_stop(void) {
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* Unfenced: for the step only, where read cost must not hide the counter's step. */
static inline uint64_t pqsimd_clock_raw(void) {
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static inline void pqsimd_timer_init(void) {}
static inline const char *pqsimd_timer_name(void) { return "tsc"; }

/* Golden Cove folds add-immediate chains at rename, so the addend is a register. */
#define PQSIMD_ADD_CHAIN_100(x, y) __asm__ volatile(".rept 100\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(y))

#endif
