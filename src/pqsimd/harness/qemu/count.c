/* pqsimd's TCG plugin for qemu-user: guest instructions executed between the marker instructions of
 * driver/count_marker.h, exactly, and optionally how often each guest instruction ran in those
 * windows (the instruction mix). The plugin knows no ISA: the markers' encodings and the branch
 * classes of its branch model are arguments, which pqsimd/isa/qemu.py passes from data/isas.toml
 * ([isa.<name>.plugin]).
 *
 *   qemu-aarch64 -cpu cortex-a72 -plugin count.so,start=0xd5032f3f,stop=0xd5032f5f,outfile=OUT[,hist=on] PROGRAM ...
 *
 * start=WORD, stop=WORD   the 32-bit little-endian instruction words of the markers (required)
 * pcshift=N               log2 of the instruction alignment (2: A64, 1: RISC-V with compressed
 *                         instructions): the branch tables are indexed by pc >> N
 * cond=SIZE:MASK:VALUE, ind=..., plain=...   (repeatable, first match wins) an instruction of SIZE
 *                         bytes whose little-endian value & MASK == VALUE is a conditional branch,
 *                         an indirect branch, or neither (e.g. a return, listed before the indirect
 *                         branches it would otherwise match)
 *
 * OUT gets one JSON line {"insns": N, "windows": W, "unbalanced": U, "vcpus": V, "hist": bool};
 * with hist=on, then one line per executed (address, instruction): "0xPC<TAB>count<TAB>symbol or
 * -<TAB>disassembly", sorted by address. Without outfile the JSON line goes to QEMU's log.
 *
 * Method: every translation block (TB) gets one inline add of its instruction count to a global
 * counter at its entry (no helper call), so the counter runs ahead of the instruction being
 * executed by the rest of its TB. A marker instruction gets an exec callback that knows how many
 * instructions follow it in its TB and corrects for that, so a window counts exactly the
 * instructions after its start marker and before its stop marker, wherever TBs begin and end.
 * With hist=on each TB also counts its own executions; the markers snapshot those counters (and
 * correct the marker's own TB the same way), so per instruction: executions inside windows.
 * Exact for single-threaded guests whose counted code raises no synchronous exception mid-TB
 * (a syscall ends its TB, so it is fine); "vcpus" > 1 says a guest thread was started.
 *
 * With cache=on,i1=SIZE:WAYS:LINE,d1=...,ll=... every instruction fetch and every guest load and
 * store also goes through a cache model of our own (simulated all the time, counted inside the
 * windows): first-level instruction and data caches backed by one last level, each
 * set-associative with LRU replacement and write-allocate (the model valgrind's callgrind uses on
 * x86-64, so every ISA's numbers mean the same); an access that straddles two lines touches both
 * and misses if either does. A vector load or store is one access of the size QEMU reports for each
 * element it moves. The JSON line then has "cache": {"Dr", "Dw", "I1mr", "D1mr", "D1mw",
 * "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim"}. Branches, like valgrind's model: conditional
 * ones (the cond= classes) are predicted by a table of 16384 two-bit counters indexed by
 * address, taken when the next instruction executed is not the one after the branch; indirect ones
 * (the ind= classes; returns are not among them) by a 512-entry table of the last target per address.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "hazards.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* One translation of a TB (hist mode): its executions, snapshots, and its instructions. */
typedef struct block {
    uint64_t execs;   /* incremented inline at every entry of the TB */
    uint64_t base;    /* execs at the start of the open window */
    uint64_t inside;  /* executions within closed windows */
    size_t n;
    uint64_t *pc;
    char **disas;
    const char **symbol;
    int64_t *adjust;  /* per instruction: the partial executions of the marker TBs */
    struct block *next;
} block;

typedef struct {
    int stop;      /* 0: start marker, 1: stop marker */
    size_t index;  /* position in its TB */
    size_t n;      /* instructions in its TB */
    block *tb;     /* its TB (hist mode), else NULL */
} marker;

static uint64_t executed; /* every guest instruction of every TB entered (inline adds) */
static uint64_t window_start, counted, windows, unbalanced;
static int open_window, hist;
static unsigned vcpus;
static const char *outfile;
static block *blocks;

