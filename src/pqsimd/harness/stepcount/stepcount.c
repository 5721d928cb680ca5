/* stepcount: exact instruction counts of one function's calls, natively, by single-stepping it under
 * ptrace (x86-64 Linux). For code valgrind cannot run (AVX-512: valgrind 3.19 stops with SIGILL on the
 * first EVEX instruction) the CPU itself runs every instruction, one trap each.
 *
 *   stepcount OUT OFFSET PIE -- PROGRAM ARGS...
 *
 * (OFFSET "-": no breakpoint, PROGRAM only runs traced: a probe that ptrace works here)
 * runs PROGRAM with a breakpoint at OFFSET (hex; PIE = 1: from the program's load address, 0: an
 * absolute address). Each time the function is entered, the breakpoint is lifted and the call is
 * single-stepped from its first instruction until it has returned (the instruction pointer at the
 * return address and the stack pointer above it): the instructions it executed, its `ret` included,
 * every callee's included, one line per call written to OUT. Then the breakpoint is set again. A rep-
 * prefixed string instruction traps once per iteration; valgrind counts one more, the pass that finds the
 * count at zero (`rep stosq` with rcx = 100: 101 Ir, 100 traps; with rcx = 0: 1 and 1), so that pass is added
 * here too (rep_kind). A signal that arrives
 * while stepping is an error (its handler would be counted): exit 3. PROGRAM's exit status is
 * stepcount's. Nothing here depends on what the stepped code is.
 * --profile: each call's line is "# COUNT", followed by one line per executed instruction address,
 * "FILE<TAB>ADDRESS<TAB>EXECUTIONS" (ADDRESS in hex, relative to FILE's offset-0 mapping: objdump's address).
 * --hash ENTRIES: each call's line is "COUNT HASHED": HASHED the instructions executed from an entry into one
 * of the functions ENTRIES lists (lines "FILE<TAB>RELATIVE<TAB>ADDRESS": the function's first instruction,
 * RELATIVE 1 when ADDRESS is from FILE's offset-0 mapping) made from code outside them until that function has
 * returned, its callees included: callgrind's inclusive cost of the call arcs into them from other code
 * (run/hashshare.py), which is what a call arc is. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

static int die(const char *what) {
    fprintf(stderr, "stepcount: %s: %s\n", what, strerror(errno));
    return 2;
}

/* --profile: executions per instruction address of each call, an open-addressing table of rip -> count */
#define SLOTS (1u << 21)
static uint64_t *slot_rip, *slot_n;
static unsigned used;

static int bump(uint64_t rip) {
    unsigned h = (unsigned)((rip * 0x9E3779B97F4A7C15ull) >> 43) & (SLOTS - 1);
    while (slot_n[h] && slot_rip[h] != rip) h = (h + 1) & (SLOTS - 1);
    if (!slot_n[h]) {
        if (++used > SLOTS / 2) return -1;
        slot_rip[h] = rip;
    }
    slot_n[h]++;
    return 0;
}

/* Each executed address as (the file mapped there, its address in that file as objdump prints it: the
 * offset from the file's offset-0 mapping), with its executions; then the table is emptied. */
static void dump_profile(pid_t pid, FILE *out) {
    char path[64], line[4096];
    struct { unsigned long lo, hi, off; char name[512]; } maps[512];
    int n = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && n < 512 && fgets(line, sizeof line, f)) {
        maps[n].name[0] = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %511s", &maps[n].lo, &maps[n].hi, &maps[n].off, maps[n].name) >= 3) n++;
    }
    if (f) fclose(f);
    for (unsigned h = 0; h < SLOTS; h++) {
        if (!slot_n[h]) continue;
        uint64_t rip = slot_rip[h], base = 0;
        const char *name = "?";
        for (int i = 0; i < n; i++) {
            if (rip >= maps[i].lo && rip < maps[i].hi) {
                name = maps[i].name[0] ? maps[i].name : "?";
                base = maps[i].lo - maps[i].off; /* the file's offset 0 (text segments at vaddr = offset) */
                for (int j = 0; j < n; j++)
                    if (maps[j].off == 0 && strcmp(maps[j].name, maps[i].name) == 0) { base = maps[j].lo; break; }
                break;
            }
        }
        fprintf(out, "%s\t%llx\t%llu\n", name, (unsigned long long)(rip - base), (unsigned long long)slot_n[h]);
        slot_n[h] = 0;
    }
    used = 0;
}

/* A rep-prefixed string instruction at rip: 0 none, 1 unconditional (movs, stos, lods, ins, outs), 2 repe
 * cmps/scas, 3 repne cmps/scas; decoded once per address (the code does not change). */
