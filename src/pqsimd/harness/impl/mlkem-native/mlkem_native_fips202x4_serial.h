/* mlkem-native's 4-way FIPS 202 interface as four calls of PQClean's scalar Keccak: the portable
 * side of the 4-way Keccak switch. */
#ifndef PQSIMD_MLKEM_NATIVE_FIPS202X4_SERIAL_H
#define PQSIMD_MLKEM_NATIVE_FIPS202X4_SERIAL_H
#include <stddef.h>
#include <stdint.h>

#include "fips202.h"

typedef struct {
    shake128ctx lane[4];
} mlk_shake128x4ctx;

#define mlk_shake128x4_init(ctx) ((void)(ctx))

static inline void mlk_shake128x4_absorb_once(mlk_shake128x4ctx *c, const uint8_t *in0, const uint8_t *in1,
                                              const uint8_t *in2, const uint8_t *in3, size_t inlen) {
    shake128_absorb(&c->lane[0], in0, inlen);
    shake128_absorb(&c->lane[1], in1, inlen);
    shake128_absorb(&c->lane[2], in2, inlen);
    shake128_absorb(&c->lane[3], in3, inlen);
}

static inline void mlk_shake128x4_squeezeblocks(uint8_t *out0, uint8_t *out1, uint8_t *out2, uint8_t *out3,
                                                size_t nblocks, mlk_shake128x4ctx *c) {
    shake128_squeezeblocks(out0, nblocks, &c->lane[0]);
    shake128_squeezeblocks(out1, nblocks, &c->lane[1]);
    shake128_squeezeblocks(out2, nblocks, &c->lane[2]);
    shake128_squeezeblocks(out3, nblocks, &c->lane[3]);
}

static inline void mlk_shake128x4_release(mlk_shake128x4ctx *c) {
    for (int i = 0; i < 4; i++) {
        shake128_ctx_release(&c->lane[i]);
    }
}

static inline void mlk_shake256x4(uint8_t *out0, uint8_t *out1, uint8_t *out2, uint8_t *out3, size_t outlen,
                                  const uint8_t *in0, const uint8_t *in1, const uint8_t *in2, const uint8_t *in3,
                                  size_t inlen) {
    shake256(out0, outlen, in0, inlen);
    shake256(out1, outlen, in1, inlen);
    shake256(out2, outlen, in2, inlen);
    shake256(out3, outlen, in3, inlen);
}
#endif
