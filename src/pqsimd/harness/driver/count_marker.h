/* The two marker instructions that bound what the QEMU counting plugin (harness/qemu/count.c)
 * counts under emulation: a start marker opens a window, a stop marker closes it; neither is
 * counted. Each is an instruction the architecture executes as a no-op, so a driver built with them
 * runs unchanged on real hardware, and one a compiler never emits otherwise (the tests disassemble
 * every build to show it). The plugin learns their encodings from data/isas.toml ([isa.<name>.plugin]
 * start, stop); tests/test_riscv64.py and tests/test_aarch64.py assemble these lines and compare.
 *   aarch64  `hint #0x79`, `hint #0x7a`: unallocated HINT space (0xd503201f | imm << 5)
 *   riscv64  `slti zero, zero, 0x79`, `slti zero, zero, 0x7a`: SLTI with rd = x0 is a HINT the
 *            unprivileged ISA designates for custom use (no standard extension will take it; the
 *            standard HINTs, e.g. Zihintntl's add x0 and Zicbop's ori x0, are elsewhere)
 *   x86-64   `nopl 0x79(%rax)`, `nopl 0x7a(%rax)` (0f 1f 40 79/7a): multi-byte NOPs whose displacement
 *            no assembler's padding uses (padding NOPs have displacement 0). Callgrind does not need
 *            them (it toggles collection on pqsimd_measure); qemu-x86_64 with the plugin does (the
 *            hazards metric). They run once per pqsimd_measure call, outside the timed sample loop.
 */
#ifndef PQSIMD_COUNT_MARKER_H
#define PQSIMD_COUNT_MARKER_H

/* "memory": the compiler keeps the counted code's loads and stores between the markers */
#if defined(__aarch64__)
#define PQSIMD_COUNT_START() __asm__ volatile("hint #0x79" ::: "memory")
#define PQSIMD_COUNT_STOP() __asm__ volatile("hint #0x7a" ::: "memory")
#elif defined(__riscv)
#define PQSIMD_COUNT_START() __asm__ volatile("slti zero, zero, 0x79" ::: "memory")
#define PQSIMD_COUNT_STOP() __asm__ volatile("slti zero, zero, 0x7a" ::: "memory")
#elif defined(__x86_64__)
#define PQSIMD_COUNT_START() __asm__ volatile("nopl 0x79(%%rax)" ::: "memory")
#define PQSIMD_COUNT_STOP() __asm__ volatile("nopl 0x7a(%%rax)" ::: "memory")
#else
#define PQSIMD_COUNT_START() ((void)0)
#define PQSIMD_COUNT_STOP() ((void)0)
#endif

#endif
