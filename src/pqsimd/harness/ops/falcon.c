/* Falcon op table (falcon-512/1024 and the padded-signature sets), compiled once per parameter set
 * with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_FALCON512_CLEAN -DPQSIMD_SCHEME=\"falcon-512\" -DPQSIMD_IMPL=\"clean\"
 *   -I<impl dir> -I<common>
 * clean and avx2 export the same internal API (inner.h): the ops call it alike. What differs is
 * the arithmetic behind `fpr`: clean emulates IEEE-754 binary64 in integers (fpr is a uint64_t),
 * avx2 uses the CPU's doubles and AVX2 (fpr wraps a double). clean -> avx2 therefore measures
 * hardware floating point plus SIMD, not SIMD alone (see data/families/falcon.toml).
 *
 * Ops follow Falcon's own speed.c (keygen, expand_privkey, sign_dyn, sign_tree, verify) and the
 * kernel benchmarks of the Falcon implementations (FFT / iFFT, the NTT mod q, FFT-domain
 * multiplication, the Gaussian sampler, hash-to-point), plus the PQClean API end to end.
 * Inputs are deterministic (a fixed key from a fixed seed); signing ops draw fresh randomness on
 * every call from a SHAKE-256 stream seeded once, so per-call costs sample the rejection loop. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "inner.h"

#include "optable.h"
#include "falcon_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_FALCON_OPS)


#define PK_BYTES NS(CRYPTO_PUBLICKEYBYTES)
#define SK_BYTES NS(CRYPTO_SECRETKEYBYTES)
#define SIG_BYTES NS(CRYPTO_BYTES)

/* The degree from the public-key size (1 + 14 * 2^logn / 8 bytes): api.h names no logn. */
#if PK_BYTES == 897
#define LOGN 9
#elif PK_BYTES == 1793
#define LOGN 10
#else
#error "unknown Falcon public-key size"
#endif
#define N (1u << LOGN)

#define SLACK 64
#define MSG_BYTES 32

/* tmp areas as inner.h sizes them (sign_dyn: 72 * 2^logn bytes, the most), aligned for fpr. */
typedef union {
    uint8_t b[72 * N];
    uint64_t u;
    fpr f;
} scratch;

static uint8_t coins[48 + 40 + 48]; /* keypair seed, then the reference signature's nonce and seed */
static uint8_t pk[PK_BYTES + SLACK], sk[SK_BYTES + SLACK];    /* the fixed key (sign, verify) */
static uint8_t kpk[PK_BYTES + SLACK], ksk[SK_BYTES + SLACK];  /* op keypair writes here */
static uint8_t sig[SIG_BYTES + SLACK];                        /* op sign writes here */
static uint8_t vsig[SIG_BYTES + SLACK];                       /* the valid signature op verify checks */
static size_t vsiglen;
static uint8_t msg[MSG_BYTES];
static uint8_t nonce[40];

static int8_t kf[N], kg[N], kF[N], kG[N]; /* the internal ops' key, from keygen on a fixed seed */
static uint16_t kh[N];
static uint16_t hm[N];                    /* a hashed message (hash_to_point of msg) */
static int16_t s2[N];                     /* sign_dyn / sign_tree output */
static fpr expanded[(LOGN + 5) << LOGN] __attribute__((aligned(64))); /* (8 logn + 40) 2^logn bytes */
static fpr fsrc[N] __attribute__((aligned(64)));  /* a real polynomial with small coefficients */
static fpr ff[N] __attribute__((aligned(64)));    /* FFT(f) and FFT(g) */
static fpr fg[N] __attribute__((aligned(64)));
static fpr fa[N] __attribute__((aligned(64)));    /* fft / ifft / poly_mul_fft work here */
static uint16_t ntt_buf[N];
static scratch tmp __attribute__((aligned(64)));
static inner_shake256_context rng;        /* the signing ops' randomness, seeded once */
static sampler_context samp;
static fpr mu, isigma;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    pqsimd_fill(b, n, salt);
}

static void shake_from(inner_shake256_context *sc, const uint8_t *seed, size_t n) {
    inner_shake256_init(sc);
    inner_shake256_inject(sc, seed, n);
    inner_shake256_flip(sc);
}

/* SHAKE-256 of nonce || message to a point mod q (constant-time variant, as signing uses). */
static void op_hash_to_point(void) {
    inner_shake256_context sc;
    inner_shake256_init(&sc);
    inner_shake256_inject(&sc, nonce, sizeof nonce);
    inner_shake256_inject(&sc, msg, sizeof msg);
    inner_shake256_flip(&sc);
    NS(hash_to_point_ct)(&sc, hm, LOGN, tmp.b);
    inner_shake256_ctx_release(&sc);
}

/* Everything deterministic, made once per process: keygen at -O0 takes tenths of a second and
 * every op's setup (and the probe) would redo it. */
