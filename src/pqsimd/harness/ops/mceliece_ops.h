/* mceliece's op ids, once (the order of data/families/mceliece.toml [ops] order; tests/test_op_ids.py compares
 * them): every mceliece op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_MCELIECE_OPS_H
#define PQSIMD_MCELIECE_OPS_H

#define PQSIMD_MCELIECE_OPS(X) \
    X(keypair) \
    X(encaps) \
    X(decaps) \
    X(genpoly_gen) \
    X(pk_gen) \
    X(controlbits) \
    X(encrypt) \
    X(decrypt) \
    X(empty)

#endif
