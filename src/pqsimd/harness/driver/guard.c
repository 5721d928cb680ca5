#define _GNU_SOURCE
#include "guard.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t where_variant = -1;
static const char *volatile where_path = "";
static const char *volatile where_op = "(start)";
static uintptr_t volatile guard_lo, guard_hi; /* a guard page whose fault has a name of its own */
static const char *volatile guard_note = "";

void pqsimd_guard_page(const void *lo, size_t bytes, const char *note) {
    guard_note = note ? note : "";
    guard_lo = (uintptr_t)lo;
    guard_hi = (uintptr_t)lo + bytes;
}

void pqsimd_guard_at(int variant, const char *path, const char *op) {
    where_path = path ? path : "";
    where_op = op ? op : "";
    where_variant = variant;
}

static size_t put(char *buf, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) {
        buf[at++] = *s++;
    }
    return at;
}

static const char *name_of(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a signal";
    }
}

static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    char buf[4096], num[16];
    size_t n = 0;
    int v = where_variant, k = 0;
    n = put(buf, n, sizeof buf, sig == SIGTERM || sig == SIGINT ? "\ndriver: stopped: " : "\ndriver: crashed: ");
    n = put(buf, n, sizeof buf, name_of(sig));
    if (v >= 0) {
        char rev[16];
        do {
            rev[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && k < 15);
        for (int i = 0; i < k; i++) {
            num[i] = rev[k - 1 - i];
        }
        num[k] = '\0';
        n = put(buf, n, sizeof buf, " in variant ");
        n = put(buf, n, sizeof buf, num);
        n = put(buf, n, sizeof buf, " (");
        n = put(buf, n, sizeof buf, where_path);
        n = put(buf, n, sizeof buf, ")");
    }
    n = put(buf, n, sizeof buf, " op ");
    n = put(buf, n, sizeof buf, where_op);
    uintptr_t at = info && (sig == SIGSEGV || sig == SIGBUS) ? (uintptr_t)info->si_addr : 0;
    if (at && at >= guard_lo && at < guard_hi) {
        n = put(buf, n, sizeof buf, guard_note);
    }
    buf[n++] = '\n';
    ssize_t ignored = write(2, buf, n);
    (void)ignored;
    raise(sig); /* SA_RESETHAND: the default action now, once this handler returns */
}

void pqsimd_guard_install(void) {
    /* a stack overflow in an op still gets its line: the handler runs on its own stack */
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        sigaction(signals[i], &sa, NULL);
    }
}
