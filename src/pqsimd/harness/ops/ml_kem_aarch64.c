/* ML-KEM op table for PQClean's aarch64 implementation (hand-written NEON), compiled once per set:
 *   -DPQSIMD_NS=PQCLEAN_MLKEM512_AARCH64 -DPQSIMD_SCHEME=\"ml-kem-512\" -DPQSIMD_IMPL=\"aarch64\"
 * Its API differs from clean/avx2 (int16_t arrays instead of poly types, names set by macros of its
 * headers, the base multiplication split into point_mul + asymmetric_mul, eta1 noise only two
 * polynomials at a time), so it has its own table: the same op ids as ml_kem.c, the same inputs
 * (byte i of each buffer = 7i + its salt, so data-dependent work such as gen_a's rejection sampling
 * is the same), and ops without a counterpart are left out (data/families/ml-kem.toml says why). */
#include <stdint.h>

#include "api.h"
#include "indcpa.h"
#include "kem.h"
#include "ntt.h"
#include "params.h"
#include "poly.h"
#include "polyvec.h"

#include "optable.h"
#include "ml_kem_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_KEM_OPS)

#define SLACK 64

static uint8_t seed[KYBER_SYMBYTES];
static uint8_t coins32[KYBER_SYMBYTES];
static uint8_t coins64[2 * KYBER_SYMBYTES];
static uint8_t pk[KYBER_PUBLICKEYBYTES + SLACK];
static uint8_t sk[KYBER_SECRETKEYBYTES + SLACK];
static uint8_t ct[KYBER_CIPHERTEXTBYTES + SLACK];
static uint8_t key[KYBER_SSBYTES + SLACK];
static int16_t matrix[KYBER_K][KYBER_K][KYBER_N] __attribute__((aligned(16)));
static int16_t matrix_half[KYBER_K][KYBER_N >> 1] __attribute__((aligned(16)));
static int16_t ap[KYBER_N] __attribute__((aligned(16))), bp[KYBER_N] __attribute__((aligned(16)));
static int16_t cp[KYBER_N] __attribute__((aligned(16))), dp[KYBER_N] __attribute__((aligned(16)));

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t)(i * 7 + salt);
    }
}

static void setup_inputs(void) {
    fill(seed, sizeof seed, 1);
    fill(coins32, sizeof coins32, 2);
    fill(coins64, sizeof coins64, 3);
    gen_matrix(matrix, seed, 0);
    neon_poly_getnoise_eta1_2x(ap, bp, seed, 0, 1);
    indcpa_keypair_derand(pk, sk, coins32);
    indcpa_enc(ct, key, pk, seed);
}

static void setup_kem(void) {
    setup_inputs();
    crypto_kem_keypair_derand(pk, sk, coins64);
    crypto_kem_enc_derand(ct, key, pk, coins32);
}

static void op_gen_a(void) { gen_matrix(matrix, seed, 0); }
static void op_noise_eta2(void) { neon_poly_getnoise_eta2(ap, seed, 0); }
static void op_ntt(void) { neon_poly_ntt(ap); }
static void op_invntt(void) { neon_poly_invntt_tomont(ap); }
/* clean's polyvec_basemul_acc_montgomery(r, a, b) as indcpa.c computes it here: the cached
 * products of b (point_mul) and the accumulated products (asymmetric_mul). */
static void op_basemul(void) {
    for (int i = 0; i < KYBER_K; i++) {
        NS(_asm_point_mul_extended)(&matrix_half[i][0], &matrix[1][i][0], pre_asymmetric_table_Q1_extended,
                                    asymmetric_const);
    }
    NS(_asm_asymmetric_mul)(&matrix[0][0][0], &matrix[1][0][0], &matrix_half[0][0], asymmetric_const, ap);
}
static void op_tomsg(void) { poly_tomsg(ct, ap); }
static void op_frommsg(void) { poly_frommsg(ap, ct); }
static void op_compress(void) { poly_compress(ct, ap); }
static void op_decompress(void) { poly_decompress(ap, ct); }
static void op_vcompress(void) { polyvec_compress(ct, matrix[0]); }
static void op_vdecompress(void) { polyvec_decompress(matrix[0], ct); }
static void op_ikeypair(void) { indcpa_keypair_derand(pk, sk, coins32); }
static void op_ienc(void) { indcpa_enc(ct, key, pk, seed); }
static void op_idec(void) { indcpa_dec(key, ct, sk); }
static void op_keypair_derand(void) { crypto_kem_keypair_derand(pk, sk, coins64); }
static void op_keypair(void) { crypto_kem_keypair(pk, sk); }
static void op_encaps_derand(void) { crypto_kem_enc_derand(ct, key, pk, coins32); }
static void op_encaps(void) { crypto_kem_enc(ct, key, pk); }
static void op_decaps(void) { crypto_kem_dec(key, ct, sk); }
/* Four eta1 noise polynomials, as key generation draws them (two at a time here). */
static void op_noise_x4(void) {
    neon_poly_getnoise_eta1_2x(ap, bp, seed, 0, 1);
    neon_poly_getnoise_eta1_2x(cp, dp, seed, 2, 3);
}

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(gen_a), setup_inputs, op_gen_a},
    {PQSIMD_OP(poly_getnoise_eta2), setup_inputs, op_noise_eta2},
    {PQSIMD_OP(ntt), setup_inputs, op_ntt},
    {PQSIMD_OP(invntt), setup_inputs, op_invntt},
    {PQSIMD_OP(basemul), setup_inputs, op_basemul},
    {PQSIMD_OP(poly_tomsg), setup_inputs, op_tomsg},
    {PQSIMD_OP(poly_frommsg), setup_inputs, op_frommsg},
    {PQSIMD_OP(poly_compress), setup_inputs, op_compress},
    {PQSIMD_OP(poly_decompress), setup_inputs, op_decompress},
    {PQSIMD_OP(polyvec_compress), setup_inputs, op_vcompress},
    {PQSIMD_OP(polyvec_decompress), setup_inputs, op_vdecompress},
    {PQSIMD_OP(indcpa_keypair), setup_inputs, op_ikeypair},
    {PQSIMD_OP(indcpa_enc), setup_inputs, op_ienc},
    {PQSIMD_OP(indcpa_dec), setup_inputs, op_idec},
    {PQSIMD_OP(kem_keypair_derand), setup_kem, op_keypair_derand},
    {PQSIMD_OP(kem_keypair), setup_kem, op_keypair},
    {PQSIMD_OP(kem_encaps_derand), setup_kem, op_encaps_derand},
    {PQSIMD_OP(kem_encaps), setup_kem, op_encaps},
    {PQSIMD_OP(kem_decaps), setup_kem, op_decaps},
    {PQSIMD_OP(noise_x4), setup_inputs, op_noise_x4},
    {PQSIMD_OP(empty), NULL, op_empty},
};

static const pqsimd_sizes sizes = {.public_key = KYBER_PUBLICKEYBYTES, .secret_key = KYBER_SECRETKEYBYTES,
                                   .ciphertext = KYBER_CIPHERTEXTBYTES, .shared_secret = KYBER_SSBYTES};
static const pqsimd_api api = {.keypair = crypto_kem_keypair, .encaps = crypto_kem_enc, .decaps = crypto_kem_dec};

PQSIMD_REGISTER(ops, PQSIMD_KIND_KEM, sizes, api)
