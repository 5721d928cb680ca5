/* pqsimd's accessors of wolfSSL's ML-DSA kernels (wolfssl_mldsa.c) for impl/wolfssl/ml_dsa.c: each calls
 * the static function of wc_mldsa.c named in its comment, which dispatches to the build's path. */
#ifndef PQSIMD_WOLFSSL_MLDSA_H
#define PQSIMD_WOLFSSL_MLDSA_H
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mldsa.h>

int pqsimd_mldsa_expand_a(const byte *rho, byte k, byte l, sword32 *a);         /* mldsa_expand_a */
void pqsimd_mldsa_ntt(sword32 *r);                                              /* mldsa_ntt */
void pqsimd_mldsa_invntt(sword32 *r);                                           /* mldsa_invntt */
void pqsimd_mldsa_pointwise(sword32 *r, sword32 *a, sword32 *b);                 /* mldsa_mul */
int pqsimd_mldsa_challenge(int level, const byte *seed, word32 len, byte tau, sword32 *c); /* mldsa_sample_in_ball */
void pqsimd_mldsa_decompose(const sword32 *r, sword32 gamma2, sword32 *r0, sword32 *r1); /* mldsa_vec_decompose, 1 poly */
void pqsimd_mldsa_use_hint(sword32 *w1, sword32 gamma2, byte omega, const byte *h);     /* mldsa_vec_use_hint, 1 poly */
int pqsimd_mldsa_dispatch_check(void);

#ifndef PQSIMD_RC_DISPATCH
#define PQSIMD_RC_DISPATCH 0x7d15
#endif
#endif
