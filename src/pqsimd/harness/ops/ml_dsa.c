/* ML-DSA op table, compiled once per parameter set with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_MLDSA44_CLEAN -DPQSIMD_SCHEME=\"ml-dsa-44\" -DPQSIMD_IMPL=\"clean\"
 *   [-DMLDSA_SAMPLERS_4X] -I<impl dir> -I<common>
 * MLDSA_SAMPLERS_4X comes from data/families/ml-dsa.toml: the implementations with 4-way samplers
 * (avx2: poly_uniform_4x, poly_uniform_eta_4x, poly_uniform_gamma1_4x); the others time the
 * portable equivalent, four single calls with nonces 0..3 (byte-identical output).
 *
 * Inputs follow pq-crystals test_speed.c in spirit: fixed seeds, buffers updated in place, and the
 * same functions (matrix expansion, samplers, NTT, pointwise, challenge, keypair, sign, verify),
 * but the inputs are deterministic, not test_speed's uninitialised stack memory.
 *
 * Sizes: api.h and params.h both define <NS>_CRYPTO_{PUBLICKEYBYTES,SECRETKEYBYTES,BYTES} (api.h as
 * literals, params.h as expressions, equal values), so including both would redefine the macros;
 * this file takes the same namespaced names from params.h (through sign.h). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "params.h"
#include "poly.h"
#include "polyvec.h"
#include "sign.h"

#include "optable.h"
#include "ml_dsa_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_ML_DSA_OPS)


#define PK_BYTES NS(CRYPTO_PUBLICKEYBYTES)
#define SK_BYTES NS(CRYPTO_SECRETKEYBYTES)
#define SIG_BYTES NS(CRYPTO_BYTES)

/* Every byte buffer carries slack (avx2 polyw1_pack writes 14 bytes past its output, e.g.). */
#define SLACK 64
#define MSG_BYTES 64 /* test_speed signs a CRHBYTES = 64-byte message */
#define N_MIX 16     /* messages sign_mix cycles through */

static uint8_t rho[SEEDBYTES];      /* matrix seed (expand_a, uniform_x4) */
static uint8_t seed64[CRHBYTES];    /* sampler seed (uniform_eta, uniform_gamma1) */
static uint8_t ctilde[CTILDEBYTES]; /* challenge seed */
static uint8_t coins[2 * SEEDBYTES]; /* the fixed key's xi, then the reference signature's rnd */
static uint8_t pk[PK_BYTES + SLACK], sk[SK_BYTES + SLACK];    /* the fixed key (sign, verify) */
static uint8_t kpk[PK_BYTES + SLACK], ksk[SK_BYTES + SLACK];  /* op keypair writes here */
static uint8_t sig[SIG_BYTES + SLACK];                        /* op sign / sign_mix writes here */
static uint8_t vsig[SIG_BYTES + SLACK];                       /* the valid signature op verify checks */
static size_t vsiglen;
static uint8_t msg[MSG_BYTES];
static uint8_t mix[N_MIX][MSG_BYTES];
static unsigned mix_next;

/* poly is a 32-byte-aligned union with __m256i in avx2, and the avx2 routines use aligned loads:
 * static storage of the proper types gives the alignment with the type (never byte buffers cast). */
static polyvecl mat[K];
static poly ap;             /* ntt / invntt run in place on it */
static poly bp, cp;         /* pointwise inputs */
static poly wp;             /* decompose / use_hint input: standard representatives in [0, Q) */
static poly hp;             /* use_hint hint: 0/1 coefficients */
static poly out0, out1, out2, out3; /* outputs of the samplers, pointwise, decompose, use_hint, challenge */

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    pqsimd_fill(b, n, salt);
}

