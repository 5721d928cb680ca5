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
 * stepcount's. Nothing here depends on what the stepped code is. */
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

int main(int argc, char **argv) {
    if (argc < 6 || strcmp(argv[4], "--") != 0) {
        fprintf(stderr, "usage: stepcount OUT OFFSET PIE -- PROGRAM ARGS...\n");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) return die(argv[1]);
    uint64_t offset = strtoull(argv[2], NULL, 16);
    int pie = atoi(argv[3]);
    pid_t pid = fork();
    if (pid < 0) return die("fork");
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(126);
        execv(argv[5], argv + 5);
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
    uint64_t addr = offset + (pie ? load_base(pid, argv[5]) : 0);
    errno = 0;
    long orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
    if (errno) return die("read the function's first instruction");
    long trap = (orig & ~0xffL) | 0xcc;
    if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)trap) != 0) return die("set the breakpoint");
    for (;;) {
        if (ptrace(PTRACE_CONT, pid, NULL, NULL) != 0) return die("continue");
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
            /* not our breakpoint: give the program its signal */
            ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(st));
            if (waitpid(pid, &st, 0) < 0) return die("wait");
            if (WIFEXITED(st)) return WEXITSTATUS(st);
            if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
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
        fprintf(out, "%llu\n", (unsigned long long)count);
        fflush(out);
        if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)trap) != 0) return die("set the breakpoint again");
    }
}
