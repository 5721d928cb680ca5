/* driver sitetrace LIB SCHEME OP VARIATION SITE... -- SECRET...: what each site of the constant-time test
 * does in one native call, for the confirmation of run/ct.py. A site is an instruction of LIB (its decimal
 * offset) and what to record at each of its executions:
 *
 *   b:OFFSET:LENGTH                   a branch of LENGTH bytes: the instruction that runs next (its offset
 *                                     from LIB's base; taken when it is not the fall-through)
 *   a:OFFSET:BASE:INDEX:SCALE:DISP    a memory access: its address, BASE + INDEX*SCALE + DISP (register
 *                                     names as objdump prints them without the %, or "-"; DISP decimal)
 *   d:OFFSET                          an integer division: its dividend, rdx:rax (KyberSlash: a division
 *                                     whose dividend is secret takes a time that depends on it)
 *
 * Natively and exactly: the driver forks; the child re-executes the driver as `ct` with address-space
 * randomization off (so that two runs' addresses compare) and stops (SIGSTOP) just before the call and
 * again just after it; the parent, its tracer, puts a breakpoint (int3) on each site for the call's
 * duration. At each hit it records the value, steps the original instruction and puts the breakpoint back.
 * Far faster than an instrumenting tracer: the call runs at native speed between hits.
 *
 * Output: the child's own lines (filled, drawn, ...) as they are, then per site
 *   site OFFSET EXECUTIONS TAKEN DIGEST CUT
 * TAKEN: executions whose next instruction was not the fall-through (branches); DIGEST: FNV-1a over the
 * recorded values in order (hex); CUT: 1 if the site ran more than MAX_SITE_HITS times (its breakpoint was
 * then removed: the digest covers the first MAX_SITE_HITS executions). "aslr 1" if randomization stayed on
 * (addresses then do not compare between runs). x86-64 only. */
#define _GNU_SOURCE
#include "ct.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#define MAX_SITES 8192
#define MAX_SITE_HITS 200000L /* a site in a hot loop: its first executions decide, said as CUT */

typedef struct {
    char kind; /* b, a, d */
    unsigned long long offset;
    uintptr_t at;
    unsigned char byte; /* the original first byte at `at` */
    int on;
    int base, index; /* register slots (-1: none) */
    long long scale, disp;
    int length; /* of a branch: its fall-through is at + length */
    int base32, index32;
    long executions, taken;
    uint64_t digest;
    int cut;
} site;

static const struct {
    const char *name64, *name32;
    size_t slot;
} registers[] = {
    {"rax", "eax", offsetof(struct user_regs_struct, rax)}, {"rbx", "ebx", offsetof(struct user_regs_struct, rbx)},
    {"rcx", "ecx", offsetof(struct user_regs_struct, rcx)}, {"rdx", "edx", offsetof(struct user_regs_struct, rdx)},
    {"rsi", "esi", offsetof(struct user_regs_struct, rsi)}, {"rdi", "edi", offsetof(struct user_regs_struct, rdi)},
    {"rbp", "ebp", offsetof(struct user_regs_struct, rbp)}, {"rsp", "esp", offsetof(struct user_regs_struct, rsp)},
    {"r8", "r8d", offsetof(struct user_regs_struct, r8)},   {"r9", "r9d", offsetof(struct user_regs_struct, r9)},
    {"r10", "r10d", offsetof(struct user_regs_struct, r10)}, {"r11", "r11d", offsetof(struct user_regs_struct, r11)},
    {"r12", "r12d", offsetof(struct user_regs_struct, r12)}, {"r13", "r13d", offsetof(struct user_regs_struct, r13)},
    {"r14", "r14d", offsetof(struct user_regs_struct, r14)}, {"r15", "r15d", offsetof(struct user_regs_struct, r15)},
};

/* the slot of a register name (-1: "-"), *wide 0 for a 32-bit name; -2: unknown */
static int register_slot(const char *name, int *narrow) {
    *narrow = 0;
    if (strcmp(name, "-") == 0) {
        return -1;
    }
    for (size_t k = 0; k < sizeof registers / sizeof registers[0]; k++) {
        if (strcmp(name, registers[k].name64) == 0) {
            return (int)registers[k].slot;
        }
        if (strcmp(name, registers[k].name32) == 0) {
            *narrow = 1;
            return (int)registers[k].slot;
        }
    }
    return -2;
}

