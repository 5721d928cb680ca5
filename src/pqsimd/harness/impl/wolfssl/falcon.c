/* Falcon op table on wolfSSL 5.9.4 (falcon.c; data/families/falcon.toml, implementations wolfssl-c,
 * wolfssl-fpr-double and wolfssl), compiled once per parameter set with -DPQSIMD_WOLF_PARAM=1|5 (the
 * level) and -DPQSIMD_WOLF_LOGN=9|10. The three implementations are one source with three arithmetic
 * backends: emulated binary64 in integers (the default), hardware doubles (WOLFSSL_FALCON_FPR_DOUBLE)
 * and hardware doubles with the AVX2 FFT (WOLFSSL_FALCON_FFT_AVX2), so wolfssl-c -> wolfssl-fpr-double
 * is "hardware floating point" and wolfssl-fpr-double -> wolfssl is "SIMD".
 *
 * The op ids are ops/falcon.c's, each on wolfSSL's own function (impl/wolfssl/wolfssl_falcon.c reaches the
 * static ones): keypair (falcon_keygen), expand_privkey, sign_tree
 * (falcon_sign_core on the expanded key), sign and verify (the wc_falcon API), FFT, iFFT, FFT-domain
 * multiplication, the NTT mod q, SamplerZ and hash_to_point. The library draws its randomness from the
 * harness's randombytes (CUSTOM_RAND_GENERATE_BLOCK).
 *
 * The gate's API: keypair / sign / verify through wc_falcon_* with the round-3 encodings (pk 897 or
 * 1793 bytes, compressed signatures with the 40-byte nonce). wolfSSL's signing sampler draws its seed
 * in another order and expands it with SHAKE-256 (the reference: ChaCha20), so its signatures are not
 * PQClean's bytes: the implementations say byte_identical = false and the gate cross-verifies them
 * with the study's reference build both ways. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/falcon.h>
#include <wolfssl/wolfcrypt/random.h>

#include "wolfssl_falcon.h"
#include "ops/optable.h"
#include "ops/falcon_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_FALCON_OPS)

int PQCLEAN_randombytes(uint8_t *output, size_t n);

#define LOGN PQSIMD_WOLF_LOGN
#define N (1u << LOGN)
#define MSG_BYTES 32
#define SLACK 64

static WC_RNG rng;
static falcon_key key;
static sword8 f[N], g[N], F[N], G[N];
static word16 h[N], c[N], ntt_in[N];
static sword16 s2[N];
static pqsimd_fpr expanded[(3 * LOGN + 8) << LOGN] __attribute__((aligned(32)));
static pqsimd_fpr tmp[6 << LOGN] __attribute__((aligned(32)));
static pqsimd_fpr fa[N] __attribute__((aligned(32))), fb[N] __attribute__((aligned(32)));
static byte msg[MSG_BYTES], nonce[40];
static byte sig[PQSIMD_WOLF_SIG + SLACK], vsig[PQSIMD_WOLF_SIG + SLACK];
static word32 vsiglen;
static void *spc;
static int ready, rc;

static void setup_inputs(void) {
    if (ready) return;
    for (unsigned i = 0; i < MSG_BYTES; i++) msg[i] = (byte)(7 * i + 1);
    for (unsigned i = 0; i < sizeof nonce; i++) nonce[i] = (byte)(5 * i + 2);
    for (unsigned i = 0; i < N; i++) {
        fa[i] = pqsimd_falcon_fpr_of((long)(i * 37 % 101) - 50);
        fb[i] = pqsimd_falcon_fpr_of((long)(i * 11 % 31) - 15);
        ntt_in[i] = (word16)(i * 29 % 12289);
    }
    rc |= wc_InitRng(&rng);
    rc |= pqsimd_falcon_keygen(&rng, f, g, F, G, h, LOGN);
    rc |= pqsimd_falcon_expand(expanded, f, g, F, G, LOGN);
    rc |= pqsimd_falcon_hash_to_point(nonce, msg, MSG_BYTES, c, LOGN);
    spc = pqsimd_falcon_sampler(LOGN, &rng);
    rc |= wc_falcon_init(&key);
    rc |= wc_falcon_set_level(&key, PQSIMD_WOLF_PARAM);
    rc |= wc_falcon_make_key(&key, &rng);
    vsiglen = sizeof vsig;
    rc |= wc_falcon_sign_msg(msg, MSG_BYTES, vsig, &vsiglen, &key, &rng);
    ready = 1;
}

static void op_keypair(void) { rc |= pqsimd_falcon_keygen(&rng, f, g, F, G, h, LOGN); }
static void op_expand_privkey(void) { rc |= pqsimd_falcon_expand(expanded, f, g, F, G, LOGN); }
static void op_sign_tree(void) { rc |= pqsimd_falcon_sign_tree(spc, expanded, c, s2, tmp, LOGN); }
static void op_sign(void) {
    word32 len = sizeof sig;
    rc |= wc_falcon_sign_msg(msg, MSG_BYTES, sig, &len, &key, &rng);
}
static void op_verify(void) {
    int res = 0;
    rc |= wc_falcon_verify_msg(vsig, vsiglen, msg, MSG_BYTES, &res, &key);
}
static void op_fft(void) { pqsimd_falcon_fft(fa, LOGN); }
static void op_ifft(void) { pqsimd_falcon_ifft(fa, LOGN); }
static void op_poly_mul_fft(void) { pqsimd_falcon_mul_fft(fa, fb, LOGN); }
static void op_ntt(void) {
    word16 a[N];
    memcpy(a, ntt_in, sizeof a);
    pqsimd_falcon_ntt(a, LOGN);
    c[0] ^= a[0]; /* keep the result */
}
static void op_sampler(void) { rc |= pqsimd_falcon_sampler_z(spc) == 0x7fffffff; }
static void op_hash_to_point(void) { rc |= pqsimd_falcon_hash_to_point(nonce, msg, MSG_BYTES, c, LOGN); }

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(expand_privkey), setup_inputs, op_expand_privkey},
    {PQSIMD_OP(sign_tree), setup_inputs, op_sign_tree},
    {PQSIMD_OP(sign), setup_inputs, op_sign},
    {PQSIMD_OP(verify), setup_inputs, op_verify},
    {PQSIMD_OP(fft), setup_inputs, op_fft},
    {PQSIMD_OP(ifft), setup_inputs, op_ifft},
    {PQSIMD_OP(poly_mul_fft), setup_inputs, op_poly_mul_fft},
    {PQSIMD_OP(ntt), setup_inputs, op_ntt},
    {PQSIMD_OP(sampler), setup_inputs, op_sampler},
    {PQSIMD_OP(hash_to_point), setup_inputs, op_hash_to_point},
    {PQSIMD_OP(empty), NULL, op_empty},
};

