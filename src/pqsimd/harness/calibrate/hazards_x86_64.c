/* What each hazard of the hazards metric (harness/qemu/hazards.c) costs on this CPU, measured: two
 * loops of the same instructions, one with the hazard on every iteration and one without; the
 * difference per event in TSC ticks, the median of 31 runs of 100,000 iterations each.
 *
 *   hazards_x86_64                        one JSON line: {"SFfail": {"clean": t, "hazard": t, "per_event": t}, ...}
 *   hazards_x86_64 trace EVENT K clean|hazard   K iterations of one loop between the count markers,
 *                                         so the plugin's counts can be checked against the construction
 *
 * Events per iteration (what the plugin must count for the hazard loop, and 0 for the clean one):
 * SFfail 1 (a 4-byte store, then an 8-byte load of it), Alias4K 2 (loads 4096 bytes above two
 * independent stores), SplitLd 4 (16-byte loads at 56 mod 64), SplitSt 4 (16-byte stores at 56 mod 64), SSEdirty 4 (legacy-SSE instructions
 * while a ymm register's upper half is dirty), Transitions 1 (a VEX.256 instruction, then a legacy-SSE
 * one). Built with -O2 -mavx2 by run/hazards.py; the AVX events are skipped (null) on a CPU without AVX2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "../driver/count_marker.h"

static _Alignas(4096) unsigned char buf[4 * 4096];
#define N 100000
#define RUNS 31
#define CLOBBER "rax", "rcx", "rdx", "xmm3", "xmm4", "xmm5", "memory"

static uint64_t now(void) {
    unsigned aux;
    _mm_lfence();
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
}

typedef void (*loop_fn)(unsigned char *p, long n);

#define LOOP(name, setup, body)                                        \
    static void name(unsigned char *p, long n) {                       \
        setup;                                                         \
        for (long i = 0; i < n; i++) {                                 \
            __asm__ volatile(body ::"r"(p) : CLOBBER);                 \
        }                                                              \
        __asm__ volatile("vzeroupper");                                \
    }
#define NOTHING ((void)0)

/* a chain through memory: a load, a store of it, a load of that store (forwarded or not) */
LOOP(sf_clean, NOTHING, "movq (%0), %%rax\n\tincq %%rax\n\tmovq %%rax, (%0)\n\tmovq (%0), %%rcx\n\tmovq %%rcx, (%0)")
LOOP(sf_hazard, NOTHING, "movq (%0), %%rax\n\tincq %%rax\n\tmovl %%eax, (%0)\n\tmovq (%0), %%rcx\n\tmovq %%rcx, (%0)")
/* independent stores and loads; the loads' page offsets equal the stores' (4K alias) or not */
LOOP(alias_clean, NOTHING, "movq %%rax, (%0)\n\tmovq 4160(%0), %%rcx\n\tmovq %%rax, 8(%0)\n\tmovq 4168(%0), %%rdx")
LOOP(alias_hazard, NOTHING, "movq %%rax, (%0)\n\tmovq 4096(%0), %%rcx\n\tmovq %%rax, 8(%0)\n\tmovq 4104(%0), %%rdx")
/* 16-byte loads within a line or across one */
LOOP(split_clean, NOTHING, "movdqu 0(%0), %%xmm3\n\tmovdqu 64(%0), %%xmm4\n\tmovdqu 128(%0), %%xmm5\n\tmovdqu 192(%0), %%xmm3")
LOOP(split_hazard, NOTHING, "movdqu 56(%0), %%xmm3\n\tmovdqu 120(%0), %%xmm4\n\tmovdqu 184(%0), %%xmm5\n\tmovdqu 248(%0), %%xmm3")
/* 16-byte stores within a line or across one */
LOOP(split_store_clean, NOTHING, "movdqu %%xmm3, 0(%0)\n\tmovdqu %%xmm4, 64(%0)\n\tmovdqu %%xmm5, 128(%0)\n\tmovdqu %%xmm3, 192(%0)")
LOOP(split_store_hazard, NOTHING, "movdqu %%xmm3, 56(%0)\n\tmovdqu %%xmm4, 120(%0)\n\tmovdqu %%xmm5, 184(%0)\n\tmovdqu %%xmm3, 248(%0)")
/* legacy SSE with the upper halves clean or dirty */
LOOP(sse_clean, __asm__ volatile("vzeroupper"),
     "movq (%0), %%xmm3\n\tpaddq %%xmm3, %%xmm4\n\tmovq 8(%0), %%xmm5\n\tpaddq %%xmm5, %%xmm4")
