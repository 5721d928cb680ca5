/* SPHINCS+ round 3.1 "simple" op table (the predecessor of FIPS 205 SLH-DSA, not SLH-DSA itself:
 * FORS indices are read LSB-first and messages carry no domain-separation prefix). Compiled once
 * per parameter set, for both hash families, with that set's PQClean namespace:
 *   -DPQSIMD_NS=PQCLEAN_SPHINCSSHA2128FSIMPLE_CLEAN -DPQSIMD_SCHEME=\"sphincs-sha2-128f-simple\"
 *   -DPQSIMD_IMPL=\"clean\" [-DSPHINCS_BATCHED] -I<impl dir> -I<common>
 * SPHINCS_BATCHED comes from data/families/sphincs.toml: the implementations with the batched
 * hashes (avx2: thashx8 / wots_gen_leafx8 for SHA-2, thashx4 / wots_gen_leafx4 for SHAKE). The
 * hash family is the scheme's own: params.h includes sha2_offsets.h (SPX_SHA2) or
 * shake_offsets.h (SPX_SHAKE), which fixes the batch width, 8 or 4. Without SPHINCS_BATCHED the
 * batched ops do the portable equivalent, the same number of single calls (byte-identical output),
 * so both implementations do equal work.
 *
 * Ops follow the reference benchmark.c (thash, keypair, WOTS leaf generation, sign, FORS signing,
 * verify) plus the other tweakable-hash shapes, one hypertree layer (merkle_sign) and H_msg.
 * Inputs are deterministic (fixed seeds and addresses, a fixed key) — benchmark.c leaves its
 * spx_ctx uninitialised, which is meaningless for SHA-2 (the seeded state is part of every hash).
 * Outputs go to static buffers; thash_1 and thash_x hash their block in place (out == in, as
 * benchmark.c's thash(block, block, ...)) and merkle_sign signs the root it wrote last time (as
 * the layers of the hypertree chain). No op's cost depends on the data. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "address.h"
#include "context.h"
#include "fors.h"
#include "hash.h"
#include "merkle.h"
#include "params.h"
#include "thash.h"
#include "wots.h"

#ifdef SPHINCS_BATCHED
#if defined(SPX_SHA2)
#include "thashx8.h"
#include "wotsx8.h"
#elif defined(SPX_SHAKE)
#include "thashx4.h"
#include "wotsx4.h"
#endif
#else
#include "wotsx1.h"
#endif

#include "api.h"
#include "optable.h"
#include "sphincs_ops.h"

PQSIMD_DECLARE_OP_IDS(PQSIMD_SPHINCS_OPS)


#define PK_BYTES NS(CRYPTO_PUBLICKEYBYTES)
#define SK_BYTES NS(CRYPTO_SECRETKEYBYTES)
#define SIG_BYTES NS(CRYPTO_BYTES)
#define SEED_BYTES NS(CRYPTO_SEEDBYTES) /* 3n: what crypto_sign_keypair draws */

/* The avx2 batch width: 8 SHA-256 lanes (thashx8; SHA-512 as 2 x 4 lanes) or 4 Keccak lanes. */
#if defined(SPX_SHA2)
#define WIDTH 8
#elif defined(SPX_SHAKE)
#define WIDTH 4
#else
#error "params.h defines neither SPX_SHA2 nor SPX_SHAKE"
#endif

#define SLACK 64
#define MSG_BYTES 32 /* benchmark.c's SPX_MLEN */

/* The avx2 SHA-2 spx_ctx holds __m256i states: static storage gives the type's 32-byte alignment. */
static spx_ctx ctx;
static uint8_t coins[SEED_BYTES + SPX_N]; /* the fixed key's seed (3n), then the signature's optrand (n) */
static uint8_t pk[PK_BYTES + SLACK], sk[SK_BYTES + SLACK];   /* the fixed key (sign, verify, hash_message) */
static uint8_t kpk[PK_BYTES + SLACK], ksk[SK_BYTES + SLACK]; /* op keypair writes here */
static uint8_t sig[SIG_BYTES + SLACK];                       /* op sign writes here */
static uint8_t vsig[SIG_BYTES + SLACK];                      /* the valid signature op verify checks */
static size_t vsiglen;
static uint8_t msg[MSG_BYTES];

static uint32_t addr[8];             /* a WOTS-chain address (thash_1, thash_wots) */
static uint32_t addrx[8 * WIDTH];    /* WIDTH consecutive addresses (thash_x, wots_leaf) */
static uint8_t block[SPX_N];         /* thash_1, in place */
static uint8_t blocks[WIDTH][SPX_N]; /* thash_x, in place */
static uint8_t wots_pk[SPX_WOTS_LEN * SPX_N]; /* thash_wots input: an uncompressed WOTS public key */
static uint8_t hout[SPX_N];
static uint8_t leaves[WIDTH * SPX_N];  /* wots_leaf: WIDTH compressed WOTS public keys */
static uint32_t steps[SPX_WOTS_LEN];   /* wots_leaf: unused (no signature leaf), as benchmark.c */
static uint8_t fors_m[SPX_FORS_MSG_BYTES];
static uint8_t fors_sig[SPX_FORS_BYTES + SLACK];
static uint8_t fors_root[SPX_N];
static uint32_t fors_addr[8];
static uint8_t merkle_sig[SPX_WOTS_BYTES + SPX_TREE_HEIGHT * SPX_N + SLACK];
static uint8_t merkle_root[SPX_N];
static uint32_t wots_addr[8], tree_addr[8];
static uint8_t R[SPX_N];
static uint8_t digest[SPX_FORS_MSG_BYTES + SLACK];
static uint64_t digest_tree;
static uint32_t digest_leaf;

