/* driver divtrace LIB SCHEME OP VARIATION OFFSET... -- SECRET...: the dividend of every integer division
 * the op executes, natively, for the constant-time test's variable-latency sites (KyberSlash: a division
 * whose dividend is secret takes a time that depends on it). memcheck sees no branch there, and a trace of
 * addresses sees nothing either; the operands do. OFFSETs (decimal, in LIB) are the div and idiv
 * instructions of LIB (run/ct.py finds them with objdump).
 *
 * The driver forks: the child runs `ct`'s preparation natively and stops (SIGSTOP) just before the call;
 * the parent, its tracer, puts a breakpoint (int3) on each OFFSET, lets the call run and, at each hit,
 * prints "OFFSET rdx rax" (hex; the dividend is rdx:rax for a 64-bit div, edx:eax for a 32-bit one),
 * steps the original instruction and puts the breakpoint back. x86-64 only. */
#define _GNU_SOURCE
#include "ct.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#define MAX_BREAKS 4096
#define MAX_HITS 1000000 /* a call that divides more often than this is cut short, said on stderr */

typedef struct {
    uintptr_t at;
    long word; /* the original 8 bytes at `at` */
    unsigned long long offset;
} breakpoint;

static int put(pid_t pid, breakpoint *b) {
    errno = 0;
    b->word = ptrace(PTRACE_PEEKTEXT, pid, (void *)b->at, NULL);
    if (errno) {
        return -1;
    }
    long trapped = (b->word & ~0xffL) | 0xcc;
    return (int)ptrace(PTRACE_POKETEXT, pid, (void *)b->at, (void *)trapped);
}

int pqsimd_cmd_divtrace(int argc, char **argv) {
    int dashes = 0;
    for (int k = 6; k < argc; k++) {
        if (strcmp(argv[k], "--") == 0) {
            dashes = k;
            break;
        }
    }
    if (argc < 7 || !dashes) {
        fprintf(stderr, "driver: divtrace: usage: divtrace LIB SCHEME OP VARIATION OFFSET... -- SECRET...\n");
        return 2;
    }
    int n = dashes - 6;
    if (n > MAX_BREAKS) {
        fprintf(stderr, "driver: divtrace: more than %d divisions\n", MAX_BREAKS);
        return 2;
    }
    int fds[2];
    if (pipe(fds)) {
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) { /* the traced child: ct's preparation, a stop, the call */
        close(fds[0]);
        dup2(fds[1], 1);
        char **args = calloc((size_t)argc, sizeof *args);
        int m = 0;
        for (int k = 0; k < 6; k++) {
            args[m++] = argv[k];
        }
        for (int k = dashes + 1; k < argc; k++) {
            args[m++] = argv[k];
        }
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        setenv("PQSIMD_CT_STOP", "1", 1);
        _exit(pqsimd_cmd_ct(m, args));
    }
    close(fds[1]);
    FILE *child_out = fdopen(fds[0], "r");
    int status;
    unsigned long long base = 0;
    char line[256];
    /* until the stop before the call: its base address is on the pipe by then */
    for (;;) {
        if (waitpid(pid, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
            fprintf(stderr, "driver: divtrace: the op's process ended before its call\n");
            return 2;
        }
        if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP) {
            break;
        }
        ptrace(PTRACE_CONT, pid, NULL, (void *)(long)(WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status)));
    }
    while (fgets(line, sizeof line, child_out)) {
        if (sscanf(line, "base\t%llx", &base) == 1) {
            break;
        }
    }
    breakpoint *bp = calloc((size_t)n + 1, sizeof *bp);
    for (int k = 0; k < n; k++) {
        bp[k].offset = strtoull(argv[6 + k], NULL, 10);
        bp[k].at = (uintptr_t)(base + bp[k].offset);
        if (put(pid, &bp[k])) {
            fprintf(stderr, "driver: divtrace: cannot set a breakpoint at offset %llu\n", bp[k].offset);
            kill(pid, SIGKILL);
            return 2;
        }
    }
    long hits = 0;
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    for (;;) {
        if (waitpid(pid, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
            break;
        }
        int sig = WSTOPSIG(status);
        if (sig != SIGTRAP) {
            ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
            continue;
        }
        struct user_regs_struct regs;
        ptrace(PTRACE_GETREGS, pid, NULL, &regs);
        breakpoint *b = NULL;
        for (int k = 0; k < n && !b; k++) {
            if (bp[k].at == regs.rip - 1) {
                b = &bp[k];
            }
        }
        if (!b) { /* not ours */
            ptrace(PTRACE_CONT, pid, NULL, NULL);
            continue;
        }
        if (++hits <= MAX_HITS) {
            printf("%llu\t%llx\t%llx\n", b->offset, (unsigned long long)regs.rdx, (unsigned long long)regs.rax);
        }
        /* the original instruction, one step, the breakpoint back */
        ptrace(PTRACE_POKETEXT, pid, (void *)b->at, (void *)b->word);
        regs.rip -= 1;
        ptrace(PTRACE_SETREGS, pid, NULL, &regs);
        ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL);
        if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
            break;
        }
        put(pid, b);
        ptrace(PTRACE_CONT, pid, NULL, NULL);
    }
    if (hits > MAX_HITS) {
        fprintf(stderr, "driver: divtrace: %ld divisions, the first %d printed\n", hits, MAX_HITS);
    }
    while (fgets(line, sizeof line, child_out)) {
        /* the rest of the child's lines (drawn, filled) are not the tracer's */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
#else
int pqsimd_cmd_divtrace(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "driver: divtrace: x86-64 only\n");
    return 2;
}
#endif
