/* Classic McEliece op table (round 4, the 10 sets PQClean ships), compiled once per parameter set
 * with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_MCELIECE348864_CLEAN -DPQSIMD_SCHEME=\"mceliece348864\" -DPQSIMD_IMPL=\"clean\"
 *   [-DMCELIECE_SEMI_SYSTEMATIC] -I<impl dir> -I<common>
 * MCELIECE_SEMI_SYSTEMATIC comes from the 'f' sets' [schemes] entries: their pk_gen takes pivots.
 * The decoder is timed whole (decrypt): clean builds it from support_gen (Benes network), synd, bm
 * (Berlekamp-Massey) and root (one evaluation per support element), avx2 from bitsliced additive
 * FFTs whose internals take other shapes, so no step is common to both.
 *
 * Ops follow the scheme's structure as the Classic McEliece benchmarks split it (keypair with its
 * irreducible-polynomial generation, systematic-form Gaussian elimination and control bits;
 * encryption; the decoder), plus the KEM API end to end. Inputs are deterministic and made once
 * per process (setup_inputs, setup_pk_gen); timed keypair / encaps / encrypt draw OS randomness. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "controlbits.h"
#include "decrypt.h"
#include "fips202.h"
#include "gf.h"
#include "params.h"
#include "pk_gen.h"
#include "sk_gen.h"
/* Last, as operations.c does: unistd.h declares another `encrypt`. */
#include "encrypt.h"

#include "optable.h"
#include "mceliece_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_MCELIECE_OPS)


#define PK_BYTES NS(CRYPTO_PUBLICKEYBYTES)
#define SK_BYTES NS(CRYPTO_SECRETKEYBYTES)
#define CT_BYTES NS(CRYPTO_CIPHERTEXTBYTES)
#define SS_BYTES NS(CRYPTO_BYTES)

#define SLACK 64
#define POOL_BYTES 32 /* keypair's seed */

static uint8_t pool[POOL_BYTES];
static uint8_t pk[PK_BYTES + SLACK], sk[SK_BYTES + SLACK];   /* the fixed key (built from parts) */
static uint8_t kpk[PK_BYTES + SLACK], ksk[SK_BYTES + SLACK]; /* op keypair writes here; pk_gen its pk */
static uint8_t gsk[SK_BYTES + SLACK];                        /* a real key (pk_gen's irr) */
static uint8_t ct[CT_BYTES + SLACK];                         /* the fixed ciphertext */
static uint8_t ect[CT_BYTES + SLACK], ess[SS_BYTES + SLACK]; /* encaps / encrypt / decaps write here */
static uint8_t e[SYS_N / 8 + SLACK];
static gf f_in[SYS_T], irr[SYS_T];   /* genpoly_gen input (the fixed key's), output */
static uint32_t perm[1 << GFBITS];   /* a permutation for which pk_gen succeeds with gsk's irr */
static int16_t kpi[1 << GFBITS];     /* its sorted form (pk_gen's output) */
static int16_t pi[1 << GFBITS];      /* the fixed key's permutation (controlbits' input) */
static uint8_t cbits[COND_BYTES + SLACK];
static volatile int sink;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    pqsimd_fill(b, n, salt);
}

static gf gf_le(const uint8_t *p) { return (gf)((p[0] | (p[1] << 8)) & GFMASK); }

/* pk_gen on the real key's Goppa polynomial (gsk) and permutation (perm); the sorted permutation
 * goes to kpi. */
static int call_pk_gen(uint8_t *out) {
#ifdef MCELIECE_SEMI_SYSTEMATIC
    uint64_t pivots;
    return pk_gen(out, gsk + 40, perm, kpi, &pivots);
#else
    return pk_gen(out, gsk + 40, perm, kpi);
#endif
}

static void store_le(uint8_t *p, gf x) {
    p[0] = (uint8_t)(x & 0xff);
    p[1] = (uint8_t)(x >> 8);
}

