/* ML-DSA op table on wolfSSL 5.9.4 (wc_mldsa.c; data/families/ml-dsa.toml, implementations wolfssl-c
 * and wolfssl), compiled once per parameter set with -DPQSIMD_WOLF_PARAM=WC_ML_DSA_44|65|87 and the
 * set's constants (PQSIMD_WOLF_K, _L, _GAMMA2, _OMEGA, _TAU, _CTILDE: the set's defines).
 *
 * The op ids are ops/ml_dsa.c's; each op calls wolfSSL's own function for the same work (its kernels
 * are static in wc_mldsa.c: impl/wolfssl/wolfssl_mldsa.c reaches them; each dispatches to the build's path as
 * signing does). wolfSSL has no single-polynomial eta / gamma1 sampler and no 4-way sampler of its own
 * (it expands whole vectors): those ops are absent, and the TOML says why.
 *
 * The gate's API is FIPS 204's pure interface with an empty context: keypair draws xi (32 bytes),
 * signing draws rnd (32 bytes, hedged) from randombytes, as PQClean's crypto_sign_* do, so the answers
 * are compared byte for byte with PQClean and mldsa-native; after every call the run-time dispatch must
 * be the pinned one (else PQSIMD_RC_DISPATCH). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mldsa.h>

#include "wolfssl_mldsa.h"
#include "ops/optable.h"
#include "ops/ml_dsa_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_DSA_OPS)

int PQCLEAN_randombytes(uint8_t *output, size_t n);

#define N 256
#define K PQSIMD_WOLF_K
#define L PQSIMD_WOLF_L
#define MSG_BYTES 64 /* test_speed signs a CRHBYTES = 64-byte message, as ops/ml_dsa.c */
#define N_MIX 16
#define MAX_PK 2592
#define MAX_SK 4896
#define MAX_SIG 4627
#define SLACK 64

static wc_MlDsaKey key, kkey;
static byte rho[32], coins[64], ctilde[64], msg[MSG_BYTES], mix[N_MIX][MSG_BYTES];
#define xi coins        /* the fixed key's xi, then the reference signature's rnd: ops/ml_dsa.c's bytes */
#define rnd (coins + 32)
static byte hint[96];
static byte sig[MAX_SIG + SLACK], vsig[MAX_SIG + SLACK];
static word32 vsiglen;
static sword32 mat[K * L * N] __attribute__((aligned(32)));
static sword32 ap[N] __attribute__((aligned(32))), bp[N] __attribute__((aligned(32))), cp[N] __attribute__((aligned(32)));
static sword32 out0[N] __attribute__((aligned(32))), out1[N] __attribute__((aligned(32)));
static unsigned mix_next;
static int ready, rc;

static void fill(byte *b, size_t n, byte salt) {
    for (size_t i = 0; i < n; i++) b[i] = (byte)(i * 7 + salt);
}

static void setup_inputs(void) {
    if (ready) return;
    /* ops/ml_dsa.c's inputs byte for byte: the same key, message and rnd, so a signature of the fixed
     * inputs takes the same rejection-loop iterations in every implementation (wolfSSL's bytes are
     * PQClean's: the gate checks it) */
    fill(rho, sizeof rho, 1);
    fill(ctilde, sizeof ctilde, 3);
    fill(coins, sizeof coins, 4);
    fill(msg, sizeof msg, 5);
    for (int i = 0; i < N_MIX; i++) {
        fill(mix[i], MSG_BYTES, (byte)(16 + 13 * i));
        mix[i][0] = (byte)i;
    }
    memset(hint, 0, sizeof hint);
    rc |= pqsimd_mldsa_expand_a(rho, K, L, mat);
    memcpy(ap, mat, sizeof ap); /* coefficients in [0, q) */
    memcpy(bp, mat + N, sizeof bp);
    memcpy(cp, mat + 2 * N, sizeof cp);
    rc |= wc_MlDsaKey_Init(&key, NULL, INVALID_DEVID);
    rc |= wc_MlDsaKey_SetParams(&key, PQSIMD_WOLF_PARAM);
    rc |= wc_MlDsaKey_MakeKeyFromSeed(&key, xi);
    rc |= wc_MlDsaKey_Init(&kkey, NULL, INVALID_DEVID);
    rc |= wc_MlDsaKey_SetParams(&kkey, PQSIMD_WOLF_PARAM);
    vsiglen = sizeof vsig;
    rc |= wc_MlDsaKey_SignCtxWithSeed(&key, NULL, 0, vsig, &vsiglen, msg, MSG_BYTES, rnd);
    ready = 1;
}