#define REP_SLOTS (1u << 16)
static uint64_t rep_rip[REP_SLOTS];
static signed char rep_known[REP_SLOTS]; /* 0: not decoded, else kind + 1 */

static int rep_kind(pid_t pid, uint64_t rip) {
    unsigned h = (unsigned)((rip * 0x9E3779B97F4A7C15ull) >> 48) & (REP_SLOTS - 1);
    if (rep_known[h] && rep_rip[h] == rip) return rep_known[h] - 1;
    unsigned char b[16];
    for (int i = 0; i < 2; i++) {
        errno = 0;
        long w = ptrace(PTRACE_PEEKTEXT, pid, (void *)(rip + 8 * i), NULL);
        if (errno) return 0;
        memcpy(b + 8 * i, &w, 8);
    }
    int rep = 0, i = 0, kind = 0;
    for (; i < 14; i++) { /* legacy prefixes; the last of F2/F3 is the repeat */
        unsigned char c = b[i];
        if (c == 0xF2 || c == 0xF3) rep = c;
        else if (!(c == 0xF0 || c == 0x2E || c == 0x36 || c == 0x3E || c == 0x26 || c == 0x64 || c == 0x65 ||
                   c == 0x66 || c == 0x67)) break;
    }
    if ((b[i] & 0xF0) == 0x40) i++; /* REX */
    unsigned char op = b[i];
    if (rep && ((op >= 0xA4 && op <= 0xA5) || (op >= 0xAA && op <= 0xAD) || (op >= 0x6C && op <= 0x6F))) kind = 1;
    else if (rep && (op == 0xA6 || op == 0xA7 || op == 0xAE || op == 0xAF)) kind = rep == 0xF3 ? 2 : 3;
    rep_rip[h] = rip;
    rep_known[h] = (signed char)(kind + 1);
    return kind;
}

/* --hash: the entry addresses, sorted once the program's objects are mapped (at the first counted call) */
#define MAX_ENTRIES 65536
static uint64_t entry[MAX_ENTRIES];
static int entries, entries_loaded;

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int is_entry(uint64_t rip) {
    int lo = 0, hi = entries - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (entry[mid] == rip) return 1;
        if (entry[mid] < rip) lo = mid + 1; else hi = mid - 1;
    }
    return 0;
}

/* The start of FILE's offset-0 mapping in the traced process, 0 when it is not mapped. */
static uint64_t file_base(pid_t pid, const char *file) {
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    uint64_t base = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, off;
        char name[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %4095s", &lo, &off, name) >= 3 && off == 0 && strcmp(name, file) == 0) {
            base = lo;
            break;
        }
    }
    fclose(f);
    return base;
}

/* The program's load address: the start of its executable's offset-0 mapping. */
static uint64_t load_base(pid_t pid) {
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    return file_base(pid, exe);
}

static int load_entries(pid_t pid, const char *list) {
    FILE *f = fopen(list, "r");
    if (!f) return -1;
    char line[4352], file[4096];
    int relative;
    unsigned long long addr;
    while (fgets(line, sizeof line, f) && entries < MAX_ENTRIES) {
        if (sscanf(line, "%4095[^\t]\t%d\t%llx", file, &relative, &addr) != 3) continue;
        uint64_t base = relative ? file_base(pid, file) : 0;
        if (relative && !base) continue; /* not mapped in this process: never entered */
        entry[entries++] = base + addr;
    }
    fclose(f);
    qsort(entry, entries, sizeof entry[0], cmp_u64);
    return 0;
}

