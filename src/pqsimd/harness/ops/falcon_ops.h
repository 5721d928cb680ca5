/* falcon's op ids, once (the order of data/families/falcon.toml [ops] order; tests/test_op_ids.py compares
 * them): every falcon op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_FALCON_OPS_H
#define PQSIMD_FALCON_OPS_H

#define PQSIMD_FALCON_OPS(X) \
    X(keypair) \
    X(expand_privkey) \
    X(sign_dyn) \
    X(sign_tree) \
    X(sign) \
    X(verify) \
    X(fft) \
    X(ifft) \
    X(poly_mul_fft) \
    X(ntt) \
    X(sampler) \
    X(hash_to_point) \
    X(empty)

#endif
