/* wolfSSL's wc_mlkem_poly.c compiled as is, in one translation unit with pqsimd's accessors of its static
 * kernels (wolfssl_mlkem.h) and the pin of its run-time dispatch (wolfssl_pin.h). Nothing of
 * wc_mlkem_poly.c is changed: it is #included whole; the build compiles this unit instead of it
 * (data/families/ml-kem.toml). */
#include <wolfssl/wolfcrypt/settings.h>
#include "wolfcrypt/src/wc_mlkem_poly.c"
#include "wolfssl_pin.h"
#include "wolfssl_mlkem.h"

int pqsimd_mlkem_dispatch_check(void) {
#ifdef USE_INTEL_SPEEDUP
    return pqsimd_wolf_check(&cpuid_flags); /* wc_mlkem_poly.c's copy */
#else
    return pqsimd_wolf_check(NULL);
#endif
}

void pqsimd_mlkem_ntt(sword16 *r) { mlkem_ntt(r); }
void pqsimd_mlkem_invntt(sword16 *r) { mlkem_invntt(r); }
void pqsimd_mlkem_basemul(sword16 *r, const sword16 *a, const sword16 *b) { mlkem_basemul_mont(r, a, b); }
