#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "timer.h"

#ifdef __linux__
#include <linux/perf_event.h>
#define PQSIMD_HAVE_PERF 1
#endif

typedef struct {
    const char *name;
    uint32_t type;
    uint64_t config;
} event_def;

#ifdef PQSIMD_HAVE_PERF
#define CACHE(cache, op, result) \
    ((uint64_t)(cache) | ((uint64_t)(op) << 8) | ((uint64_t)(result) << 16))
static const event_def EVENTS[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    /* software events: no PMU needed, so the counting path runs (and is tested) in any VM */
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"l1d-loads", PERF_TYPE_HW_CACHE,
     CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS)},
    {"l1d-misses", PERF_TYPE_HW_CACHE,
     CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
};
#else
static const event_def EVENTS[] = {{"cycles", 0, 0}};
#endif

static const char *errno_name(int e) {
    switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EBUSY: return "EBUSY";
    case EMFILE: return "EMFILE";
    default: return "E?";
    }
}

void pqsimd_counters_close(pqsimd_counters *c) {
    for (int i = 0; i < c->n; i++) {
        close(c->fds[i]);
    }
    c->n = 0;
}

int pqsimd_counters_open(pqsimd_counters *c, const char *list) {
    memset(c, 0, sizeof *c);
    snprintf(c->requested, sizeof c->requested, "%s", list);
    /* Names first: a typo is a usage error whether or not the kernel has a PMU. */
    const event_def *evs[PQSIMD_MAX_COUNTERS];
    int m = 0;
    char *copy = strdup(list);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        const event_def *ev = NULL;
        for (size_t i = 0; i < sizeof EVENTS / sizeof EVENTS[0]; i++) {
            if (strcmp(EVENTS[i].name, tok) == 0) {
                ev = &EVENTS[i];
            }
        }
        if (!ev || m == PQSIMD_MAX_COUNTERS) {
            c->failed = ev ? "too many events" : "unknown event";
            free(copy);
            return -1;
        }
        evs[m++] = ev;
    }
    free(copy);
    int rc = 0;
    for (int j = 0; j < m && rc == 0; j++) {
        const event_def *ev = evs[j];
#ifdef PQSIMD_HAVE_PERF
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = ev->type;
        attr.config = ev->config;
        attr.disabled = c->n == 0; /* the leader starts disabled; members follow it */
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, c->n ? c->fds[0] : -1, 0);
        if (fd < 0) {
            c->err = errno;
            c->failed = ev->name;
            rc = c->err;
            break;
        }
        c->fds[c->n] = fd;
        c->names[c->n] = ev->name;
        c->n++;
#else
        c->err = ENOSYS;
        c->failed = ev->name;
        rc = ENOSYS;
#endif
    }
    if (rc != 0) {
        pqsimd_counters_close(c); /* all or nothing: a partial group would skew ratios */
    }
    return rc;
}

void pqsimd_counters_start(const pqsimd_counters *c) {
#ifdef PQSIMD_HAVE_PERF
    ioctl(c->fds[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ioctl(c->fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
#else
    (void)c;
#endif
}

int pqsimd_counters_stop(const pqsimd_counters *c, uint64_t *values) {
#ifdef PQSIMD_HAVE_PERF
    ioctl(c->fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    uint64_t buf[3 + PQSIMD_MAX_COUNTERS];
    ssize_t want = (ssize_t)sizeof(uint64_t) * (3 + c->n);
    if (read(c->fds[0], buf, sizeof buf) < want || buf[0] != (uint64_t)c->n) {
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        values[i] = buf[3 + i];
    }
    /* time_enabled != time_running: the group shared the PMU (multiplexed) or never ran */
    return (buf[2] == 0 || buf[1] != buf[2]) ? -1 : 0;
#else
    (void)c;
    (void)values;
    return -1;
#endif
}

void pqsimd_counters_calibrate(pqsimd_counters *c) {
    enum { N = 101 };
    static uint64_t v[PQSIMD_MAX_COUNTERS][N];
    uint64_t one[PQSIMD_MAX_COUNTERS];
    int ok = 0;
    for (int i = 0; i < N; i++) {
        pqsimd_counters_start(c);
        uint64_t t0 = pqsimd_timer_start(); /* the same fenced reads a sample makes */
        uint64_t t1 = pqsimd_timer_stop();
        (void)t0;
        (void)t1;
        if (pqsimd_counters_stop(c, one) == 0) {
            for (int e = 0; e < c->n; e++) {
                v[e][ok] = one[e];
            }
            ok++;
        }
    }
    for (int e = 0; e < c->n; e++) {
        if (ok) {
            qsort(v[e], (size_t)ok, sizeof(uint64_t), pqsimd_cmp_u64);
        }
        c->overhead[e] = ok ? v[e][ok / 2] : 0;
    }
}

static void json_list(FILE *out, const char *list) {
    char *copy = strdup(list);
    int first = 1;
    fputc('[', out);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        fprintf(out, "%s\"%s\"", first ? "" : ", ", tok);
        first = 0;
    }
    fputc(']', out);
    free(copy);
}

void pqsimd_counters_json(FILE *out, const pqsimd_counters *c) {
    fprintf(out, "{\"requested\": ");
    json_list(out, c->requested);
    if (c->n > 0) {
        fprintf(out, ", \"available\": true, \"scope\": \"user\", \"events\": [");
        for (int i = 0; i < c->n; i++) {
            fprintf(out, "%s\"%s\"", i ? ", " : "", c->names[i]);
        }
        fprintf(out, "], \"overhead\": [");
        for (int i = 0; i < c->n; i++) {
            fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)c->overhead[i]);
        }
        fprintf(out, "]}");
    } else {
        fprintf(out,
                ", \"available\": false, \"events\": [], \"errno\": %d, \"error\": \"%s\", "
                "\"strerror\": \"%s\", \"failed_event\": \"%s\"}",
                c->err, errno_name(c->err), strerror(c->err), c->failed ? c->failed : "");
    }
}

void pqsimd_counters_tsv(FILE *out, const pqsimd_counters *c, const uint64_t *values, int valid) {
    for (int i = 0; i < c->n; i++) {
        if (valid) {
            fprintf(out, "\t%llu", (unsigned long long)values[i]);
        } else {
            fputs("\tNA", out);
        }
    }
}

/* 100 dependent register-register adds per iteration (PQSIMD_ADD_CHAIN_100, per ISA in
 * timer_<isa>.h): the chain's latency is one core cycle per add; the loop's own counter runs
 * beside it. */
static uint64_t add_chain_ticks(uint64_t iters, uint64_t *sink) {
    uint64_t x = *sink, y = (uint64_t)(uintptr_t)sink | 1;
    uint64_t t0 = pqsimd_timer_start();
    for (uint64_t i = 0; i < iters; i++) {
        PQSIMD_ADD_CHAIN_100(x, y);
    }
    uint64_t t1 = pqsimd_timer_stop();
    *sink = x;
    return t1 - t0;
}

void pqsimd_core_per_tsc(double *median, double *best) {
    enum { TRIALS = 21, ITERS = 20000 }; /* 2e6 core cycles per trial */
    uint64_t t[TRIALS], sink = 0;
    add_chain_ticks(ITERS, &sink); /* let the clock ramp */
    for (int i = 0; i < TRIALS; i++) {
        t[i] = add_chain_ticks(ITERS, &sink);
    }
    qsort(t, TRIALS, sizeof t[0], pqsimd_cmp_u64);
    double cycles = 100.0 * ITERS;
    *median = cycles / (double)t[TRIALS / 2];
    *best = cycles / (double)t[0];
}
