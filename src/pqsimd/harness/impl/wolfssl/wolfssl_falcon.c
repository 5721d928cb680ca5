/* wolfSSL's falcon.c compiled as is, in one translation unit with pqsimd's accessors of its internals
 * (wolfssl_falcon.h). Nothing of falcon.c is changed: it is #included whole; the build compiles this
 * unit instead of it (data/families/falcon.toml). The library's random source is the harness's
 * randombytes (user_settings: CUSTOM_RAND_GENERATE_BLOCK), so the gate's pool reaches it. */
#include <wolfssl/wolfcrypt/settings.h>
#include "wolfcrypt/src/falcon.c"
#include "wolfssl_pin.h"
#include "wolfssl_falcon.h"

#include <stdint.h>
int PQCLEAN_randombytes(uint8_t *output, size_t n);

int pqsimd_wolf_random_block(byte *out, word32 sz) { return PQCLEAN_randombytes(out, sz); }

int pqsimd_falcon_dispatch_check(void) { return pqsimd_wolf_check(NULL); } /* falcon.c has no cpuid dispatch */

int pqsimd_falcon_keygen(WC_RNG *rng, sword8 *f, sword8 *g, sword8 *F, sword8 *G, word16 *h, unsigned logn) {
    return falcon_keygen(rng, f, g, F, G, h, logn);
}
int pqsimd_falcon_expand(pqsimd_fpr *expanded, const sword8 *f, const sword8 *g, const sword8 *F, const sword8 *G,
                         unsigned logn) {
    return falcon_expand_privkey(expanded, f, g, F, G, logn, NULL);
}
static falcon_sampler_ctx pqsimd_spc;
void *pqsimd_falcon_sampler(unsigned logn, WC_RNG *rng) {
    return falcon_sampler_init(&pqsimd_spc, (int)logn, rng) == 0 ? &pqsimd_spc : NULL;
}
int pqsimd_falcon_sign_tree(void *spc, const pqsimd_fpr *expanded, const word16 *c, sword16 *s2, pqsimd_fpr *tmp,
                            unsigned logn) {
    return falcon_sign_core((falcon_sampler_ctx *)spc, expanded, c, s2, tmp, logn);
}
#ifdef WOLFSSL_FALCON_SIGN_SMALL_MEM /* the dynamic-tree signer exists only then */
int pqsimd_falcon_sign_dyn(void *spc, const sword8 *f, const sword8 *g, const sword8 *F, const sword8 *G,
                           const word16 *c, sword16 *s2, pqsimd_fpr *tmp, unsigned logn) {
    return falcon_sign_dyn_core((falcon_sampler_ctx *)spc, f, g, F, G, c, s2, tmp, logn);
}
#endif
void pqsimd_falcon_fft(pqsimd_fpr *a, unsigned logn) { falcon_FFT(a, logn); }
void pqsimd_falcon_ifft(pqsimd_fpr *a, unsigned logn) { falcon_iFFT(a, logn); }
void pqsimd_falcon_mul_fft(pqsimd_fpr *a, const pqsimd_fpr *b, unsigned logn) { falcon_poly_mul_fft(a, b, logn); }
void pqsimd_falcon_ntt(word16 *a, unsigned logn) {
    falcon_ntt(a, 1 << logn, logn == 9 ? falcon_zetas_l1 : falcon_zetas_l5);
}
int pqsimd_falcon_sampler_z(void *spc) {
    /* mu = 1/3 (a fractional centre), 1/sigma = 1/1.5 (within [1/sigma_max, 1/sigma_min]) */
    return falcon_sampler_z(spc, fpr_div(fpr_of(1), fpr_of(3)), fpr_div(fpr_of(2), fpr_of(3)));
}
int pqsimd_falcon_hash_to_point(const byte *nonce, const byte *msg, word32 len, word16 *c, unsigned logn) {
    return falcon_hash_to_point(nonce, msg, len, c, logn, NULL);
}
pqsimd_fpr pqsimd_falcon_fpr_of(long v) { return fpr_of((sword64)v); }
