/* mlkem-native's FIPS 202 interface on PQClean's common/fips202.c (the scalar Keccak). */
#ifndef PQSIMD_MLKEM_NATIVE_FIPS202_H
#define PQSIMD_MLKEM_NATIVE_FIPS202_H
#include "fips202.h" /* PQClean common/ */
#define mlk_shake128ctx shake128ctx
#define mlk_shake128_init(ctx) ((void)(ctx)) /* PQClean allocates its state in absorb */
#define mlk_shake128_absorb_once shake128_absorb
#define mlk_shake128_squeezeblocks shake128_squeezeblocks
#define mlk_shake128_release shake128_ctx_release
#define mlk_shake256 shake256
#define mlk_sha3_256 sha3_256
#define mlk_sha3_512 sha3_512
#endif
