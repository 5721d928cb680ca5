// empty: this crate exists only to pin pqcrypto-mlkem's PQClean tree
