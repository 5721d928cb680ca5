/* ML-KEM op table, compiled once per parameter set with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_MLKEM512_CLEAN -DPQSIMD_SCHEME=\"ml-kem-512\" -DPQSIMD_IMPL=\"clean\"
 *   [-DPQSIMD_AVX2] -I<impl dir> -I<common>
 * Inputs follow pq-crystals test_speed.c: fixed seed, buffers updated in place. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "indcpa.h"
#include "kem.h"
#include "params.h"
#include "poly.h"
#include "polyvec.h"

#include "runner.h"

#define PQSIMD_CAT_(a, b) a##_##b
#define PQSIMD_CAT(a, b) PQSIMD_CAT_(a, b)
#define NS(f) PQSIMD_CAT(PQSIMD_NS, f)
#define STATIC_NAME(f) PQSIMD_CAT(f, PQSIMD_NS)

/* avx2 polyvec_compress writes 2 bytes past the ciphertext and polyvec_decompress reads 12:
 * every byte buffer carries slack. */
#define SLACK 64

static uint8_t seed[KYBER_SYMBYTES];
static uint8_t coins32[KYBER_SYMBYTES];
static uint8_t coins64[2 * KYBER_SYMBYTES];
static uint8_t pk[KYBER_PUBLICKEYBYTES + SLACK];
static uint8_t sk[KYBER_SECRETKEYBYTES + SLACK];
static uint8_t ct[KYBER_CIPHERTEXTBYTES + SLACK];
static uint8_t key[KYBER_SSBYTES + SLACK];
static polyvec matrix[KYBER_K]; /* poly is a union with __m256i in avx2: alignment comes with the type */
static poly ap, bp, cp, dp;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t)(i * 7 + salt);
    }
}

static void setup_inputs(void) {
    fill(seed, sizeof seed, 1);
    fill(coins32, sizeof coins32, 2);
    fill(coins64, sizeof coins64, 3);
    NS(gen_matrix)(matrix, seed, 0);
    NS(poly_getnoise_eta1)(&ap, seed, 0);
    NS(indcpa_keypair_derand)(pk, sk, coins32);
    NS(indcpa_enc)(ct, key, pk, seed);
}

static void setup_kem(void) {
    setup_inputs();
    NS(crypto_kem_keypair_derand)(pk, sk, coins64);
    NS(crypto_kem_enc_derand)(ct, key, pk, coins32);
}

static void op_gen_a(void) { NS(gen_matrix)(matrix, seed, 0); }
static void op_noise_eta1(void) { NS(poly_getnoise_eta1)(&ap, seed, 0); }
static void op_noise_eta2(void) { NS(poly_getnoise_eta2)(&ap, seed, 0); }
static void op_ntt(void) { NS(poly_ntt)(&ap); }
static void op_invntt(void) { NS(poly_invntt_tomont)(&ap); }
static void op_basemul(void) { NS(polyvec_basemul_acc_montgomery)(&ap, &matrix[0], &matrix[1]); }
static void op_tomsg(void) { NS(poly_tomsg)(ct, &ap); }
static void op_frommsg(void) { NS(poly_frommsg)(&ap, ct); }
static void op_compress(void) { NS(poly_compress)(ct, &ap); }
static void op_decompress(void) { NS(poly_decompress)(&ap, ct); }
static void op_vcompress(void) { NS(polyvec_compress)(ct, &matrix[0]); }
static void op_vdecompress(void) { NS(polyvec_decompress)(&matrix[0], ct); }
static void op_ikeypair(void) { NS(indcpa_keypair_derand)(pk, sk, coins32); }
static void op_ienc(void) { NS(indcpa_enc)(ct, key, pk, seed); }
static void op_idec(void) { NS(indcpa_dec)(key, ct, sk); }
static void op_keypair_derand(void) { NS(crypto_kem_keypair_derand)(pk, sk, coins64); }
static void op_keypair(void) { NS(crypto_kem_keypair)(pk, sk); }
static void op_encaps_derand(void) { NS(crypto_kem_enc_derand)(ct, key, pk, coins32); }
static void op_encaps(void) { NS(crypto_kem_enc)(ct, key, pk); }
static void op_decaps(void) { NS(crypto_kem_dec)(key, ct, sk); }