static void setup_inputs(void) {
    static pqsimd_once once;
    if (!pqsimd_once_per_variation(&once)) {
        return;
    }
    uint8_t seed[48];
    fill(seed, sizeof seed, 1);
    inner_shake256_context krng;
    shake_from(&krng, seed, sizeof seed);
    NS(keygen)(&krng, kf, kg, kF, kG, kh, LOGN, tmp.b);
    inner_shake256_ctx_release(&krng);
    NS(expand_privkey)(expanded, kf, kg, kF, kG, LOGN, tmp.b);

    fill(msg, sizeof msg, 2);
    fill(nonce, sizeof nonce, 3);
    op_hash_to_point(); /* hm */

    for (unsigned i = 0; i < N; i++) {
        fsrc[i] = fpr_of((int64_t)kf[i]); /* f and g: the polynomials expand_privkey transforms */
        fg[i] = fpr_of((int64_t)kg[i]);
        ntt_buf[i] = kh[i];
    }
    memcpy(ff, fsrc, sizeof ff);
    NS(FFT)(ff, LOGN);
    NS(FFT)(fg, LOGN);
    fill(seed, sizeof seed, 4);
    shake_from(&rng, seed, sizeof seed);
    NS(prng_init)(&samp.p, &rng);
    samp.sigma_min = fpr_sigma_min[LOGN];
    mu = fpr_div(fpr_of(-7), fpr_of(3));           /* a centre off the integers */
    isigma = fpr_div(fpr_of(100), fpr_of(165));    /* sigma = 1.65, within the leaves' range */

    /* The fixed key pair and a valid signature, through the variant's randomness control. */
    fill(coins, sizeof coins, 5);
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, sizeof coins);
    NS(crypto_sign_keypair)(pk, sk);
    NS(crypto_sign_signature)(vsig, &vsiglen, msg, MSG_BYTES, sk);
    v->random_pool(NULL, 0); /* timed keypair / sign draw OS randomness, as in PQClean */
}

static void op_keypair(void) { NS(crypto_sign_keypair)(kpk, ksk); }

static void op_sign(void) {
    size_t siglen;
    NS(crypto_sign_signature)(sig, &siglen, msg, MSG_BYTES, sk);
}

static void op_verify(void) { NS(crypto_sign_verify)(vsig, vsiglen, msg, MSG_BYTES, pk); }

/* speed.c's expand_privkey: B0 in FFT form and the LDL tree from (f, g, F, G). */
static void op_expand_privkey(void) { NS(expand_privkey)(expanded, kf, kg, kF, kG, LOGN, tmp.b); }

/* speed.c's sign_dyn (what crypto_sign_signature runs) and sign_tree (with the expanded key),
 * on a fixed hashed message; the randomness continues the seeded stream on every call. */
static void op_sign_dyn(void) { NS(sign_dyn)(s2, &rng, kf, kg, kF, kG, hm, LOGN, tmp.b); }
static void op_sign_tree(void) { NS(sign_tree)(s2, &rng, expanded, hm, LOGN, tmp.b); }

/* The FFT ops start from a copy of their input (2^logn fpr, a few KB): repeated in place, the
 * unnormalized FFT would overflow and the iFFT drift into subnormals, whose native cost differs. */
static void op_fft(void) {
    memcpy(fa, fsrc, sizeof fa);
    NS(FFT)(fa, LOGN);
}

static void op_ifft(void) {
    memcpy(fa, ff, sizeof fa);
    NS(iFFT)(fa, LOGN);
}

/* One multiplication in FFT representation: FFT(f) times FFT(g). */
static void op_poly_mul_fft(void) {
    memcpy(fa, ff, sizeof fa);
    NS(poly_mul_fft)(fa, fg, LOGN);
}

/* The NTT mod q = 12289 of verification (with the Montgomery conversion, the exported wrapper of
 * the static mq_NTT): integer code, identical C in clean and avx2. Its output stays in [0, q). */
static void op_ntt(void) { NS(to_ntt_monty)(ntt_buf, LOGN); }

/* One draw of SamplerZ (base half-Gaussian plus rejection), the inner step of ffSampling. */
static volatile int sink;
static void op_sampler(void) { sink = NS(sampler)(&samp, mu, isigma); }

PQSIMD_EMPTY_OP

/* In data/families/falcon.toml's order. */
static const pqsimd_op ops[] = {
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(expand_privkey), setup_inputs, op_expand_privkey},
    {PQSIMD_OP(sign_dyn), setup_inputs, op_sign_dyn},
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

static const pqsimd_sizes sizes = {.public_key = PK_BYTES, .secret_key = SK_BYTES, .signature = SIG_BYTES};
/* crypto_sign_signature / crypto_sign_verify already have the gate's signatures. */
static const pqsimd_api api = {.keypair = NS(crypto_sign_keypair), .sign = NS(crypto_sign_signature), .verify = NS(crypto_sign_verify)};

/* What [ct.secret] of the family's TOML names per op. */
static const pqsimd_buffer buffers[] = {PQSIMD_BUFFER(coins), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk), PQSIMD_BUFFER(kpk), PQSIMD_BUFFER(ksk), PQSIMD_BUFFER(sig), PQSIMD_BUFFER(vsig), PQSIMD_BUFFER(msg), PQSIMD_BUFFER(nonce)};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_SIGN, sizes, api, buffers)