static void setup_inputs(void) {
    fill(rho, sizeof rho, 1);
    fill(seed64, sizeof seed64, 2);
    fill(ctilde, sizeof ctilde, 3);
    fill(coins, sizeof coins, 4);
    fill(msg, sizeof msg, 5);
    for (unsigned i = 0; i < N_MIX; i++) {
        fill(mix[i], MSG_BYTES, (uint8_t)(16 + 13 * i));
        mix[i][0] = (uint8_t)i; /* distinct content in every message */
    }
    mix_next = 0;
    NS(polyvec_matrix_expand)(mat, rho);
    /* Uniform polynomials mod Q: valid inputs for every polynomial op. */
    NS(poly_uniform)(&ap, rho, 0);
    NS(poly_uniform)(&bp, rho, 1);
    NS(poly_uniform)(&cp, rho, 2);
    NS(poly_uniform)(&wp, rho, 3);
    for (unsigned i = 0; i < N; i++) {
        hp.coeffs[i] = (i % 5) == 0; /* a hint in every fifth coefficient */
    }
}

/* The fixed key pair and a valid signature of msg under it, drawn from a fixed pool through the
 * variant's randomness control: deterministic, and identical in every implementation (clean and
 * avx2 give byte-identical keys and signatures for the same randombytes stream). */
static void setup_sign(void) {
    setup_inputs();
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, sizeof coins);
    NS(crypto_sign_keypair)(pk, sk);
    NS(crypto_sign_signature_ctx)(vsig, &vsiglen, msg, MSG_BYTES, NULL, 0, sk);
    v->random_pool(NULL, 0); /* timed keypair / sign draw OS randomness, as in PQClean */
}

static void op_expand_a(void) { NS(polyvec_matrix_expand)(mat, rho); }
static void op_uniform_eta(void) { NS(poly_uniform_eta)(&out0, seed64, 0); }
static void op_uniform_gamma1(void) { NS(poly_uniform_gamma1)(&out0, seed64, 0); }
/* In place, like test_speed. clean poly_ntt does not reduce: its coefficients random-walk upwards
 * (~4Q after 100 calls) and, within a few thousand calls of a batch, wrap around int32 (a signed
 * overflow in ntt.c's butterflies; the generated adds wrap). The NTT is constant-time, so its cost
 * does not depend on the values (test_speed does the same on uninitialised memory). avx2 poly_ntt
 * stays below ~3Q, and invntt_tomont's output is < Q in both, so invntt is stable in place. */
static void op_ntt(void) { NS(poly_ntt)(&ap); }
static void op_invntt(void) { NS(poly_invntt_tomont)(&ap); }
static void op_pointwise(void) { NS(poly_pointwise_montgomery)(&out0, &bp, &cp); }
static void op_challenge(void) { NS(poly_challenge)(&out0, ctilde); }
static void op_decompose(void) { NS(poly_decompose)(&out0, &out1, &wp); }
static void op_use_hint(void) { NS(poly_use_hint)(&out0, &wp, &hp); }
static void op_keypair(void) { NS(crypto_sign_keypair)(kpk, ksk); }

/* Signing is hedged: every call draws a fresh rnd from randombytes (the OS while timing), so the
 * number of rejection-loop iterations, and the time, varies per call as in test_speed. */
static void op_sign(void) {
    size_t siglen;
    NS(crypto_sign_signature_ctx)(sig, &siglen, msg, MSG_BYTES, NULL, 0, sk);
}

/* The same, cycling through N_MIX messages of different content: per-call costs then sample the
 * rejection-loop distribution over messages, not only over rnd. */
static void op_sign_mix(void) {
    size_t siglen;
    NS(crypto_sign_signature_ctx)(sig, &siglen, mix[mix_next], MSG_BYTES, NULL, 0, sk);
    mix_next = (mix_next + 1) % N_MIX;
}

static void op_verify(void) { NS(crypto_sign_verify_ctx)(vsig, vsiglen, msg, MSG_BYTES, NULL, 0, pk); }

