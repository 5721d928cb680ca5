/* What every op table here (ops/<family>.c) shares. An op table is compiled once per parameter set,
 *   -DPQSIMD_NS=<namespace>_<IMPL> -DPQSIMD_SCHEME=\"<set>\" -DPQSIMD_IMPL=\"<impl>\"
 * and one variant links the op tables of all the family's sets: NS(f) names the implementation's
 * symbol f, STATIC_NAME(f) a static name of this set's own. */
#ifndef PQSIMD_OPTABLE_H
#define PQSIMD_OPTABLE_H

#include "pqsimd.h"

#define PQSIMD_CAT_(a, b) a##_##b
#define PQSIMD_CAT(a, b) PQSIMD_CAT_(a, b)
#define NS(f) PQSIMD_CAT(PQSIMD_NS, f)
#define STATIC_NAME(f) PQSIMD_CAT(f, PQSIMD_NS)

/* A family's op ids are written once, in ops/<family>_ops.h (PQSIMD_<FAMILY>_OPS(X): X(id) per op, the order
 * of data/families/<family>.toml [ops] order); every op table of the family declares them and names its ops
 * through PQSIMD_OP(id), so a misspelt or unknown op is a compile error ("pqsimd_op_id_nt undeclared; did you
 * mean pqsimd_op_id_ntt?"), not an op the study silently lacks. */
#define PQSIMD_OP_ENUM_(id) pqsimd_op_id_##id,
#define PQSIMD_DECLARE_OP_IDS(list) enum { list(PQSIMD_OP_ENUM_) pqsimd_op_id_count_ };
#define PQSIMD_OP(id) (&#id[0 * sizeof(char[pqsimd_op_id_##id + 1])])

/* The harness's self-check op, op_empty: after overhead correction it must read ~0 ticks per call. */
#define PQSIMD_EMPTY_OP \
    __attribute__((noinline, aligned(64))) static void op_empty(void) { __asm__ volatile("" ::: "memory"); }

/* The op tables' inputs: a fixed pattern per salt (the timed inputs), xored with the variant's
 * variation (0 while timing; other values give the constant-time test other valid secrets). */
static inline void pqsimd_fill(uint8_t *b, size_t n, uint8_t salt) {
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t)((uint8_t)(i * 7 + salt) ^ pqsimd_variation_byte(salt, i));
    }
}

/* A setup that makes its inputs once per process (a key pair at -O0 takes seconds) makes them again for
 * another variation (the constant-time test's other secrets: a key made from other coins is a valid one,
 * random bytes over a structured secret key are not):
 *     static pqsimd_once once; if (!pqsimd_once_per_variation(&once)) return; */
typedef struct {
    int made;
    uint64_t mark;
} pqsimd_once;

static inline int pqsimd_once_per_variation(pqsimd_once *once) {
    uint64_t mark = 0;
    for (size_t i = 0; i < 8; i++) {
        mark = mark << 8 | pqsimd_variation_byte(0xA5, i);
    }
    if (once->made && once->mark == mark) {
        return 0;
    }
    once->made = 1;
    once->mark = mark;
    return 1;
}

/* A buffer by its C name, for PQSIMD_REGISTER_BUFFERS: {"sk", sk, sizeof sk}. */
#define PQSIMD_BUFFER(x) {#x, (void *)&(x), sizeof(x)}

/* Registers this set when the variant is loaded: its op array, kind (enum pqsimd_kind), sizes
 * (a pqsimd_sizes) and primitive API (a pqsimd_api), the last two static objects of the op table;
 * PQSIMD_REGISTER_BUFFERS also its named buffers (a static pqsimd_buffer array, --metric ct). */
#define PQSIMD_REGISTER_(ops_, kind_, sizes_, api_, buffers_, n_buffers_)                 \
    __attribute__((constructor)) static void STATIC_NAME(register_scheme)(void) {        \
        static pqsimd_scheme scheme;                                                      \
        scheme.name = PQSIMD_SCHEME;                                                      \
        scheme.impl = PQSIMD_IMPL;                                                        \
        scheme.ops = ops_;                                                                \
        scheme.n_ops = (int)(sizeof ops_ / sizeof ops_[0]);                               \
        scheme.kind = kind_;                                                              \
        scheme.sizes = sizes_;                                                            \
        scheme.api = api_;                                                                \
        scheme.buffers = buffers_;                                                        \
        scheme.n_buffers = n_buffers_;                                                    \
        pqsimd_register(&scheme);                                                         \
    }
#define PQSIMD_REGISTER(ops_, kind_, sizes_, api_) PQSIMD_REGISTER_(ops_, kind_, sizes_, api_, NULL, 0)
#define PQSIMD_REGISTER_BUFFERS(ops_, kind_, sizes_, api_, buffers_) \
    PQSIMD_REGISTER_(ops_, kind_, sizes_, api_, buffers_, (int)(sizeof buffers_ / sizeof buffers_[0]))

#endif
