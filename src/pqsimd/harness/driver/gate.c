#define _GNU_SOURCE
#include "gate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void hex(FILE *out, const uint8_t *b, size_t n) {
    if (n == 0) {
        fputc('-', out);
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%02x", b[i]);
    }
}

/* Parses hex (or "-") into a fresh buffer; returns its length, or (size_t)-1 on bad input. */
static size_t unhex(const char *s, uint8_t **out) {
    size_t len = strcmp(s, "-") == 0 ? 0 : strlen(s);
    if (len % 2) {
        return (size_t)-1;
    }
    *out = malloc(len / 2 + 1);
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(*out);
            return (size_t)-1;
        }
        (*out)[i] = (uint8_t)v;
    }
    return len / 2;
}

static int fractions(const char *s, double *f, int max) {
    int n = 0;
    char *copy = strdup(s);
    for (char *tok = strtok(copy, ","); tok && n < max; tok = strtok(NULL, ",")) {
        f[n++] = strtod(tok, NULL);
    }
    free(copy);
    return n;
}

static size_t position(double f, size_t len) {
    size_t p = (size_t)(f * (double)len);
    return p >= len ? len - 1 : p;
}

static int first_error(int a, int b) {
    return a ? a : b;
}

static int kem_line(const pqsimd_loaded *v, const pqsimd_scheme *s, char **tok, FILE *out) {
    uint8_t *pool;
    size_t pool_len = unhex(tok[0], &pool);
    if (pool_len == (size_t)-1) {
        return -1;
    }
    double f[64];
    int nf = fractions(tok[1], f, 64);
    const pqsimd_sizes *z = &s->sizes;
    uint8_t *pk = calloc(z->public_key + 64, 1), *sk = calloc(z->secret_key + 64, 1);
    uint8_t *ct = calloc(z->ciphertext + 64, 1), *ss = calloc(z->shared_secret, 1);
    uint8_t *ss_dec = calloc(z->shared_secret, 1), *ss_t = calloc(z->shared_secret * (size_t)(nf + 1), 1);
    v->entry->random_pool(pool, pool_len);
    int rc = s->api.keypair(pk, sk);
    rc = first_error(rc, s->api.encaps(ct, ss, pk));
    size_t used = v->entry->random_used();
    int dry = v->entry->random_dry();
    v->entry->random_pool(NULL, 0);
    rc = first_error(rc, s->api.decaps(ss_dec, ct, sk));
    /* A tampered ciphertext's return code is not checked: a KEM may report the rejection there
     * (HQC returns -1) besides returning its implicit-rejection key, which is what the gate checks. */
    for (int i = 0; i < nf; i++) {
        size_t p = position(f[i], z->ciphertext);
        ct[p] ^= 1;
        (void)s->api.decaps(ss_t + (size_t)i * z->shared_secret, ct, sk);
        ct[p] ^= 1;
    }
    fprintf(out, "%d %zu %d ", rc, used, dry);
    hex(out, pk, z->public_key);
    fputc(' ', out);
    hex(out, sk, z->secret_key);
    fputc(' ', out);
    hex(out, ct, z->ciphertext);
    fputc(' ', out);
    hex(out, ss, z->shared_secret);
    fputc(' ', out);
    hex(out, ss_dec, z->shared_secret);
    for (int i = 0; i < nf; i++) {
        fputc(' ', out);
        hex(out, ss_t + (size_t)i * z->shared_secret, z->shared_secret);
    }
    fputc('\n', out);
    free(pool), free(pk), free(sk), free(ct), free(ss), free(ss_dec), free(ss_t);
    return 0;
}

static void rc_list(FILE *out, const int *rc, int n) {
    if (n == 0) {
        fputc('-', out);
    }
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s%d", i ? "," : "", rc[i]);
    }
}

