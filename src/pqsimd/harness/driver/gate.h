/* The correctness gate's vectors, one protocol per kind (the Python side is pqsimd/verify/).
 * Lines on stdin, one answer line per input line on stdout; hex everywhere, "-" for empty.
 *
 * kem:  "POOL FRACS"     -> "rc used dry pk sk ct ss ss_dec ss_tampered..."
 * sign: "POOL MSG FRACS" -> "rc used dry pk sk sig verify_rc sig_tampered_rcs msg_tampered_rcs"
 *       "verify PK MSG SIG" -> "rc" (another build's signature verified by this one)
 * hash: "MSG OUTLEN"     -> "digest"
 *
 * POOL: the bytes randombytes serves (key generation, then encapsulation or signing).
 * FRACS: tamper positions as fractions of the length, pos = min(len - 1, floor(f * len)); the
 * byte at pos gets its lowest bit flipped, one position at a time. */
#ifndef PQSIMD_GATE_H
#define PQSIMD_GATE_H
#include <stdio.h>

#include "loader.h"

int pqsimd_gate(const pqsimd_loaded *v, const pqsimd_scheme *s, FILE *in, FILE *out);

#endif