static void fill(uint8_t *b, size_t n, uint8_t salt) {
    pqsimd_fill(b, n, salt);
}

static void chain_address(uint32_t a[8], uint32_t keypair) {
    memset(a, 0, 8 * sizeof(uint32_t));
    set_layer_addr(a, 3);
    set_tree_addr(a, 0x1234);
    set_type(a, SPX_ADDR_TYPE_WOTS);
    set_keypair_addr(a, keypair);
    set_chain_addr(a, 5);
    set_hash_addr(a, 2);
}

static void setup_inputs(void) {
    /* SHA-2: initialize_hash_function absorbs the pub_seed block into the seeded 1x (+ 8x/4x in
     * avx2) states, which PQClean's common/sha2.c allocates on the heap: release the previous ones,
     * as every setup runs it again (SHAKE: both are no-ops). */
    static int ctx_ready;
    if (ctx_ready) {
        free_hash_function(&ctx);
    }
    fill(ctx.pub_seed, SPX_N, 1);
    fill(ctx.sk_seed, SPX_N, 2);
    initialize_hash_function(&ctx);
    ctx_ready = 1;
    fill(coins, sizeof coins, 3);
    fill(msg, sizeof msg, 4);
    fill(block, sizeof block, 5);
    for (unsigned j = 0; j < WIDTH; j++) {
        fill(blocks[j], SPX_N, (uint8_t)(6 + j));
        chain_address(addrx + 8 * j, j);
    }
    chain_address(addr, 1);
    fill(wots_pk, sizeof wots_pk, 20);
    memset(steps, 0, sizeof steps);
    fill(fors_m, sizeof fors_m, 21);
    memset(fors_addr, 0, sizeof fors_addr);
    set_tree_addr(fors_addr, 77);
    set_keypair_addr(fors_addr, 3);
    /* One hypertree layer as signing walks it: layer 1, tree 9, leaf 1. */
    memset(wots_addr, 0, sizeof wots_addr);
    memset(tree_addr, 0, sizeof tree_addr);
    set_type(wots_addr, SPX_ADDR_TYPE_WOTS);
    set_type(tree_addr, SPX_ADDR_TYPE_HASHTREE);
    set_layer_addr(tree_addr, 1);
    set_tree_addr(tree_addr, 9);
    copy_subtree_addr(wots_addr, tree_addr);
    set_keypair_addr(wots_addr, 1);
    fill(merkle_root, sizeof merkle_root, 22);
    fill(R, sizeof R, 23);
}

/* The fixed key pair and a valid signature of msg under it, drawn from a fixed pool through the
 * variant's randomness control: deterministic, and identical in clean and avx2. */
/* The key and the signature are deterministic (a fixed pool): made once per process, since at -O0
 * one signature of an 's' set takes seconds and three ops (and the probe) would redo it. */
static void setup_sign(void) {
    static pqsimd_once once;
    setup_inputs();
    if (!pqsimd_once_per_variation(&once)) {
        return;
    }
    const pqsimd_variant *v = pqsimd_variant_entry();
    v->random_pool(coins, sizeof coins);
    NS(crypto_sign_keypair)(pk, sk);
    NS(crypto_sign_signature)(vsig, &vsiglen, msg, MSG_BYTES, sk);
    v->random_pool(NULL, 0); /* timed keypair / sign draw OS randomness, as in PQClean */
}

static void op_keypair(void) { NS(crypto_sign_keypair)(kpk, ksk); }

/* Signing cost does not depend on optrand (no rejection loop): one message suffices. */
static void op_sign(void) {
    size_t siglen;
    NS(crypto_sign_signature)(sig, &siglen, msg, MSG_BYTES, sk);
}

static void op_verify(void) { NS(crypto_sign_verify)(vsig, vsiglen, msg, MSG_BYTES, pk); }

/* F: one chain step (benchmark.c's `thash`). */
static void op_thash_1(void) { thash(block, block, 1, &ctx, addr); }

/* T_len: the WOTS public-key compression (SHA-512 for SHA-2 at 192/256 bits). */
static void op_thash_wots(void) { thash(hout, wots_pk, SPX_WOTS_LEN, &ctx, addr); }