/* The cache model (cache=on). */
typedef struct {
    uint64_t sets, ways, line_shift;
    uint64_t *tag;   /* sets * ways; line number + 1, 0 = empty */
    uint64_t *stamp; /* last use, for LRU */
    uint64_t clock;
} cache;
static int simulate, hazards;
static cache i1, d1, ll;
static uint64_t d_reads, d_writes, i1_misses, d1_read_misses, d1_write_misses, ll_i_misses, ll_read_misses,
    ll_write_misses;

/* The branch model (cache=on): a branch is resolved by the next instruction fetched. */
#define COND_ENTRIES 16384
#define INDIRECT_ENTRIES 512
#define MAX_RULES 32
enum { NOT_BRANCH, CONDITIONAL, INDIRECT };
typedef struct {
    unsigned size;
    uint32_t mask, value;
    int kind;
} rule;
static rule rules[MAX_RULES];
static int n_rules;
static uint32_t start_word, stop_word;
static int have_start, have_stop;
static unsigned pc_shift = 2;
typedef struct {
    uint64_t pc;
    unsigned size;
    int kind;
} branch;
static uint8_t counters[COND_ENTRIES]; /* 0, 1: predict not taken; 2, 3: taken */
static uint64_t targets[INDIRECT_ENTRIES];
static const branch *pending;
static int pending_counted;
static uint64_t conditional, conditional_missed, indirect, indirect_missed;

static int branch_kind(uint32_t word, unsigned size) {
    for (int i = 0; i < n_rules; i++) {
        if (rules[i].size == size && (word & rules[i].mask) == rules[i].value) {
            return rules[i].kind;
        }
    }
    return NOT_BRANCH;
}

static void resolve_branch(uint64_t next_pc) {
    const branch *b = pending;
    pending = NULL;
    if (b->kind == CONDITIONAL) {
        uint8_t *c = &counters[(b->pc >> pc_shift) % COND_ENTRIES];
        int taken = next_pc != b->pc + b->size, predicted = *c >= 2;
        if (pending_counted) {
            conditional++;
            conditional_missed += taken != predicted;
        }
        *c = taken ? (*c < 3 ? *c + 1 : 3) : (*c > 0 ? *c - 1 : 0);
    } else {
        uint64_t *t = &targets[(b->pc >> pc_shift) % INDIRECT_ENTRIES];
        if (pending_counted) {
            indirect++;
            indirect_missed += *t != next_pc;
        }
        *t = next_pc;
    }
}

static void on_branch(unsigned int vcpu, void *udata) {
    (void)vcpu;
    pending = udata;
    pending_counted = open_window;
}

static int cache_init(cache *c, const char *spec) {
    unsigned long long size, ways, line;
    if (sscanf(spec, "%llu:%llu:%llu", &size, &ways, &line) != 3 || !ways || !line || (line & (line - 1)) ||
        size % (ways * line)) {
        return -1;
    }
    c->sets = size / (ways * line);
    c->ways = ways;
    c->line_shift = (uint64_t)__builtin_ctzll(line);
    c->tag = calloc(c->sets * c->ways, sizeof *c->tag);
    c->stamp = calloc(c->sets * c->ways, sizeof *c->stamp);
    return c->sets && c->tag && c->stamp ? 0 : -1;
}

/* One access to the line holding addr: 1 on a hit; on a miss the least recently used way is refilled. */
static int cache_line(cache *c, uint64_t line) {
    uint64_t base = (line % c->sets) * c->ways, victim = base;
    for (uint64_t w = base; w < base + c->ways; w++) {
        if (c->tag[w] == line + 1) {
            c->stamp[w] = ++c->clock;
            return 1;
        }
        if (c->stamp[w] < c->stamp[victim]) {
            victim = w;
        }
    }
    c->tag[victim] = line + 1;
    c->stamp[victim] = ++c->clock;
    return 0;
}

/* An access of `size` bytes through a first level backed by the last level: 0 hit, 1 first-level
 * miss served by the last level, 2 missed both. */
static int hierarchy(cache *l1, uint64_t addr, unsigned size) {
    uint64_t first = addr >> l1->line_shift, last = (addr + (size ? size : 1) - 1) >> l1->line_shift;
    int worst = 0;
    for (uint64_t line = first; line <= last; line++) {
        if (!cache_line(l1, line)) {
            int level = cache_line(&ll, (line << l1->line_shift) >> ll.line_shift) ? 1 : 2;
            worst = level > worst ? level : worst;
        }
    }
    return worst;
}

