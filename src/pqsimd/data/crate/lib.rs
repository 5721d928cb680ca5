// empty: this crate exists only to pin the C trees of its dependencies (PQClean, mlkem-native, mldsa-native, wolfSSL) and the ACVP vectors of slh-dsa
