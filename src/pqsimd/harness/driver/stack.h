/* The peak stack of one op call, measured on a private painted stack (driver `stack`). */
#ifndef PQSIMD_STACK_H
#define PQSIMD_STACK_H
#include <stddef.h>

#include "../pqsimd.h"

#define PQSIMD_STACK_BYTES ((size_t)16 << 20) /* above Linux's default 8 MiB limit every op already runs in */

/* Bytes between the top of a private stack and the deepest byte one call of op->call wrote, under
 * paint byte `pattern`; -1 if the stack cannot be mapped, -2 if the call wrote down to its bottom. */
long pqsimd_stack_peak(const pqsimd_op *op, int pattern);

#endif
