/* The variant's entry point: the schemes its op tables registered, and its randomness controls.
 * Compiled with the fixed toolchain into every variant; only pqsimd_variant_entry is exported. */
#include "pqsimd.h"

void pqsimd_random_pool(const uint8_t *bytes, size_t n); /* rng.c */
size_t pqsimd_random_used(void);
int pqsimd_random_dry(void);
void pqsimd_random_mark(void (*mark)(void *buffer, size_t n));

static uint64_t variation;

static void set_variation(uint64_t v) {
    variation = v;
}

/* splitmix64 of (variation, salt, i / 8): inputs as random as the fill's, reproducible per v. */
uint8_t pqsimd_variation_byte(uint8_t salt, size_t i) {
    if (variation == 0) {
        return 0;
    }
    uint64_t z = variation * 0x9E3779B97F4A7C15ULL + ((uint64_t)salt << 40) + (uint64_t)(i / 8);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (uint8_t)(z >> (8 * (i % 8)));
}

static pqsimd_scheme *registry;

void pqsimd_register(pqsimd_scheme *scheme) {
    /* Append, so schemes list in link order (the family's parameter-set order). */
    pqsimd_scheme **p = &registry;
    while (*p) {
        p = &(*p)->next;
    }
    scheme->next = NULL;
    *p = scheme;
}

static pqsimd_scheme *schemes(void) {
    return registry;
}

/* Aligned like the op tables' functions: a call into this object that does nothing. */
__attribute__((noinline, aligned(64))) static void null_call(void) { __asm__ volatile("" ::: "memory"); }

static const pqsimd_variant entry = {
    PQSIMD_ABI, schemes, pqsimd_random_pool, pqsimd_random_used, pqsimd_random_dry, null_call, set_variation,
    pqsimd_random_mark,
};

PQSIMD_EXPORT const pqsimd_variant *pqsimd_variant_entry(void) {
    return &entry;
}
