/* ml-kem's op ids, once (the order of data/families/ml-kem.toml [ops] order; tests/test_op_ids.py compares
 * them): every ml-kem op table declares them (PQSIMD_DECLARE_OP_IDS) and names its ops with PQSIMD_OP(id). */
#ifndef PQSIMD_ML_KEM_OPS_H
#define PQSIMD_ML_KEM_OPS_H

#define PQSIMD_ML_KEM_OPS(X) \
    X(gen_a) \
    X(poly_getnoise_eta1) \
    X(poly_getnoise_eta2) \
    X(ntt) \
    X(invntt) \
    X(basemul) \
    X(poly_tomsg) \
    X(poly_frommsg) \
    X(poly_compress) \
    X(poly_decompress) \
    X(polyvec_compress) \
    X(polyvec_decompress) \
    X(indcpa_keypair) \
    X(indcpa_enc) \
    X(indcpa_dec) \
    X(kem_keypair_derand) \
    X(kem_keypair) \
    X(kem_encaps_derand) \
    X(kem_encaps) \
    X(kem_decaps) \
    X(noise_x4) \
    X(empty)

#endif
