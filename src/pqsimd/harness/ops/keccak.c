/* Keccak-p[1600] op table on XKCP (data/families/keccak.toml, sources/xkcp.py). Compiled against the
 * headers of the build's XKCP implementation, whose names (KeccakP1600_*, KeccakP1600times4_*,
 * KeccakP1600times8_*) are the same in every implementation. The implementation's defines say how the
 * N-way ops are made:
 *   PQSIMD_KECCAK_X4 = 1  four single-state permutations;  4  XKCP's native 4-way permutation
 *   PQSIMD_KECCAK_X8 = 1  eight single-state permutations; 4  two 4-way calls;  8  the native 8-way one
 *
 * Ops: permute_x1, permute_x4, permute_x8 (24 rounds on 1, 4 or 8 states, in place) and the self-check.
 *
 * The gate's primitive (kind hash) is SHAKE-256 through these permutations: `digest` runs the 4-way and
 * the 8-way sponge on lane messages m_j = m xor j (m_0 = m) in lockstep with one single-state sponge per
 * lane, compares every lane's 200-byte state with its single-state sponge's after every permutation, and
 * returns lane 0's output (which hashlib checks) only if the states were identical and the 4-way and
 * 8-way outputs agree; otherwise its bytes are spoiled, so the gate fails. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "align.h" /* ALIGN(), which the N-way headers use */
#include "KeccakP-1600-SnP.h"
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
#include "KeccakP-1600-times4-SnP.h"
#endif
#if PQSIMD_KECCAK_X8 == 8
#include "KeccakP-1600-times8-SnP.h"
#endif
#include "optable.h"
#include "keccak_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_KECCAK_OPS)

#define RATE 136 /* SHAKE-256 */
#define STATE 200
#define MAX_WAYS 8

static KeccakP1600_state s1[MAX_WAYS] __attribute__((aligned(64)));    /* permute_x1; the gate's reference */
static KeccakP1600_state sl[MAX_WAYS] __attribute__((aligned(64)));    /* the N-way ops made of single states */
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
static KeccakP1600times4_states s4[2] __attribute__((aligned(64)));
#endif
#if PQSIMD_KECCAK_X8 == 8
static KeccakP1600times8_states s8 __attribute__((aligned(64)));
#endif

/* --- the N-way permutation as the build makes it --------------------------------------------------- */

static void init_n(int n) {
    if ((n == 4 && PQSIMD_KECCAK_X4 == 1) || (n == 8 && PQSIMD_KECCAK_X8 == 1)) {
        for (int j = 0; j < n; j++) KeccakP1600_Initialize(&sl[j]);
        return;
    }
#if PQSIMD_KECCAK_X8 == 8
    if (n == 8) {
        KeccakP1600times8_InitializeAll(&s8);
        return;
    }
#endif
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
    for (int k = 0; k < n / 4; k++) KeccakP1600times4_InitializeAll(&s4[k]);
#endif
}

static void add_n(int n, int lane, const uint8_t *data, unsigned off, unsigned len) {
    if ((n == 4 && PQSIMD_KECCAK_X4 == 1) || (n == 8 && PQSIMD_KECCAK_X8 == 1)) {
        KeccakP1600_AddBytes(&sl[lane], data, off, len);
        return;
    }
#if PQSIMD_KECCAK_X8 == 8
    if (n == 8) {
        KeccakP1600times8_AddBytes(&s8, (unsigned)lane, data, off, len);
        return;
    }
#endif
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
    KeccakP1600times4_AddBytes(&s4[lane / 4], (unsigned)(lane % 4), data, off, len);
#endif
}

static void extract_n(int n, int lane, uint8_t *data, unsigned off, unsigned len) {
    if ((n == 4 && PQSIMD_KECCAK_X4 == 1) || (n == 8 && PQSIMD_KECCAK_X8 == 1)) {
        KeccakP1600_ExtractBytes(&sl[lane], data, off, len);
        return;
    }
#if PQSIMD_KECCAK_X8 == 8
    if (n == 8) {
        KeccakP1600times8_ExtractBytes(&s8, (unsigned)lane, data, off, len);
        return;
    }
#endif
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
    KeccakP1600times4_ExtractBytes(&s4[lane / 4], (unsigned)(lane % 4), data, off, len);
#endif
}

static void add_n(int n, int lane, const uint8_t *data, unsigned off, unsigned len);

/* -DPQSIMD_KECCAK_FAULT=<lane> (a variant's flags; tests only): every N-way permutation flips one bit of
 * that lane's state, so the gate must fail. Never set by a shipped variant. */
static void fault(int n) {
#ifdef PQSIMD_KECCAK_FAULT
    static const uint8_t bit = 1;
    if (PQSIMD_KECCAK_FAULT < n) add_n(n, PQSIMD_KECCAK_FAULT, &bit, 77, 1);
#else
    (void)n;
#endif
}

