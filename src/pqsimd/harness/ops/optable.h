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

/* The harness's self-check op, op_empty: after overhead correction it must read ~0 ticks per call. */
#define PQSIMD_EMPTY_OP \
    __attribute__((noinline, aligned(64))) static void op_empty(void) { __asm__ volatile("" ::: "memory"); }

/* Registers this set when the variant is loaded: its op array, kind (enum pqsimd_kind), sizes
 * (a pqsimd_sizes) and primitive API (a pqsimd_api), the last two static objects of the op table. */
#define PQSIMD_REGISTER(ops_, kind_, sizes_, api_)                                        \
    __attribute__((constructor)) static void STATIC_NAME(register_scheme)(void) {        \
        static pqsimd_scheme scheme;                                                      \
        scheme.name = PQSIMD_SCHEME;                                                      \
        scheme.impl = PQSIMD_IMPL;                                                        \
        scheme.ops = ops_;                                                                \
        scheme.n_ops = (int)(sizeof ops_ / sizeof ops_[0]);                               \
        scheme.kind = kind_;                                                              \
        scheme.sizes = sizes_;                                                            \
        scheme.api = api_;                                                                \
        pqsimd_register(&scheme);                                                         \
    }

#endif
