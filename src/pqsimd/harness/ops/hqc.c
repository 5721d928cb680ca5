/* HQC op table (the 2023-04-30 submission as PQClean ships it: hqc-128/192/256, clean only),
 * compiled once per parameter set with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_HQC128_CLEAN -DPQSIMD_SCHEME=\"hqc-128\" -DPQSIMD_IMPL=\"clean\"
 *   -I<impl dir> -I<common>
 * PQClean has no hand-vectorized HQC, so a study of it has the compiler stages only.
 *
 * Ops follow the scheme's structure (the operations the HQC reference implementation is built
 * from): the KEM end to end, the PKE encryption and decryption, the polynomial multiplication in
 * F2[x]/(x^n - 1) (vect_mul: Karatsuba over 64-bit carry-less products), the concatenated code
 * (Reed-Muller RM(1,7) duplicated, inside Reed-Solomon over GF(2^8)) and each code on its own, and
 * fixed-weight sampling. Inputs are deterministic: a key and a ciphertext from a fixed pool of
 * randomness, decoders fed codewords with errors within their capacity. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "gf2x.h"
#include "hqc.h"
#include "parameters.h"
#include "parsing.h"
#include "reed_muller.h"
#include "reed_solomon.h"
#include "shake_prng.h"
#include "vector.h"

#include "optable.h"
#include "hqc_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_HQC_OPS)


#define SLACK 64

static uint8_t pool[256];
static uint8_t pk[PUBLIC_KEY_BYTES + SLACK], sk[SECRET_KEY_BYTES + SLACK];   /* the fixed key */
static uint8_t kpk[PUBLIC_KEY_BYTES + SLACK], ksk[SECRET_KEY_BYTES + SLACK]; /* op keypair writes here */
static uint8_t ct[CIPHERTEXT_BYTES + SLACK], ss[SHARED_SECRET_BYTES + SLACK]; /* the fixed ciphertext */
static uint8_t ect[CIPHERTEXT_BYTES + SLACK], ess[SHARED_SECRET_BYTES + SLACK];
static uint8_t msg[VEC_K_SIZE_BYTES], msg_out[VEC_K_SIZE_BYTES], sigma[VEC_K_SIZE_BYTES];
static uint8_t theta[SHAKE256_512_BYTES];
static uint8_t salt[SALT_SIZE_BYTES + SLACK];
static uint64_t u[VEC_N_SIZE_64], v[VEC_N1N2_SIZE_64];     /* the fixed ciphertext, parsed */
static uint64_t eu[VEC_N_SIZE_64], ev[VEC_N1N2_SIZE_64];   /* pke_encrypt writes here */
static uint64_t h[VEC_N_SIZE_64], s_vec[VEC_N_SIZE_64];    /* the public key, parsed */
static uint64_t r2[VEC_N_SIZE_64], prod[VEC_N_SIZE_64];    /* vect_mul: r2 (weight omega_r) times h */
static uint64_t em[VEC_N1N2_SIZE_64], noisy[VEC_N1N2_SIZE_64]; /* a concatenated codeword, with errors */
static uint8_t rs_cw[VEC_N1_SIZE_BYTES], rs_noisy[VEC_N1_SIZE_BYTES], rs_work[VEC_N1_SIZE_BYTES];
static uint8_t rs_msg[VEC_N1_SIZE_BYTES];
static uint64_t sampled[VEC_N_SIZE_64];
static seedexpander_state expander; /* fixed_weight draws from it, continuing on every call */
static volatile uint8_t sink;

static void fill(uint8_t *b, size_t n, uint8_t salt_byte) {
    pqsimd_fill(b, n, salt_byte);
}

static void setup_inputs(void) {
    static pqsimd_once once;
    if (!pqsimd_once_per_variation(&once)) {
        return;
    }
    fill(pool, sizeof pool, 1);
    const pqsimd_variant *pv = pqsimd_variant_entry();
    pv->random_pool(pool, sizeof pool);
    NS(crypto_kem_keypair)(pk, sk);
    NS(crypto_kem_enc)(ct, ss, pk);
    pv->random_pool(NULL, 0); /* timed keypair / encaps draw OS randomness, as in PQClean */
    NS(hqc_ciphertext_from_string)(u, v, salt, ct);
    NS(hqc_public_key_from_string)(h, s_vec, pk);
    fill(msg, sizeof msg, 2);
    fill(theta, sizeof theta, 3);

    uint8_t seed[SEED_BYTES];
    fill(seed, sizeof seed, 4);
    NS(seedexpander_init)(&expander, seed, sizeof seed);
    NS(vect_set_random_fixed_weight)(&expander, r2, PARAM_OMEGA_R);

    /* Codewords with errors the decoders correct: a few flipped bits per Reed-Muller block, and
     * PARAM_DELTA (the Reed-Solomon capacity) wrong bytes. */
    NS(code_encode)(em, msg);
    memcpy(noisy, em, sizeof noisy);
    for (size_t i = 0; i < VEC_N1N2_SIZE_64; i += 3) {
        noisy[i] ^= 0x0100000000000101ull;
    }
    NS(reed_solomon_encode)(rs_cw, msg);
    memcpy(rs_noisy, rs_cw, sizeof rs_noisy);
    for (int i = 0; i < PARAM_DELTA; i++) {
        rs_noisy[(size_t)i * (VEC_N1_SIZE_BYTES / PARAM_DELTA)] ^= (uint8_t)(0x5a + i);
    }
}

