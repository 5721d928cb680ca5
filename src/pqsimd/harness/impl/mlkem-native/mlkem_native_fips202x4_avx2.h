/* mlkem-native's 4-way FIPS 202 interface on PQClean avx2's fips202x4.c (XKCP's keccak4x AVX2
 * permutation): the native side of the 4-way Keccak switch. The build sets
 *   PQSIMD_KECCAK_X4_HEADER  the absolute path of that fips202x4.h
 *   PQSIMD_KECCAK_X4_NS      its namespace (e.g. PQCLEAN_MLKEM768_AVX2) */
#ifndef PQSIMD_MLKEM_NATIVE_FIPS202X4_AVX2_H
#define PQSIMD_MLKEM_NATIVE_FIPS202X4_AVX2_H
#include PQSIMD_KECCAK_X4_HEADER

#define PQSIMD_X4_CAT_(a, b) a##_##b
#define PQSIMD_X4_CAT(a, b) PQSIMD_X4_CAT_(a, b)
#define mlk_shake128x4ctx keccakx4_state
#define mlk_shake128x4_init(ctx) ((void)(ctx))
#define mlk_shake128x4_absorb_once PQSIMD_X4_CAT(PQSIMD_KECCAK_X4_NS, shake128x4_absorb_once)
#define mlk_shake128x4_squeezeblocks PQSIMD_X4_CAT(PQSIMD_KECCAK_X4_NS, shake128x4_squeezeblocks)
#define mlk_shake128x4_release(ctx) ((void)(ctx))
#define mlk_shake256x4 PQSIMD_X4_CAT(PQSIMD_KECCAK_X4_NS, shake256x4)
#endif