static uint64_t reg(const struct user_regs_struct *regs, int slot, int narrow) {
    if (slot < 0) {
        return 0;
    }
    uint64_t v;
    memcpy(&v, (const char *)regs + slot, sizeof v);
    return narrow ? (uint32_t)v : v;
}

static void fnv(uint64_t *h, uint64_t v) {
    for (int k = 0; k < 8; k++) {
        *h ^= (v >> (8 * k)) & 0xff;
        *h *= 0x100000001b3ULL;
    }
}

/* one byte at `at`, written through its aligned word (neighbouring breakpoints stay as they are) */
static int poke_byte(pid_t pid, uintptr_t at, unsigned char value, unsigned char *old) {
    errno = 0;
    long word = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
    if (errno) {
        return -1;
    }
    if (old) {
        *old = (unsigned char)(word & 0xff);
    }
    word = (word & ~0xffL) | value;
    return (int)ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)word);
}

static int parse_site(const char *text, site *s) {
    char kind;
    char base[16] = "-", index[16] = "-";
    memset(s, 0, sizeof *s);
    s->digest = 0xcbf29ce484222325ULL;
    s->base = s->index = -1;
    if (sscanf(text, "%c:%llu", &kind, &s->offset) != 2 || (kind != 'b' && kind != 'a' && kind != 'd')) {
        return -1;
    }
    s->kind = kind;
    if (kind == 'b' && (sscanf(text, "b:%llu:%d", &s->offset, &s->length) != 2 || s->length < 1)) {
        return -1;
    }
    if (kind == 'a') {
        if (sscanf(text, "a:%llu:%15[^:]:%15[^:]:%lld:%lld", &s->offset, base, index, &s->scale, &s->disp) != 5) {
            return -1;
        }
        s->base = register_slot(base, &s->base32);
        s->index = register_slot(index, &s->index32);
        if (s->base == -2 || s->index == -2) {
            return -1;
        }
    }
    return 0;
}

static int by_address(const void *a, const void *b) {
    uintptr_t x = ((const site *)a)->at, y = ((const site *)b)->at;
    return x < y ? -1 : x > y;
}

static site *find(site *sites, int n, uintptr_t at) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (sites[mid].at == at) {
            return &sites[mid];
        }
        if (sites[mid].at < at) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return NULL;
}

/* wait for the child's next stop; 0 on a stop, -1 when it ended */
static int next_stop(pid_t pid, int *status) {
    return waitpid(pid, status, 0) < 0 || WIFEXITED(*status) || WIFSIGNALED(*status) ? -1 : 0;
}

