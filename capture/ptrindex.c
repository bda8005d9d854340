/*
 * ptrindex.c — the node table and the address -> node index.
 *
 * Nodes are grouped in segments (a contiguous allocator area: main heap, an
 * arena heap, one mmapped chunk …). A node costs 8 bytes (32-bit offset and
 * size in 8-byte units); the index adds one 32-bit "first node overlapping
 * this granule" per granule of a segment, with granules sized so there are
 * never more than two per node. A lookup is: global [lo, hi) rejection,
 * binary search over segments (few), one granule load, and a short forward
 * walk (at most the nodes of one granule).
 *
 * Never calls malloc (scratch vectors only).
 */
#include <string.h>

#include "capture/internal.h"

#define MIN_SHIFT 9u  /* 512-byte granules at most                         */

static struct hg_segment *cur_seg(struct hg_cap *c) {
  size_t n = _hg_vec_len(&c->segments);
  return n ? (struct hg_segment *)_hg_vec_at(&c->segments, n - 1) : NULL;
}

int _hg_seg_begin(struct hg_cap *c, uint64_t base, uint64_t end, uint32_t flags, uint32_t heap_id) {
  if (!c->nodes.base) {
    int rc = _hg_vec_init(&c->scratch, &c->nodes, sizeof(struct hg_cnode), (size_t)UINT32_MAX);
    if (rc) return rc;
  }
  struct hg_segment *prev = cur_seg(c);
  if (end <= base || (base & 7) || end - base > ((uint64_t)UINT32_MAX << 3)) return HG_EINVAL;
  if (prev && base < prev->end) return HG_EINTERNAL; /* out of order / overlap */
  struct hg_segment *s = _hg_vec_push(&c->segments, 1);
  if (!s) return HG_ENOMEM;
  s->base = base;
  s->end = end;
  s->first = (uint32_t)_hg_vec_len(&c->nodes);
  s->count = 0;
  s->flags = flags;
  s->heap_id = heap_id;
  return 0;
}

int _hg_node_add(struct hg_cap *c, uint64_t addr, uint64_t size) {
  struct hg_segment *s = cur_seg(c);
  if (!s || addr < s->base || size == 0 || addr + size > s->end || ((addr | size) & 7))
    return HG_EINVAL;
  if (s->count) {
    uint32_t last = s->first + s->count - 1;
    if (addr < _hg_node_addr(c, s, last) + _hg_node_size(c, last)) return HG_EINVAL;
  }
  if (_hg_vec_len(&c->nodes) >= UINT32_MAX - 2) return HG_ELIMIT;
  struct hg_cnode *n = _hg_vec_push(&c->nodes, 1);
  if (!n) return HG_ENOMEM;
  n->off = (uint32_t)((addr - s->base) >> 3);
  n->size = (uint32_t)(size >> 3);
  s->count++;
  return 0;
}

void _hg_seg_end(struct hg_cap *c) {
  struct hg_segment *s = cur_seg(c);
  if (s && s->count == 0) _hg_vec_truncate(&c->segments, _hg_vec_len(&c->segments) - 1);
}

uint32_t _hg_node_count(const struct hg_cap *c) { return (uint32_t)_hg_vec_len(&c->nodes); }

/* Compacts the node arrays, dropping nodes whose address is in the sorted
 * freelist; segment ranges are renumbered, empty segments removed. */
void _hg_nodes_drop_freed(struct hg_cap *c) {
  const uint64_t *fl = (const uint64_t *)c->freelist.base;
  size_t nf = _hg_vec_len(&c->freelist), fi = 0;
  struct hg_cnode *nd = (struct hg_cnode *)c->nodes.base;
  size_t nseg = _hg_vec_len(&c->segments), out_seg = 0;
  uint32_t out = 0;
  for (size_t k = 0; k < nseg; k++) {
    struct hg_segment *s = _hg_vec_at(&c->segments, k);
    uint32_t first = out;
    for (uint32_t i = s->first; i < s->first + s->count; i++) {
      uint64_t a = s->base + ((uint64_t)nd[i].off << 3);
      while (fi < nf && fl[fi] < a) fi++;
      if (fi < nf && fl[fi] == a) {
        c->freed_excluded++;
        continue;
      }
      nd[out] = nd[i];
      out++;
    }
    if (out == first) continue;
    struct hg_segment *d = _hg_vec_at(&c->segments, out_seg++);
    if (d != s) *d = *s;
    d->first = first;
    d->count = out - first;
  }
  _hg_vec_truncate(&c->nodes, out);
  _hg_vec_truncate(&c->segments, out_seg);
}

int _hg_index_build(struct hg_cap *c) {
  size_t nseg = _hg_vec_len(&c->segments);
  c->heap_lo = c->heap_hi = 0;
  for (size_t k = 0; k < nseg; k++) {
    struct hg_segment *s = _hg_vec_at(&c->segments, k);
    if (k == 0) c->heap_lo = s->base;
    c->heap_hi = s->end;
    s->granules = 0;
    s->shift = 0;
    s->index_off = (uint32_t)_hg_vec_len(&c->index);
    if (s->count <= 2) continue;
    uint64_t len = s->end - s->base;
    uint32_t shift = MIN_SHIFT;
    while ((len >> shift) > 2 * (uint64_t)s->count) shift++;
    uint64_t g = (len + ((uint64_t)1 << shift) - 1) >> shift;
    if (g > UINT32_MAX) return HG_ELIMIT;
    uint32_t *ix = _hg_vec_push(&c->index, (size_t)g);
    if (!ix) return HG_ENOMEM;
    s->granules = (uint32_t)g;
    s->shift = shift;
    /* ix[j] = first node whose end is beyond the granule's start */
    uint32_t i = s->first, last = s->first + s->count;
    for (uint64_t j = 0; j < g; j++) {
      uint64_t gstart = s->base + (j << shift);
      while (i < last && _hg_node_addr(c, s, i) + _hg_node_size(c, i) <= gstart) i++;
      ix[j] = i;
    }
  }
  return 0;
}

uint32_t _hg_index_lookup(const struct hg_cap *c, uint64_t v) {
  if (v < c->heap_lo || v >= c->heap_hi) return UINT32_MAX;
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t lo = 0, hi = _hg_vec_len(&c->segments);
  while (hi - lo > 1) { /* last segment with base <= v */
    size_t mid = (lo + hi) / 2;
    if (segs[mid].base <= v) lo = mid; else hi = mid;
  }
  const struct hg_segment *s = &segs[lo];
  if (v < s->base || v >= s->end) return UINT32_MAX;
  uint32_t i = s->first, last = s->first + s->count;
  if (s->granules) i = ((const uint32_t *)c->index.base)[s->index_off + ((v - s->base) >> s->shift)];
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  uint64_t rel = (v - s->base) >> 3;
  for (; i < last; i++) {
    if (rel < nd[i].off) return UINT32_MAX;
    if (rel < (uint64_t)nd[i].off + nd[i].size) return i;
  }
  return UINT32_MAX;
}
