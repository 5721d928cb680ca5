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
 * prefixed string instruction traps once per iteration, as valgrind counts it. A signal that arrives
 * while stepping is an error (its handler would be counted): exit 3. PROGRAM's exit status is
 * stepcount's. Nothing here depends on what the stepped code is.
 * --profile: each call's line is "# COUNT", followed by one line per executed instruction address,
 * "FILE<TAB>ADDRESS<TAB>EXECUTIONS" (ADDRESS in hex, relative to FILE's offset-0 mapping: objdump's address). */
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

/* The program's load address: the start of its first mapping (offset 0) in /proc/PID/maps. */
static uint64_t load_base(pid_t pid, const char *program) {
    char path[64], line[4096], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    (void)program;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    uint64_t base = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, off;
        char name[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %4095s", &lo, &off, name) >= 2 && off == 0 && strcmp(name, exe) == 0) {
            base = lo;
            break;
        }
    }
    fclose(f);
    return base;
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

int main(int argc, char **argv) {
    int a = 4, profile = 0;
    if (argc > 5 && strcmp(argv[4], "--profile") == 0) {
        profile = 1;
        a = 5;
    }
    if (argc < a + 2 || strcmp(argv[a], "--") != 0) {
        fprintf(stderr, "usage: stepcount OUT OFFSET PIE [--profile] -- PROGRAM ARGS...\n");
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
    uint64_t addr = offset + (pie ? load_base(pid, argv[a + 1]) : 0);
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
        uint64_t count = 0;
        for (;;) {
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
            ptrace(PTRACE_GETREGS, pid, NULL, &r);
            if (r.rip == ret && r.rsp == sp + 8) break;
        }
        if (profile) {
            fprintf(out, "# %llu\n", (unsigned long long)count);
            dump_profile(pid, out);
        } else {
            fprintf(out, "%llu\n", (unsigned long long)count);
        }
        fflush(out);
        if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)trap) != 0) return die("set the breakpoint again");
    }
}
