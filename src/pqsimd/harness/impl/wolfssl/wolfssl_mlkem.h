/* pqsimd's accessors of wolfSSL's ML-KEM polynomial internals (wolfssl_mlkem.c) for impl/wolfssl/ml_kem.c. */
#ifndef PQSIMD_WOLFSSL_MLKEM_H
#define PQSIMD_WOLFSSL_MLKEM_H
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mlkem.h>

/* The portable C's static kernels of wc_mlkem_poly.c (in an intelasm build they are not the code it
 * runs: its AVX2 keygen, encapsulate and decapsulate fuse the NTT, so the op table leaves them out). */
void pqsimd_mlkem_ntt(sword16 *r);                                        /* mlkem_ntt */
void pqsimd_mlkem_invntt(sword16 *r);                                     /* mlkem_invntt */
void pqsimd_mlkem_basemul(sword16 *r, const sword16 *a, const sword16 *b); /* mlkem_basemul_mont */
int pqsimd_mlkem_dispatch_check(void);

#ifndef PQSIMD_RC_DISPATCH
#define PQSIMD_RC_DISPATCH 0x7d15
#endif
#endif
