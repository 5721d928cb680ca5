/* ML-DSA op table on a pq-code-package implementation (mldsa-native), compiled once per parameter
 * set with that build's defines (MLD_CONFIG_PARAMETER_SET, MLD_CONFIG_NAMESPACE_PREFIX, ...; see
 * data/families/ml-dsa.toml) and -DPQSIMD_SCHEME=\"ml-dsa-65\" -DPQSIMD_IMPL=\"mldsa-native\".
 *
 * The op ids are ops/ml_dsa.c's, each calling mldsa-native's own function for the same work on the
 * same inputs; an op it has no function for is left out ([implementations.mldsa-native.absent]
 * says why). mldsa-native's pointwise, decompose and use_hint work in place where PQClean's write
 * a separate output: the ops run them in place on inputs that stay valid (pointwise, use_hint) or
 * whose values do not change the cost (decompose is constant-time). The 4-way samplers are
 * mldsa-native's own, as in PQClean avx2. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "src/poly.h"
#include "src/poly_kl.h"
#include "src/polyvec.h"
#include "src/polyvec_lazy.h"
#include "src/sign.h"

#include "ops/optable.h"
#include "ops/ml_dsa_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_DSA_OPS)

#define API(f) MLD_NAMESPACE_KL(f)

#define SLACK 64
#define MSG_BYTES 64 /* as ops/ml_dsa.c */
#define N_MIX 16

static uint8_t rho[MLDSA_SEEDBYTES];
static uint8_t seed64[MLDSA_CRHBYTES];
static uint8_t ctilde[MLDSA_CTILDEBYTES];
static uint8_t coins[2 * MLDSA_SEEDBYTES];
static MLD_ALIGN uint8_t seeds4[4][MLD_ALIGN_UP(MLDSA_SEEDBYTES + 2)];
static uint8_t pk[MLDSA_CRYPTO_PUBLICKEYBYTES + SLACK], sk[MLDSA_CRYPTO_SECRETKEYBYTES + SLACK];
static uint8_t kpk[MLDSA_CRYPTO_PUBLICKEYBYTES + SLACK], ksk[MLDSA_CRYPTO_SECRETKEYBYTES + SLACK];
static uint8_t sig[MLDSA_CRYPTO_BYTES + SLACK];
static uint8_t vsig[MLDSA_CRYPTO_BYTES + SLACK];
static size_t vsiglen;
static uint8_t msg[MSG_BYTES];
static uint8_t mix[N_MIX][MSG_BYTES];
static unsigned mix_next;
static mld_polymat_eager mat;
static mld_poly ap, bp, cp, wp, dp, hp, out0, out1, out2, out3;
/* The API is warn_unused_result, which a (void) cast does not silence in gcc: results go here. */
static int rc;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t)(i * 7 + salt);
    }
}

static void uniform(mld_poly *p, uint8_t nonce) {
    MLD_ALIGN uint8_t s[MLD_ALIGN_UP(MLDSA_SEEDBYTES + 2)];
    memcpy(s, rho, MLDSA_SEEDBYTES);
    s[MLDSA_SEEDBYTES] = nonce;
    s[MLDSA_SEEDBYTES + 1] = 0;
    mld_poly_uniform(p, s);
}

static void setup_inputs(void) {
    fill(rho, sizeof rho, 1);
    fill(seed64, sizeof seed64, 2);
    fill(ctilde, sizeof ctilde, 3);
    fill(coins, sizeof coins, 4);
    fill(msg, sizeof msg, 5);
    for (unsigned i = 0; i < N_MIX; i++) {
        fill(mix[i], MSG_BYTES, (uint8_t)(16 + 13 * i));
        mix[i][0] = (uint8_t)i;
    }
    mix_next = 0;
    for (unsigned j = 0; j < 4; j++) { /* a row of A: nonces (0 << 8) + j, appended by the caller */
        memcpy(seeds4[j], rho, MLDSA_SEEDBYTES);
        seeds4[j][MLDSA_SEEDBYTES] = (uint8_t)j;
        seeds4[j][MLDSA_SEEDBYTES + 1] = 0;
    }
    mld_polyvec_matrix_expand_eager(&mat, rho);
    /* Uniform polynomials mod Q: valid inputs for every polynomial op. */
    uniform(&ap, 0);
    uniform(&bp, 1);
    uniform(&cp, 2);
    uniform(&wp, 3);
    dp = wp;
    for (unsigned i = 0; i < MLDSA_N; i++) {
        hp.coeffs[i] = (i % 5) == 0;
    }
}

/* The fixed key pair and a valid signature of msg, from a fixed pool (as ops/ml_dsa.c). */
static void setup_sign(void) {
    setup_inputs();
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, sizeof coins);
    rc |= API(keypair)(pk, sk);
    rc |= API(signature)(vsig, &vsiglen, msg, MSG_BYTES, NULL, 0, sk);
    v->random_pool(NULL, 0); /* timed keypair / sign draw OS randomness, as in PQClean */
}

