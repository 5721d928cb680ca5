/* Where the driver is (which variant, which op), for the one line it writes when it dies:
 *
 *   driver: crashed: SIGSEGV in variant 2 (/study/bin/x.gcc.ml-kem.so) op ntt
 *   driver: stopped: SIGTERM in variant 2 (/study/bin/x.gcc.ml-kem.so) op ntt
 *
 * A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) or a stop by pqsimd (SIGTERM at a time
 * limit or when pqsimd itself is stopped, SIGINT) prints it on stderr with async-signal-safe
 * writes, then the process dies of the same signal. pqsimd reads it to name the build and op. */
#ifndef PQSIMD_GUARD_H
#define PQSIMD_GUARD_H

#include <stddef.h>

void pqsimd_guard_install(void);
/* A fault inside [lo, lo + bytes) adds `note` to the crash line (a private stack's guard page). */
void pqsimd_guard_page(const void *lo, size_t bytes, const char *note);
/* variant: index in the job (-1: none), path: its shared object, op: what runs now */
void pqsimd_guard_at(int variant, const char *path, const char *op);

#endif
