/* A probe op table for PQClean's ML-KEM `aarch64` implementation (hand-written NEON), for
 * bench/aarch64_probe.py only: not a family's op table yet. That implementation's API differs
 * from clean/avx2 (int16_t arrays instead of poly types, neon_* names, the base multiplication
 * split into point_mul + asymmetric_mul), so only ops with a one-to-one counterpart in
 * harness/ops/ml_kem.c are here, under the same op ids and with the same inputs.
 *   -DPQSIMD_NS=PQCLEAN_MLKEM512_AARCH64 -DPQSIMD_SCHEME=\"ml-kem-512\" -DPQSIMD_IMPL=\"aarch64\" */
#include <stdint.h>

#include "api.h"
#include "indcpa.h"
#include "kem.h"
#include "params.h"
#include "poly.h"
#include "pqsimd.h"

#define PQSIMD_CAT_(a, b) a##_##b
#define PQSIMD_CAT(a, b) PQSIMD_CAT_(a, b)
#define STATIC_NAME(f) PQSIMD_CAT(f, PQSIMD_NS)

static uint8_t seed[KYBER_SYMBYTES], coins32[KYBER_SYMBYTES], coins64[2 * KYBER_SYMBYTES];
static uint8_t pk[KYBER_PUBLICKEYBYTES], sk[KYBER_SECRETKEYBYTES], ct[KYBER_CIPHERTEXTBYTES], key[KYBER_SSBYTES];
static int16_t matrix[KYBER_K][KYBER_K][KYBER_N];
static int16_t ap[KYBER_N];

/* The inputs of harness/ops/ml_kem.c (byte i of each buffer = 7i + its salt), so that ops whose
 * work depends on the data (gen_a's rejection sampling) do the same work in both tables. */
static void setup(void) {
    for (unsigned i = 0; i < sizeof coins64; i++) {
        coins64[i] = (uint8_t)(i * 7 + 3);
        if (i < KYBER_SYMBYTES) {
            seed[i] = (uint8_t)(i * 7 + 1);
            coins32[i] = (uint8_t)(i * 7 + 2);
        }
    }
    gen_matrix(matrix, seed, 0);
    for (int i = 0; i < KYBER_N; i++) {
        ap[i] = (int16_t)((i * 37) % KYBER_Q); /* reduced coefficients (the NTTs' work does not depend on them) */
    }
    crypto_kem_keypair_derand(pk, sk, coins64);
    crypto_kem_enc_derand(ct, key, pk, coins32);
}

static void op_gen_a(void) { gen_matrix(matrix, seed, 0); }
static void op_ntt(void) { neon_poly_ntt(ap); }
static void op_invntt(void) { neon_poly_invntt_tomont(ap); }
static void op_keypair_derand(void) { crypto_kem_keypair_derand(pk, sk, coins64); }
static void op_encaps_derand(void) { crypto_kem_enc_derand(ct, key, pk, coins32); }
static void op_decaps(void) { crypto_kem_dec(key, ct, sk); }
__attribute__((noinline, aligned(64))) static void op_empty(void) { __asm__ volatile("" ::: "memory"); }

static const pqsimd_op ops[] = {
    {"gen_a", setup, op_gen_a},
    {"ntt", setup, op_ntt},
    {"invntt", setup, op_invntt},
    {"kem_keypair_derand", setup, op_keypair_derand},
    {"kem_encaps_derand", setup, op_encaps_derand},
    {"kem_decaps", setup, op_decaps},
    {"empty", 0, op_empty},
};

static pqsimd_scheme STATIC_NAME(scheme) = {
    .name = PQSIMD_SCHEME,
    .impl = PQSIMD_IMPL,
    .ops = ops,
    .n_ops = (int)(sizeof ops / sizeof ops[0]),
    .kind = PQSIMD_KIND_KEM,
    .sizes = {.public_key = KYBER_PUBLICKEYBYTES, .secret_key = KYBER_SECRETKEYBYTES,
              .ciphertext = KYBER_CIPHERTEXTBYTES, .shared_secret = KYBER_SSBYTES},
    .api = {.keypair = crypto_kem_keypair, .encaps = crypto_kem_enc, .decaps = crypto_kem_dec},
};

__attribute__((constructor)) static void STATIC_NAME(register_scheme)(void) {
    pqsimd_register(&STATIC_NAME(scheme));
}
