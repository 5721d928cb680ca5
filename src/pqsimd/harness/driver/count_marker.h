/* The two marker instructions that bound what the QEMU counting plugin (harness/qemu/count.c)
 * counts on aarch64: `hint #0x79` starts a window, `hint #0x7a` ends it. Both are unallocated
 * HINT encodings, which the architecture executes as NOPs, so a driver built with them runs
 * unchanged on real hardware. Neither marker is counted. On other ISAs the markers are empty:
 * x86 counts with callgrind, which toggles collection on a function's name instead.
 */
#ifndef PQSIMD_COUNT_MARKER_H
#define PQSIMD_COUNT_MARKER_H

#define PQSIMD_MARKER_HINT_START 0x79
#define PQSIMD_MARKER_HINT_STOP 0x7a
/* HINT #imm is 0xd503201f | imm << 5 (A64; the plugin matches these words) */
#define PQSIMD_A64_HINT(imm) (0xd503201fu | ((unsigned)(imm) << 5))

#if defined(__aarch64__)
/* "memory": the compiler keeps the counted code's loads and stores between the markers */
#define PQSIMD_COUNT_START() __asm__ volatile("hint #0x79" ::: "memory")
#define PQSIMD_COUNT_STOP() __asm__ volatile("hint #0x7a" ::: "memory")
#else
#define PQSIMD_COUNT_START() ((void)0)
#define PQSIMD_COUNT_STOP() ((void)0)
#endif

#endif
