/* randombytes for the code under test (PQClean's common/randombytes.c is left out of variants).
 *
 * By default the OS fills the buffer (getrandom, as PQClean does on Linux), so timed ops that
 * draw randomness pay the same cost as in PQClean. The gate switches to a pool of known bytes:
 * key generation and signing then become reproducible, and the Python side knows exactly which
 * bytes each call drew. A pool that runs dry fills zeros and is reported, never hidden. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

static const uint8_t *pool;
static size_t pool_len, pool_pos;
static int pool_on, pool_dry;
static void (*mark)(void *buffer, size_t n);

void pqsimd_random_mark(void (*f)(void *buffer, size_t n)) {
    mark = f;
}

void pqsimd_random_pool(const uint8_t *bytes, size_t n) {
    pool = bytes;
    pool_len = n;
    pool_pos = 0;
    pool_on = bytes != NULL;
    pool_dry = 0;
}

size_t pqsimd_random_used(void) {
    return pool_pos;
}

int pqsimd_random_dry(void) {
    return pool_dry;
}

static int draw(uint8_t *output, size_t n);

/* Every draw is marked when constant-time testing asks (the coins are the code's secrets). */
int PQCLEAN_randombytes(uint8_t *output, size_t n) {
    int r = draw(output, n);
    if (mark) {
        mark(output, n);
    }
    return r;
}

static int draw(uint8_t *output, size_t n) {
    if (pool_on) {
        if (n > pool_len - pool_pos) {
            pool_dry = 1;
            memset(output, 0, n);
            return 0;
        }
        memcpy(output, pool + pool_pos, n);
        pool_pos += n;
        return 0;
    }
    while (n > 0) {
        ssize_t got = getrandom(output, n, 0);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        output += got;
        n -= (size_t)got;
    }
    return 0;
}