_Static_assert(SK_BYTES == 40 + IRR_BYTES + COND_BYTES + SYS_N / 8, "secret key layout");

/* Inputs for every op but pk_gen, without key generation (whose Gaussian elimination takes tens of
 * seconds at -O0 in the large sets): a secret key built from its parts, delta || c || g || control
 * bits || s, with g = genpoly_gen of a fixed element and the control bits of a fixed permutation;
 * the error vector e of weight t inside the first m t positions, whose syndrome under the
 * systematic parity-check matrix [I | T] is e's first m t bits whatever T is: the ciphertext C.
 * decaps then decodes C to e (a successful decapsulation) with any T, and encaps / encrypt take a
 * fixed public key T of the set's size. Every op here is constant-time, so its cost does not
 * depend on which valid inputs it gets (pq-crystals' test_speed times uninitialised buffers). */
static void setup_inputs(void) {
    static pqsimd_once once;
    if (!pqsimd_once_per_variation(&once)) {
        return;
    }
    uint8_t seed[33] = {7};
    for (size_t i = 1; i < sizeof seed; i++) { /* another Goppa polynomial per variation (0: the timed one) */
        seed[i] = pqsimd_variation_byte(3, i);
    }
    uint8_t fbytes[2 * SYS_T];
    do { /* the minimal polynomial of a fixed element of GF(2^mt); rarely of degree < t: next seed */
        shake256(fbytes, sizeof fbytes, seed, sizeof seed);
        for (int i = 0; i < SYS_T; i++) {
            f_in[i] = gf_le(fbytes + 2 * i);
        }
        seed[0]++;
    } while (genpoly_gen(irr, f_in) != 0);
    /* j -> a j + b mod 2^m with a odd: a permutation (a = 1445, b = 291 for the timed inputs, others per variation) */
    int a = 1445 + 2 * pqsimd_variation_byte(4, 0), b = 291 + pqsimd_variation_byte(4, 1);
    for (int j = 0; j < (1 << GFBITS); j++) {
        pi[j] = (int16_t)((j * a + b) & ((1 << GFBITS) - 1));
    }
    controlbitsfrompermutation(cbits, pi, GFBITS, 1 << GFBITS);
    fill(sk, 40, 1);
    for (int i = 0; i < SYS_T; i++) {
        store_le(sk + 40 + 2 * i, irr[i]);
    }
    memcpy(sk + 40 + IRR_BYTES, cbits, COND_BYTES);
    fill(sk + 40 + IRR_BYTES + COND_BYTES, SYS_N / 8, 2);
    fill(pk, PK_BYTES, 3);
    memset(ct, 0, sizeof ct);
    for (int i = 0; i < SYS_T; i++) { /* t distinct positions below m t = PK_NROWS */
        int pos = (i * (PK_NROWS / SYS_T)) + (i % 3);
        ct[pos / 8] |= (uint8_t)(1u << (pos % 8));
    }
}

/* The permutation that a Benes network's control bits encode (the Classic McEliece spec): its
 * 2m - 1 layers of conditional swaps, layer l swapping positions 2^s apart (s = l, then back down
 * to 0), applied to the identity; the bits of a layer are read LSB-first, n/2 per layer. */
static void permutation_of(int16_t *p, const uint8_t *bits) {
    const int n = 1 << GFBITS;
    for (int x = 0; x < n; x++) {
        p[x] = (int16_t)x;
    }
    for (int l = 0; l < 2 * GFBITS - 1; l++) {
        int d = 1 << (l < GFBITS ? l : 2 * GFBITS - 2 - l);
        const uint8_t *b = bits + (size_t)l * (size_t)(n / 16);
        int k = 0;
        for (int base = 0; base < n; base += 2 * d) {
            for (int x = base; x < base + d; x++, k++) {
                if ((b[k >> 3] >> (k & 7)) & 1) {
                    int16_t t = p[x];
                    p[x] = p[x + d];
                    p[x + d] = t;
                }
            }
        }
    }
}

