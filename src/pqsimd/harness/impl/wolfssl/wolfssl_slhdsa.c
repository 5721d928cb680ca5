/* wolfSSL's wc_slhdsa.c compiled as is, in one translation unit with pqsimd's accessors of its static
 * internals (wolfssl_slhdsa.h) and the pin of its run-time dispatch. Nothing of wc_slhdsa.c is
 * changed: it is #included whole, and this file only adds functions after it. The build compiles
 * this unit instead of wc_slhdsa.c (data/families/slh-dsa.toml). */
#include <wolfssl/wolfcrypt/settings.h>
#include "wolfcrypt/src/wc_slhdsa.c"
#include "wolfssl_pin.h"
#include "wolfssl_slhdsa.h"

int pqsimd_wolf_dispatch_check(void) {
#ifdef USE_INTEL_SPEEDUP
    return pqsimd_wolf_check(&cpuid_flags); /* wc_slhdsa.c's copy */
#else
    return pqsimd_wolf_check(NULL);
#endif
}

static void wots_address(HashAddress adrs) {
    HA_Init(adrs);
    HA_SetTypeAndClear(adrs, HA_WOTS_HASH);
    HA_SetKeyPairAddress(adrs, 0);
}

int pqsimd_slhdsa_chain(SlhDsaKey *key, const byte *x, byte *node) {
    HashAddress adrs;
    wots_address(adrs);
    HA_SetChainAddress(adrs, 0);
    return slhdsakey_chain(key, x, 0, SLHDSA_WM1, key->sk + 2 * key->params->n, adrs, node);
}

int pqsimd_slhdsa_wots_pkgen(SlhDsaKey *key, byte *node) {
    HashAddress adrs;
    wots_address(adrs);
    return slhdsakey_wots_pkgen(key, key->sk, key->sk + 2 * key->params->n, adrs, node);
}

int pqsimd_slhdsa_wots_sign(SlhDsaKey *key, const byte *m, byte *sig) {
    HashAddress adrs;
    wots_address(adrs);
    return slhdsakey_wots_sign(key, m, key->sk, key->sk + 2 * key->params->n, adrs, sig);
}

int pqsimd_slhdsa_xmss_sign(SlhDsaKey *key, const byte *m, byte *sig_xmss) {
    HashAddress adrs;
    HA_Init(adrs);
    return slhdsakey_xmss_sign(key, m, key->sk, 0, key->sk + 2 * key->params->n, adrs, sig_xmss);
}

int pqsimd_slhdsa_fors_sign(SlhDsaKey *key, const byte *md, byte *sig_fors) {
    HashAddress adrs;
    word32 t[3];
    word32 l;
    slhdsakey_set_ha_from_md(key, md, adrs, t, &l);
    return slhdsakey_fors_sign(key, md, key->sk, key->sk + 2 * key->params->n, adrs, sig_fors);
}

int pqsimd_slhdsa_fors_pk(SlhDsaKey *key, const byte *sig_fors, const byte *md, byte *pk) {
    HashAddress adrs;
    word32 t[3];
    word32 l;
    slhdsakey_set_ha_from_md(key, md, adrs, t, &l);
    return slhdsakey_fors_pk_from_sig(key, sig_fors, md, key->sk + 2 * key->params->n, adrs, pk);
}

void pqsimd_slhdsa_keccak_x4(word64 *s) {
#ifdef USE_INTEL_SPEEDUP
    if (SAVE_VECTOR_REGISTERS2() == 0) {
        sha3_blocksx4_avx2(s);
        RESTORE_VECTOR_REGISTERS();
    }
#else
    for (int i = 0; i < 4; i++) BlockSha3(s + 25 * i);
#endif
}

void pqsimd_slhdsa_keccak_1(word64 *s) {
#if defined(USE_INTEL_SPEEDUP) && !defined(WC_C_DYNAMIC_FALLBACK)
    pqsimd_wolf_expected_block()(s);
#else
    BlockSha3(s);
#endif
}
