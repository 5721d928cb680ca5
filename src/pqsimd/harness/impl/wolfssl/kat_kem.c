/* PQClean's NIST KAT program on a wolfSSL KEM: the three functions its generated api.h names
 * (sources/wolfssl.py), over wolfSSL's deterministic API with the KAT's randombytes (the NIST DRBG):
 * key generation draws d || z (64 bytes), encapsulation m (32), as PQClean's crypto_kem_* do.
 * Compiled once per parameter set with -DPQSIMD_WOLF_PARAM. */
#include <stddef.h>
#include <stdint.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mlkem.h>

#include "api.h"

int PQCLEAN_randombytes(uint8_t *output, size_t n);

int PQSIMD_KAT_crypto_kem_keypair(uint8_t *pk, uint8_t *sk) {
    MlKemKey k;
    byte coins[64];
    int rc = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    PQCLEAN_randombytes(coins, sizeof coins);
    rc = wc_MlKemKey_MakeKeyWithRandom(&k, coins, sizeof coins);
    if (rc == 0) rc = wc_MlKemKey_EncodePublicKey(&k, pk, PQSIMD_KAT_CRYPTO_PUBLICKEYBYTES);
    if (rc == 0) rc = wc_MlKemKey_EncodePrivateKey(&k, sk, PQSIMD_KAT_CRYPTO_SECRETKEYBYTES);
    wc_MlKemKey_Free(&k);
    return rc;
}

int PQSIMD_KAT_crypto_kem_enc(uint8_t *ct, uint8_t *ss, const uint8_t *pk) {
    MlKemKey k;
    byte m[32];
    int rc = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    rc = wc_MlKemKey_DecodePublicKey(&k, pk, PQSIMD_KAT_CRYPTO_PUBLICKEYBYTES);
    PQCLEAN_randombytes(m, sizeof m);
    if (rc == 0) rc = wc_MlKemKey_EncapsulateWithRandom(&k, ct, ss, m, sizeof m);
    wc_MlKemKey_Free(&k);
    return rc;
}

int PQSIMD_KAT_crypto_kem_dec(uint8_t *ss, const uint8_t *ct, const uint8_t *sk) {
    MlKemKey k;
    int rc = wc_MlKemKey_Init(&k, PQSIMD_WOLF_PARAM, NULL, INVALID_DEVID);
    if (rc != 0) return rc;
    rc = wc_MlKemKey_DecodePrivateKey(&k, sk, PQSIMD_KAT_CRYPTO_SECRETKEYBYTES);
    if (rc == 0) rc = wc_MlKemKey_Decapsulate(&k, ss, ct, PQSIMD_KAT_CRYPTO_CIPHERTEXTBYTES);
    wc_MlKemKey_Free(&k);
    return rc;
}
