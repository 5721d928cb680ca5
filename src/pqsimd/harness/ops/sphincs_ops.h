/* sphincs's op ids, once (the order of data/families/sphincs.toml [ops] order; tests/test_op_ids.py compares
 * them): every sphincs op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_SPHINCS_OPS_H
#define PQSIMD_SPHINCS_OPS_H

#define PQSIMD_SPHINCS_OPS(X) \
    X(thash_1) \
    X(keypair) \
    X(wots_leaf) \
    X(sign) \
    X(fors_sign) \
    X(verify) \
    X(thash_wots) \
    X(thash_x) \
    X(merkle_sign) \
    X(hash_message) \
    X(empty)

#endif