LOOP(sse_hazard, __asm__ volatile("vpcmpeqd %%ymm5, %%ymm5, %%ymm5" ::: "xmm5"),
     "movq (%0), %%xmm3\n\tpaddq %%xmm3, %%xmm4\n\tmovq 8(%0), %%xmm5\n\tpaddq %%xmm5, %%xmm4")
/* a VEX.256 instruction, then legacy SSE: cleaned between them, or not */
LOOP(transition_clean, NOTHING, "vpaddd %%ymm3, %%ymm3, %%ymm3\n\tvzeroupper\n\tpaddq %%xmm4, %%xmm4")
LOOP(transition_hazard, NOTHING, "vpaddd %%ymm3, %%ymm3, %%ymm3\n\tnopl (%%rax)\n\tpaddq %%xmm4, %%xmm4")

static const struct {
    const char *name;
    loop_fn clean, hazard;
    int events, avx;
} EVENTS[] = {
    {"SFfail", sf_clean, sf_hazard, 1, 0},          {"Alias4K", alias_clean, alias_hazard, 2, 0},
    {"SplitLd", split_clean, split_hazard, 4, 0},   {"SplitSt", split_store_clean, split_store_hazard, 4, 0},
    {"SSEdirty", sse_clean, sse_hazard, 4, 1},
    {"Transitions", transition_clean, transition_hazard, 1, 1},
};
#define N_EVENTS (sizeof EVENTS / sizeof *EVENTS)

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double ticks_per_iteration(loop_fn f) {
    uint64_t t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        uint64_t t0 = now();
        f(buf + 1024, N);
        t[r] = now() - t0;
    }
    qsort(t, RUNS, sizeof *t, by_value);
    return (double)t[RUNS / 2] / N;
}

int main(int argc, char **argv) {
    memset(buf, 1, sizeof buf);
    __builtin_cpu_init();
    int avx = __builtin_cpu_supports("avx2");
    if (argc == 5 && strcmp(argv[1], "trace") == 0) {
        long k = atol(argv[3]);
        for (size_t i = 0; i < N_EVENTS; i++) {
            if (strcmp(argv[2], EVENTS[i].name) == 0) {
                loop_fn f = strcmp(argv[4], "hazard") == 0 ? EVENTS[i].hazard : EVENTS[i].clean;
                PQSIMD_COUNT_START();
                f(buf + 1024, k);
                PQSIMD_COUNT_STOP();
                printf("%d\n", EVENTS[i].events);
                return 0;
            }
        }
        fprintf(stderr, "unknown event %s\n", argv[2]);
        return 2;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: hazards_x86_64 [trace EVENT K clean|hazard]\n");
        return 2;
    }
    printf("{");
    for (size_t i = 0; i < N_EVENTS; i++) {
        printf("%s\"%s\": ", i ? ", " : "", EVENTS[i].name);
        if (EVENTS[i].avx && !avx) {
            printf("null");
            continue;
        }
        double clean = ticks_per_iteration(EVENTS[i].clean), hazard = ticks_per_iteration(EVENTS[i].hazard);
        printf("{\"clean\": %.3f, \"hazard\": %.3f, \"per_event\": %.3f}", clean, hazard,
               (hazard - clean) / EVENTS[i].events);
    }
    printf("}\n");
    return 0;
}
