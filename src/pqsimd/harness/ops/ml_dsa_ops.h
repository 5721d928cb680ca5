/* ml-dsa's op ids, once (the order of data/families/ml-dsa.toml [ops] order; tests/test_op_ids.py compares
 * them): every ml-dsa op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_ML_DSA_OPS_H
#define PQSIMD_ML_DSA_OPS_H

#define PQSIMD_ML_DSA_OPS(X) \
    X(expand_a) \
    X(uniform_eta) \
    X(uniform_gamma1) \
    X(ntt) \
    X(invntt) \
    X(pointwise) \
    X(challenge) \
    X(decompose) \
    X(use_hint) \
    X(keypair) \
    X(sign) \
    X(sign_mix) \
    X(verify) \
    X(keypair_derand) \
    X(sign_derand) \
    X(uniform_eta_x4) \
    X(uniform_gamma1_x4) \
    X(uniform_x4) \
    X(empty)

#endif
