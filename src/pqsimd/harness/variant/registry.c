/* The variant's entry point: the schemes its op tables registered, and its randomness controls.
 * Compiled with the fixed toolchain into every variant; only pqsimd_variant_entry is exported. */
#include "pqsimd.h"

void pqsimd_random_pool(const uint8_t *bytes, size_t n); /* rng.c */
size_t pqsimd_random_used(void);
int pqsimd_random_dry(void);

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
    PQSIMD_ABI, schemes, pqsimd_random_pool, pqsimd_random_used, pqsimd_random_dry, null_call,
};

PQSIMD_EXPORT const pqsimd_variant *pqsimd_variant_entry(void) {
    return &entry;
}