static void op_expand_a(void) { mld_polyvec_matrix_expand_eager(&mat, rho); }
#if MLD_CONFIG_PARAMETER_SET == 65
/* mldsa-native has a single-polynomial gamma1 sampler only where it uses one (ML-DSA-65). */
static void op_uniform_gamma1(void) { mld_poly_uniform_gamma1(&out0, seed64, 0); }
#endif
static void op_ntt(void) { mld_poly_ntt(&ap); }
static void op_invntt(void) { mld_poly_invntt_tomont(&ap); }
static void op_pointwise(void) { mld_poly_pointwise_montgomery(&bp, &cp); } /* bp = bp * cp: stays reduced */
static void op_challenge(void) { mld_poly_challenge(&out0, ctilde); }
static void op_decompose(void) { mld_poly_decompose(&out0, &dp); }         /* a0 in and out of dp */
static void op_use_hint(void) { mld_poly_use_hint(&wp, &hp); }             /* its output is a valid input again */
static void op_keypair(void) { rc |= API(keypair)(kpk, ksk); }
/* Hedged signing with OS randomness per call, as ops/ml_dsa.c. */
static void op_sign(void) {
    size_t siglen;
    rc |= API(signature)(sig, &siglen, msg, MSG_BYTES, NULL, 0, sk);
}
static void op_sign_mix(void) {
    size_t siglen;
    rc |= API(signature)(sig, &siglen, mix[mix_next], MSG_BYTES, NULL, 0, sk);
    mix_next = (mix_next + 1) % N_MIX;
}
static void op_verify(void) { rc |= API(verify)(vsig, vsiglen, msg, MSG_BYTES, NULL, 0, pk); }
/* A fixed xi and a fixed rnd from the pool, refilled every call (as ops/ml_dsa.c). */
static void op_keypair_derand(void) {
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, MLDSA_SEEDBYTES);
    rc |= API(keypair)(kpk, ksk);
    v->random_pool(NULL, 0);
}
static void op_sign_derand(void) {
    size_t siglen;
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins + MLDSA_SEEDBYTES, MLDSA_SEEDBYTES);
    rc |= API(signature)(sig, &siglen, msg, MSG_BYTES, NULL, 0, sk);
    v->random_pool(NULL, 0);
}
static void op_uniform_eta_x4(void) { mld_poly_uniform_eta_4x(&out0, &out1, &out2, &out3, seed64, 0, 1, 2, 3); }
static void op_uniform_gamma1_x4(void) {
    mld_poly_uniform_gamma1_4x(&out0, &out1, &out2, &out3, seed64, 0, 1, 2, 3);
}
static void op_uniform_x4(void) { mld_poly_uniform_4x(&out0, &out1, &out2, &out3, seeds4); }

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(expand_a), setup_inputs, op_expand_a},
    /* uniform_eta: absent (mldsa-native samples eta four polynomials at a time only) */
#if MLD_CONFIG_PARAMETER_SET == 65
    {PQSIMD_OP(uniform_gamma1), setup_inputs, op_uniform_gamma1},
#endif
    {PQSIMD_OP(ntt), setup_inputs, op_ntt},
    {PQSIMD_OP(invntt), setup_inputs, op_invntt},
    {PQSIMD_OP(pointwise), setup_inputs, op_pointwise},
    {PQSIMD_OP(challenge), setup_inputs, op_challenge},
    {PQSIMD_OP(decompose), setup_inputs, op_decompose},
    {PQSIMD_OP(use_hint), setup_inputs, op_use_hint},
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(sign), setup_sign, op_sign},
    {PQSIMD_OP(sign_mix), setup_sign, op_sign_mix},
    {PQSIMD_OP(verify), setup_sign, op_verify},
    {PQSIMD_OP(keypair_derand), setup_inputs, op_keypair_derand},
    {PQSIMD_OP(sign_derand), setup_sign, op_sign_derand},
    {PQSIMD_OP(uniform_eta_x4), setup_inputs, op_uniform_eta_x4},
    {PQSIMD_OP(uniform_gamma1_x4), setup_inputs, op_uniform_gamma1_x4},
    {PQSIMD_OP(uniform_x4), setup_inputs, op_uniform_x4},
    {PQSIMD_OP(empty), NULL, op_empty},
};

/* The gate's sign API: pure ML-DSA with an empty context, as ops/ml_dsa.c. */
static int api_keypair(uint8_t *p, uint8_t *s) { return API(keypair)(p, s); }
static int api_sign(uint8_t *s, size_t *slen, const uint8_t *m, size_t mlen, const uint8_t *k) {
    return API(signature)(s, slen, m, mlen, NULL, 0, k);
}
static int api_verify(const uint8_t *s, size_t slen, const uint8_t *m, size_t mlen, const uint8_t *k) {
    return API(verify)(s, slen, m, mlen, NULL, 0, k);
}

static const pqsimd_sizes sizes = {.public_key = MLDSA_CRYPTO_PUBLICKEYBYTES, .secret_key = MLDSA_CRYPTO_SECRETKEYBYTES,
                                   .signature = MLDSA_CRYPTO_BYTES};
static const pqsimd_api api = {.keypair = api_keypair, .sign = api_sign, .verify = api_verify};

PQSIMD_REGISTER(ops, PQSIMD_KIND_SIGN, sizes, api)
