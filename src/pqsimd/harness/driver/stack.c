/* Peak stack of an op (driver `stack LIB SCHEME [OP...]`, run/stack.py).
 *
 * One call of the op runs on a private stack (mmap, below it a PROT_NONE guard page), entered with
 * makecontext/swapcontext. The stack is painted with a byte pattern before the call and scanned from
 * its bottom afterwards: the first byte that is not the pattern is the deepest the call wrote. Painting
 * sees only bytes written (a byte written with the pattern's own value is missed), so the driver paints
 * twice, with 0xA5 and with 0x5A, and pqsimd takes the larger. The caller warms the op up first (lazy
 * binding of its PLT entries would write the dynamic linker's frames), and subtracts the family's
 * self-check op (an empty function): what is left is what the op writes below its return address
 * (the trampoline's own frame, and on x86-64 the call's return address, cancel). */
#define _GNU_SOURCE
#include "stack.h"

#include "guard.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static ucontext_t back, on_stack;
static void (*volatile current)(void);

__attribute__((noinline)) static void trampoline(void) {
    current();
    __asm__ volatile("" ::: "memory"); /* not a tail call: the op returns here */
}

long pqsimd_stack_peak(const pqsimd_op *op, int pattern) {
    static uint8_t *base; /* guard page, then the stack */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!base) {
        base = mmap(NULL, PQSIMD_STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
        if (base == MAP_FAILED) {
            base = NULL;
            return -1;
        }
        mprotect(base, page, PROT_NONE);
        /* a frame larger than the guard page jumps past it: a fault up to a stack's size below counts too */
        pqsimd_guard_page(base - (base >= (uint8_t *)PQSIMD_STACK_BYTES ? PQSIMD_STACK_BYTES : 0),
                          PQSIMD_STACK_BYTES + page, ": it overran the driver's private stack of 16 MiB (its peak is above what "
                                      "`--metric stack` measures)");
    }
    uint8_t *lo = base + page;
    memset(lo, pattern, PQSIMD_STACK_BYTES);
    if (getcontext(&on_stack)) {
        return -1;
    }
    on_stack.uc_stack.ss_sp = lo;
    on_stack.uc_stack.ss_size = PQSIMD_STACK_BYTES;
    on_stack.uc_link = &back;
    current = op->call;
    makecontext(&on_stack, trampoline, 0);
    if (swapcontext(&back, &on_stack)) {
        return -1;
    }
    size_t i = 0;
    while (i < PQSIMD_STACK_BYTES && lo[i] == (uint8_t)pattern) {
        i++;
    }
    return i == 0 ? -2 : (long)(PQSIMD_STACK_BYTES - i);
}
