/* pqsimd's TCG plugin for qemu-user (aarch64 guests): guest instructions executed between the
 * marker instructions of driver/count_marker.h, exactly, and optionally how often each guest
 * instruction ran in those windows (the instruction mix).
 *
 *   qemu-aarch64 -cpu cortex-a72 -plugin count.so,outfile=OUT[,hist=on] PROGRAM ...
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
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "../driver/count_marker.h"

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
        uint32_t word;
        if (qemu_plugin_insn_size(insn) != sizeof word) {
            continue;
        }
        memcpy(&word, qemu_plugin_insn_data(insn), sizeof word); /* A64: little-endian words */
        int stop = word == PQSIMD_A64_HINT(PQSIMD_MARKER_HINT_STOP);
        if (stop || word == PQSIMD_A64_HINT(PQSIMD_MARKER_HINT_START)) {
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
    char line[256];
    snprintf(line, sizeof line,
             "{\"insns\": %" PRIu64 ", \"windows\": %" PRIu64 ", \"unbalanced\": %" PRIu64
             ", \"vcpus\": %u, \"hist\": %s}\n",
             counted, windows, unbalanced, vcpus, hist ? "true" : "false");
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
    if (fclose(out) != 0) {
        qemu_plugin_outs("pqsimd count plugin: writing outfile failed\n");
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    if (strcmp(info->target_name, "aarch64") != 0) {
        fprintf(stderr, "pqsimd count plugin: the markers are A64 instructions; target is %s\n", info->target_name);
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t key = eq ? (size_t)(eq - argv[i]) : 0;
        bool on;
        if (key == 7 && strncmp(argv[i], "outfile", key) == 0 && eq[1]) {
            outfile = eq + 1;
        } else if (key == 4 && strncmp(argv[i], "hist", key) == 0 && qemu_plugin_bool_parse("hist", eq + 1, &on)) {
            hist = on;
        } else {
            fprintf(stderr, "pqsimd count plugin: bad argument %s (outfile=PATH, hist=on|off)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_results, NULL);
    return 0;
}
