/* The hazard model of pqsimd's TCG plugin (hazards=on): from the exact trace of loads, stores and
 * instructions, the events a PMU would count that make an instruction slow without making the count
 * larger. A model, not a CPU: its limits are written in hazards.c and docs/methods.md. */
#ifndef PQSIMD_HAZARDS_H
#define PQSIMD_HAZARDS_H

#include <stdint.h>
#include <stdio.h>

typedef struct hazard_insn hazard_insn;

/* Store buffer depth (stores) and how many instructions a store stays in flight; 0 on success. */
int hazards_configure(unsigned entries, unsigned window);
/* At translation: the record of one guest instruction (its address and disassembly decide its class). */
hazard_insn *hazards_insn(uint64_t pc, const char *disas);
/* Before each executed instruction: settles the previous instruction's accesses; `counted`: inside a window. */
void hazards_exec(hazard_insn *insn, int counted);
/* Each access the executing instruction makes (QEMU reports a vector access element by element). */
void hazards_access(hazard_insn *insn, uint64_t addr, unsigned size, int store);
/* The totals as a JSON object, and one line per instruction with an event: S<TAB>0xPC<TAB>SFfail<TAB>
 * Alias4K<TAB>SplitLd<TAB>SplitSt<TAB>SSEdirty<TAB>disassembly. */
void hazards_json(char *buf, size_t n);
void hazards_sites(FILE *out);

#endif
