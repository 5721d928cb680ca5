/* wolfSSL's wc_mldsa.c compiled as is, in one translation unit with pqsimd's accessors of its static
 * kernels (wolfssl_mldsa.h) and the pin of its run-time dispatch (wolfssl_pin.h). Nothing of wc_mldsa.c
 * is changed: it is #included whole; the build compiles this unit instead of it (data/families/ml-dsa.toml). */
#include <wolfssl/wolfcrypt/settings.h>
#include "wolfcrypt/src/wc_mldsa.c"
#include "wolfssl_pin.h"
#include "wolfssl_mldsa.h"

int pqsimd_mldsa_dispatch_check(void) {
#ifdef USE_INTEL_SPEEDUP
    return pqsimd_wolf_check(&cpuid_flags); /* wc_mldsa.c's copy */
#else
    return pqsimd_wolf_check(NULL);
#endif
}

static wc_Shake pqsimd_shake;
static int pqsimd_shake_ready;

static wc_Shake *shake(void) {
    if (!pqsimd_shake_ready) {
        wc_InitShake256(&pqsimd_shake, NULL, INVALID_DEVID);
        pqsimd_shake_ready = 1;
    }
    return &pqsimd_shake;
}

int pqsimd_mldsa_expand_a(const byte *rho, byte k, byte l, sword32 *a) {
    return mldsa_expand_a(shake(), rho, k, l, a, NULL);
}
void pqsimd_mldsa_ntt(sword32 *r) { mldsa_ntt(r); }
void pqsimd_mldsa_invntt(sword32 *r) { mldsa_invntt(r); }
void pqsimd_mldsa_pointwise(sword32 *r, sword32 *a, sword32 *b) { mldsa_mul(r, a, b); }
int pqsimd_mldsa_challenge(int level, const byte *seed, word32 len, byte tau, sword32 *c) {
    return mldsa_sample_in_ball(level, shake(), seed, len, tau, c, NULL);
}
void pqsimd_mldsa_decompose(const sword32 *r, sword32 gamma2, sword32 *r0, sword32 *r1) {
    mldsa_vec_decompose(r, 1, gamma2, r0, r1);
}
void pqsimd_mldsa_use_hint(sword32 *w1, sword32 gamma2, byte omega, const byte *h) {
    mldsa_vec_use_hint(w1, 1, gamma2, omega, h);
}
