/*
 * test_compat_xxh64.c — compat/xxh64.h (heapgraph's own XXH64, used by the
 * Apple builds and the Swift package) against Debian's libxxhash: the same
 * hash for every length 0..1100 at several seeds, the same digest whatever
 * way the input is cut into streaming updates, and the xxhash.h-named
 * wrappers of compat/include/xxhash.h.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "compat/xxh64.h"
#include "hg_test.h"

#define LEN_MAX 1100

static unsigned char data[LEN_MAX + 8];
static const uint64_t seeds[] = {0, 1, 0x9E3779B185EBCA87ull, UINT64_MAX, 2654435761u};

static void fill(void) {
  uint64_t x = 0x123456789abcdefull;
  for (size_t i = 0; i < sizeof data; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    data[i] = (unsigned char)x;
  }
}

static void test_one_shot_every_length(void) {
  int bad = 0;
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
    for (size_t n = 0; n <= LEN_MAX; n++)
      for (size_t off = 0; off < 2; off++) /* aligned and not */
        if (_hg_xxh64(data + off, n, seeds[s]) != XXH64(data + off, n, seeds[s])) {
          if (!bad++) printf("  first difference: length %zu seed %llu offset %zu\n", n,
                             (unsigned long long)seeds[s], off);
        }
  CHECK_EQ_U(bad, 0);
}

/* Every split point in two pieces for lengths around the stripe size, then
 * random piece sizes (including empty updates) for long inputs. */
static void test_streaming_splits(void) {
  int bad = 0;
  for (size_t n = 0; n <= 130; n++)
    for (size_t cut = 0; cut <= n; cut++) {
      struct _hg_xxh64 s;
      _hg_xxh64_reset(&s, 7);
      _hg_xxh64_update(&s, data, cut);
      _hg_xxh64_update(&s, data + cut, n - cut);
      if (_hg_xxh64_digest(&s) != XXH64(data, n, 7)) bad++;
    }
  srand(1);
  for (int round = 0; round < 200; round++) {
    size_t n = (size_t)rand() % (LEN_MAX + 1), at = 0;
    struct _hg_xxh64 s;
    _hg_xxh64_reset(&s, (uint64_t)round);
    while (at < n) {
      size_t k = (size_t)rand() % 70;
      if (k > n - at) k = n - at;
      _hg_xxh64_update(&s, data + at, k);
      at += k;
    }
    if (_hg_xxh64_digest(&s) != XXH64(data, n, (uint64_t)round)) bad++;
  }
  CHECK_EQ_U(bad, 0);
}

/* The digest does not consume the state: reading it midway and going on
 * gives the same result as libxxhash's streaming state. */
static void test_digest_midway(void) {
  struct _hg_xxh64 s;
  XXH64_state_t *x = XXH64_createState();
  REQUIRE(x);
  _hg_xxh64_reset(&s, 3);
  XXH64_reset(x, 3);
  for (size_t at = 0; at < 1000; at += 37) {
    _hg_xxh64_update(&s, data + at, 37);
    XXH64_update(x, data + at, 37);
    CHECK_EQ_U(_hg_xxh64_digest(&s), XXH64_digest(x));
  }
  XXH64_freeState(x);
}

/* Known values of the algorithm's published test vectors for empty input. */
static void test_empty(void) {
  CHECK_EQ_U(_hg_xxh64("", 0, 0), 0xEF46DB3751D8E999ull);
}

int main(void) {
  fill();
  RUN(test_one_shot_every_length);
  RUN(test_streaming_splits);
  RUN(test_digest_midway);
  RUN(test_empty);
  return hg_test_done();
}
