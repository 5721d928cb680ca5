/* ML-KEM op table on mlkem-native, both of its APIs: the copy liboqs 0.13.0 vendors (crate oqs-sys) and a
 * v2 checkout the user brings (--sources mlkem-native=PATH), told apart by PQSIMD_MLKEM_NATIVE_API, which
 * our configuration of each sets (mlkem_native_config.h: 1, mlkem_native_v2_config.h: 2). Compiled once per
 * parameter set with that build's defines (MLKEM_K or MLK_CONFIG_PARAMETER_SET, the namespace prefix,
 * MLK_CONFIG_FILE; see data/families/ml-kem.toml) and -DPQSIMD_SCHEME=\"ml-kem-768\" -DPQSIMD_IMPL=\"...\".
 * v2: the matrix is one mlk_polymat, the IND-CPA functions return a status and take a context argument
 * (dropped unless MLK_CONFIG_CONTEXT_PARAMETER, which pqsimd leaves unset).
 *
 * The op ids are ops/ml_kem.c's, and each op calls mlkem-native's own function for the same work
 * on the same inputs (test_speed's fixed seeds, buffers updated in place). An op mlkem-native has
 * no function for is left out of the table, never imitated: the gate records which ops a build
 * has, the family TOML says why one is absent ([implementations.mlkem-native.absent]).
 * (PQSIMD_NS is the set's mlkem-native namespace, for optable.h's STATIC_NAME; NS() is unused.) */
#include <stdint.h>
#include <string.h>

#include "indcpa.h"
#include "kem.h"
#include "poly.h"
#include "poly_k.h"

#include "ops/optable.h"
#include "ops/ml_kem_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_KEM_OPS)

#define KEM(f) MLK_NAMESPACE_K(f)

#if PQSIMD_MLKEM_NATIVE_API == 2
#define CTX 0
#define MATRIX_ARG (&matrix)
#define MATRIX_ROW(i) (&matrix.vec[i])
#define INDCPA(call, ...) (rc |= call(__VA_ARGS__, CTX))
static mlk_polymat matrix; /* the types bring the backend's alignment */
#elif PQSIMD_MLKEM_NATIVE_API == 1
#define MATRIX_ARG matrix
#define MATRIX_ROW(i) (&matrix[i])
#define INDCPA(call, ...) call(__VA_ARGS__)
static mlk_polyvec matrix[MLKEM_K]; /* the types bring the backend's alignment */
#else
#error "PQSIMD_MLKEM_NATIVE_API is not set: build with pqsimd's mlkem-native configuration (MLK_CONFIG_FILE)"
#endif

/* Byte buffers carry slack, as in ops/ml_kem.c. */
#define SLACK 64

static uint8_t seed[MLKEM_SYMBYTES];
static uint8_t coins32[MLKEM_SYMBYTES];
static uint8_t coins64[2 * MLKEM_SYMBYTES];
static uint8_t pk[MLKEM_INDCCA_PUBLICKEYBYTES + SLACK];
static uint8_t sk[MLKEM_INDCCA_SECRETKEYBYTES + SLACK];
static uint8_t ct[MLKEM_INDCCA_CIPHERTEXTBYTES + SLACK];
static uint8_t key[MLKEM_SSBYTES + SLACK];
static mlk_polyvec_mulcache cache;
static mlk_poly ap, bp, cp, dp;
/* The KEM API is warn_unused_result, which a (void) cast does not silence in gcc: results go here. */
static int rc;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t)(i * 7 + salt);
    }
}

static void setup_inputs(void) {
    fill(seed, sizeof seed, 1);
    fill(coins32, sizeof coins32, 2);
    fill(coins64, sizeof coins64, 3);
    mlk_gen_matrix(MATRIX_ARG, seed, 0);
    ap = MATRIX_ROW(MLKEM_K - 1)->vec[MLKEM_K - 1]; /* coefficients in [0, q): a valid input of every polynomial op */
    mlk_polyvec_mulcache_compute(&cache, MATRIX_ROW(1));
    INDCPA(mlk_indcpa_keypair_derand, pk, sk, coins32);
    INDCPA(mlk_indcpa_enc, ct, key, pk, seed);
}

