/* FIPS 205 SLH-DSA op table on wolfSSL's wc_slhdsa.c (data/families/slh-dsa.toml). Compiled once per
 * parameter set with -DPQSIMD_WOLF_PARAM=<wolfSSL's enum SlhDsaParam, e.g. SLHDSA_SHAKE128F> and the
 * build's user_settings.h (sources/wolfssl.py); wolfCrypt itself is one library for every set.
 *
 * The primitive API the gate checks is FIPS 205's pure interface with an empty context:
 *   keypair  slh_keygen: SK.seed, SK.prf, PK.seed drawn from randombytes in that order (3n bytes),
 *            pk = PK.seed || PK.root, sk = SK.seed || SK.prf || PK.seed || PK.root
 *   sign     deterministic slh_sign (opt_rand = PK.seed, Algorithm 22 with M' = 0x00 || 0 || M)
 *   verify   slh_verify (Algorithm 24)
 * so the gate's answers are compared byte for byte with an FIPS 205 oracle (the family's
 * [gate.answers_sha256], made by tools/slh_dsa_gate_digests.py). After every gate call the build's
 * run-time dispatch state must be the pinned one (pqsimd_wolf_dispatch_check), else the call returns
 * PQSIMD_RC_DISPATCH and the gate fails naming it.
 *
 * Ops: keypair, sign (deterministic), sign_hedged (opt_rand given: the hedged variant without the
 * RNG's cost), verify, and the internals wolfSSL reaches through its static functions (impl/wolfssl/
 * wolfssl_slhdsa.c): one WOTS+ chain (w - 1 = 15 F), a WOTS+ public key (len chains + T_len; 4 chains
 * at a time with the AVX2 Keccak in the SHAKE sets), a WOTS+ signature, one hypertree layer (XMSS
 * sign: 2^h' WOTS+ keys and their tree), the FORS signature and the FORS public key from it, and, in
 * the SHAKE sets, the Keccak-f[1600] permutation itself: 4 states at once (sha3_blocksx4_avx2, or 4
 * calls of the C permutation) and 1 state (the build's single-state path). Every input is fixed, so
 * no op's cost depends on the data. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_slhdsa.h>

#include "wolfssl_slhdsa.h"
#include "ops/optable.h"
#include "ops/slh_dsa_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_SLH_DSA_OPS)

int PQCLEAN_randombytes(uint8_t *output, size_t n);

#define PARAM PQSIMD_WOLF_PARAM
#ifdef PQSIMD_SLHDSA_SHAKE /* the set's defines in the family TOML */
#define SHAKE_SET 1
#endif
#define MAX_N 32
#define MAX_SIG 49856 /* SLH-DSA-*-256f */
#define MSG_BYTES 32
#define MAX_LEN 67          /* WOTS+ chains at n = 32 */
#define MAX_HM 9            /* h' of the s sets */

static SlhDsaKey key;        /* the fixed key of every op but keypair */
static SlhDsaKey kkey;       /* op keypair writes here */
static int n;
static byte seeds[3 * MAX_N], addrnd[MAX_N], msg[MSG_BYTES];
static byte sig[MAX_SIG], vsig[MAX_SIG];
static word32 vsiglen;
static byte md[64], node[MAX_N], chain_in[MAX_N], fors_pk[MAX_N];
static byte wots_sig[MAX_LEN * MAX_N], xmss_sig[(MAX_LEN + MAX_HM) * MAX_N], fors_sig[MAX_SIG];
static word64 keccak[4 * 25] __attribute__((aligned(32)));
static int ready;

static void fail(void) { __builtin_trap(); } /* an op that cannot run its inputs is a crash the guard names */

