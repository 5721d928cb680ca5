/* driver `ct` (ct.h). memcheck's client requests come from valgrind's own header when the driver's
 * toolchain has it (build.py hashes it into the driver's key); without it `ct` says so. */
#define _GNU_SOURCE
#include "ct.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "loader.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PQSIMD_HAVE_MEMCHECK 1
#endif
#endif

#define POOL_BYTES ((size_t)1 << 16)

/* Stored to just before and after the call: a tracer finds the call between the two stores. */
volatile uint64_t pqsimd_ct_marker;

static int fail(const char *msg, const char *arg) {
    fprintf(stderr, "driver: ct: %s%s\n", msg, arg ? arg : "");
    return 2;
}

static void mark_secret(void *buffer, size_t n) {
#ifdef PQSIMD_HAVE_MEMCHECK
    VALGRIND_MAKE_MEM_UNDEFINED(buffer, n);
#else
    (void)buffer;
    (void)n;
#endif
}

static const pqsimd_buffer *find_buffer(const pqsimd_scheme *s, const char *name) {
    for (int i = 0; i < s->n_buffers; i++) {
        if (strcmp(s->buffers[i].name, name) == 0) {
            return &s->buffers[i];
        }
    }
    return NULL;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* noinline: the call is one frame every report of the op has below it */
__attribute__((noinline)) static void ct_call(const pqsimd_op *op) {
    pqsimd_ct_marker = 1;
    op->call();
    pqsimd_ct_marker = 2;
}

/* driver buffers LIB SCHEME: the op table's named buffers, "name bytes" per line (nothing runs). */
int pqsimd_cmd_buffers(int argc, char **argv) {
    if (argc < 4) {
        return fail("usage: buffers LIB SCHEME", NULL);
    }
    pqsimd_loaded v;
    if (pqsimd_load(&v, argv[2])) {
        return 2;
    }
    const pqsimd_scheme *s = pqsimd_find_scheme(&v, argv[3]);
    if (!s) {
        return fail("unknown scheme ", argv[3]);
    }
    for (int i = 0; i < s->n_buffers; i++) {
        printf("%s\t%zu\n", s->buffers[i].name, s->buffers[i].len);
    }
    return 0;
}

int pqsimd_cmd_ct(int argc, char **argv) {
#ifndef PQSIMD_HAVE_MEMCHECK
    (void)argc;
    (void)argv;
    return fail("this driver was built without valgrind/memcheck.h (install valgrind, then run again)", NULL);
#else
    if (argc < 6) {
        return fail("usage: ct LIB SCHEME OP VARIATION [SECRET...]", NULL);
    }
    pqsimd_loaded v;
    if (pqsimd_load(&v, argv[2])) {
        return 2;
    }
    const pqsimd_scheme *s = pqsimd_find_scheme(&v, argv[3]);
    if (!s) {
        return fail("unknown scheme ", argv[3]);
    }
    const pqsimd_op *op = pqsimd_find_op(s, argv[4]);
    if (!op) {
        return fail("unknown op ", argv[4]);
    }
    char *end = NULL;
    errno = 0;
    uint64_t variation = strtoull(argv[5], &end, 10);
    if (errno || end == argv[5] || *end || argv[5][0] == '-') {
        return fail("VARIATION must be a non-negative integer, got ", argv[5]);
    }
    int n_secret = argc - 6, random_secret = 0;
    const pqsimd_buffer **secret = calloc((size_t)n_secret + 1, sizeof *secret);
    for (int k = 0; k < n_secret; k++) {
        if (strcmp(argv[6 + k], "random") == 0) {
            random_secret = 1;
        } else if (!(secret[k] = find_buffer(s, argv[6 + k]))) {
            fprintf(stderr, "driver: ct: the op table of %s (%s) names no buffer %s\n", s->name, s->impl, argv[6 + k]);
            return 2;
        }
    }
    pqsimd_guard_at(0, argv[2], op->name);
    /* The timed inputs, then (VARIATION > 0) the variation's, with every buffer not secret put back. */
    v.entry->set_variation(0);
    if (op->setup) {
        op->setup();
    }
    if (variation) {
        unsigned char **saved = calloc((size_t)s->n_buffers + 1, sizeof *saved);
        for (int i = 0; i < s->n_buffers; i++) {
            saved[i] = malloc(s->buffers[i].len);
            memcpy(saved[i], s->buffers[i].ptr, s->buffers[i].len);
        }
        v.entry->set_variation(variation);
        if (op->setup) {
            op->setup();
        }
        v.entry->set_variation(0);
        for (int i = 0; i < s->n_buffers; i++) {
            int is_secret = 0;
            for (int k = 0; k < n_secret; k++) {
                is_secret |= secret[k] == &s->buffers[i];
            }
            const pqsimd_buffer *b = &s->buffers[i];
            if (!is_secret) {
                memcpy(b->ptr, saved[i], b->len);
            } else if (memcmp(b->ptr, saved[i], b->len) == 0) {
                /* A secret the setup does not derive from its inputs (a message left as it was): other
                 * bytes of the variation's own, said on stdout. */
                uint64_t st = variation * 0x2545F4914F6CDD1DULL + (uint64_t)i;
                for (size_t j = 0; j < b->len; j += 8) {
                    uint64_t z = splitmix(&st);
                    memcpy((uint8_t *)b->ptr + j, &z, b->len - j < 8 ? b->len - j : 8);
                }
                printf("filled\t%s\n", b->name);
            }
            free(saved[i]);
        }
        free(saved);
    }
    static uint8_t pool[POOL_BYTES];
    uint64_t state = variation ^ 0x5EC7E75EC7E7ULL;
    for (size_t i = 0; i < POOL_BYTES; i += 8) {
        uint64_t z = splitmix(&state);
        memcpy(pool + i, &z, 8);
    }
    v.entry->random_pool(pool, POOL_BYTES);
    if (random_secret) {
        v.entry->random_mark(mark_secret);
    }
    for (int k = 0; k < n_secret; k++) {
        if (secret[k]) {
            mark_secret(secret[k]->ptr, secret[k]->len);
        }
    }
    Dl_info info;
    if (!dladdr((const void *)(uintptr_t)op->call, &info) || !info.dli_fbase) {
        return fail("cannot locate op ", op->name);
    }
    printf("base\t%llx\nmarker\t%llx\n", (unsigned long long)(uintptr_t)info.dli_fbase,
           (unsigned long long)(uintptr_t)&pqsimd_ct_marker);
    fflush(stdout);
    ct_call(op);
    v.entry->random_mark(NULL);
    /* What the call left secret is nobody's business after it: no report from the driver's exit. */
    for (int i = 0; i < s->n_buffers; i++) {
        VALGRIND_MAKE_MEM_DEFINED(s->buffers[i].ptr, s->buffers[i].len);
    }
    printf("drawn\t%zu\n", v.entry->random_used());
    if (v.entry->random_dry()) {
        printf("dry\n");
    }
    free(secret);
    return 0;
#endif
}