typedef struct {
    uint64_t pc;
    unsigned size;
} fetch;

static void on_fetch(unsigned int vcpu, void *udata) {
    (void)vcpu;
    const fetch *f = udata;
    if (pending) {
        resolve_branch(f->pc);
    }
    int level = hierarchy(&i1, f->pc, f->size);
    if (open_window) {
        i1_misses += level >= 1;
        ll_i_misses += level == 2;
    }
}

static void on_memory(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    (void)udata;
    int store = qemu_plugin_mem_is_store(info);
    int level = hierarchy(&d1, vaddr, 1u << qemu_plugin_mem_size_shift(info));
    if (!open_window) {
        return;
    }
    if (store) {
        d_writes++;
        d1_write_misses += level >= 1;
        ll_write_misses += level == 2;
    } else {
        d_reads++;
        d1_read_misses += level >= 1;
        ll_read_misses += level == 2;
    }
}

static void on_hazard_exec(unsigned int vcpu, void *udata) {
    (void)vcpu;
    hazards_exec(udata, open_window);
}

static void on_hazard_memory(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    hazards_access(udata, vaddr, 1u << qemu_plugin_mem_size_shift(info), qemu_plugin_mem_is_store(info));
}

static void on_marker(unsigned int vcpu, void *udata) {
    (void)vcpu;
    const marker *m = udata;
    size_t after = m->n - 1 - m->index; /* already in `executed`, not executed yet */
    if (!m->stop) {
        if (open_window) {
            unbalanced++;
            return;
        }
        open_window = 1;
        window_start = executed - after; /* up to and including this marker */
        for (block *b = blocks; hist && b; b = b->next) {
            b->base = b->execs;
        }
        for (size_t i = m->index + 1; hist && i < m->n; i++) {
            m->tb->adjust[i]++; /* this entry's rest of the TB is inside the window */
        }
        return;
    }
    if (!open_window) {
        unbalanced++;
        return;
    }
    open_window = 0;
    windows++;
    counted += executed - (after + 1) - window_start; /* before this marker */
    for (block *b = blocks; hist && b; b = b->next) {
        b->inside += b->execs - b->base;
    }
    for (size_t i = m->index; hist && i < m->n; i++) {
        m->tb->adjust[i]--; /* the marker and what follows it are outside */
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, n);
    block *b = NULL;
    if (hist) {
        b = calloc(1, sizeof *b);
        b->n = n;
        b->pc = calloc(n, sizeof *b->pc);
        b->disas = calloc(n, sizeof *b->disas);
        b->symbol = calloc(n, sizeof *b->symbol);
        b->adjust = calloc(n, sizeof *b->adjust);
        b->next = blocks;
        blocks = b;
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (b) {
            b->pc[i] = qemu_plugin_insn_vaddr(insn);
            b->disas[i] = qemu_plugin_insn_disas(insn);
            b->symbol[i] = qemu_plugin_insn_symbol(insn);
        }
        size_t size = qemu_plugin_insn_size(insn);
        if (simulate) {
            fetch *f = malloc(sizeof *f);
            *f = (fetch){qemu_plugin_insn_vaddr(insn), (unsigned)size};
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_fetch, QEMU_PLUGIN_CB_NO_REGS, f);
            qemu_plugin_register_vcpu_mem_cb(insn, on_memory, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        }
        if (hazards) { /* before the marker's callback: the instruction before a stop marker is inside */
            char *text = qemu_plugin_insn_disas(insn);
            hazard_insn *h = hazards_insn(qemu_plugin_insn_vaddr(insn), text);
            free(text);
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_hazard_exec, QEMU_PLUGIN_CB_NO_REGS, h);
            qemu_plugin_register_vcpu_mem_cb(insn, on_hazard_memory, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, h);
        }
        if (size != 2 && size != 4) {
            continue;
        }
        uint32_t word = 0;
        const uint8_t *bytes = qemu_plugin_insn_data(insn);
        for (size_t k = 0; k < size; k++) { /* instructions are little-endian on every ISA pqsimd counts */
            word |= (uint32_t)bytes[k] << (8 * k);
        }
        int kind = simulate ? branch_kind(word, (unsigned)size) : NOT_BRANCH;
        if (kind != NOT_BRANCH) { /* after on_fetch: its own fetch must not resolve it */
            branch *br = malloc(sizeof *br);
            *br = (branch){qemu_plugin_insn_vaddr(insn), (unsigned)size, kind};
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_branch, QEMU_PLUGIN_CB_NO_REGS, br);
        }
        int stop = size == 4 && word == stop_word;
        if (stop || (size == 4 && word == start_word)) {
            marker *m = malloc(sizeof *m);
            *m = (marker){stop, i, n, b};
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS, m);
        }
    }
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu) {
    (void)id;
    (void)vcpu;
    vcpus++;
}