static void setup_key(void) {
    if (ready) return;
    for (int i = 0; i < 3 * MAX_N; i++) seeds[i] = (byte)(17 * i + 1);
    for (int i = 0; i < MAX_N; i++) { addrnd[i] = (byte)(5 * i + 3); chain_in[i] = (byte)(7 * i); }
    for (int i = 0; i < MSG_BYTES; i++) msg[i] = (byte)i;
    for (int i = 0; i < 64; i++) md[i] = (byte)(29 * i + 11);
    for (int i = 0; i < 4 * 25; i++) keccak[i] = 0x9e3779b97f4a7c15ULL * (word64)(i + 1);
    if (wc_SlhDsaKey_Init(&key, PARAM, NULL, INVALID_DEVID) != 0) fail();
    n = key.params->n;
    if (wc_SlhDsaKey_MakeKeyWithRandom(&key, seeds, n, seeds + n, n, seeds + 2 * n, n) != 0) fail();
    if (wc_SlhDsaKey_Init(&kkey, PARAM, NULL, INVALID_DEVID) != 0) fail();
    ready = 1;
}

static void setup_verify(void) {
    setup_key();
    vsiglen = sizeof vsig;
    if (wc_SlhDsaKey_SignDeterministic(&key, NULL, 0, msg, MSG_BYTES, vsig, &vsiglen) != 0) fail();
    memcpy(fors_sig, vsig + n, (size_t)key.params->k * (1 + key.params->a) * (size_t)n);
}

static void op_keypair(void) {
    if (wc_SlhDsaKey_MakeKeyWithRandom(&kkey, seeds, n, seeds + n, n, seeds + 2 * n, n) != 0) fail();
}

static void op_sign(void) {
    word32 len = sizeof sig;
    if (wc_SlhDsaKey_SignDeterministic(&key, NULL, 0, msg, MSG_BYTES, sig, &len) != 0) fail();
}

static void op_sign_hedged(void) {
    word32 len = sizeof sig;
    if (wc_SlhDsaKey_SignWithRandom(&key, NULL, 0, msg, MSG_BYTES, sig, &len, addrnd) != 0) fail();
}

static void op_verify(void) {
    if (wc_SlhDsaKey_Verify(&key, NULL, 0, msg, MSG_BYTES, vsig, vsiglen) != 0) fail();
}

static void op_wots_chain(void) { if (pqsimd_slhdsa_chain(&key, chain_in, node) != 0) fail(); }
static void op_wots_pkgen(void) { if (pqsimd_slhdsa_wots_pkgen(&key, node) != 0) fail(); }
static void op_wots_sign(void) { if (pqsimd_slhdsa_wots_sign(&key, chain_in, wots_sig) != 0) fail(); }
static void op_xmss_sign(void) { if (pqsimd_slhdsa_xmss_sign(&key, chain_in, xmss_sig) != 0) fail(); }
static void op_fors_sign(void) { if (pqsimd_slhdsa_fors_sign(&key, md, fors_sig) != 0) fail(); }
static void op_fors_pk(void) { if (pqsimd_slhdsa_fors_pk(&key, fors_sig, md, fors_pk) != 0) fail(); }
#ifdef SHAKE_SET
static void op_keccak_x4(void) { pqsimd_slhdsa_keccak_x4(keccak); }
static void op_keccak_1(void) { pqsimd_slhdsa_keccak_1(keccak); }
#endif

PQSIMD_EMPTY_OP

static const pqsimd_op ops[] = {
    {PQSIMD_OP(keypair), setup_key, op_keypair},
    {PQSIMD_OP(sign), setup_key, op_sign},
    {PQSIMD_OP(sign_hedged), setup_key, op_sign_hedged},
    {PQSIMD_OP(verify), setup_verify, op_verify},
    {PQSIMD_OP(wots_chain), setup_key, op_wots_chain},
    {PQSIMD_OP(wots_pkgen), setup_key, op_wots_pkgen},
    {PQSIMD_OP(wots_sign), setup_key, op_wots_sign},
    {PQSIMD_OP(xmss_sign), setup_key, op_xmss_sign},
    {PQSIMD_OP(fors_sign), setup_key, op_fors_sign},
    {PQSIMD_OP(fors_pk), setup_verify, op_fors_pk},
#ifdef SHAKE_SET
    {PQSIMD_OP(keccak_x4), setup_key, op_keccak_x4},
    {PQSIMD_OP(keccak_1), setup_key, op_keccak_1},
#endif
    {PQSIMD_OP(empty), NULL, op_empty},
};