int pqsimd_cmd_sitetrace(int argc, char **argv) {
    int dashes = 0;
    for (int k = 6; k < argc; k++) {
        if (strcmp(argv[k], "--") == 0) {
            dashes = k;
            break;
        }
    }
    if (argc < 7 || !dashes) {
        fprintf(stderr, "driver: sitetrace: usage: sitetrace LIB SCHEME OP VARIATION SITE... -- SECRET...\n");
        return 2;
    }
    int n = dashes - 6;
    if (n > MAX_SITES) {
        fprintf(stderr, "driver: sitetrace: more than %d sites\n", MAX_SITES);
        return 2;
    }
    site *sites = calloc((size_t)n + 1, sizeof *sites);
    for (int k = 0; k < n; k++) {
        if (parse_site(argv[6 + k], &sites[k])) {
            fprintf(stderr, "driver: sitetrace: cannot read site '%s'\n", argv[6 + k]);
            return 2;
        }
    }
    int fds[2];
    if (pipe(fds)) {
        return 2;
    }
    int aslr = personality(0xffffffff);
    aslr = aslr == -1 || personality((unsigned long)aslr | ADDR_NO_RANDOMIZE) == -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { /* the traced child: the driver again, as `ct`, stopping before and after the call */
        close(fds[0]);
        dup2(fds[1], 1);
        char **args = calloc((size_t)argc + 1, sizeof *args);
        int m = 0;
        for (int k = 0; k < 6; k++) {
            args[m++] = argv[k];
        }
        args[1] = "ct";
        for (int k = dashes + 1; k < argc; k++) {
            args[m++] = argv[k];
        }
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        setenv("PQSIMD_CT_STOP", "1", 1);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fds[1]);
    FILE *child_out = fdopen(fds[0], "r");
    int status;
    unsigned long long base = 0;
    char line[256];
    /* until the stop before the call (the exec's SIGTRAP on the way): its base address is on the pipe */
    for (;;) {
        if (next_stop(pid, &status)) {
            fprintf(stderr, "driver: sitetrace: the op's process ended before its call\n");
            return 2;
        }
        if (WSTOPSIG(status) == SIGSTOP) {
            break;
        }
        ptrace(PTRACE_CONT, pid, NULL, (void *)(long)(WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status)));
    }
    while (fgets(line, sizeof line, child_out)) {
        fputs(line, stdout);
        if (sscanf(line, "base\t%llx", &base) == 1) {
            break;
        }
    }
    for (int k = 0; k < n; k++) {
        sites[k].at = (uintptr_t)(base + sites[k].offset);
    }
    qsort(sites, (size_t)n, sizeof *sites, by_address);
    for (int k = 0; k < n; k++) {
        if (k && sites[k].at == sites[k - 1].at) {
            fprintf(stderr, "driver: sitetrace: offset %llu named twice\n", sites[k].offset);
            kill(pid, SIGKILL);
            return 2;
        }
        if (poke_byte(pid, sites[k].at, 0xcc, &sites[k].byte)) {
            fprintf(stderr, "driver: sitetrace: cannot set a breakpoint at offset %llu\n", sites[k].offset);
            kill(pid, SIGKILL);
            return 2;
        }
        sites[k].on = 1;
    }
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    while (!next_stop(pid, &status)) {
        int sig = WSTOPSIG(status);
        if (sig == SIGSTOP) { /* the call has returned: every breakpoint off, the child runs to its end */
            for (int k = 0; k < n; k++) {
                if (sites[k].on) {
                    poke_byte(pid, sites[k].at, sites[k].byte, NULL);
                    sites[k].on = 0;
                }
            }
            ptrace(PTRACE_CONT, pid, NULL, NULL);
            continue;
        }
        if (sig != SIGTRAP) {
            ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
            continue;
        }
        struct user_regs_struct regs;
        ptrace(PTRACE_GETREGS, pid, NULL, &regs);
        site *s = find(sites, n, (uintptr_t)regs.rip - 1);
        if (!s || !s->on) { /* not ours */
            ptrace(PTRACE_CONT, pid, NULL, NULL);
            continue;
        }
        s->executions++;
        if (s->kind == 'a') {
            fnv(&s->digest, reg(&regs, s->base, s->base32) + reg(&regs, s->index, s->index32) * (uint64_t)s->scale +
                                (uint64_t)s->disp);
        } else if (s->kind == 'd') {
            fnv(&s->digest, regs.rdx);
            fnv(&s->digest, regs.rax);
        }
        /* the original instruction, one step, the breakpoint back */
        poke_byte(pid, s->at, s->byte, NULL);
        regs.rip -= 1;
        ptrace(PTRACE_SETREGS, pid, NULL, &regs);
        ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL);
        if (next_stop(pid, &status)) {
            break;
        }
        if (s->kind == 'b') {
            struct user_regs_struct after;
            ptrace(PTRACE_GETREGS, pid, NULL, &after);
            uint64_t next = (uint64_t)after.rip - base;
            fnv(&s->digest, next);
            s->taken += after.rip != s->at + (uintptr_t)s->length;
        }
        if (s->executions >= MAX_SITE_HITS) {
            s->cut = 1;
            s->on = 0;
        } else {
            poke_byte(pid, s->at, 0xcc, NULL);
        }
        ptrace(PTRACE_CONT, pid, NULL, NULL);
    }
    while (fgets(line, sizeof line, child_out)) {
        fputs(line, stdout); /* the child's lines after the call: drawn, dry */
    }
    if (aslr) {
        printf("aslr\t1\n");
    }
    for (int k = 0; k < n; k++) {
        printf("site\t%llu\t%ld\t%ld\t%016llx\t%d\n", sites[k].offset, sites[k].executions, sites[k].taken,
               (unsigned long long)sites[k].digest, sites[k].cut);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
#else
int pqsimd_cmd_sitetrace(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "driver: sitetrace: x86-64 only\n");
    return 2;
}
#endif