/* WIDTH chain steps at once: one thashx8 / thashx4 call, or WIDTH thash calls. */
static void op_thash_x(void) {
#ifdef SPHINCS_BATCHED
#if WIDTH == 8
    thashx8(blocks[0], blocks[1], blocks[2], blocks[3], blocks[4], blocks[5], blocks[6], blocks[7],
            blocks[0], blocks[1], blocks[2], blocks[3], blocks[4], blocks[5], blocks[6], blocks[7], 1, &ctx, addrx);
#else
    thashx4(blocks[0], blocks[1], blocks[2], blocks[3], blocks[0], blocks[1], blocks[2], blocks[3], 1, &ctx, addrx);
#endif
#else
    for (unsigned j = 0; j < WIDTH; j++) {
        thash(blocks[j], blocks[j], 1, &ctx, addrx + 8 * j);
    }
#endif
}

/* WIDTH WOTS key generations (PRF, 15 chain steps per chain, T_len): the chain (gen_chain /
 * gen_chains) is static, so this times its non-static caller wots_gen_leafx{1,8,4}, as
 * benchmark.c's "WOTS pk gen". No leaf is the signing leaf (wots_sign_leaf = ~0). Clean and avx2
 * write the same WIDTH leaves (keypair addresses 0..WIDTH-1). */
static void op_wots_leaf(void) {
#ifdef SPHINCS_BATCHED
#if WIDTH == 8
    struct leaf_info_x8 info;
    INITIALIZE_LEAF_INFO_X8(info, addr, steps);
    for (unsigned j = 0; j < WIDTH; j++) {
        set_type(&info.pk_addr[8 * j], SPX_ADDR_TYPE_WOTSPK);
    }
    wots_gen_leafx8(leaves, &ctx, 0, &info);
#else
    struct leaf_info_x4 info;
    INITIALIZE_LEAF_INFO_X4(info, addr, steps);
    for (unsigned j = 0; j < WIDTH; j++) {
        set_type(&info.pk_addr[8 * j], SPX_ADDR_TYPE_WOTSPK);
    }
    wots_gen_leafx4(leaves, &ctx, 0, &info);
#endif
#else
    struct leaf_info_x1 info;
    INITIALIZE_LEAF_INFO_X1(info, addr, steps);
    set_type(info.pk_addr, SPX_ADDR_TYPE_WOTSPK);
    for (uint32_t j = 0; j < WIDTH; j++) {
        wots_gen_leafx1(leaves + j * SPX_N, &ctx, j, &info);
    }
#endif
}

/* The FORS signature of a fixed message digest (its leaf/tree helpers are static). */
static void op_fors_sign(void) { fors_sign(fors_sig, fors_root, fors_m, &ctx, fors_addr); }

/* One hypertree layer: a WOTS signature of the root below plus the subtree's treehash (2^(h/d)
 * WOTS leaves). treehashx1 / treehashx8 / treehashx4 take different leaf callbacks and address
 * shapes, so this times merkle_sign, their common non-static caller (same signature everywhere). */
static void op_merkle_sign(void) { merkle_sign(merkle_sig, merkle_root, &ctx, wots_addr, tree_addr, 1); }

/* H_msg: the message digest, FORS indices and hypertree index of the fixed 32-byte message. */
static void op_hash_message(void) {
    hash_message(digest, &digest_tree, &digest_leaf, R, pk, msg, MSG_BYTES, &ctx);
}

PQSIMD_EMPTY_OP

/* In data/families/sphincs.toml's order: benchmark.c's, then the extras. */
static const pqsimd_op ops[] = {
    {PQSIMD_OP(thash_1), setup_inputs, op_thash_1},
    {PQSIMD_OP(keypair), setup_inputs, op_keypair},
    {PQSIMD_OP(wots_leaf), setup_inputs, op_wots_leaf},
    {PQSIMD_OP(sign), setup_sign, op_sign},
    {PQSIMD_OP(fors_sign), setup_inputs, op_fors_sign},
    {PQSIMD_OP(verify), setup_sign, op_verify},
    {PQSIMD_OP(thash_wots), setup_inputs, op_thash_wots},
    {PQSIMD_OP(thash_x), setup_inputs, op_thash_x},
    {PQSIMD_OP(merkle_sign), setup_inputs, op_merkle_sign},
    {PQSIMD_OP(hash_message), setup_sign, op_hash_message},
    {PQSIMD_OP(empty), NULL, op_empty},
};

static const pqsimd_sizes sizes = {.public_key = PK_BYTES, .secret_key = SK_BYTES, .signature = SIG_BYTES};
/* crypto_sign_signature / crypto_sign_verify already have the gate's signatures. */
static const pqsimd_api api = {.keypair = NS(crypto_sign_keypair), .sign = NS(crypto_sign_signature), .verify = NS(crypto_sign_verify)};

/* What [ct.secret] of the family's TOML names per op. */
static const pqsimd_buffer buffers[] = {PQSIMD_BUFFER(coins), PQSIMD_BUFFER(pk), PQSIMD_BUFFER(sk), PQSIMD_BUFFER(kpk), PQSIMD_BUFFER(ksk), PQSIMD_BUFFER(sig), PQSIMD_BUFFER(vsig), PQSIMD_BUFFER(msg)};

PQSIMD_REGISTER_BUFFERS(ops, PQSIMD_KIND_SIGN, sizes, api, buffers)
