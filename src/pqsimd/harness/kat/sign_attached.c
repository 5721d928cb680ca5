/* PQClean's NIST KAT program signs through the attached API (sm = signature || message,
 * crypto_sign / crypto_sign_open). pq-code-package implementations have the detached FIPS 204 API
 * with a context: this is the attached API over it, with the empty context, as PQClean defines
 * crypto_sign and crypto_sign_open. api.h is generated per build (sources/pq_code_package.py). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"

int PQSIMD_KAT_SIGNATURE(uint8_t *sig, size_t *siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
                         size_t ctxlen, const uint8_t *sk);
int PQSIMD_KAT_VERIFY(const uint8_t *sig, size_t siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
                      size_t ctxlen, const uint8_t *pk);

int PQSIMD_KAT_crypto_sign(uint8_t *sm, size_t *smlen, const uint8_t *m, size_t mlen, const uint8_t *sk) {
    size_t siglen = 0;
    memmove(sm + PQSIMD_KAT_CRYPTO_BYTES, m, mlen);
    int rc = PQSIMD_KAT_SIGNATURE(sm, &siglen, sm + PQSIMD_KAT_CRYPTO_BYTES, mlen, NULL, 0, sk);
    *smlen = siglen + mlen;
    return rc;
}

int PQSIMD_KAT_crypto_sign_open(uint8_t *m, size_t *mlen, const uint8_t *sm, size_t smlen, const uint8_t *pk) {
    if (smlen < PQSIMD_KAT_CRYPTO_BYTES) {
        return -1;
    }
    size_t n = smlen - PQSIMD_KAT_CRYPTO_BYTES;
    if (PQSIMD_KAT_VERIFY(sm, PQSIMD_KAT_CRYPTO_BYTES, sm + PQSIMD_KAT_CRYPTO_BYTES, n, NULL, 0, pk)) {
        *mlen = (size_t)-1; /* as PQClean: a failed open yields no message */
        return -1;
    }
    memmove(m, sm + PQSIMD_KAT_CRYPTO_BYTES, n);
    *mlen = n;
    return 0;
}
