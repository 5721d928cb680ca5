/* ML-KEM op table on wolfSSL 5.9.4 (wc_mlkem.c, wc_mlkem_poly.c; data/families/ml-kem.toml,
 * implementations wolfssl-c and wolfssl), compiled once per parameter set with
 * -DPQSIMD_WOLF_PARAM=WC_ML_KEM_512|768|1024 and -DPQSIMD_WOLF_K=2|3|4 (the set's defines).
 *
 * The op ids are ops/ml_kem.c's, and each op calls wolfSSL's own function for the same work on fixed
 * inputs: gen_a (mlkem_gen_matrix), the message and (de)compression kernels, the KEM API, and, in the
 * portable C only, its NTT, inverse NTT and Montgomery base multiplication (static in wc_mlkem_poly.c,
 * reached through impl/wolfssl/wolfssl_mlkem.c). wolfSSL's AVX2 code has no standalone NTT: its keygen,
 * encapsulate and decapsulate kernels (wc_mlkem_asm.S) fuse NTT, base multiplication and inverse NTT,
 * so those ops are absent from the intelasm build, and the TOML says why. The IND-CPA ops and the
 * single-polynomial samplers have no wolfSSL function (it samples every noise polynomial of an
 * operation in one call): absent from both.
 *
 * The gate's API: keypair draws d || z (64 bytes) and encaps m (32 bytes) from randombytes, as
 * PQClean's crypto_kem_* do, so the answers are compared byte for byte with PQClean and mlkem-native;
 * after every call the run-time dispatch must be the pinned one (else PQSIMD_RC_DISPATCH). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mlkem.h>

#include "wolfssl_mlkem.h"
#include "ops/optable.h"
#include "ops/ml_kem_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_KEM_OPS)

int PQCLEAN_randombytes(uint8_t *output, size_t n);

#define K PQSIMD_WOLF_K
#define N 256
#define SLACK 64
#define MAX_PK 1568
#define MAX_SK 3168
#define MAX_CT 1568

static MlKemKey key;
static MLKEM_PRF_T prf;
static byte seed[32], coins32[32], coins64[64], msg[32];
static byte pk[MAX_PK + SLACK], sk[MAX_SK + SLACK], ct[MAX_CT + SLACK], ss[32 + SLACK];
static sword16 matrix[K * K * N] __attribute__((aligned(32)));
static sword16 ap[N] __attribute__((aligned(32))), bp[N] __attribute__((aligned(32)));
static byte cbuf[K * 352 + SLACK];
static word32 pklen, sklen, ctlen;
static int ready, rc;

static void fill(byte *b, size_t n, byte salt) {
    for (size_t i = 0; i < n; i++) b[i] = (byte)(i * 7 + salt);
}

static void setup_inputs(void) {
    if (ready) return;
    fill(seed, sizeof seed, 1);
    fill(coins32, sizeof coins32, 2);
    fill(coins64, sizeof coins64, 3);
    fill(msg, sizeof msg, 4);
    rc |= wc_MlKemKey_Init(&key, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID); /* runs mlkem_init: the dispatch */
    mlkem_prf_init(&prf);
    rc |= mlkem_prf_new(&prf, NULL, INVALID_DEVID);
    rc |= mlkem_gen_matrix(&prf, matrix, K, seed, 0);
    memcpy(ap, matrix + (K * K - 1) * N, sizeof ap); /* coefficients in [0, q) */
    memcpy(bp, matrix, sizeof bp);
    rc |= wc_MlKemKey_PublicKeySize(&key, &pklen);
    rc |= wc_MlKemKey_PrivateKeySize(&key, &sklen);
    rc |= wc_MlKemKey_CipherTextSize(&key, &ctlen);
    ready = 1;
}

static void setup_kem(void) {
    setup_inputs();
    rc |= wc_MlKemKey_MakeKeyWithRandom(&key, coins64, sizeof coins64);
    rc |= wc_MlKemKey_EncodePublicKey(&key, pk, pklen);
    rc |= wc_MlKemKey_EncodePrivateKey(&key, sk, sklen);
    rc |= wc_MlKemKey_EncapsulateWithRandom(&key, ct, ss, coins32, sizeof coins32);
}

static void op_gen_a(void) { rc |= mlkem_gen_matrix(&prf, matrix, K, seed, 0); }
#ifndef USE_INTEL_SPEEDUP
static void op_ntt(void) { pqsimd_mlkem_ntt(ap); }
static void op_invntt(void) { pqsimd_mlkem_invntt(ap); }
static void op_basemul(void) { pqsimd_mlkem_basemul(ap, ap, bp); }
#endif
static void op_tomsg(void) { mlkem_to_msg(msg, ap); }
static void op_frommsg(void) { mlkem_from_msg(ap, msg); }
#if K == 4
static void op_compress(void) { mlkem_compress_5(cbuf, ap); }
static void op_decompress(void) { mlkem_decompress_5(ap, cbuf); }
static void op_vcompress(void) { mlkem_vec_compress_11(cbuf, matrix); }
static void op_vdecompress(void) { mlkem_vec_decompress_11(matrix, cbuf); }
#else
static void op_compress(void) { mlkem_compress_4(cbuf, ap); }
static void op_decompress(void) { mlkem_decompress_4(ap, cbuf); }
static void op_vcompress(void) { mlkem_vec_compress_10(cbuf, matrix, K); }
static void op_vdecompress(void) { mlkem_vec_decompress_10(matrix, cbuf, K); }
#endif
static void op_keypair_derand(void) { rc |= wc_MlKemKey_MakeKeyWithRandom(&key, coins64, sizeof coins64); }
static void op_keypair(void) {
    byte c[64];
    PQCLEAN_randombytes(c, sizeof c);
    rc |= wc_MlKemKey_MakeKeyWithRandom(&key, c, sizeof c);
}
static void op_encaps_derand(void) { rc |= wc_MlKemKey_EncapsulateWithRandom(&key, ct, ss, coins32, sizeof coins32); }
static void op_encaps(void) {
    byte m[32];
    PQCLEAN_randombytes(m, sizeof m);
    rc |= wc_MlKemKey_EncapsulateWithRandom(&key, ct, ss, m, sizeof m);
}
static void op_decaps(void) { rc |= wc_MlKemKey_Decapsulate(&key, ss, ct, ctlen); }

