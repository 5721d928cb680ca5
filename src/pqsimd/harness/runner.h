/* The op table every scheme provides, and the runner that times its ops. */
#ifndef PQSIMD_RUNNER_H
#define PQSIMD_RUNNER_H
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *name;   /* canonical op id, e.g. "ntt" */
    void (*setup)(void); /* prepares valid inputs (may be NULL); run once before timing */
    void (*call)(void);  /* one call of the op, in place on the scheme's static buffers */
} pqsimd_op;

typedef struct pqsimd_scheme {
    const char *name;   /* "ml-kem-512" */
    const char *impl;   /* "clean" | "avx2" */
    const pqsimd_op *ops;
    int n_ops;
    /* Deterministic KEM vectors for the cross-variant gate: reads hex lines "d z m",
     * prints "pk sk ct ss ss_dec ss_tampered" per line. Returns 0 on success. */
    int (*vectors)(FILE *in, FILE *out);
    struct pqsimd_scheme *next;
} pqsimd_scheme;

void pqsimd_register(pqsimd_scheme *scheme);
pqsimd_scheme *pqsimd_schemes(void);

/* Calls op k times. Not inlined, so callgrind can toggle collection on exactly this. */
void pqsimd_measure(const pqsimd_op *op, uint64_t k);

#endif