static void op_keypair(void) { NS(crypto_kem_keypair)(kpk, ksk); }
static void op_encaps(void) { NS(crypto_kem_enc)(ect, ess, pk); }
static void op_decaps(void) { NS(crypto_kem_dec)(ess, ct, sk); }

/* The PKE inside the KEM: u = r1 + h r2, v = encode(m) + s r2 + e; and decoding v - u y. */
static void op_pke_encrypt(void) { NS(hqc_pke_encrypt)(eu, ev, msg, theta, pk); }
static void op_pke_decrypt(void) { sink = NS(hqc_pke_decrypt)(msg_out, sigma, u, v, sk); }

/* One product in F2[x]/(x^n - 1): the sparse-by-dense products of encryption, computed densely. */
static void op_vect_mul(void) { NS(vect_mul)(prod, r2, h); }

static void op_code_encode(void) { NS(code_encode)(em, msg); }
static void op_code_decode(void) { NS(code_decode)(msg_out, noisy); }
static void op_rm_encode(void) { NS(reed_muller_encode)(em, rs_cw); }
static void op_rm_decode(void) { NS(reed_muller_decode)(rs_msg, noisy); }
static void op_rs_encode(void) { NS(reed_solomon_encode)(rs_cw, msg); }

/* reed_solomon_decode corrects its input in place: each call starts from the noisy codeword
 * (n1 bytes, a copy much cheaper than the decoder). */
static void op_rs_decode(void) {
    memcpy(rs_work, rs_noisy, sizeof rs_work);
    NS(reed_solomon_decode)(msg_out, rs_work);
}

/* A vector of weight omega_r (encryption draws r1, r2 and e so): SHAKE-256 output, then
 * constant-time rejection and placement. */
static void op_fixed_weight(void) { NS(vect_set_random_fixed_weight)(&expander, sampled, PARAM_OMEGA_R); }

PQSIMD_EMPTY_OP

/* In data/families/hqc.toml's order. */
static const pqsimd_op ops[] = {
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(encaps), setup_inputs, op_encaps},
    {PQSIMD_OP(decaps), setup_inputs, op_decaps},
    {PQSIMD_OP(pke_encrypt), setup_inputs, op_pke_encrypt},
    {PQSIMD_OP(pke_decrypt), setup_inputs, op_pke_decrypt},
    {PQSIMD_OP(vect_mul), setup_inputs, op_vect_mul},
    {PQSIMD_OP(code_encode), setup_inputs, op_code_encode},
    {PQSIMD_OP(code_decode), setup_inputs, op_code_decode},
    {PQSIMD_OP(rm_encode), setup_inputs, op_rm_encode},
    {PQSIMD_OP(rm_decode), setup_inputs, op_rm_decode},
    {PQSIMD_OP(rs_encode), setup_inputs, op_rs_encode},
    {PQSIMD_OP(rs_decode), setup_inputs, op_rs_decode},
    {PQSIMD_OP(fixed_weight), setup_inputs, op_fixed_weight},
    {PQSIMD_OP(empty), NULL, op_empty},
};

static const pqsimd_sizes sizes = {.public_key = PUBLIC_KEY_BYTES, .secret_key = SECRET_KEY_BYTES, .ciphertext = CIPHERTEXT_BYTES,
                                   .shared_secret = SHARED_SECRET_BYTES};
static const pqsimd_api api = {.keypair = NS(crypto_kem_keypair), .encaps = NS(crypto_kem_enc), .decaps = NS(crypto_kem_dec)};

/* What [ct.secret] of the family's TOML names per op. */
static const pqsimd_buffer buffers[] = {PQSIMD_BUFFER(pool), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk), PQSIMD_BUFFER(kpk), PQSIMD_BUFFER(ksk), PQSIMD_BUFFER(ct), PQSIMD_BUFFER(ss), PQSIMD_BUFFER(ect), PQSIMD_BUFFER(ess)};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_KEM, sizes, api, buffers)
