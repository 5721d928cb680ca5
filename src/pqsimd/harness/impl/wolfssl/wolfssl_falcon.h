/* pqsimd's accessors of wolfSSL's Falcon internals (wolfssl_falcon.c) for impl/wolfssl/falcon.c. fpr is
 * wolfSSL's word64 (IEEE-754 binary64 bits, emulated in integers or a hardware double by the build). */
#ifndef PQSIMD_WOLFSSL_FALCON_H
#define PQSIMD_WOLFSSL_FALCON_H
#include <stddef.h>
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/random.h>

typedef word64 pqsimd_fpr;

int pqsimd_falcon_keygen(WC_RNG *rng, sword8 *f, sword8 *g, sword8 *F, sword8 *G, word16 *h, unsigned logn);
int pqsimd_falcon_expand(pqsimd_fpr *expanded, const sword8 *f, const sword8 *g, const sword8 *F, const sword8 *G,
                         unsigned logn);                                       /* falcon_expand_privkey */
void *pqsimd_falcon_sampler(unsigned logn, WC_RNG *rng);                        /* falcon_sampler_init (one static ctx) */
int pqsimd_falcon_sign_tree(void *spc, const pqsimd_fpr *expanded, const word16 *c, sword16 *s2, pqsimd_fpr *tmp,
                            unsigned logn);                                    /* falcon_sign_core */
int pqsimd_falcon_sign_dyn(void *spc, const sword8 *f, const sword8 *g, const sword8 *F, const sword8 *G,
                           const word16 *c, sword16 *s2, pqsimd_fpr *tmp, unsigned logn); /* falcon_sign_dyn_core */
void pqsimd_falcon_fft(pqsimd_fpr *a, unsigned logn);                          /* falcon_FFT */
void pqsimd_falcon_ifft(pqsimd_fpr *a, unsigned logn);                         /* falcon_iFFT */
void pqsimd_falcon_mul_fft(pqsimd_fpr *a, const pqsimd_fpr *b, unsigned logn); /* falcon_poly_mul_fft */
void pqsimd_falcon_ntt(word16 *a, unsigned logn);                               /* falcon_ntt */
int pqsimd_falcon_sampler_z(void *spc);                                         /* falcon_sampler_z, fixed mu, 1/sigma */
int pqsimd_falcon_hash_to_point(const byte *nonce, const byte *msg, word32 len, word16 *c, unsigned logn);
pqsimd_fpr pqsimd_falcon_fpr_of(long v);                                        /* fpr_of */
int pqsimd_falcon_dispatch_check(void);
int pqsimd_wolf_random_block(byte *out, word32 sz);                             /* CUSTOM_RAND_GENERATE_BLOCK */

#define PQSIMD_FALCON_TMP(logn) ((size_t)6 << (logn)) /* FALCON_SIGN_TMP_FPR */
#ifndef PQSIMD_RC_DISPATCH
#define PQSIMD_RC_DISPATCH 0x7d15
#endif
#endif
