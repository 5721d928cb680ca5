/* PQClean's NIST KAT program on wolfSSL's ML-DSA: the attached API its generated api.h names
 * (sources/wolfssl.py), over FIPS 204's pure interface with an empty context and the KAT's randombytes
 * (the NIST DRBG): key generation draws xi (32 bytes), signing rnd (32 bytes), as PQClean's
 * crypto_sign_* do; sm = signature || message. Compiled once per parameter set with -DPQSIMD_WOLF_PARAM. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mldsa.h>

#include "api.h"

int PQCLEAN_randombytes(uint8_t *output, size_t n);

static int new_key(wc_MlDsaKey *k) {
    int r = wc_MlDsaKey_Init(k, NULL, INVALID_DEVID);
    return r != 0 ? r : wc_MlDsaKey_SetParams(k, PQSIMD_WOLF_PARAM);
}

int PQSIMD_KAT_crypto_sign_keypair(uint8_t *pk, uint8_t *sk) {
    wc_MlDsaKey k;
    byte seed[32];
    word32 pl = PQSIMD_KAT_CRYPTO_PUBLICKEYBYTES, sl = PQSIMD_KAT_CRYPTO_SECRETKEYBYTES;
    int r = new_key(&k);
    PQCLEAN_randombytes(seed, sizeof seed);
    if (r == 0) r = wc_MlDsaKey_MakeKeyFromSeed(&k, seed);
    if (r == 0) r = wc_MlDsaKey_ExportPubRaw(&k, pk, &pl);
    if (r == 0) r = wc_MlDsaKey_ExportPrivRaw(&k, sk, &sl);
    wc_MlDsaKey_Free(&k);
    return r;
}

int PQSIMD_KAT_crypto_sign(uint8_t *sm, size_t *smlen, const uint8_t *m, size_t mlen, const uint8_t *sk) {
    wc_MlDsaKey k;
    byte rnd[32];
    word32 len = PQSIMD_KAT_CRYPTO_BYTES;
    int r = new_key(&k);
    memmove(sm + PQSIMD_KAT_CRYPTO_BYTES, m, mlen);
    if (r == 0) r = wc_MlDsaKey_ImportPrivRaw(&k, sk, PQSIMD_KAT_CRYPTO_SECRETKEYBYTES);
    PQCLEAN_randombytes(rnd, sizeof rnd);
    if (r == 0) r = wc_MlDsaKey_SignCtxWithSeed(&k, NULL, 0, sm, &len, sm + PQSIMD_KAT_CRYPTO_BYTES, (word32)mlen, rnd);
    *smlen = len + mlen;
    wc_MlDsaKey_Free(&k);
    return r;
}

int PQSIMD_KAT_crypto_sign_open(uint8_t *m, size_t *mlen, const uint8_t *sm, size_t smlen, const uint8_t *pk) {
    wc_MlDsaKey k;
    int res = 0;
    if (smlen < PQSIMD_KAT_CRYPTO_BYTES) return -1;
    size_t n = smlen - PQSIMD_KAT_CRYPTO_BYTES;
    int r = new_key(&k);
    if (r == 0) r = wc_MlDsaKey_ImportPubRaw(&k, pk, PQSIMD_KAT_CRYPTO_PUBLICKEYBYTES);
    if (r == 0) r = wc_MlDsaKey_VerifyCtx(&k, sm, PQSIMD_KAT_CRYPTO_BYTES, NULL, 0, sm + PQSIMD_KAT_CRYPTO_BYTES,
                                          (word32)n, &res);
    wc_MlDsaKey_Free(&k);
    if (r != 0 || res != 1) {
        *mlen = (size_t)-1;
        return -1;
    }
    memmove(m, sm + PQSIMD_KAT_CRYPTO_BYTES, n);
    *mlen = n;
    return 0;
}
