/* Loading variants: each shared object with its own namespace (RTLD_LOCAL | RTLD_DEEPBIND), so
 * every variant keeps its own copy of common code (fips202, randombytes) and its own buffers. */
#ifndef PQSIMD_LOADER_H
#define PQSIMD_LOADER_H
#include "../pqsimd.h"

typedef struct {
    const char *path;
    void *handle;
    const pqsimd_variant *entry;
} pqsimd_loaded;

/* Returns 0, or prints "driver: ..." to stderr and returns 2. */
int pqsimd_load(pqsimd_loaded *v, const char *path);
const pqsimd_scheme *pqsimd_find_scheme(const pqsimd_loaded *v, const char *name);
const pqsimd_op *pqsimd_find_op(const pqsimd_scheme *s, const char *name);

#endif
