/* ML-KEM op table, compiled once per parameter set with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_MLKEM512_CLEAN -DPQSIMD_SCHEME=\"ml-kem-512\" -DPQSIMD_IMPL=\"clean\"
 *   [-DMLKEM_NOISE_4X] -I<impl dir> -I<common>
 * MLKEM_NOISE_4X comes from data/families/ml-kem.toml: the implementations with a 4-way sampler.
 * Inputs follow pq-crystals test_speed.c: fixed seed, buffers updated in place. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "indcpa.h"
#include "kem.h"
#include "params.h"
#include "poly.h"
#include "polyvec.h"

#include "api.h"
#include "optable.h"
#include "ml_kem_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_KEM_OPS)


/* avx2 polyvec_compress writes 2 bytes past the ciphertext and polyvec_decompress reads 12:
 * every byte buffer carries slack. */
#define SLACK 64

static uint8_t seed[KYBER_SYMBYTES];
static uint8_t coins32[KYBER_SYMBYTES];
static uint8_t coins64[2 * KYBER_SYMBYTES];
static uint8_t pk[KYBER_PUBLICKEYBYTES + SLACK];
static uint8_t sk[KYBER_SECRETKEYBYTES + SLACK];
static uint8_t ct[KYBER_CIPHERTEXTBYTES + SLACK];
static uint8_t key[KYBER_SSBYTES + SLACK];
static polyvec matrix[KYBER_K]; /* poly is a union with __m256i in avx2: alignment comes with the type */
static poly ap, bp, cp, dp;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    pqsimd_fill(b, n, salt);
}

static void setup_inputs(void) {
    fill(seed, sizeof seed, 1);
    fill(coins32, sizeof coins32, 2);
    fill(coins64, sizeof coins64, 3);
    NS(gen_matrix)(matrix, seed, 0);
    NS(poly_getnoise_eta1)(&ap, seed, 0);
    NS(indcpa_keypair_derand)(pk, sk, coins32);
    NS(indcpa_enc)(ct, key, pk, seed);
}

static void setup_kem(void) {
    setup_inputs();
    NS(crypto_kem_keypair_derand)(pk, sk, coins64);
    NS(crypto_kem_enc_derand)(ct, key, pk, coins32);
}

static void op_gen_a(void) { NS(gen_matrix)(matrix, seed, 0); }
static void op_noise_eta1(void) { NS(poly_getnoise_eta1)(&ap, seed, 0); }
static void op_noise_eta2(void) { NS(poly_getnoise_eta2)(&ap, seed, 0); }
static void op_ntt(void) { NS(poly_ntt)(&ap); }
static void op_invntt(void) { NS(poly_invntt_tomont)(&ap); }
static void op_basemul(void) { NS(polyvec_basemul_acc_montgomery)(&ap, &matrix[0], &matrix[1]); }
static void op_tomsg(void) { NS(poly_tomsg)(ct, &ap); }
static void op_frommsg(void) { NS(poly_frommsg)(&ap, ct); }
static void op_compress(void) { NS(poly_compress)(ct, &ap); }
static void op_decompress(void) { NS(poly_decompress)(&ap, ct); }
static void op_vcompress(void) { NS(polyvec_compress)(ct, &matrix[0]); }
static void op_vdecompress(void) { NS(polyvec_decompress)(&matrix[0], ct); }
static void op_ikeypair(void) { NS(indcpa_keypair_derand)(pk, sk, coins32); }
static void op_ienc(void) { NS(indcpa_enc)(ct, key, pk, seed); }
static void op_idec(void) { NS(indcpa_dec)(key, ct, sk); }
static void op_keypair_derand(void) { NS(crypto_kem_keypair_derand)(pk, sk, coins64); }
static void op_keypair(void) { NS(crypto_kem_keypair)(pk, sk); }
static void op_encaps_derand(void) { NS(crypto_kem_enc_derand)(ct, key, pk, coins32); }
static void op_encaps(void) { NS(crypto_kem_enc)(ct, key, pk); }
static void op_decaps(void) { NS(crypto_kem_dec)(key, ct, sk); }

/* Four eta1 noise polynomials, as key generation draws them. */
static void op_noise_x4(void) {
#ifdef MLKEM_NOISE_4X
    NS(poly_getnoise_eta1_4x)(&ap, &bp, &cp, &dp, seed, 0, 1, 2, 3);
#else
    NS(poly_getnoise_eta1)(&ap, seed, 0);
    NS(poly_getnoise_eta1)(&bp, seed, 1);
    NS(poly_getnoise_eta1)(&cp, seed, 2);
    NS(poly_getnoise_eta1)(&dp, seed, 3);
#endif
}

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(gen_a), setup_inputs, op_gen_a},
    {PQSIMD_OP(poly_getnoise_eta1), setup_inputs, op_noise_eta1},
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
static const pqsimd_api api = {.keypair = NS(crypto_kem_keypair), .encaps = NS(crypto_kem_enc), .decaps = NS(crypto_kem_dec)};

/* What [ct.secret] of data/families/ml-kem.toml names per op. */
static const pqsimd_buffer buffers[] = {
    PQSIMD_BUFFER(seed), PQSIMD_BUFFER(coins32), PQSIMD_BUFFER(coins64), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk),
    PQSIMD_BUFFER(ct),   PQSIMD_BUFFER(key),     PQSIMD_BUFFER(matrix),  PQSIMD_BUFFER(ap),
};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_KEM, sizes, api, buffers)