PQSIMD_EMPTY_OP

/* In data/families/ml-kem.toml's order; absent ops are named in its [implementations.wolfssl*.absent]. */
static const pqsimd_op ops[] = {
    {PQSIMD_OP(gen_a), setup_inputs, op_gen_a},
#ifndef USE_INTEL_SPEEDUP
    {PQSIMD_OP(ntt), setup_inputs, op_ntt},
    {PQSIMD_OP(invntt), setup_inputs, op_invntt},
    {PQSIMD_OP(basemul), setup_inputs, op_basemul},
#endif
    {PQSIMD_OP(poly_tomsg), setup_inputs, op_tomsg},
    {PQSIMD_OP(poly_frommsg), setup_inputs, op_frommsg},
    {PQSIMD_OP(poly_compress), setup_inputs, op_compress},
    {PQSIMD_OP(poly_decompress), setup_inputs, op_decompress},
    {PQSIMD_OP(polyvec_compress), setup_inputs, op_vcompress},
    {PQSIMD_OP(polyvec_decompress), setup_inputs, op_vdecompress},
    {PQSIMD_OP(kem_keypair_derand), setup_kem, op_keypair_derand},
    {PQSIMD_OP(kem_keypair), setup_kem, op_keypair},
    {PQSIMD_OP(kem_encaps_derand), setup_kem, op_encaps_derand},
    {PQSIMD_OP(kem_encaps), setup_kem, op_encaps},
    {PQSIMD_OP(kem_decaps), setup_kem, op_decaps},
    {PQSIMD_OP(empty), NULL, op_empty},
};

/* --- the gate's API --------------------------------------------------------------------------- */

static int checked(int r) { return r != 0 ? r : pqsimd_mlkem_dispatch_check() ? PQSIMD_RC_DISPATCH : 0; }

static int api_keypair(uint8_t *p, uint8_t *s) {
    MlKemKey k;
    byte c[64];
    word32 pl, sl;
    int r = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (r != 0) return r;
    PQCLEAN_randombytes(c, sizeof c);
    r = wc_MlKemKey_MakeKeyWithRandom(&k, c, sizeof c);
    if (r == 0) r = wc_MlKemKey_PublicKeySize(&k, &pl);
    if (r == 0) r = wc_MlKemKey_PrivateKeySize(&k, &sl);
    if (r == 0) r = wc_MlKemKey_EncodePublicKey(&k, p, pl);
    if (r == 0) r = wc_MlKemKey_EncodePrivateKey(&k, s, sl);
    wc_MlKemKey_Free(&k);
    return checked(r);
}

static int api_encaps(uint8_t *c, uint8_t *s, const uint8_t *p) {
    MlKemKey k;
    byte m[32];
    word32 pl;
    int r = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (r != 0) return r;
    r = wc_MlKemKey_PublicKeySize(&k, &pl);
    if (r == 0) r = wc_MlKemKey_DecodePublicKey(&k, p, pl);
    PQCLEAN_randombytes(m, sizeof m);
    if (r == 0) r = wc_MlKemKey_EncapsulateWithRandom(&k, c, s, m, sizeof m);
    wc_MlKemKey_Free(&k);
    return checked(r);
}

static int api_decaps(uint8_t *s, const uint8_t *c, const uint8_t *sk_) {
    MlKemKey k;
    word32 sl, cl;
    int r = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (r != 0) return r;
    r = wc_MlKemKey_PrivateKeySize(&k, &sl);
    if (r == 0) r = wc_MlKemKey_CipherTextSize(&k, &cl);
    if (r == 0) r = wc_MlKemKey_DecodePrivateKey(&k, sk_, sl);
    if (r == 0) r = wc_MlKemKey_Decapsulate(&k, s, c, cl);
    wc_MlKemKey_Free(&k);
    return checked(r);
}

static const pqsimd_api api = {.keypair = api_keypair, .encaps = api_encaps, .decaps = api_decaps};
static pqsimd_sizes sizes;

__attribute__((constructor(102))) static void STATIC_NAME(sizes_of_set)(void) {
    MlKemKey k;
    word32 pl = 0, sl = 0, cl = 0, l = 0;
    if (wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID) == 0) {
        wc_MlKemKey_PublicKeySize(&k, &pl);
        wc_MlKemKey_PrivateKeySize(&k, &sl);
        wc_MlKemKey_CipherTextSize(&k, &cl);
        wc_MlKemKey_SharedSecretSize(&k, &l);
        wc_MlKemKey_Free(&k);
    }
    sizes.public_key = pl;
    sizes.secret_key = sl;
    sizes.ciphertext = cl;
    sizes.shared_secret = l;
}

PQSIMD_REGISTER(ops, PQSIMD_KIND_KEM, sizes, api)