static void setup_kem(void) {
    setup_inputs();
    rc |= KEM(keypair_derand)(pk, sk, coins64);
    rc |= KEM(enc_derand)(ct, key, pk, coins32);
}

static void op_gen_a(void) { mlk_gen_matrix(MATRIX_ARG, seed, 0); }
#if MLKEM_K != 3
/* ML-KEM-768 has eta2 = eta1 and draws every noise polynomial with the 4-way sampler. */
static void op_noise_eta2(void) { mlk_poly_getnoise_eta2(&ap, seed, 0); }
#endif
/* mlkem-native's poly_ntt does not reduce its output (PQClean's does): the op is the library's
 * NTT as the library calls it. In place, like test_speed; the NTT is constant-time. */
static void op_ntt(void) { mlk_poly_ntt(&ap); }
static void op_invntt(void) { mlk_poly_invntt_tomont(&ap); }
/* PQClean's polyvec_basemul_acc_montgomery computes b's products with the twiddles inside;
 * mlkem-native splits them out into a mulcache (amortised over rows in indcpa): the op is both,
 * the same function of the same inputs. */
static void op_basemul(void) {
    mlk_polyvec_mulcache_compute(&cache, MATRIX_ROW(1));
    mlk_polyvec_basemul_acc_montgomery_cached(&ap, MATRIX_ROW(0), MATRIX_ROW(1), &cache);
}
static void op_tomsg(void) { mlk_poly_tomsg(ct, &ap); }
static void op_frommsg(void) { mlk_poly_frommsg(&ap, ct); }
static void op_compress(void) { mlk_poly_compress_dv(ct, &ap); }
static void op_decompress(void) { mlk_poly_decompress_dv(&ap, ct); }
static void op_vcompress(void) { mlk_polyvec_compress_du(ct, MATRIX_ROW(0)); }
static void op_vdecompress(void) { mlk_polyvec_decompress_du(MATRIX_ROW(0), ct); }
static void op_ikeypair(void) { INDCPA(mlk_indcpa_keypair_derand, pk, sk, coins32); }
static void op_ienc(void) { INDCPA(mlk_indcpa_enc, ct, key, pk, seed); }
static void op_idec(void) { INDCPA(mlk_indcpa_dec, key, ct, sk); }
/* encaps checks the public key and decaps the secret key (FIPS 203 section 7); PQClean checks neither. */
static void op_keypair_derand(void) { rc |= KEM(keypair_derand)(pk, sk, coins64); }
static void op_keypair(void) { rc |= KEM(keypair)(pk, sk); }
static void op_encaps_derand(void) { rc |= KEM(enc_derand)(ct, key, pk, coins32); }
static void op_encaps(void) { rc |= KEM(enc)(ct, key, pk); }
static void op_decaps(void) { rc |= KEM(dec)(key, ct, sk); }
static void op_noise_x4(void) { mlk_poly_getnoise_eta1_4x(&ap, &bp, &cp, &dp, seed, 0, 1, 2, 3); }

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(gen_a), setup_inputs, op_gen_a},
    /* poly_getnoise_eta1: absent (mlkem-native samples eta1 noise four polynomials at a time only) */
#if MLKEM_K != 3
    {PQSIMD_OP(poly_getnoise_eta2), setup_inputs, op_noise_eta2},
#endif
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

static const pqsimd_sizes sizes = {.public_key = MLKEM_INDCCA_PUBLICKEYBYTES, .secret_key = MLKEM_INDCCA_SECRETKEYBYTES,
                                   .ciphertext = MLKEM_INDCCA_CIPHERTEXTBYTES, .shared_secret = MLKEM_SSBYTES};
static const pqsimd_api api = {.keypair = KEM(keypair), .encaps = KEM(enc), .decaps = KEM(dec)};

PQSIMD_REGISTER(ops, PQSIMD_KIND_KEM, sizes, api)