typedef struct {
    uint64_t pc, count;
    const char *symbol;
    const char *disas;
} row;

static int by_pc(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->pc != y->pc) {
        return x->pc < y->pc ? -1 : 1;
    }
    return strcmp(x->disas, y->disas);
}

/* One line per (address, disassembly): a TB translated twice adds up; tabs stay separators. */
static void write_hist(FILE *out) {
    size_t n = 0, k = 0;
    for (block *b = blocks; b; b = b->next) {
        n += b->n;
    }
    row *rows = calloc(n ? n : 1, sizeof *rows);
    for (block *b = blocks; b; b = b->next) {
        for (size_t i = 0; i < b->n; i++) {
            int64_t c = (int64_t)b->inside + b->adjust[i];
            if (c > 0) {
                for (char *p = b->disas[i]; p && *p; p++) {
                    *p = (*p == '\t' || *p == '\n') ? ' ' : *p;
                }
                rows[k++] = (row){b->pc[i], (uint64_t)c, b->symbol[i], b->disas[i] ? b->disas[i] : "?"};
            }
        }
    }
    qsort(rows, k, sizeof *rows, by_pc);
    for (size_t i = 0; i < k; i++) {
        uint64_t c = rows[i].count;
        while (i + 1 < k && rows[i + 1].pc == rows[i].pc && strcmp(rows[i + 1].disas, rows[i].disas) == 0) {
            c += rows[++i].count;
        }
        fprintf(out, "0x%" PRIx64 "\t%" PRIu64 "\t%s\t%s\n", rows[i].pc, c,
                rows[i].symbol && *rows[i].symbol ? rows[i].symbol : "-", rows[i].disas);
    }
    free(rows);
}

static void write_results(qemu_plugin_id_t id, void *udata) {
    (void)id;
    (void)udata;
    unbalanced += open_window; /* a window never closed is not counted */
    char line[1536], events[640] = "", hazard_events[512] = "";
    if (simulate) {
        snprintf(events, sizeof events,
                 ", \"cache\": {\"Dr\": %" PRIu64 ", \"Dw\": %" PRIu64 ", \"I1mr\": %" PRIu64 ", \"D1mr\": %" PRIu64
                 ", \"D1mw\": %" PRIu64 ", \"ILmr\": %" PRIu64 ", \"DLmr\": %" PRIu64 ", \"DLmw\": %" PRIu64
                 ", \"Bc\": %" PRIu64 ", \"Bcm\": %" PRIu64 ", \"Bi\": %" PRIu64 ", \"Bim\": %" PRIu64 "}",
                 d_reads, d_writes, i1_misses, d1_read_misses, d1_write_misses, ll_i_misses, ll_read_misses,
                 ll_write_misses, conditional, conditional_missed, indirect, indirect_missed);
    }
    if (hazards) {
        hazards_json(hazard_events, sizeof hazard_events);
    }
    snprintf(line, sizeof line,
             "{\"insns\": %" PRIu64 ", \"windows\": %" PRIu64 ", \"unbalanced\": %" PRIu64
             ", \"vcpus\": %u, \"hist\": %s%s%s}\n",
             counted, windows, unbalanced, vcpus, hist ? "true" : "false", events, hazard_events);
    if (!outfile) {
        qemu_plugin_outs(line);
        return;
    }
    FILE *out = fopen(outfile, "w");
    if (!out) {
        qemu_plugin_outs("pqsimd count plugin: cannot write outfile\n");
        return;
    }
    fputs(line, out);
    if (hist) {
        write_hist(out);
    }
    if (hazards) {
        hazards_sites(out);
    }
    if (fclose(out) != 0) {
        qemu_plugin_outs("pqsimd count plugin: writing outfile failed\n");
    }
}

