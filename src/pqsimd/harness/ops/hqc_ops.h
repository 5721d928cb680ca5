/* hqc's op ids, once (the order of data/families/hqc.toml [ops] order; tests/test_op_ids.py compares
 * them): every hqc op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_HQC_OPS_H
#define PQSIMD_HQC_OPS_H

#define PQSIMD_HQC_OPS(X) \
    X(keypair) \
    X(encaps) \
    X(decaps) \
    X(pke_encrypt) \
    X(pke_decrypt) \
    X(vect_mul) \
    X(code_encode) \
    X(code_decode) \
    X(rm_encode) \
    X(rm_decode) \
    X(rs_encode) \
    X(rs_decode) \
    X(fixed_weight) \
    X(empty)

#endif