/* pk_gen succeeds only for some (g, permutation) pairs (the non-'f' sets: ~29% of permutations) and
 * a failing try costs about as much as a successful one: take a real key's, from a fixed pool of
 * randomness, its permutation read back from its control bits (pk_gen sorts perm, so perm[pi[j]] = j
 * gives back pi). Should that not succeed, the first of a fixed sequence of permutations that does. */
static void setup_pk_gen(void) {
    static pqsimd_once once;
    if (!pqsimd_once_per_variation(&once)) {
        return;
    }
    fill(pool, sizeof pool, 1);
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(pool, sizeof pool);
    NS(crypto_kem_keypair)(kpk, ksk);
    v->random_pool(NULL, 0); /* timed keypair / encaps / encrypt draw OS randomness, as in PQClean */
    memcpy(gsk, ksk, sizeof gsk);
    permutation_of(kpi, ksk + 40 + IRR_BYTES);
    for (int j = 0; j < (1 << GFBITS); j++) {
        perm[kpi[j]] = (uint32_t)j;
    }
    uint8_t seed[33] = {0};
    for (uint8_t k = 0; call_pk_gen(kpk) != 0; k++) {
        seed[0] = k;
        shake256((uint8_t *)perm, sizeof perm, seed, sizeof seed);
    }
}

static void op_keypair(void) { NS(crypto_kem_keypair)(kpk, ksk); }
static void op_encaps(void) { NS(crypto_kem_enc)(ect, ess, pk); }
static void op_decaps(void) { NS(crypto_kem_dec)(ess, ct, sk); }

/* Niederreiter encryption: a random weight-t error vector and its syndrome H e. */
static void op_encrypt(void) { encrypt(ect, pk, e); }

/* The whole decoder: the error vector of the fixed ciphertext (support, syndromes, key equation,
 * roots, and the re-encryption check). */
static void op_decrypt(void) { sink = decrypt(e, sk + 40, ct); }

/* Key generation's parts: the Goppa polynomial, the public key by Gaussian elimination over GF(2)
 * to systematic form (the dominant cost), and the Benes network's control bits. */
static void op_genpoly_gen(void) { sink = genpoly_gen(irr, f_in); }
static void op_pk_gen(void) { sink = call_pk_gen(kpk); }
static void op_controlbits(void) { controlbitsfrompermutation(cbits, pi, GFBITS, 1 << GFBITS); }

PQSIMD_EMPTY_OP

/* In data/families/mceliece.toml's order. */
static const pqsimd_op ops[] = {
    {PQSIMD_OP(keypair), NULL, op_keypair},
    {PQSIMD_OP(encaps), setup_inputs, op_encaps},
    {PQSIMD_OP(decaps), setup_inputs, op_decaps},
    {PQSIMD_OP(genpoly_gen), setup_inputs, op_genpoly_gen},
    {PQSIMD_OP(pk_gen), setup_pk_gen, op_pk_gen},
    {PQSIMD_OP(controlbits), setup_inputs, op_controlbits},
    {PQSIMD_OP(encrypt), setup_inputs, op_encrypt},
    {PQSIMD_OP(decrypt), setup_inputs, op_decrypt},
    {PQSIMD_OP(empty), NULL, op_empty},
};

static const pqsimd_sizes sizes = {.public_key = PK_BYTES, .secret_key = SK_BYTES, .ciphertext = CT_BYTES, .shared_secret = SS_BYTES};
static const pqsimd_api api = {.keypair = NS(crypto_kem_keypair), .encaps = NS(crypto_kem_enc), .decaps = NS(crypto_kem_dec)};

/* What [ct.secret] of the family's TOML names per op. */
static const pqsimd_buffer buffers[] = {PQSIMD_BUFFER(pool), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk), PQSIMD_BUFFER(kpk), PQSIMD_BUFFER(ksk), PQSIMD_BUFFER(ct), PQSIMD_BUFFER(ect), PQSIMD_BUFFER(ess)};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_KEM, sizes, api, buffers)
