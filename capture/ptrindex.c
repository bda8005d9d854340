/*
 * ptrindex.c — the node table and the address -> node index.
 *
 * Nodes are grouped in segments (a contiguous allocator area: main heap, an
 * arena heap, one mmapped chunk …). A node costs 8 bytes (32-bit offset and
 * size in 8-byte units). The index (one per segment, layouts in ptrindex.h)
 * is either a rank bitmap of node starts — a lookup reads one cache line and,
 * for a pointer to a block's start, nothing else — or, where that bitmap
 * would cost more scratch, one uint32 "first node overlapping this granule"
 * per granule (granules sized so there are never more than two per node).
 * A lookup is: global [lo, hi) rejection, binary search over segments (few),
 * then the segment's index.
 *
 * Never calls malloc (scratch vectors only).
 */
#include <string.h>

#include "capture/ptrindex.h"

#define MIN_SHIFT 9u  /* granule index: 512-byte granules at least         */
/* The bitmap may cost up to this many bytes per node when the granule
 * index would be smaller: it is the faster one (see _hg_index_build). */
#define BITMAP_BYTES_PER_NODE 3u

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

/* Granule index: ix[j] = first node whose end is beyond granule j's start. */
static int build_granules(struct hg_cap *c, struct hg_segment *s, uint32_t shift, uint64_t g) {
  uint32_t *ix = _hg_vec_push(&c->index, (size_t)g);
  if (!ix) return HG_ENOMEM;
  s->ix_kind = HG_IX_GRANULE;
  s->granules = (uint32_t)g;
  s->shift = shift;
  uint32_t i = s->first, last = s->first + s->count;
  for (uint64_t j = 0; j < g; j++) {
    uint64_t gstart = s->base + (j << shift);
    while (i < last && _hg_node_addr(c, s, i) + _hg_node_size(c, i) <= gstart) i++;
    ix[j] = i;
  }
  return 0;
}

/* Rank bitmap: bit j set when a node starts at granule j (one at most: the
 * granule divides every node offset). Lines start 64-byte aligned (the
 * vector's base is page aligned). */
static int build_bitmap(struct hg_cap *c, struct hg_segment *s, uint32_t shift, uint64_t g) {
  size_t pad = (16 - _hg_vec_len(&c->index) % 16) % 16;
  if (pad && !_hg_vec_push(&c->index, pad)) return HG_ENOMEM;
  uint64_t nlines = (g + HG_RANK_BITS - 1) / HG_RANK_BITS;
  s->index_off = (uint32_t)_hg_vec_len(&c->index);
  struct hg_rank_line *l = _hg_vec_push(&c->index, (size_t)nlines * 16);
  if (!l) return HG_ENOMEM;
  s->ix_kind = HG_IX_BITMAP;
  s->granules = (uint32_t)g;
  s->shift = shift;
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  for (uint32_t i = s->first; i < s->first + s->count; i++) {
    uint64_t pos = ((uint64_t)nd[i].off << 3) >> shift;
    l[pos / HG_RANK_BITS].bits[(pos % HG_RANK_BITS) >> 6] |= 1ull << (pos & 63);
  }
  uint32_t before = 0;
  for (uint64_t k = 0; k < nlines; k++) {
    uint32_t in = 0;
    l[k].before = before;
    for (uint32_t w = 0; w < 6; w++) {
      l[k].sub[w] = (uint16_t)in;
      in += _hg_popcount64(l[k].bits[w]);
    }
    before += in;
  }
  return 0;
}

int _hg_index_build(struct hg_cap *c) {
  size_t nseg = _hg_vec_len(&c->segments);
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  c->heap_lo = c->heap_hi = 0;
  for (size_t k = 0; k < nseg; k++) {
    struct hg_segment *s = _hg_vec_at(&c->segments, k);
    if (k == 0) c->heap_lo = s->base;
    c->heap_hi = s->end;
    s->granules = 0;
    s->shift = 0;
    s->ix_kind = HG_IX_NONE;
    s->index_off = (uint32_t)_hg_vec_len(&c->index);
    if (s->count <= 2) continue;
    uint64_t len = s->end - s->base;
    /* granule index: granules of 512 bytes or more, at most two per node */
    uint32_t gshift = MIN_SHIFT;
    while ((len >> gshift) > 2 * (uint64_t)s->count) gshift++;
    uint64_t gg = (len + ((uint64_t)1 << gshift) - 1) >> gshift;
    /* bitmap: the granule is the largest power of two dividing every offset */
    uint32_t offs = 0;
    for (uint32_t i = s->first; i < s->first + s->count; i++) offs |= nd[i].off;
    uint32_t bshift = 3 + (offs ? (uint32_t)__builtin_ctz(offs) : 20);
    if (bshift > 23) bshift = 23;
    uint64_t bg = (len + ((uint64_t)1 << bshift) - 1) >> bshift;
    uint64_t bitmap_bytes = (bg + HG_RANK_BITS - 1) / HG_RANK_BITS * 64;
    if (bg <= UINT32_MAX && (bitmap_bytes <= gg * 4 ||
                             bitmap_bytes <= (uint64_t)BITMAP_BYTES_PER_NODE * s->count)) {
      int rc = build_bitmap(c, s, bshift, bg);
      if (rc) return rc;
      continue;
    }
    if (gg > UINT32_MAX) return HG_ELIMIT;
    int rc = build_granules(c, s, gshift, gg);
    if (rc) return rc;
  }
  return 0;
}

uint32_t _hg_index_lookup(const struct hg_cap *c, uint64_t v) {
  if (v < c->heap_lo || v >= c->heap_hi || (v & c->nonptr_mask)) return UINT32_MAX;
  const struct hg_segment *s = _hg_seg_of(c, v);
  if (!s) return UINT32_MAX;
  int known;
  uint32_t i = _hg_ix_candidate(c, s, v, _hg_ix_slot(c, s, v), &known);
  if (i == UINT32_MAX || (!known && !_hg_ix_contains(c, s, i, v))) return UINT32_MAX;
  return i;
}