static int sign_line(const pqsimd_loaded *v, const pqsimd_scheme *s, char **tok, FILE *out) {
    uint8_t *pool, *msg;
    size_t pool_len = unhex(tok[0], &pool);
    if (pool_len == (size_t)-1) {
        return -1;
    }
    size_t mlen = unhex(tok[1], &msg);
    if (mlen == (size_t)-1) {
        free(pool);
        return -1;
    }
    double f[64];
    int nf = fractions(tok[2], f, 64);
    const pqsimd_sizes *z = &s->sizes;
    uint8_t *pk = calloc(z->public_key + 64, 1), *sk = calloc(z->secret_key + 64, 1);
    uint8_t *sig = calloc(z->signature + 64, 1);
    size_t siglen = 0;
    v->entry->random_pool(pool, pool_len);
    int rc = s->api.keypair(pk, sk);
    rc = first_error(rc, s->api.sign(sig, &siglen, msg, mlen, sk));
    size_t used = v->entry->random_used();
    int dry = v->entry->random_dry();
    v->entry->random_pool(NULL, 0);
    if (siglen > z->signature) {
        fprintf(stderr, "driver: %s signature of %zu bytes exceeds its maximum %zu\n", s->name, siglen, z->signature);
        return -2;
    }
    int verify_rc = s->api.verify(sig, siglen, msg, mlen, pk);
    int sig_rc[64], msg_rc[64];
    int nm = mlen ? nf : 0;
    for (int i = 0; i < nf; i++) {
        size_t p = position(f[i], siglen);
        sig[p] ^= 1;
        sig_rc[i] = s->api.verify(sig, siglen, msg, mlen, pk);
        sig[p] ^= 1;
    }
    for (int i = 0; i < nm; i++) {
        size_t p = position(f[i], mlen);
        msg[p] ^= 1;
        msg_rc[i] = s->api.verify(sig, siglen, msg, mlen, pk);
        msg[p] ^= 1;
    }
    fprintf(out, "%d %zu %d ", rc, used, dry);
    hex(out, pk, z->public_key);
    fputc(' ', out);
    hex(out, sk, z->secret_key);
    fputc(' ', out);
    hex(out, sig, siglen);
    fprintf(out, " %d ", verify_rc);
    rc_list(out, sig_rc, nf);
    fputc(' ', out);
    rc_list(out, msg_rc, nm);
    fputc('\n', out);
    free(pool), free(msg), free(pk), free(sk), free(sig);
    return 0;
}

/* "verify PK MSG SIG": another build's signature, verified by this one (the cross-check of a
 * verify-only build: verify/__init__.py). */
static int verify_line(const pqsimd_scheme *s, char **tok, FILE *out) {
    uint8_t *pk, *msg, *sig;
    size_t pklen = unhex(tok[1], &pk);
    if (pklen == (size_t)-1) {
        return -1;
    }
    size_t mlen = unhex(tok[2], &msg);
    if (mlen == (size_t)-1) {
        free(pk);
        return -1;
    }
    size_t siglen = unhex(tok[3], &sig);
    if (siglen == (size_t)-1 || pklen != s->sizes.public_key || siglen > s->sizes.signature) {
        free(pk), free(msg);
        if (siglen != (size_t)-1) {
            free(sig);
        }
        return -1;
    }
    fprintf(out, "%d\n", s->api.verify(sig, siglen, msg, mlen, pk));
    free(pk), free(msg), free(sig);
    return 0;
}

static int hash_line(const pqsimd_scheme *s, char **tok, FILE *out) {
    uint8_t *msg;
    size_t mlen = unhex(tok[0], &msg);
    long outlen = strtol(tok[1], NULL, 10);
    if (mlen == (size_t)-1 || outlen <= 0 || outlen > (1 << 20)) {
        return -1;
    }
    uint8_t *d = malloc((size_t)outlen);
    s->api.digest(d, (size_t)outlen, msg, mlen);
    hex(out, d, (size_t)outlen);
    fputc('\n', out);
    free(msg), free(d);
    return 0;
}

int pqsimd_gate(const pqsimd_loaded *v, const pqsimd_scheme *s, FILE *in, FILE *out) {
    static const int want[] = {0, 2, 3, 2};
    if (s->kind <= PQSIMD_KIND_NONE || s->kind > PQSIMD_KIND_HASH) {
        fprintf(stderr, "driver: scheme %s has no kind the gate knows (kind %d)\n", s->name, s->kind);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        char *tok[4] = {0};
        int nt = 0;
        for (char *t = strtok(line, " \t\r\n"); t && nt < 4; t = strtok(NULL, " \t\r\n")) {
            tok[nt++] = t;
        }
        if (nt == 0) {
            continue;
        }
        int rc = nt < want[s->kind] ? -1
                 : s->kind == PQSIMD_KIND_KEM  ? kem_line(v, s, tok, out)
                 : s->kind == PQSIMD_KIND_SIGN && nt == 4 && strcmp(tok[0], "verify") == 0 ? verify_line(s, tok, out)
                 : s->kind == PQSIMD_KIND_SIGN ? sign_line(v, s, tok, out)
                                               : hash_line(s, tok, out);
        if (rc == -1) {
            fprintf(stderr, "driver: gate: bad input line for a %s scheme\n",
                    s->kind == PQSIMD_KIND_KEM ? "kem" : s->kind == PQSIMD_KIND_SIGN ? "sign" : "hash");
        }
        if (rc) {
            free(line);
            return 2;
        }
        fflush(out);
    }
    free(line);
    return 0;
}
