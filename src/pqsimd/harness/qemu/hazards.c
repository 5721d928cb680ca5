/* Hazards a PMU would count, simulated from the exact trace (hazards=on in count.c).
 *
 * An instruction's accesses (QEMU reports a 32-byte vector access as several element accesses) are
 * merged into contiguous byte ranges, then judged when the next instruction starts:
 *
 *   SplitLd, SplitSt  a load or store range that crosses a 64-byte line (Intel MEM_INST_RETIRED.
 *                     SPLIT_LOADS / SPLIT_STORES; AMD LS_MISAL_LOADS)
 *   SFfail            a load that overlaps bytes of a store still in flight, where the youngest such
 *                     store does not hold all of the load's bytes: the data cannot be forwarded and
 *                     the load waits for the store to commit (Intel LD_BLOCKS.STORE_FORWARD; AMD
 *                     LS_STLF failures)
 *   Alias4K           a load that overlaps no in-flight store but whose page offset (address bits
 *                     11:0) overlaps one's: the early address check holds it back (Intel
 *                     LD_BLOCKS_PARTIAL.ADDRESS_ALIAS)
 *   SSEdirty          a legacy-SSE instruction (no VEX prefix, xmm operand) executed while a VEX
 *                     instruction has written a ymm register since the last vzeroupper/vzeroall: on
 *                     Intel since Skylake each one merges the dirty upper half (a false dependency
 *                     and a blend µop, ASSISTS.SSE_AVX_MIX); on Haswell the first one of a run costs a
 *                     state transition of ~70 cycles (OTHER_ASSISTS.AVX_TO_SSE): Transitions
 *   Ld, St            the merged load and store ranges, for rates
 *
 * In flight: among the last `entries` stores and at most `window` instructions older than the load.
 * A real store leaves the buffer when it commits, which depends on timing the model does not have;
 * the window stands for it, and the counts are those of this model (pqsimd records its parameters).
 * Gathers and scatters (non-contiguous elements) are judged element by element. */
#include "hazards.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { PLAIN, DIRTIES, CLEANS, LEGACY_SSE };
#define LINE 64
#define PAGE_MASK 0xfffu
#define MAX_RANGES 16
#define MAX_ENTRIES 1024

struct hazard_insn {
    uint64_t pc;
    int kind;
    char *disas;
    uint64_t sf_fail, alias_4k, split_ld, split_st, sse_dirty; /* inside windows */
    hazard_insn *next;
};

typedef struct {
    uint64_t lo, hi; /* [lo, hi) */
    int store;
} range;

typedef struct {
    uint64_t lo, hi, stamp;
} in_flight;

static hazard_insn *all; /* every record, for hazards_sites */
static hazard_insn *current;
static int current_counted;
static range ranges[MAX_RANGES];
static int n_ranges;
static in_flight buffer[MAX_ENTRIES];
static unsigned entries = 64, window = 64, head, filled;
static uint64_t clock_insns;
static int dirty_upper;
static uint64_t loads, stores, sf_fail, alias_4k, split_ld, split_st, sse_dirty, transitions;

int hazards_configure(unsigned n, unsigned w) {
    if (n == 0 || n > MAX_ENTRIES || w == 0) {
        return -1;
    }
    entries = n;
    window = w;
    return 0;
}

/* The class of an instruction from QEMU's AT&T disassembly ("vpaddw  %ymm1, %ymm2, %ymm3"). */
static int classify(const char *disas) {
    const char *m = disas;
    while (*m == ' ') {
        m++;
    }
    if (strncmp(m, "vzeroupper", 10) == 0 || strncmp(m, "vzeroall", 8) == 0) {
        return CLEANS;
    }
    if (m[0] == 'v' && strstr(m, "%ymm")) {
        return DIRTIES; /* a VEX.256 instruction writes or keeps a full ymm: the upper state is in use */
    }
    if (m[0] != 'v' && strstr(m, "%xmm")) {
        return LEGACY_SSE;
    }
    return PLAIN;
}

hazard_insn *hazards_insn(uint64_t pc, const char *disas) {
    hazard_insn *h = calloc(1, sizeof *h);
    h->pc = pc;
    h->disas = strdup(disas ? disas : "?");
    for (char *p = h->disas; *p; p++) {
        *p = (*p == '\t' || *p == '\n') ? ' ' : *p;
    }
    h->kind = classify(h->disas);
    h->next = all;
    all = h;
    return h;
}

static int overlaps(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b; }