/* SIZE:MASK:VALUE of a branch class; 0 on success. */
static int parse_rule(const char *spec, int kind) {
    unsigned size;
    unsigned long mask, value;
    if (n_rules == MAX_RULES || sscanf(spec, "%u:%lx:%lx", &size, &mask, &value) != 3 || (size != 2 && size != 4) ||
        (value & ~mask)) {
        return -1;
    }
    rules[n_rules++] = (rule){size, (uint32_t)mask, (uint32_t)value, kind};
    return 0;
}

static int key_is(const char *arg, size_t key, const char *name) {
    return key == strlen(name) && strncmp(arg, name, key) == 0;
}

static unsigned sb_entries = 64, sb_window = 64;

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t key = eq ? (size_t)(eq - argv[i]) : 0;
        const char *v = eq ? eq + 1 : "";
        bool on;
        char *end;
        if (key_is(argv[i], key, "outfile") && *v) {
            outfile = v;
        } else if (key_is(argv[i], key, "hist") && qemu_plugin_bool_parse("hist", v, &on)) {
            hist = on;
        } else if (key_is(argv[i], key, "cache") && qemu_plugin_bool_parse("cache", v, &on)) {
            simulate = on;
        } else if ((key_is(argv[i], key, "start") || key_is(argv[i], key, "stop")) && *v &&
                   (strtoul(v, &end, 16), *end == '\0')) {
            if (argv[i][2] == 'a') {
                start_word = (uint32_t)strtoul(v, NULL, 16);
                have_start = 1;
            } else {
                stop_word = (uint32_t)strtoul(v, NULL, 16);
                have_stop = 1;
            }
        } else if (key_is(argv[i], key, "hazards") && qemu_plugin_bool_parse("hazards", v, &on)) {
            hazards = on;
        } else if (key_is(argv[i], key, "sb") && *v && strtoul(v, &end, 10) && *end == '\0') {
            sb_entries = (unsigned)strtoul(v, NULL, 10);
        } else if (key_is(argv[i], key, "window") && *v && strtoul(v, &end, 10) && *end == '\0') {
            sb_window = (unsigned)strtoul(v, NULL, 10);
        } else if (key_is(argv[i], key, "pcshift") && (v[0] == '0' || v[0] == '1' || v[0] == '2') && !v[1]) {
            pc_shift = (unsigned)(v[0] - '0');
        } else if ((key_is(argv[i], key, "cond") && parse_rule(v, CONDITIONAL) == 0) ||
                   (key_is(argv[i], key, "ind") && parse_rule(v, INDIRECT) == 0) ||
                   (key_is(argv[i], key, "plain") && parse_rule(v, NOT_BRANCH) == 0)) {
            continue;
        } else if ((key_is(argv[i], key, "i1") || key_is(argv[i], key, "d1") || key_is(argv[i], key, "ll")) &&
                   cache_init(argv[i][0] == 'i' ? &i1 : argv[i][0] == 'd' ? &d1 : &ll, v) == 0) {
            continue;
        } else {
            fprintf(stderr, "pqsimd count plugin: bad argument %s (start=WORD, stop=WORD, outfile=PATH, hist=on|off, "
                            "cache=on|off, i1|d1|ll=SIZE:WAYS:LINE, hazards=on|off, sb=N, window=N, pcshift=0|1|2, cond|ind|plain=SIZE:MASK:VALUE)\n",
                    argv[i]);
            return -1;
        }
    }
    if (!have_start || !have_stop || start_word == stop_word) {
        fprintf(stderr, "pqsimd count plugin: start= and stop= must give two different marker words (the ISA's "
                        "[isa.<name>.plugin] in data/isas.toml)\n");
        return -1;
    }
    if (hazards && hazards_configure(sb_entries, sb_window) != 0) {
        fprintf(stderr, "pqsimd count plugin: sb= must be 1-1024 stores and window= at least 1 instruction\n");
        return -1;
    }
    if (simulate && !(i1.sets && d1.sets && ll.sets)) {
        fprintf(stderr, "pqsimd count plugin: cache=on needs i1=, d1= and ll=SIZE:WAYS:LINE\n");
        return -1;
    }
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_results, NULL);
    return 0;
}