int main(int argc, char **argv) {
    int a = 4, profile = 0;
    const char *hash_list = NULL;
    if (argc > 5 && strcmp(argv[4], "--profile") == 0) {
        profile = 1;
        a = 5;
    } else if (argc > 6 && strcmp(argv[4], "--hash") == 0) {
        hash_list = argv[5];
        a = 6;
    }
    if (argc < a + 2 || strcmp(argv[a], "--") != 0) {
        fprintf(stderr, "usage: stepcount OUT OFFSET PIE [--profile | --hash ENTRIES] -- PROGRAM ARGS...\n");
        return 2;
    }
    if (profile) {
        slot_rip = calloc(SLOTS, sizeof *slot_rip);
        slot_n = calloc(SLOTS, sizeof *slot_n);
        if (!slot_rip || !slot_n) return die("memory for the profile");
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) return die(argv[1]);
    uint64_t offset = strtoull(argv[2], NULL, 16);
    int pie = atoi(argv[3]);
    pid_t pid = fork();
    if (pid < 0) return die("fork");
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(126);
        execv(argv[a + 1], argv + a + 1);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st)) return die("exec");
    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_EXITKILL);
    if (strcmp(argv[2], "-") == 0) { /* no function: a probe that ptrace works here */
        if (ptrace(PTRACE_CONT, pid, NULL, NULL) != 0) return die("continue");
        if (waitpid(pid, &st, 0) < 0) return die("wait");
        fclose(out);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    uint64_t addr = offset + (pie ? load_base(pid) : 0);
    errno = 0;
    long orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
    if (errno) return die("read the function's first instruction");
    long trap = (orig & ~0xffL) | 0xcc;
    if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)trap) != 0) return die("set the breakpoint");
    long deliver = 0; /* a signal the program got outside the counted function: passed on at the next continue */
    for (;;) {
        if (ptrace(PTRACE_CONT, pid, NULL, (void *)deliver) != 0) return die("continue");
        deliver = 0;
        if (waitpid(pid, &st, 0) < 0) return die("wait");
        if (WIFEXITED(st)) {
            fclose(out);
            return WEXITSTATUS(st);
        }
        if (WIFSIGNALED(st)) {
            fclose(out);
            fprintf(stderr, "stepcount: the program died of signal %d\n", WTERMSIG(st));
            return 128 + WTERMSIG(st);
        }
        struct user_regs_struct r;
        ptrace(PTRACE_GETREGS, pid, NULL, &r);
        if (WSTOPSIG(st) != SIGTRAP || r.rip != addr + 1) {
            deliver = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st); /* not our breakpoint: the program's signal */
            continue;
        }
        ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)orig);
        r.rip = addr;
        ptrace(PTRACE_SETREGS, pid, NULL, &r);
        uint64_t sp = r.rsp;
        errno = 0;
        uint64_t ret = (uint64_t)ptrace(PTRACE_PEEKDATA, pid, (void *)sp, NULL);
        if (errno) return die("read the return address");
        if (hash_list && !entries_loaded++ && load_entries(pid, hash_list) != 0) return die(hash_list);
        uint64_t count = 0, hashed = 0, hash_sp = 0, hash_ret = 0;
        int inside = 0;
        for (;;) {
            if (entries && !inside && is_entry(r.rip)) { /* entered from code outside them: until it returns */
                inside = 1;
                hash_sp = r.rsp;
                errno = 0;
                hash_ret = (uint64_t)ptrace(PTRACE_PEEKDATA, pid, (void *)r.rsp, NULL);
                if (errno) return die("read a hash function's return address");
            }
            hashed += inside;
            uint64_t at = r.rip;
            int rep = rep_kind(pid, at);
            if (profile && bump(r.rip) != 0) {
                fprintf(stderr, "stepcount: more than %u distinct instruction addresses in one call\n", SLOTS / 2);
                return 3;
            }
            if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0) return die("single-step");
            if (waitpid(pid, &st, 0) < 0) return die("wait");
            if (!WIFSTOPPED(st)) {
                fprintf(stderr, "stepcount: the program ended inside the counted function\n");
                return 3;
            }
            if (WSTOPSIG(st) != SIGTRAP) {
                fprintf(stderr, "stepcount: signal %d arrived inside the counted function after %llu instructions\n",
                        WSTOPSIG(st), (unsigned long long)count);
                return 3;
            }
            count++;
            uint64_t rcx_before = r.rcx;
            ptrace(PTRACE_GETREGS, pid, NULL, &r);
            /* the last iteration of a rep string instruction that ran out of its count: valgrind's extra pass */
            if (rep && rcx_before != 0 && r.rcx == 0 && r.rip != at &&
                (rep == 1 || (rep == 2 && (r.eflags & 0x40)) || (rep == 3 && !(r.eflags & 0x40)))) {
                count++;
                hashed += inside;
                if (profile) bump(at);
            }
            if (inside && r.rip == hash_ret && r.rsp == hash_sp + 8) inside = 0;
            if (r.rip == ret && r.rsp == sp + 8) break;
        }
        if (hash_list) {
            fprintf(out, "%llu %llu\n", (unsigned long long)count, (unsigned long long)hashed);
        } else if (profile) {
            fprintf(out, "# %llu\n", (unsigned long long)count);
            dump_profile(pid, out);
        } else {
            fprintf(out, "%llu\n", (unsigned long long)count);
        }
        fflush(out);
        if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)trap) != 0) return die("set the breakpoint again");
    }
}
