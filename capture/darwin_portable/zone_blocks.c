/*
 * zone_blocks.c — from the live blocks the malloc zones reported (in zone
 * order, each zone in its own order) to the capture's segments and nodes,
 * which must come in increasing, non-overlapping address order.
 *
 * Blocks are sorted by address; an exact duplicate (two zones reporting the
 * same block, e.g. a wrapper zone and the zone it wraps) is dropped
 * silently; a block overlapping the one before it, misaligned, or empty is
 * dropped and counted in c->heap_errors (never guessed at). Each run of
 * blocks of one zone inside one VM region becomes one segment spanning the
 * region (clipped to the previous segment's end, and to what a segment can
 * span); when another zone's block appears inside that span (the kernel
 * may report adjacent allocations of two zones as one VM region) the open
 * segment is cut where that block starts. Blocks listed from the
 * allocation recorder (HG_ZBLOCK_RECORDED in their heap) get segments of
 * their own, marked recorded.
 *
 * Pure and portable (unit-tested on Linux); never calls malloc.
 */
#include "capture/darwin_portable/darwin_portable.h"

#define SEG_SPAN_MAX ((uint64_t)UINT32_MAX << 3) /* node offsets are u32 granules */

/* Segment bounds for a block at [a, z): its region, clipped. */
static void seg_bounds(const struct hg_cap *c, uint64_t a, uint64_t z, uint64_t floor,
                       uint64_t *base, uint64_t *end) {
  int64_t ri = _hg_region_find(c, a);
  uint64_t b = a, e = z;
  if (ri >= 0) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
    b = r->start;
    e = r->end > z ? r->end : z;
  }
  if (b < floor) b = floor;
  b &= ~(uint64_t)7;
  if (b < floor) b = a; /* floor was not 8-aligned: start at the block */
  if (e - b > SEG_SPAN_MAX) { /* enormous region: anchor at the block */
    b = a;
    if (e - b > SEG_SPAN_MAX) e = b + SEG_SPAN_MAX;
  }
  *base = b;
  *end = (e + 7) & ~(uint64_t)7;
}

int _hg_zone_blocks_commit(struct hg_cap *c, struct hg_zblock *blocks, size_t n) {
  _hg_sort_u64key(blocks, n, sizeof *blocks);
  uint64_t prev_end = 0, floor = 0;
  uint64_t seg_end = 0, seg_heap = 0;
  int open = 0;
  for (size_t i = 0; i < n; i++) {
    struct hg_zblock *b = &blocks[i];
    uint64_t a = b->addr, z = b->size & ~(uint64_t)7;
    if (i > 0 && a == blocks[i - 1].addr && b->size == blocks[i - 1].size) continue;
    if ((a & 7) || z == 0 || a + z < a || z > SEG_SPAN_MAX || a < prev_end) {
      c->heap_errors++;
      continue;
    }
    if (!open || b->heap != seg_heap || a + z > seg_end) {
      if (open && a < seg_end) {
        /* another zone's block (or a straddling one) inside this segment's
         * span: the open segment ends where it starts */
        struct hg_segment *s = _hg_vec_at(&c->segments, _hg_vec_len(&c->segments) - 1);
        s->end = a;
        floor = a;
      }
      if (open) _hg_seg_end(c);
      uint64_t base, end;
      seg_bounds(c, a, a + z, floor, &base, &end);
      if (a + z > end || a < base) { /* cannot happen; keep the invariant */
        c->heap_errors++;
        open = 0;
        continue;
      }
      int rc = _hg_seg_begin(c, base, end, HG_NODE_MALLOC, (uint32_t)b->heap);
      if (rc) return rc;
      if (b->heap & HG_ZBLOCK_RECORDED) /* listed, not walked (zone_recorded.c) */
        ((struct hg_segment *)_hg_vec_at(&c->segments, _hg_vec_len(&c->segments) - 1))->recorded = 1;
      open = 1;
      seg_end = end;
      seg_heap = b->heap;
      floor = end;
    }
    int rc = _hg_node_add(c, a, z);
    if (rc) return rc;
    prev_end = a + z;
  }
  if (open) _hg_seg_end(c);
  return 0;
}