/* Key generation from a fixed xi and signing with a fixed rnd (the variant's pool, refilled every
 * call): the same work in every call and in every build that agrees with the gate, so instruction
 * counts are exact and every build signs with the same rejection-loop iterations (what an
 * ablation compares). keypair and sign above draw OS randomness, as PQClean does. */
static void op_keypair_derand(void) {
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, SEEDBYTES);
    NS(crypto_sign_keypair)(kpk, ksk);
    v->random_pool(NULL, 0);
}

static void op_sign_derand(void) {
    size_t siglen;
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins + SEEDBYTES, SEEDBYTES);
    NS(crypto_sign_signature_ctx)(sig, &siglen, msg, MSG_BYTES, NULL, 0, sk);
    v->random_pool(NULL, 0);
}

/* Four samples at once, as key generation (eta) and signing (gamma1) draw them in avx2. */
static void op_uniform_eta_x4(void) {
#ifdef MLDSA_SAMPLERS_4X
    NS(poly_uniform_eta_4x)(&out0, &out1, &out2, &out3, seed64, 0, 1, 2, 3);
#else
    NS(poly_uniform_eta)(&out0, seed64, 0);
    NS(poly_uniform_eta)(&out1, seed64, 1);
    NS(poly_uniform_eta)(&out2, seed64, 2);
    NS(poly_uniform_eta)(&out3, seed64, 3);
#endif
}

static void op_uniform_gamma1_x4(void) {
#ifdef MLDSA_SAMPLERS_4X
    NS(poly_uniform_gamma1_4x)(&out0, &out1, &out2, &out3, seed64, 0, 1, 2, 3);
#else
    NS(poly_uniform_gamma1)(&out0, seed64, 0);
    NS(poly_uniform_gamma1)(&out1, seed64, 1);
    NS(poly_uniform_gamma1)(&out2, seed64, 2);
    NS(poly_uniform_gamma1)(&out3, seed64, 3);
#endif
}

/* Four uniform polynomials mod Q (a row of A, nonces (0 << 8) + j), without avx2's nttunpack. */
static void op_uniform_x4(void) {
#ifdef MLDSA_SAMPLERS_4X
    NS(poly_uniform_4x)(&out0, &out1, &out2, &out3, rho, 0, 1, 2, 3);
#else
    NS(poly_uniform)(&out0, rho, 0);
    NS(poly_uniform)(&out1, rho, 1);
    NS(poly_uniform)(&out2, rho, 2);
    NS(poly_uniform)(&out3, rho, 3);
#endif
}

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(expand_a), setup_inputs, op_expand_a},
    {PQSIMD_OP(uniform_eta), setup_inputs, op_uniform_eta},
    {PQSIMD_OP(uniform_gamma1), setup_inputs, op_uniform_gamma1},
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

/* The gate's sign API: pure ML-DSA with an empty context (crypto_sign_signature / _verify are
 * macros for exactly this in api.h). */
static int api_sign(uint8_t *s, size_t *slen, const uint8_t *m, size_t mlen, const uint8_t *key) {
    return NS(crypto_sign_signature_ctx)(s, slen, m, mlen, NULL, 0, key);
}

static int api_verify(const uint8_t *s, size_t slen, const uint8_t *m, size_t mlen, const uint8_t *key) {
    return NS(crypto_sign_verify_ctx)(s, slen, m, mlen, NULL, 0, key);
}

static const pqsimd_sizes sizes = {.public_key = PK_BYTES, .secret_key = SK_BYTES, .signature = SIG_BYTES};
static const pqsimd_api api = {.keypair = NS(crypto_sign_keypair), .sign = api_sign, .verify = api_verify};

/* What [ct.secret] of the family's TOML names per op. */
static const pqsimd_buffer buffers[] = {PQSIMD_BUFFER(coins), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk), PQSIMD_BUFFER(kpk), PQSIMD_BUFFER(ksk), PQSIMD_BUFFER(sig), PQSIMD_BUFFER(vsig), PQSIMD_BUFFER(msg)};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_SIGN, sizes, api, buffers)
