/* pqsimd's mlkem-native configuration (MLK_CONFIG_FILE; ours, not liboqs's). Set from the command
 * line by the build (sources/pq_code_package.py, data/families/ml-kem.toml):
 *   PQSIMD_NATIVE_PROFILE    the generated profile header: the x86_64 backend with some switches off
 *                            (undefined: portable C only)
 *   PQSIMD_KECCAK_X4_HEADER  PQClean avx2's fips202x4.h (the 4-way AVX2 Keccak; undefined: four scalar calls)
 * Included by the backend's .S files too (through common.h): preprocessor lines only. */
#ifndef PQSIMD_MLKEM_NATIVE_CONFIG_H
#define PQSIMD_MLKEM_NATIVE_CONFIG_H
#define PQSIMD_MLKEM_NATIVE_API 1 /* ml_kem.c: liboqs's copy's API */

#if defined(PQSIMD_NATIVE_PROFILE)
#define MLK_USE_NATIVE_BACKEND_ARITH
#define MLK_ARITH_BACKEND_FILE PQSIMD_NATIVE_PROFILE
/* native/api.h checks the profile's consistency (the functions that share the custom NTT order) */
#define MLK_CHECK_APIS
#endif

/* mlkem-native brings no Keccak: the host's FIPS 202 goes in through these headers (PQClean's) */
#define MLK_FIPS202_CUSTOM_HEADER "mlkem_native_fips202.h"
#if defined(PQSIMD_KECCAK_X4_HEADER)
#define MLK_FIPS202X4_CUSTOM_HEADER "mlkem_native_fips202x4_avx2.h"
#else
#define MLK_FIPS202X4_CUSTOM_HEADER "mlkem_native_fips202x4_serial.h"
#endif

#endif
