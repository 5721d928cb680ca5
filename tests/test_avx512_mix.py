"""The mix classes of AVX-512 code (data/mix.toml): opmask instructions are a class of their own."""


def test_avx512_mask_instructions_have_a_class_of_their_own():
    """gcc given AVX-512BW keeps scalars in opmask registers (kmovq, kxorq, kandnq in ML-KEM's scalar Keccak):
    the mix names them instead of `other`; vpternlogq and vprolq stay vector ALU."""
    from pqsimd.run.classify import classify

    assert {classify(m, "k1, k2, k3", "x86_64").cls for m in ("kmovq", "kxorq", "kandnq", "knotw")} == {"mask"}
    assert classify("vpternlogq", "zmm0, zmm1, zmm2, 0x96", "x86_64").cls == "vec_alu"
    assert classify("vprolq", "ymm1, ymm2, 0xd", "x86_64").cls == "vec_alu"