/* --- the gate's API --------------------------------------------------------------------------- */

static int checked(int r) { return r != 0 ? r : pqsimd_falcon_dispatch_check() ? PQSIMD_RC_DISPATCH : 0; }

static int new_key(falcon_key *k) {
    int r = wc_falcon_init(k);
    return r != 0 ? r : wc_falcon_set_level(k, PQSIMD_WOLF_PARAM);
}

static int api_keypair(uint8_t *p, uint8_t *s) {
    falcon_key k;
    WC_RNG r8;
    word32 pl = PQSIMD_WOLF_PK, sl = PQSIMD_WOLF_SK;
    int r = new_key(&k);
    if (r == 0) r = wc_InitRng(&r8);
    if (r == 0) r = wc_falcon_make_key(&k, &r8);
    if (r == 0) r = wc_falcon_export_public(&k, p, &pl);
    if (r == 0) r = wc_falcon_export_private_only(&k, s, &sl);
    wc_FreeRng(&r8);
    wc_falcon_free(&k);
    return checked(r);
}

static int api_sign(uint8_t *s, size_t *slen, const uint8_t *m, size_t mlen, const uint8_t *sk) {
    falcon_key k;
    WC_RNG r8;
    word32 len = PQSIMD_WOLF_SIG;
    int r = new_key(&k);
    if (r == 0) r = wc_falcon_import_private_only(sk, PQSIMD_WOLF_SK, &k);
    if (r == 0) r = wc_InitRng(&r8);
    if (r == 0) r = wc_falcon_sign_msg(m, (word32)mlen, s, &len, &k, &r8);
    *slen = len;
    wc_FreeRng(&r8);
    wc_falcon_free(&k);
    return checked(r);
}

static int api_verify(const uint8_t *s, size_t slen, const uint8_t *m, size_t mlen, const uint8_t *p) {
    falcon_key k;
    int res = 0;
    int r = new_key(&k);
    if (r == 0) r = wc_falcon_import_public(p, PQSIMD_WOLF_PK, &k);
    if (r == 0) r = wc_falcon_verify_msg(s, (word32)slen, m, (word32)mlen, &res, &k);
    wc_falcon_free(&k);
    /* any failure is -1, as PQClean's crypto_sign_verify returns (the gate compares the codes) */
    return (r != 0 || res != 1) ? -1 : checked(0);
}

static const pqsimd_api api = {.keypair = api_keypair, .sign = api_sign, .verify = api_verify};
static const pqsimd_sizes sizes = {.public_key = PQSIMD_WOLF_PK, .secret_key = PQSIMD_WOLF_SK, .signature = PQSIMD_WOLF_SIG};

PQSIMD_REGISTER(ops, PQSIMD_KIND_SIGN, sizes, api)
