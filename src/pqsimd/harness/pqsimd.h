/* The contract between a variant and the driver.
 *
 * A variant is one shared object per (family, implementation, compiler, flags): every parameter
 * set of the family, built by the compiler under test, plus one op table per set (ops/<family>.c).
 * The driver (driver/) is built once with one fixed toolchain, loads variants with dlopen and
 * times them with identical code. A variant exports exactly one symbol, pqsimd_variant_entry.
 *
 * An op table says two things about its scheme: the ops to time, and the scheme's primitive API
 * for its kind (kem, sign, hash). The correctness gate (driver/gate.c) checks the API the same
 * way for every family of a kind, so a new family brings no checking code of its own.
 */
#ifndef PQSIMD_H
#define PQSIMD_H
#include <stddef.h>
#include <stdint.h>

#define PQSIMD_ABI 4

typedef struct {
    const char *name;    /* canonical op id, e.g. "ntt" */
    void (*setup)(void); /* prepares valid inputs (may be NULL); run before the op is timed */
    void (*call)(void);  /* one call of the op, in place on the op table's static buffers */
} pqsimd_op;

enum pqsimd_kind { PQSIMD_KIND_NONE = 0, PQSIMD_KIND_KEM = 1, PQSIMD_KIND_SIGN = 2, PQSIMD_KIND_HASH = 3 };

typedef struct {
    size_t public_key, secret_key; /* kem, sign */
    size_t ciphertext, shared_secret; /* kem */
    size_t signature;              /* sign: the maximum length */
    size_t digest;                 /* hash: the output length the gate asks for */
} pqsimd_sizes;

/* The kind's primitive API. Randomness comes from randombytes (variant/rng.c), which the gate
 * switches to a pool of known bytes, so key generation and signing are reproducible. */
typedef struct {
    int (*keypair)(uint8_t *pk, uint8_t *sk);
    int (*encaps)(uint8_t *ct, uint8_t *ss, const uint8_t *pk);
    int (*decaps)(uint8_t *ss, const uint8_t *ct, const uint8_t *sk);
    int (*sign)(uint8_t *sig, size_t *siglen, const uint8_t *m, size_t mlen, const uint8_t *sk);
    int (*verify)(const uint8_t *sig, size_t siglen, const uint8_t *m, size_t mlen, const uint8_t *pk);
    void (*digest)(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen);
} pqsimd_api;

/* A named input or output buffer of an op table (its static storage): what --metric ct marks secret
 * (data/families/<family>.toml [ct.secret] names them per op) and what it holds fixed. */
typedef struct {
    const char *name;
    void *ptr;
    size_t len;
} pqsimd_buffer;

typedef struct pqsimd_scheme {
    const char *name; /* "ml-kem-512" */
    const char *impl; /* PQClean implementation: "clean", "avx2", ... */
    const pqsimd_op *ops;
    int n_ops;
    int kind; /* enum pqsimd_kind */
    pqsimd_sizes sizes;
    pqsimd_api api;
    struct pqsimd_scheme *next;
    const pqsimd_buffer *buffers; /* NULL: the op table names none (4 = the ABI that added them) */
    int n_buffers;
} pqsimd_scheme;

typedef struct {
    int abi;                         /* PQSIMD_ABI of the headers the variant was built with */
    pqsimd_scheme *(*schemes)(void); /* the registered schemes, in link order */
    /* Deterministic randomness: serve these bytes in order (NULL: back to the OS). Running dry
     * is an error the gate reports, never a silent fallback. */
    void (*random_pool)(const uint8_t *bytes, size_t n);
    size_t (*random_used)(void);
    int (*random_dry)(void);
    /* An empty function in the variant's own shared object (built by the fixed toolchain): the
     * runner's null samples call it, so the null pays the same cost of a call into this object
     * that every op call pays (3 = the ABI that added it). */
    void (*null_call)(void);
    /* Constant-time testing (4 = the ABI that added them). set_variation(v): the op tables' inputs
     * (pqsimd_fill) are the timed ones for v = 0 and other, equally valid ones for every other v;
     * random_mark(f): f(buffer, n) is called on every randomness the code under test draws (the
     * driver marks it secret), NULL: off. */
    void (*set_variation)(uint64_t v);
    void (*random_mark)(void (*mark)(void *buffer, size_t n));
} pqsimd_variant;

/* The byte the op tables' inputs are xored with (0 for the timed inputs: registry.c). */
uint8_t pqsimd_variation_byte(uint8_t salt, size_t i);

/* The one symbol a variant exports (variant/registry.c). */
const pqsimd_variant *pqsimd_variant_entry(void);

/* Called by each op table's constructor (variant/registry.c). */
void pqsimd_register(pqsimd_scheme *scheme);

/* Op tables and glue code mark the registry functions visible only inside the variant. */
#define PQSIMD_EXPORT __attribute__((visibility("default")))

#endif
