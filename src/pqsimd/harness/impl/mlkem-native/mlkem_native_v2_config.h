/* pqsimd's configuration of an mlkem-native v2 checkout (MLK_CONFIG_FILE; ours, replacing the
 * checkout's mlkem_native_config.h). Set from the command line by the build
 * (sources/pq_code_package.py, data/families/ml-kem.toml [implementations.mlkem-native-v2]):
 *   MLK_CONFIG_PARAMETER_SET     512 | 768 | 1024
 *   MLK_CONFIG_NAMESPACE_PREFIX  the build's namespace of the set
 *   PQSIMD_NATIVE_PROFILE        the generated profile header: the checkout's arithmetic backend for
 *                                the build's ISA with some switches off (undefined: portable C only)
 * The checkout's own FIPS 202 (scalar C: mlkem-native has no RVV Keccak) is used as it is; random
 * bytes come from the harness (variant/rng.c), as for every implementation. Included by assembly
 * files too (through common.h): preprocessor lines, and C only outside __ASSEMBLER__. */
#ifndef PQSIMD_MLKEM_NATIVE_V2_CONFIG_H
#define PQSIMD_MLKEM_NATIVE_V2_CONFIG_H
#define PQSIMD_MLKEM_NATIVE_API 2 /* ml_kem.c: the v2 API */

#if defined(PQSIMD_NATIVE_PROFILE)
#define MLK_CONFIG_USE_NATIVE_BACKEND_ARITH
#define MLK_CONFIG_ARITH_BACKEND_FILE PQSIMD_NATIVE_PROFILE
/* native/api.h checks the profile's consistency */
#define MLK_CHECK_APIS
#endif

#define MLK_CONFIG_CUSTOM_RANDOMBYTES
#if !defined(__ASSEMBLER__)
#include <stddef.h>
#include <stdint.h>
int PQCLEAN_randombytes(uint8_t *output, size_t n);
static inline int mlk_randombytes(uint8_t *out, size_t outlen) { return PQCLEAN_randombytes(out, outlen); }
#endif

#endif
