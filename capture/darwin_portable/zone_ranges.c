/*
 * zone_ranges.c — what one call of a zone enumerator's range recorder
 * means for the capture: MALLOC_PTR_IN_USE_RANGE_TYPE ranges are live
 * blocks of the zone's heap, MALLOC_PTR_REGION_RANGE_TYPE ranges are
 * regions the zone owns (their unallocated parts are free memory, not
 * roots). The bits are tested separately, never as "any REGION bit means
 * a region": libmalloc reports one range typed
 * MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE for each
 * block that is a region by itself —
 *   libmalloc-792.41.1 src/magazine_large.c large_in_use_enumerator
 *     (scalable-zone large blocks: "recorder(task, context,
 *     MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE, ...)"),
 *   src/xzone_malloc/xzone_introspect.c xzm_ptr_in_use_enumerator, chunk
 *     enumerator (large and huge chunks, the kinds that do not use
 *     xzones) —
 * and such a block is both a node and a claimed region. ADMIN ranges
 * (allocator metadata) are neither.
 *
 * Pure; never calls malloc (c->work is capture scratch).
 */
#include "capture/darwin_portable/darwin_portable.h"

int _hg_zone_ranges_add(struct hg_cap *c, struct hg_zclaims *cl, uint64_t heap, unsigned type,
                        const struct hg_vmrange *r, unsigned n) {
  if (type & HG_MALLOC_PTR_REGION) {
    for (unsigned i = 0; i < n; i++) {
      if (cl->n >= cl->max) {
        cl->overflow = 1;
        break;
      }
      cl->r[cl->n].lo = r[i].address;
      cl->r[cl->n].hi = r[i].address + r[i].size;
      cl->n++;
    }
  }
  if (!(type & HG_MALLOC_PTR_IN_USE)) return 0;
  for (unsigned i = 0; i < n; i++) {
    struct hg_zblock *b = _hg_vec_push(&c->work, sizeof *b / 8);
    if (!b) return HG_ENOMEM;
    b->addr = r[i].address;
    b->size = r[i].size;
    b->heap = heap;
  }
  return 0;
}
