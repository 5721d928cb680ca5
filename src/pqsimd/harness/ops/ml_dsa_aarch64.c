/* The ML-DSA op table for PQClean's aarch64 implementation (hand-written NEON). That implementation
 * names its functions through macros of its headers (`#define poly_ntt DILITHIUM_NAMESPACE(poly_ntt)`),
 * with the same arguments as clean's, so the clean table (ml_dsa.c) is compiled with NS(f) = f: the
 * same op ids, inputs and calls. */
#include "optable.h"

#undef NS
#define NS(f) f
#define CRYPTO_PUBLICKEYBYTES DILITHIUM_CRYPTO_PUBLICKEYBYTES
#define CRYPTO_SECRETKEYBYTES DILITHIUM_CRYPTO_SECRETKEYBYTES
#define CRYPTO_BYTES DILITHIUM_CRYPTO_BYTES

#include "ml_dsa.c"