static void judge_load(hazard_insn *h, const range *r, int counted) {
    int overlap = 0, contained = 0, alias = 0;
    /* youngest first: the youngest overlapping store decides whether it can forward */
    for (unsigned k = 0; k < filled; k++) {
        const in_flight *s = &buffer[(head + entries - 1 - k) % entries];
        if (clock_insns - s->stamp > window) {
            break; /* older stores have committed */
        }
        if (overlaps(r->lo, r->hi, s->lo, s->hi)) {
            if (!overlap) {
                contained = s->lo <= r->lo && r->hi <= s->hi;
            }
            overlap = 1;
            break;
        }
        uint64_t lo = r->lo & PAGE_MASK, slo = s->lo & PAGE_MASK;
        if (!alias && overlaps(lo, lo + (r->hi - r->lo), slo, slo + (s->hi - s->lo))) {
            alias = 1;
        }
    }
    if (!counted) {
        return;
    }
    loads++;
    if (overlap && !contained) {
        sf_fail++;
        h->sf_fail++;
    } else if (!overlap && alias) {
        alias_4k++;
        h->alias_4k++;
    }
    if (r->lo / LINE != (r->hi - 1) / LINE) {
        split_ld++;
        h->split_ld++;
    }
}

static void retire_store(hazard_insn *h, const range *r, int counted) {
    buffer[head] = (in_flight){r->lo, r->hi, clock_insns};
    head = (head + 1) % entries;
    filled += filled < entries;
    if (!counted) {
        return;
    }
    stores++;
    if (r->lo / LINE != (r->hi - 1) / LINE) {
        split_st++;
        h->split_st++;
    }
}

/* The previous instruction's accesses: its loads read before its stores write (a read-modify-write
 * instruction reads its old value, not its own store). */
static void settle(void) {
    if (!current) {
        return;
    }
    for (int i = 0; i < n_ranges; i++) {
        if (!ranges[i].store) {
            judge_load(current, &ranges[i], current_counted);
        }
    }
    for (int i = 0; i < n_ranges; i++) {
        if (ranges[i].store) {
            retire_store(current, &ranges[i], current_counted);
        }
    }
    n_ranges = 0;
}

void hazards_exec(hazard_insn *h, int counted) {
    settle();
    clock_insns++;
    current = h;
    current_counted = counted;
    switch (h->kind) {
    case DIRTIES:
        dirty_upper = 1;
        break;
    case CLEANS:
        dirty_upper = 0;
        break;
    case LEGACY_SSE:
        if (dirty_upper && counted) {
            sse_dirty++;
            h->sse_dirty++;
        }
        break;
    default:
        break;
    }
    static int was_sse_dirty;
    int now = h->kind == LEGACY_SSE && dirty_upper;
    if (now && !was_sse_dirty && counted) {
        transitions++;
    }
    if (h->kind == LEGACY_SSE || h->kind == DIRTIES || h->kind == CLEANS) {
        was_sse_dirty = now;
    }
}

void hazards_access(hazard_insn *h, uint64_t addr, unsigned size, int store) {
    (void)h;
    uint64_t lo = addr, hi = addr + (size ? size : 1);
    for (int i = 0; i < n_ranges; i++) { /* an element next to one already seen: one wider access */
        range *r = &ranges[i];
        if (r->store == store && (r->hi == lo || hi == r->lo)) {
            r->lo = lo < r->lo ? lo : r->lo;
            r->hi = hi > r->hi ? hi : r->hi;
            return;
        }
    }
    if (n_ranges == MAX_RANGES) {
        settle(); /* more pieces than any vector instruction makes: judge what we have */
    }
    ranges[n_ranges++] = (range){lo, hi, store};
}

void hazards_json(char *buf, size_t n) {
    settle();
    snprintf(buf, n,
             ", \"hazards\": {\"Ld\": %" PRIu64 ", \"St\": %" PRIu64 ", \"SFfail\": %" PRIu64 ", \"Alias4K\": %" PRIu64
             ", \"SplitLd\": %" PRIu64 ", \"SplitSt\": %" PRIu64 ", \"SSEdirty\": %" PRIu64 ", \"Transitions\": %" PRIu64
             ", \"entries\": %u, \"window\": %u}",
             loads, stores, sf_fail, alias_4k, split_ld, split_st, sse_dirty, transitions, entries, window);
}

void hazards_sites(FILE *out) {
    for (hazard_insn *h = all; h; h = h->next) {
        if (h->sf_fail || h->alias_4k || h->split_ld || h->split_st || h->sse_dirty) {
            fprintf(out, "S\t0x%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\n", h->pc,
                    h->sf_fail, h->alias_4k, h->split_ld, h->split_st, h->sse_dirty, h->disas);
        }
    }
}
