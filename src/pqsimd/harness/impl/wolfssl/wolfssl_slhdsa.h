/* pqsimd's accessors of wolfSSL's SLH-DSA internals (wolfssl_slhdsa.c) for impl/wolfssl/slh_dsa.c.
 * Each calls the static function of wc_slhdsa.c named in its comment, with the addresses FIPS 205
 * gives it at the first step of signing (layer 0, tree 0, key pair 0). */
#ifndef PQSIMD_WOLFSSL_SLHDSA_H
#define PQSIMD_WOLFSSL_SLHDSA_H
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_slhdsa.h>

int pqsimd_slhdsa_chain(SlhDsaKey *key, const byte *x, byte *node);          /* slhdsakey_chain, 0..w-1 */
int pqsimd_slhdsa_wots_pkgen(SlhDsaKey *key, byte *node);                    /* slhdsakey_wots_pkgen */
int pqsimd_slhdsa_wots_sign(SlhDsaKey *key, const byte *m, byte *sig);       /* slhdsakey_wots_sign */
int pqsimd_slhdsa_xmss_sign(SlhDsaKey *key, const byte *m, byte *sig_xmss);  /* slhdsakey_xmss_sign */
int pqsimd_slhdsa_fors_sign(SlhDsaKey *key, const byte *md, byte *sig_fors); /* slhdsakey_fors_sign */
int pqsimd_slhdsa_fors_pk(SlhDsaKey *key, const byte *sig_fors, const byte *md, byte *pk); /* fors_pk_from_sig */
/* Four Keccak-f[1600] permutations: one sha3_blocksx4_avx2 call (USE_INTEL_SPEEDUP) or four
 * calls of the portable BlockSha3; s holds 4 x 25 words. */
void pqsimd_slhdsa_keccak_x4(word64 *s);
/* One Keccak-f[1600] permutation by the build's single-state path (its dispatch pointer, or BlockSha3). */
void pqsimd_slhdsa_keccak_1(word64 *s);
/* 0 when the run-time dispatch state of wc_slhdsa.c, sha3.c and cpuid.c is the pinned one. */
int pqsimd_wolf_dispatch_check(void);

#ifndef PQSIMD_RC_DISPATCH
#define PQSIMD_RC_DISPATCH 0x7d15 /* what a gate call returns when the dispatch state is not the pinned one */
#endif
#endif