/* Four eta1 noise polynomials, as key generation draws them. */
static void op_noise_x4(void) {
#ifdef PQSIMD_AVX2
    NS(poly_getnoise_eta1_4x)(&ap, &bp, &cp, &dp, seed, 0, 1, 2, 3);
#else
    NS(poly_getnoise_eta1)(&ap, seed, 0);
    NS(poly_getnoise_eta1)(&bp, seed, 1);
    NS(poly_getnoise_eta1)(&cp, seed, 2);
    NS(poly_getnoise_eta1)(&dp, seed, 3);
#endif
}

/* The harness's self-check: after overhead correction this must read ~0 ticks per call. */
__attribute__((noinline, aligned(64))) static void op_empty(void) { __asm__ volatile("" ::: "memory"); }

static const pqsimd_op ops[] = {
    {"gen_a", setup_inputs, op_gen_a},
    {"poly_getnoise_eta1", setup_inputs, op_noise_eta1},
    {"poly_getnoise_eta2", setup_inputs, op_noise_eta2},
    {"ntt", setup_inputs, op_ntt},
    {"invntt", setup_inputs, op_invntt},
    {"basemul", setup_inputs, op_basemul},
    {"poly_tomsg", setup_inputs, op_tomsg},
    {"poly_frommsg", setup_inputs, op_frommsg},
    {"poly_compress", setup_inputs, op_compress},
    {"poly_decompress", setup_inputs, op_decompress},
    {"polyvec_compress", setup_inputs, op_vcompress},
    {"polyvec_decompress", setup_inputs, op_vdecompress},
    {"indcpa_keypair", setup_inputs, op_ikeypair},
    {"indcpa_enc", setup_inputs, op_ienc},
    {"indcpa_dec", setup_inputs, op_idec},
    {"kem_keypair_derand", setup_kem, op_keypair_derand},
    {"kem_keypair", setup_kem, op_keypair},
    {"kem_encaps_derand", setup_kem, op_encaps_derand},
    {"kem_encaps", setup_kem, op_encaps},
    {"kem_decaps", setup_kem, op_decaps},
    {"noise_x4", setup_inputs, op_noise_x4},
    {"empty", NULL, op_empty},
};

static int unhex(const char *s, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        out[i] = (uint8_t)v;
    }
    return 0;
}

static void hex(FILE *out, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%02x", b[i]);
    }
}

/* For each input line "d z m" (hex, 32 bytes each): keypair_derand(d||z), encaps_derand(m),
 * decaps(ct), and decaps of ct with its first bit flipped (implicit rejection). */
static int vectors(FILE *in, FILE *out) {
    char line[512];
    static uint8_t vpk[KYBER_PUBLICKEYBYTES], vsk[KYBER_SECRETKEYBYTES];
    static uint8_t vct[KYBER_CIPHERTEXTBYTES], ss[KYBER_SSBYTES], ss_dec[KYBER_SSBYTES],
        ss_rej[KYBER_SSBYTES];
    uint8_t dz[64], m[32];
    while (fgets(line, sizeof line, in)) {
        char d[65], z[65], mm[65];
        if (sscanf(line, "%64s %64s %64s", d, z, mm) != 3 || unhex(d, dz, 32) || unhex(z, dz + 32, 32) ||
            unhex(mm, m, 32)) {
            fprintf(stderr, "harness: vectors: bad input line\n");
            return 2;
        }
        NS(crypto_kem_keypair_derand)(vpk, vsk, dz);
        NS(crypto_kem_enc_derand)(vct, ss, vpk, m);
        NS(crypto_kem_dec)(ss_dec, vct, vsk);
        vct[0] ^= 1;
        NS(crypto_kem_dec)(ss_rej, vct, vsk);
        vct[0] ^= 1;
        const struct {
            const uint8_t *b;
            size_t n;
        } fields[] = {{vpk, sizeof vpk}, {vsk, sizeof vsk}, {vct, sizeof vct},
                      {ss, sizeof ss},   {ss_dec, sizeof ss_dec}, {ss_rej, sizeof ss_rej}};
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            hex(out, fields[f].b, fields[f].n);
            fputc(f + 1 < sizeof fields / sizeof fields[0] ? ' ' : '\n', out);
        }
    }
    return 0;
}

static pqsimd_scheme STATIC_NAME(scheme) = {
    PQSIMD_SCHEME, PQSIMD_IMPL, ops, (int)(sizeof ops / sizeof ops[0]), vectors, NULL,
};

__attribute__((constructor)) static void STATIC_NAME(register_scheme)(void) {
    pqsimd_register(&STATIC_NAME(scheme));
}
