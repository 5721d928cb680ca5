/* aarch64: choosing the counter (see timer_aarch64.h). Compiled on every ISA, empty elsewhere. */
#define _GNU_SOURCE
#include "timer.h"

#if defined(__aarch64__)
#include <errno.h>
#include "counter_probe.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int pqsimd_a64_timer = PQSIMD_A64_CNTVCT;
volatile struct perf_event_mmap_page *pqsimd_a64_perf_page;
static int perf_fd = -1;
static int initialised;
static char not_used[512]; /* why each better counter is not read */

/* config1 bit 0 ("long"): a 64-bit counter; bit 1 ("rdpmc"): user access (arm64 PMUv3 format) */
#define ARM_PMU_CONFIG1_LONG 1u
#define ARM_PMU_CONFIG1_RDPMC 2u
#define ARM_PMU_USER_INDEX_CYCLES 32 /* mmap page index of the cycle counter (counter 31, + 1) */

static void note(const char *counter, const char *why) {
    size_t used = strlen(not_used);
    snprintf(not_used + used, sizeof not_used - used, "%s%s: %s", used ? "; " : "", counter, why);
}

static void note_errno(const char *counter, const char *call, int err) {
    char why[128];
    snprintf(why, sizeof why, "%s %s", call, err == ENOSYS ? "ENOSYS" : err == ENOENT ? "ENOENT" : err == EACCES ? "EACCES"
                                            : err == EPERM ? "EPERM" : err == EOPNOTSUPP ? "EOPNOTSUPP" : strerror(err));
    note(counter, why);
}

/* the counter read twice around some work, SIGILL caught (counter_probe.h): 1 counting, 0 SIGILL, -1 not counting */
static int probe_pmccntr(void) {
    return pqsimd_probe_counter(pqsimd_a64_pmccntr);
}

static int open_cycles(int user_access) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.config1 = ARM_PMU_CONFIG1_LONG | (user_access ? ARM_PMU_CONFIG1_RDPMC : 0);
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

static int try_pmccntr_user(void) {
    int fd = open_cycles(1);
    if (fd < 0) {
        note_errno("pmccntr", "perf_event_open", errno);
        return 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        note_errno("pmccntr", "mmap of the perf event", errno);
        close(fd);
        return 0;
    }
    volatile struct perf_event_mmap_page *pc = p;
    const char *why = !pc->cap_user_rdpmc ? "no user access (sysctl kernel.perf_user_access=1)"
                      : pc->index != ARM_PMU_USER_INDEX_CYCLES ? "the cycles event is not on the cycle counter"
                      : NULL;
    if (!why) {
        int r = probe_pmccntr();
        why = r == 0 ? "mrs pmccntr_el0 raised SIGILL" : r < 0 ? "pmccntr_el0 does not count" : NULL;
    }
    if (why) {
        note("pmccntr", why);
        munmap(p, (size_t)page);
        close(fd);
        return 0;
    }
    pqsimd_a64_perf_page = pc;
    perf_fd = fd;
    pqsimd_a64_timer = PQSIMD_A64_PMCCNTR;
    return 1;
}

static int try_pmccntr_direct(void) {
    int r = probe_pmccntr();
    if (r <= 0) {
        note("pmccntr-direct", r == 0 ? "mrs pmccntr_el0 raised SIGILL" : "pmccntr_el0 does not count");
        return 0;
    }
    pqsimd_a64_timer = PQSIMD_A64_PMCCNTR_DIRECT;
    return 1;
}

static int try_perf_read(void) {
    int fd = open_cycles(0);
    uint64_t a, b;
    if (fd < 0) {
        note_errno("perf-read", "perf_event_open", errno);
        return 0;
    }
    if (read(fd, &a, sizeof a) != sizeof a || read(fd, &b, sizeof b) != sizeof b || b == a) {
        note("perf-read", "the cycles event does not count");
        close(fd);
        return 0;
    }
    perf_fd = fd;
    pqsimd_a64_timer = PQSIMD_A64_PERF_READ;
    return 1;
}

uint64_t pqsimd_a64_perf_read(void) {
    uint64_t v = 0;
    if (read(perf_fd, &v, sizeof v) != sizeof v) {
        return 0;
    }
    return v;
}

void pqsimd_timer_init(void) {
    if (initialised) {
        return;
    }
    initialised = 1;
    const char *want = getenv("PQSIMD_TIMER");
    if (!want || !*want || strcmp(want, "auto") == 0) {
        if (try_pmccntr_user() || try_perf_read()) {
            return;
        }
    } else if (strcmp(want, "pmccntr") == 0) {
        try_pmccntr_user();
    } else if (strcmp(want, "pmccntr-direct") == 0) {
        try_pmccntr_direct();
    } else if (strcmp(want, "perf-read") == 0) {
        try_perf_read();
    } else if (strcmp(want, "cntvct") != 0) {
        note("PQSIMD_TIMER", "unknown counter (auto, pmccntr, pmccntr-direct, perf-read, cntvct)");
    }
}

const char *pqsimd_timer_name(void) {
    static const char *names[] = {"cntvct", "pmccntr", "pmccntr-direct", "perf-read"};
    return names[pqsimd_a64_timer];
}

void pqsimd_timer_json(FILE *out) {
    uint64_t hz = 0;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
    fprintf(out, "{\"name\": \"%s\", \"cntfrq_hz\": %llu, \"not_used\": \"%s\"}", pqsimd_timer_name(),
            (unsigned long long)hz, not_used);
}
#else
typedef int pqsimd_timer_aarch64_unused; /* ISO C: a translation unit declares something */
#endif
