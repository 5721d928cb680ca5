/* keccak's op ids, once (the order of data/families/keccak.toml [ops] order; tests/test_op_ids.py compares
 * them): every keccak op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_KECCAK_OPS_H
#define PQSIMD_KECCAK_OPS_H

#define PQSIMD_KECCAK_OPS(X) \
    X(permute_x1) \
    X(permute_x4) \
    X(permute_x8) \
    X(empty)

#endif
