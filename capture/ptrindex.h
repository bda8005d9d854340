/*
 * ptrindex.h — the address -> node lookup, split into stages so the scan
 * can batch many lookups and overlap their cache misses (scan_nodes.c), and the
 * one-shot lookup (_hg_index_lookup) can share the same code.
 *
 * Each segment with more than two nodes has one of two indexes, chosen by
 * _hg_index_build for the smaller scratch cost (ties go to the bitmap):
 *
 *  - HG_IX_BITMAP: one bit per granule (granule = the largest power of two
 *    dividing every node's offset, 16 bytes for glibc and Darwin malloc), set
 *    where a node starts, in 64-byte rank lines of 384 bits with the count of
 *    starts before the line and before each word. The node holding v is then
 *    rank(v) - 1 in one cache line; when v is a node's first byte (the usual
 *    pointer) the node table is not touched at all.
 *  - HG_IX_GRANULE: one uint32 per granule (>= 512 bytes, at most two per
 *    node): the first node overlapping the granule, then a short forward walk.
 *
 * Reads only capture scratch; never calls malloc.
 */
#ifndef HG_CAPTURE_PTRINDEX_H
#define HG_CAPTURE_PTRINDEX_H

#include "capture/internal.h"

enum { HG_IX_NONE = 0, HG_IX_GRANULE = 1, HG_IX_BITMAP = 2 };

#define HG_RANK_BITS 384u /* granules per rank line */

struct hg_rank_line {
  uint32_t before;  /* node starts before this line (relative to seg->first) */
  uint16_t sub[6];  /* starts in bits[0 .. k-1]; sub[0] = 0                  */
  uint64_t bits[6];
};

static inline uint32_t _hg_popcount64(uint64_t x) {
#if defined(__POPCNT__) || defined(__aarch64__)
  return (uint32_t)__builtin_popcountll(x);
#else /* x86-64 baseline has no POPCNT; libgcc's fallback is slower than this */
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* Stage 1: the index memory a lookup of v (inside s) reads — prefetch it —
 * or NULL when the segment has no index. */
static inline const void *_hg_ix_slot(const struct hg_cap *c, const struct hg_segment *s,
                                      uint64_t v) {
  const uint32_t *ix = (const uint32_t *)c->index.base + s->index_off;
  uint64_t pos = (v - s->base) >> s->shift;
  if (s->ix_kind == HG_IX_BITMAP) return ix + (pos / HG_RANK_BITS) * 16;
  if (s->ix_kind == HG_IX_GRANULE) return ix + pos;
  return NULL;
}

/* Stage 2: the only node that may hold v (inside s), or UINT32_MAX.
 * *known: 2 = v is that node's first byte, 1 = v is inside it,
 * 0 = still to check with _hg_ix_contains (reads the node table).
 * Words with a c->nonptr_mask bit are never pointers: the callers drop them
 * first (_hg_index_lookup; _hg_scan_resolve, once a batch), off this path. */
static inline uint32_t _hg_ix_candidate(const struct hg_cap *c, const struct hg_segment *s,
                                        uint64_t v, const void *slot, int *known) {
  *known = 0;
  uint64_t rel = v - s->base;
  if (s->ix_kind == HG_IX_BITMAP) {
    const struct hg_rank_line *l = (const struct hg_rank_line *)slot;
    uint32_t b = (uint32_t)((rel >> s->shift) % HG_RANK_BITS), w = b >> 6, bit = b & 63;
    uint64_t word = l->bits[w];
    uint32_t r = l->before + l->sub[w] + _hg_popcount64(word & (~0ull >> (63 - bit)));
    *known = 0;
    if (!r) return UINT32_MAX;
    if (((word >> bit) & 1) && !(rel & ((1ull << s->shift) - 1))) *known = 2;
    return s->first + r - 1;
  }
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  uint32_t i = slot ? *(const uint32_t *)slot : s->first, last = s->first + s->count;
  uint64_t r8 = rel >> 3;
  for (; i < last; i++) {
    if (r8 < nd[i].off) return UINT32_MAX;
    if (r8 < (uint64_t)nd[i].off + nd[i].size) {
      *known = (r8 == nd[i].off && !(rel & 7)) ? 2 : 1;
      return i;
    }
  }
  return UINT32_MAX;
}

/* Stage 3: does node i (of s) hold v? */
static inline int _hg_ix_contains(const struct hg_cap *c, const struct hg_segment *s, uint32_t i,
                                  uint64_t v) {
  const struct hg_cnode *n = &((const struct hg_cnode *)c->nodes.base)[i];
  return ((v - s->base) >> 3) < (uint64_t)n->off + n->size;
}

/* The segment holding v, or NULL (binary search; segments are few). */
static inline const struct hg_segment *_hg_seg_of(const struct hg_cap *c, uint64_t v) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t lo = 0, hi = _hg_vec_len(&c->segments);
  if (!hi) return NULL;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (segs[mid].base <= v) lo = mid; else hi = mid;
  }
  const struct hg_segment *s = &segs[lo];
  return (v >= s->base && v < s->end) ? s : NULL;
}

#endif
