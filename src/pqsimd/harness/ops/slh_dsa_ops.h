/* slh-dsa's op ids, once (the order of data/families/slh-dsa.toml [ops] order; tests/test_op_ids.py compares
 * them): every slh-dsa op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_SLH_DSA_OPS_H
#define PQSIMD_SLH_DSA_OPS_H

#define PQSIMD_SLH_DSA_OPS(X) \
    X(keypair) \
    X(sign) \
    X(sign_hedged) \
    X(verify) \
    X(wots_chain) \
    X(wots_pkgen) \
    X(wots_sign) \
    X(xmss_sign) \
    X(fors_sign) \
    X(fors_pk) \
    X(keccak_x4) \
    X(keccak_1) \
    X(empty)

#endif
