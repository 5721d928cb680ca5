#define _GNU_SOURCE
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int pqsimd_load(pqsimd_loaded *v, const char *path) {
    v->path = path;
    v->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!v->handle) {
        fprintf(stderr, "driver: cannot load variant %s: %s\n", path, dlerror());
        return 2;
    }
    const pqsimd_variant *(*entry)(void) = (const pqsimd_variant *(*)(void))dlsym(v->handle, "pqsimd_variant_entry");
    if (!entry) {
        fprintf(stderr, "driver: %s is not a pqsimd variant (no pqsimd_variant_entry)\n", path);
        return 2;
    }
    v->entry = entry();
    if (v->entry->abi != PQSIMD_ABI) {
        fprintf(stderr, "driver: %s was built for harness ABI %d, this driver has %d; rebuild it\n", path,
                v->entry->abi, PQSIMD_ABI);
        return 2;
    }
    return 0;
}

const pqsimd_scheme *pqsimd_find_scheme(const pqsimd_loaded *v, const char *name) {
    for (const pqsimd_scheme *s = v->entry->schemes(); s; s = s->next) {
        if (strcmp(s->name, name) == 0) {
            return s;
        }
    }
    return NULL;
}

const pqsimd_op *pqsimd_find_op(const pqsimd_scheme *s, const char *name) {
    for (int i = 0; i < s->n_ops; i++) {
        if (strcmp(s->ops[i].name, name) == 0) {
            return &s->ops[i];
        }
    }
    return NULL;
}