/* --- the gate's API: FIPS 205 pure, empty context, deterministic signing ----------------------- */

static int api_keypair(uint8_t *pk, uint8_t *sk) {
    SlhDsaKey k;
    byte s[3 * MAX_N];
    word32 pklen, sklen;
    int rc = wc_SlhDsaKey_Init(&k, PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    int nn = k.params->n;
    pklen = 2 * (word32)nn;
    sklen = 4 * (word32)nn;
    PQCLEAN_randombytes(s, 3 * (size_t)nn);
    rc = wc_SlhDsaKey_MakeKeyWithRandom(&k, s, (word32)nn, s + nn, (word32)nn, s + 2 * nn, (word32)nn);
    if (rc == 0) rc = wc_SlhDsaKey_ExportPrivate(&k, sk, &sklen);
    if (rc == 0) rc = wc_SlhDsaKey_ExportPublic(&k, pk, &pklen);
    wc_SlhDsaKey_Free(&k);
    return rc != 0 ? rc : pqsimd_wolf_dispatch_check() ? PQSIMD_RC_DISPATCH : 0;
}

static int api_sign(uint8_t *s, size_t *slen, const uint8_t *m, size_t mlen, const uint8_t *sk) {
    SlhDsaKey k;
    int rc = wc_SlhDsaKey_Init(&k, PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    word32 len = (word32)wc_SlhDsaKey_SigSize(&k);
    rc = wc_SlhDsaKey_ImportPrivate(&k, sk, 4 * (word32)k.params->n);
    if (rc == 0) rc = wc_SlhDsaKey_SignDeterministic(&k, NULL, 0, m, (word32)mlen, s, &len);
    *slen = len;
    wc_SlhDsaKey_Free(&k);
    return rc != 0 ? rc : pqsimd_wolf_dispatch_check() ? PQSIMD_RC_DISPATCH : 0;
}

static int api_verify(const uint8_t *s, size_t slen, const uint8_t *m, size_t mlen, const uint8_t *pk) {
    SlhDsaKey k;
    int rc = wc_SlhDsaKey_Init(&k, PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    rc = wc_SlhDsaKey_ImportPublic(&k, pk, 2 * (word32)k.params->n);
    if (rc == 0) rc = wc_SlhDsaKey_Verify(&k, NULL, 0, m, (word32)mlen, s, (word32)slen);
    wc_SlhDsaKey_Free(&k);
    /* any failure is -1, as PQClean's crypto_sign_verify returns (the gate compares the codes) */
    return rc != 0 ? -1 : pqsimd_wolf_dispatch_check() ? PQSIMD_RC_DISPATCH : 0;
}

static pqsimd_sizes sizes;
static const pqsimd_api api = {.keypair = api_keypair, .sign = api_sign, .verify = api_verify};

/* The constant-time test's secrets (data/families/slh-dsa.toml [ct.secret]): SK.seed || SK.prf of the fixed
 * key (its first 2n bytes; PK.seed and PK.root after them are public), of keypair's seeds, and the hedged
 * signature's opt_rand. Their lengths are the set's, filled in below. */
static pqsimd_buffer buffers[] = {{"sk", key.sk, 0}, {"seeds", seeds, 0}, {"opt_rand", addrnd, 0}};

/* The sizes come from wolfSSL (per set); the registration below reads them after this runs. */
__attribute__((constructor(102))) static void STATIC_NAME(sizes_of_set)(void) {
    sizes.public_key = (size_t)wc_SlhDsaKey_PublicSizeFromParam(PARAM);
    sizes.secret_key = (size_t)wc_SlhDsaKey_PrivateSizeFromParam(PARAM);
    sizes.signature = (size_t)wc_SlhDsaKey_SigSizeFromParam(PARAM);
    size_t nn = sizes.public_key / 2; /* pk = PK.seed || PK.root */
    buffers[0].len = 2 * nn;
    buffers[1].len = 2 * nn;
    buffers[2].len = nn;
}

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_SIGN, sizes, api, buffers)
