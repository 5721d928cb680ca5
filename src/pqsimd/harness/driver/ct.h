/* One call of an op with its secrets marked, for the constant-time test (driver `ct`).
 *
 *   driver ct LIB SCHEME OP VARIATION [SECRET...]
 *
 * SECRET: a buffer the op table names (pqsimd_buffer) or `random` (every byte the code under test
 * draws). The op's inputs are those of VARIATION (0: the timed ones); only the secrets vary with
 * it, every other named buffer keeps VARIATION 0's bytes: public inputs fixed. Under valgrind's
 * memcheck the secrets are undefined for the one call, so every branch and address that depends
 * on them is reported; under a tracer, the call lies between two stores to the marker this prints:
 *
 *   base <hex>    the load address of LIB (sites are offsets from it)
 *   marker <hex>  the address stored to just before and just after the call
 *   filled <name> a secret the setup left as it was, filled with the variation's own bytes
 *   drawn <n>     bytes of randomness the call drew (through randombytes)
 *   dry           the randomness pool ran dry
 *   nomemcheck    the driver was built without valgrind's header: nothing was marked (a result computed on zeros: not a valid run)
 */
#ifndef PQSIMD_CT_H
#define PQSIMD_CT_H

int pqsimd_cmd_ct(int argc, char **argv);
/* driver ct-time LIB SCHEME OP N SEED [SECRET...]: dudect's fixed-vs-random timing, "class ticks" per call */
int pqsimd_cmd_ct_time(int argc, char **argv);
/* driver sitetrace LIB SCHEME OP V SITE... -- SECRET...: what each site does in one native call (sitetrace.c) */
int pqsimd_cmd_sitetrace(int argc, char **argv);
/* driver buffers LIB SCHEME: the op table's named buffers (name, bytes), one per line */
int pqsimd_cmd_buffers(int argc, char **argv);

#endif