static void permute_n(int n) {
    fault(n);
    if ((n == 4 && PQSIMD_KECCAK_X4 == 1) || (n == 8 && PQSIMD_KECCAK_X8 == 1)) {
        for (int j = 0; j < n; j++) KeccakP1600_Permute_24rounds(&sl[j]);
        return;
    }
#if PQSIMD_KECCAK_X8 == 8
    if (n == 8) {
        KeccakP1600times8_PermuteAll_24rounds(&s8);
        return;
    }
#endif
#if PQSIMD_KECCAK_X4 == 4 || PQSIMD_KECCAK_X8 == 4
    for (int k = 0; k < n / 4; k++) KeccakP1600times4_PermuteAll_24rounds(&s4[k]);
#endif
}

/* --- ops -------------------------------------------------------------------------------------------- */

static void setup(void) {
    /* the same fixed 200-byte state in every lane of every op's states */
    uint8_t st[STATE];
    for (int i = 0; i < STATE; i++) st[i] = (uint8_t)(29 * i + 7);
    for (int j = 0; j < MAX_WAYS; j++) {
        KeccakP1600_Initialize(&s1[j]);
        KeccakP1600_AddBytes(&s1[j], st, 0, STATE);
    }
    init_n(4);
    init_n(8);
    for (int j = 0; j < 4; j++) add_n(4, j, st, 0, STATE);
    for (int j = 0; j < 8; j++) add_n(8, j, st, 0, STATE);
}

static void op_permute_x1(void) { KeccakP1600_Permute_24rounds(&s1[0]); }
static void op_permute_x4(void) { permute_n(4); }
static void op_permute_x8(void) { permute_n(8); }
PQSIMD_EMPTY_OP

/* --- the gate's SHAKE-256 ------------------------------------------------------------------------ */

/* The N-way sponge (its lane j absorbs `msg` xor j) beside N single-state sponges, every state
 * compared after every permutation; lane 0's output to `out`. Returns 0 when every state matched. */
static int sponge_n(int n, uint8_t *out, size_t outlen, const uint8_t *msg, size_t mlen) {
    uint8_t block[RATE], a[STATE], b[STATE];
    int bad = 0;
    init_n(n);
    for (int j = 0; j < n; j++) KeccakP1600_Initialize(&s1[j]);
    size_t pos = 0;
    for (;;) {
        size_t take = mlen - pos < RATE ? mlen - pos : RATE;
        for (int j = 0; j < n; j++) {
            for (size_t i = 0; i < take; i++) block[i] = (uint8_t)(msg[pos + i] ^ (uint8_t)j);
            unsigned len = (unsigned)take;
            if (take < RATE) { /* the last block: SHAKE's domain bits and pad10*1 */
                memset(block + take, 0, RATE - take);
                block[take] ^= 0x1F;
                block[RATE - 1] ^= 0x80;
                len = RATE;
            }
            add_n(n, j, block, 0, len);
            KeccakP1600_AddBytes(&s1[j], block, 0, len);
        }
        if (take < RATE) break;
        pos += RATE;
        permute_n(n);
        for (int j = 0; j < n; j++) {
            KeccakP1600_Permute_24rounds(&s1[j]);
            extract_n(n, j, a, 0, STATE);
            KeccakP1600_ExtractBytes(&s1[j], b, 0, STATE);
            bad |= memcmp(a, b, STATE) != 0;
        }
    }
    for (size_t done = 0; done < outlen;) {
        permute_n(n);
        for (int j = 0; j < n; j++) {
            KeccakP1600_Permute_24rounds(&s1[j]);
            extract_n(n, j, a, 0, STATE);
            KeccakP1600_ExtractBytes(&s1[j], b, 0, STATE);
            bad |= memcmp(a, b, STATE) != 0;
        }
        size_t give = outlen - done < RATE ? outlen - done : RATE;
        extract_n(n, 0, out + done, 0, (unsigned)give);
        done += give;
    }
    return bad;
}

static void digest(uint8_t *out, size_t outlen, const uint8_t *m, size_t mlen) {
    static uint8_t other[1 << 20];
    size_t cap = outlen < sizeof other ? outlen : sizeof other;
    int bad = sponge_n(4, other, cap, m, mlen);
    bad |= sponge_n(8, out, outlen, m, mlen);
    bad |= memcmp(other, out, cap) != 0;
    if (bad) {
        for (size_t i = 0; i < outlen; i++) out[i] ^= 0xA5; /* spoiled: hashlib's digest cannot match */
    }
    setup(); /* the ops' states as they were */
}

static const pqsimd_op ops[] = {
    {PQSIMD_OP(permute_x1), setup, op_permute_x1},
    {PQSIMD_OP(permute_x4), setup, op_permute_x4},
    {PQSIMD_OP(permute_x8), setup, op_permute_x8},
    {PQSIMD_OP(empty), NULL, op_empty},
};

static const pqsimd_sizes sizes = {.digest = RATE};
static const pqsimd_api api = {.digest = digest};
PQSIMD_REGISTER(ops, PQSIMD_KIND_HASH, sizes, api)
