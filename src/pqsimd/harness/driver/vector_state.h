/* Clearing vector state between variants, outside the timed region. On x86-64, hand-written AVX2
 * that returns with dirty upper YMM halves makes the next SSE code pay a transition penalty (or a
 * false dependency): without a reset, a variant would be timed in the state the one before left.
 * vzeroupper is an AVX instruction, so it runs only where the CPU has AVX; elsewhere nothing. */
#ifndef PQSIMD_VECTOR_STATE_H
#define PQSIMD_VECTOR_STATE_H

#if defined(__x86_64__) || defined(__i386__)
static inline void pqsimd_clear_vector_state(void) {
    static int has_avx = -1;
    if (has_avx < 0) {
        __builtin_cpu_init();
        has_avx = __builtin_cpu_supports("avx") ? 1 : 0;
    }
    if (has_avx) {
        __asm__ volatile("vzeroupper" ::: "memory");
    }
}
#else
static inline void pqsimd_clear_vector_state(void) {}
#endif

#endif
