/* driver `ct` (ct.h). memcheck's client requests come from valgrind's own header when the driver's
 * toolchain has it (build.py hashes it into the driver's key); without it `ct` says so. */
#define _GNU_SOURCE
#include "ct.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "count_marker.h"
#include "guard.h"
#include "loader.h"
#include "timer.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PQSIMD_HAVE_MEMCHECK 1
#endif
#endif
#ifndef PQSIMD_HAVE_MEMCHECK /* without valgrind's header: marks that mark nothing (ct-time, sitetrace run natively) */
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#define POOL_BYTES ((size_t)1 << 16)

/* Stored to just before and after the call: a tracer finds the call between the two stores. */
volatile uint64_t pqsimd_ct_marker;

static int fail(const char *msg, const char *arg) {
    fprintf(stderr, "driver: ct: %s%s\n", msg, arg ? arg : "");
    return 2;
}

static void mark_secret(void *buffer, size_t n) {
    VALGRIND_MAKE_MEM_UNDEFINED(buffer, n);
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
    PQSIMD_COUNT_START(); /* under qemu-user, our plugin's window (count_marker.h) */
    op->call();
    PQSIMD_COUNT_STOP();
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

/* The op and its secrets from argv (LIB SCHEME OP ... then SECRET... from argv[first]). */
typedef struct {
    pqsimd_loaded v;
    const pqsimd_scheme *s;
    const pqsimd_op *op;
    const pqsimd_buffer **secret; /* n_secret entries, NULL for `random` */
    int n_secret, random_secret;
    unsigned char **saved; /* variation 0's bytes of every named buffer */
} ct_case;

static int open_case(ct_case *c, int argc, char **argv, int first) {
    memset(c, 0, sizeof *c);
    if (pqsimd_load(&c->v, argv[2])) {
        return 2;
    }
    if (!(c->s = pqsimd_find_scheme(&c->v, argv[3]))) {
        return fail("unknown scheme ", argv[3]);
    }
    if (!(c->op = pqsimd_find_op(c->s, argv[4]))) {
        return fail("unknown op ", argv[4]);
    }
    c->n_secret = argc - first;
    c->secret = calloc((size_t)c->n_secret + 1, sizeof *c->secret);
    c->saved = calloc((size_t)c->s->n_buffers + 1, sizeof *c->saved);
    for (int k = 0; k < c->n_secret; k++) {
        if (strcmp(argv[first + k], "random") == 0) {
            c->random_secret = 1;
        } else if (!(c->secret[k] = find_buffer(c->s, argv[first + k]))) {
            fprintf(stderr, "driver: ct: the op table of %s (%s) names no buffer %s\n", c->s->name, c->s->impl,
                    argv[first + k]);
            return 2;
        }
    }
    for (int i = 0; i < c->s->n_buffers; i++) {
        c->saved[i] = malloc(c->s->buffers[i].len);
    }
    pqsimd_guard_at(0, argv[2], c->op->name);
    return 0;
}

static int parse_count(const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno || end == text || *end || text[0] == '-';
}

/* The op's inputs for `variation`: the timed ones (0), or (> 0) the variation's secrets with every other
 * named buffer back at variation 0's bytes; a secret the setup leaves as it was gets the variation's own
 * bytes (`say`: one "filled" line each). Then the randomness pool of the variation. */
static void prepare(ct_case *c, uint64_t variation, int say) {
    const pqsimd_scheme *s = c->s;
    c->v.entry->set_variation(0);
    if (c->op->setup) {
        c->op->setup();
    }
    if (variation) {
        for (int i = 0; i < s->n_buffers; i++) {
            memcpy(c->saved[i], s->buffers[i].ptr, s->buffers[i].len);
        }
        c->v.entry->set_variation(variation);
        if (c->op->setup) {
            c->op->setup();
        }
        c->v.entry->set_variation(0);
        for (int i = 0; i < s->n_buffers; i++) {
            int is_secret = 0;
            for (int k = 0; k < c->n_secret; k++) {
                is_secret |= c->secret[k] == &s->buffers[i];
            }
            const pqsimd_buffer *b = &s->buffers[i];
            if (!is_secret) {
                memcpy(b->ptr, c->saved[i], b->len);
            } else if (memcmp(b->ptr, c->saved[i], b->len) == 0) {
                uint64_t st = variation * 0x2545F4914F6CDD1DULL + (uint64_t)i;
                for (size_t j = 0; j < b->len; j += 8) {
                    uint64_t z = splitmix(&st);
                    memcpy((uint8_t *)b->ptr + j, &z, b->len - j < 8 ? b->len - j : 8);
                }
                if (say) {
                    printf("filled\t%s\n", b->name);
                }
            }
        }
    }
    static uint8_t pool[POOL_BYTES];
    uint64_t state = variation ^ 0x5EC7E75EC7E7ULL;
    for (size_t i = 0; i < POOL_BYTES; i += 8) {
        uint64_t z = splitmix(&state);
        memcpy(pool + i, &z, 8);
    }
    c->v.entry->random_pool(pool, POOL_BYTES);
}

int pqsimd_cmd_ct(int argc, char **argv) {
    if (argc < 6) {
        return fail("usage: ct LIB SCHEME OP VARIATION [SECRET...]", NULL);
    }
    uint64_t variation;
    if (parse_count(argv[5], &variation)) {
        return fail("VARIATION must be a non-negative integer, got ", argv[5]);
    }
    ct_case c;
    if (open_case(&c, argc, argv, 6)) {
        return 2;
    }
    prepare(&c, variation, 1);
    if (c.random_secret) {
        c.v.entry->random_mark(mark_secret);
    }
    for (int k = 0; k < c.n_secret; k++) {
        if (c.secret[k]) {
            mark_secret(c.secret[k]->ptr, c.secret[k]->len);
        }
    }
    Dl_info info;
    if (!dladdr((const void *)(uintptr_t)c.op->call, &info) || !info.dli_fbase) {
        return fail("cannot locate op ", c.op->name);
    }
    printf("base\t%llx\nmarker\t%llx\n", (unsigned long long)(uintptr_t)info.dli_fbase,
           (unsigned long long)(uintptr_t)&pqsimd_ct_marker);
    fflush(stdout);
    if (getenv("PQSIMD_CT_STOP")) {
        raise(SIGSTOP); /* driver sitetrace sets its breakpoints now (sitetrace.c) */
    }
    ct_call(c.op);
    if (getenv("PQSIMD_CT_STOP")) {
        raise(SIGSTOP); /* and takes them away */
    }
    c.v.entry->random_mark(NULL);
    /* What the call left secret is nobody's business after it: no report from the driver's exit. */
    for (int i = 0; i < c.s->n_buffers; i++) {
        VALGRIND_MAKE_MEM_DEFINED(c.s->buffers[i].ptr, c.s->buffers[i].len);
    }
    printf("drawn\t%zu\n", c.v.entry->random_used());
    if (c.v.entry->random_dry()) {
        printf("dry\n");
    }
#ifndef PQSIMD_HAVE_MEMCHECK
    printf("nomemcheck\n"); /* built without valgrind's header: nothing was marked (run/ct.py refuses it) */
#endif
    return 0;
}

/* driver ct-time LIB SCHEME OP N SEED [SECRET...]: dudect's fixed-vs-random test. N measurements, each
 * of one call whose class is drawn at random (SEED): class 0 has one fixed secret (variation 1), class 1
 * a fresh one (variation 2, 3, ...); public inputs fixed in both. "class ticks" per line. With
 * PQSIMD_CT_TIME_LIMIT_S set, it stops early once that many seconds have passed: a setup that makes a key
 * pair per secret (Falcon, McEliece) costs far more than the call. */
int pqsimd_cmd_ct_time(int argc, char **argv) {
    if (argc < 7) {
        return fail("usage: ct-time LIB SCHEME OP N SEED [SECRET...]", NULL);
    }
    uint64_t n, seed;
    if (parse_count(argv[5], &n) || parse_count(argv[6], &seed)) {
        return fail("N and SEED must be non-negative integers", NULL);
    }
    ct_case c;
    if (open_case(&c, argc, argv, 7)) {
        return 2;
    }
    pqsimd_timer_init();
    prepare(&c, 1, 0);
    c.op->call(); /* warm: lazy binding and first-call effects stay out */
    uint64_t state = seed;
    const char *limit_text = getenv("PQSIMD_CT_TIME_LIMIT_S");
    double limit = limit_text ? atof(limit_text) : 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (uint64_t k = 0; k < n; k++) {
        if (limit > 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) > limit) {
                break;
            }
        }
        int cls = (int)(splitmix(&state) & 1);
        prepare(&c, cls ? 2 + k : 1, 0);
        uint64_t t0 = pqsimd_timer_start();
        c.op->call();
        uint64_t t1 = pqsimd_timer_stop();
        printf("%d\t%llu\n", cls, (unsigned long long)(t1 - t0));
    }
    return 0;
}
