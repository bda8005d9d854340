/*
 * xxh64.h — heapgraph's own XXH64 (the 64-bit xxHash), written from the
 * algorithm's published description (prime constants, 32-byte stripes of four
 * lanes, the merge rounds, the tail steps and the final avalanche), as static
 * inline functions under heapgraph's names: one-shot (_hg_xxh64) and
 * streaming (_hg_xxh64_reset / _update / _digest).
 *
 * The snapshot trailer's checksum is an XXH64 of the file. On Linux the
 * library links Debian's libxxhash; the Apple builds and the Swift package
 * carry no third-party code, so they use this through compat/include/xxhash.h.
 * tests/unit/test_compat_xxh64.c checks it equals libxxhash's XXH64 for every
 * length 0..1100, seeds and split points of the streaming form.
 *
 * Header-only and static: it adds no external symbol to a static library
 * (an app that links xxHash itself gets no duplicate symbols).
 */
#ifndef HG_COMPAT_XXH64_H
#define HG_COMPAT_XXH64_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define _HG_XXH_P1 0x9E3779B185EBCA87ULL
#define _HG_XXH_P2 0xC2B2AE3D27D4EB4FULL
#define _HG_XXH_P3 0x165667B19E3779F9ULL
#define _HG_XXH_P4 0x85EBCA77C2B2AE63ULL
#define _HG_XXH_P5 0x27D4EB2F165667C5ULL

struct _hg_xxh64 {
  uint64_t acc[4];        /* the four lane accumulators                 */
  uint64_t total;         /* bytes hashed so far                        */
  uint64_t seed;
  unsigned char buf[32];  /* a stripe not yet complete                  */
  uint32_t buffered;      /* bytes in buf                               */
};

static inline uint64_t _hg_xxh_rotl(uint64_t x, unsigned r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads whatever the host's order and alignment. */
static inline uint64_t _hg_xxh_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline uint64_t _hg_xxh_le32(const unsigned char *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static inline uint64_t _hg_xxh_round(uint64_t acc, uint64_t lane) {
  acc += lane * _HG_XXH_P2;
  return _hg_xxh_rotl(acc, 31) * _HG_XXH_P1;
}

static inline uint64_t _hg_xxh_merge(uint64_t h, uint64_t acc) {
  h ^= _hg_xxh_round(0, acc);
  return h * _HG_XXH_P1 + _HG_XXH_P4;
}

static inline void _hg_xxh_stripe(uint64_t acc[4], const unsigned char *p) {
  for (int i = 0; i < 4; i++) acc[i] = _hg_xxh_round(acc[i], _hg_xxh_le64(p + 8 * i));
}

/* Everything after the stripes: fold the lanes (or start from the seed for
 * inputs under 32 bytes), add the length, eat the tail 8, 4 and 1 bytes at
 * a time, avalanche. */
static inline uint64_t _hg_xxh_finish(const uint64_t acc[4], uint64_t seed, uint64_t total,
                                      const unsigned char *tail, size_t n) {
  uint64_t h;
  if (total >= 32) {
    h = _hg_xxh_rotl(acc[0], 1) + _hg_xxh_rotl(acc[1], 7) + _hg_xxh_rotl(acc[2], 12) +
        _hg_xxh_rotl(acc[3], 18);
    for (int i = 0; i < 4; i++) h = _hg_xxh_merge(h, acc[i]);
  } else {
    h = seed + _HG_XXH_P5;
  }
  h += total;
  for (; n >= 8; n -= 8, tail += 8) {
    h ^= _hg_xxh_round(0, _hg_xxh_le64(tail));
    h = _hg_xxh_rotl(h, 27) * _HG_XXH_P1 + _HG_XXH_P4;
  }
  if (n >= 4) {
    h ^= _hg_xxh_le32(tail) * _HG_XXH_P1;
    h = _hg_xxh_rotl(h, 23) * _HG_XXH_P2 + _HG_XXH_P3;
    n -= 4;
    tail += 4;
  }
  for (; n > 0; n--, tail++) {
    h ^= *tail * _HG_XXH_P5;
    h = _hg_xxh_rotl(h, 11) * _HG_XXH_P1;
  }
  h ^= h >> 33;
  h *= _HG_XXH_P2;
  h ^= h >> 29;
  h *= _HG_XXH_P3;
  h ^= h >> 32;
  return h;
}

static inline void _hg_xxh64_reset(struct _hg_xxh64 *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->seed = seed;
  s->acc[0] = seed + _HG_XXH_P1 + _HG_XXH_P2;
  s->acc[1] = seed + _HG_XXH_P2;
  s->acc[2] = seed;
  s->acc[3] = seed - _HG_XXH_P1;
}

static inline void _hg_xxh64_update(struct _hg_xxh64 *s, const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
  s->total += n;
  if (s->buffered) {
    size_t take = 32 - s->buffered < n ? 32 - s->buffered : n;
    memcpy(s->buf + s->buffered, p, take);
    s->buffered += (uint32_t)take;
    p += take;
    n -= take;
    if (s->buffered < 32) return;
    _hg_xxh_stripe(s->acc, s->buf);
    s->buffered = 0;
  }
  for (; n >= 32; n -= 32, p += 32) _hg_xxh_stripe(s->acc, p);
  if (n) memcpy(s->buf, p, n);
  s->buffered = (uint32_t)n;
}

static inline uint64_t _hg_xxh64_digest(const struct _hg_xxh64 *s) {
  return _hg_xxh_finish(s->acc, s->seed, s->total, s->buf, s->buffered);
}

static inline uint64_t _hg_xxh64(const void *data, size_t n, uint64_t seed) {
  struct _hg_xxh64 s;
  _hg_xxh64_reset(&s, seed);
  _hg_xxh64_update(&s, data, n);
  return _hg_xxh64_digest(&s);
}

#endif