static void op_expand_a(void) { rc |= pqsimd_mldsa_expand_a(rho, K, L, mat); }
static void op_ntt(void) { pqsimd_mldsa_ntt(ap); }
static void op_invntt(void) { pqsimd_mldsa_invntt(ap); }
static void op_pointwise(void) { pqsimd_mldsa_pointwise(out0, bp, cp); }
static void op_challenge(void) { rc |= pqsimd_mldsa_challenge(PQSIMD_WOLF_PARAM, ctilde, PQSIMD_WOLF_CTILDE, PQSIMD_WOLF_TAU, out0); }
static void op_decompose(void) { pqsimd_mldsa_decompose(bp, PQSIMD_WOLF_GAMMA2, out0, out1); }
static void op_use_hint(void) {
    memcpy(out1, bp, sizeof out1);
    pqsimd_mldsa_use_hint(out1, PQSIMD_WOLF_GAMMA2, PQSIMD_WOLF_OMEGA, hint);
}
static void op_keypair(void) {
    byte s[32];
    PQCLEAN_randombytes(s, sizeof s);
    rc |= wc_MlDsaKey_MakeKeyFromSeed(&kkey, s);
}
static void op_sign(void) {
    byte r[32];
    word32 len = sizeof sig;
    PQCLEAN_randombytes(r, sizeof r);
    rc |= wc_MlDsaKey_SignCtxWithSeed(&key, NULL, 0, sig, &len, msg, MSG_BYTES, r);
}
static void op_sign_mix(void) {
    byte r[32];
    word32 len = sizeof sig;
    PQCLEAN_randombytes(r, sizeof r);
    rc |= wc_MlDsaKey_SignCtxWithSeed(&key, NULL, 0, sig, &len, mix[mix_next], MSG_BYTES, r);
    mix_next = (mix_next + 1) % N_MIX;
}
static void op_verify(void) {
    int res = 0;
    rc |= wc_MlDsaKey_VerifyCtx(&key, vsig, vsiglen, NULL, 0, msg, MSG_BYTES, &res);
}
static void op_keypair_derand(void) { rc |= wc_MlDsaKey_MakeKeyFromSeed(&kkey, xi); }
static void op_sign_derand(void) {
    word32 len = sizeof sig;
    rc |= wc_MlDsaKey_SignCtxWithSeed(&key, NULL, 0, sig, &len, msg, MSG_BYTES, rnd);
}

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(expand_a), setup_inputs, op_expand_a},
    {PQSIMD_OP(ntt), setup_inputs, op_ntt},
    {PQSIMD_OP(invntt), setup_inputs, op_invntt},
    {PQSIMD_OP(pointwise), setup_inputs, op_pointwise},
    {PQSIMD_OP(challenge), setup_inputs, op_challenge},
    {PQSIMD_OP(decompose), setup_inputs, op_decompose},
    {PQSIMD_OP(use_hint), setup_inputs, op_use_hint},
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(sign), setup_inputs, op_sign},
    {PQSIMD_OP(sign_mix), setup_inputs, op_sign_mix},
    {PQSIMD_OP(verify), setup_inputs, op_verify},
    {PQSIMD_OP(keypair_derand), setup_inputs, op_keypair_derand},
    {PQSIMD_OP(sign_derand), setup_inputs, op_sign_derand},
    {PQSIMD_OP(empty), NULL, op_empty},
};

/* --- the gate's API --------------------------------------------------------------------------- */

static int checked(int r) { return r != 0 ? r : pqsimd_mldsa_dispatch_check() ? PQSIMD_RC_DISPATCH : 0; }

static int new_key(wc_MlDsaKey *k) {
    int r = wc_MlDsaKey_Init(k, NULL, INVALID_DEVID);
    return r != 0 ? r : wc_MlDsaKey_SetParams(k, PQSIMD_WOLF_PARAM);
}

static int api_keypair(uint8_t *p, uint8_t *s) {
    wc_MlDsaKey k;
    byte seed[32];
    word32 pl = MAX_PK, sl = MAX_SK;
    int r = new_key(&k);
    PQCLEAN_randombytes(seed, sizeof seed);
    if (r == 0) r = wc_MlDsaKey_MakeKeyFromSeed(&k, seed);
    if (r == 0) r = wc_MlDsaKey_ExportPubRaw(&k, p, &pl);
    if (r == 0) r = wc_MlDsaKey_ExportPrivRaw(&k, s, &sl);
    wc_MlDsaKey_Free(&k);
    return checked(r);
}

static int api_sign(uint8_t *s, size_t *slen, const uint8_t *m, size_t mlen, const uint8_t *sk) {
    wc_MlDsaKey k;
    byte r32[32];
    word32 len = MAX_SIG;
    int r = new_key(&k);
    if (r == 0) r = wc_MlDsaKey_ImportPrivRaw(&k, sk, PQSIMD_WOLF_SK);
    PQCLEAN_randombytes(r32, sizeof r32);
    if (r == 0) r = wc_MlDsaKey_SignCtxWithSeed(&k, NULL, 0, s, &len, m, (word32)mlen, r32);
    *slen = len;
    wc_MlDsaKey_Free(&k);
    return checked(r);
}

static int api_verify(const uint8_t *s, size_t slen, const uint8_t *m, size_t mlen, const uint8_t *p) {
    wc_MlDsaKey k;
    int res = 0;
    int r = new_key(&k);
    if (r == 0) r = wc_MlDsaKey_ImportPubRaw(&k, p, PQSIMD_WOLF_PK);
    if (r == 0) r = wc_MlDsaKey_VerifyCtx(&k, s, (word32)slen, NULL, 0, m, (word32)mlen, &res);
    wc_MlDsaKey_Free(&k);
    /* any failure is -1, as PQClean's crypto_sign_verify returns (the gate compares the codes) */
    return (r != 0 || res != 1) ? -1 : checked(0);
}

static const pqsimd_api api = {.keypair = api_keypair, .sign = api_sign, .verify = api_verify};
static const pqsimd_sizes sizes = {.public_key = PQSIMD_WOLF_PK, .secret_key = PQSIMD_WOLF_SK, .signature = PQSIMD_WOLF_SIG};

PQSIMD_REGISTER(ops, PQSIMD_KIND_SIGN, sizes, api)
