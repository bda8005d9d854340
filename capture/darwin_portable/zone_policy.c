/*
 * zone_policy.c — the Darwin freeze protocol's decisions, as plain logic
 * over facts about each malloc zone (unit-tested on Linux with fake zones):
 * which zones may be enumerated while the process is frozen, whether the
 * heap is busy (retry later), and what becomes of the memory of the zones
 * that are not enumerated.
 *
 * Rests on libmalloc-792 (apple-oss-distributions/libmalloc):
 *   - malloc.c malloc_gdb_po_unsafe: the debugger's own test before it runs
 *     code that mallocs in a stopped process: the stack-logging lock
 *     (msl.stack_logging_locked, resolved with dlsym from the MSL library
 *     as "msl_stack_logging_locked", malloc.c register_msl_dylib) and each
 *     zone of version >= 5 whose introspect->zone_locked says it is held.
 *   - nanov2_malloc.c nanov2_locked always returns FALSE (no zone lock),
 *     and nanov2_ptr_in_use_enumerator, for an in-process zone
 *     (self_zone), takes its free-slot bitmap from
 *     helper_zone->calloc and frees it — i.e. allocates while we are
 *     frozen, and could block on the helper zone's lock; with a copying
 *     reader it would call calloc (bitarray.c bitarray_create) instead.
 *     Nano v2's enumerator is therefore never called: nano_walk.c reads
 *     its metadata itself (HG_ZONE_NANO_OWN) when the zone's layout is
 *     recognised, else the zone is not walked. malloc.c names the nano
 *     zone "DefaultMallocZone" and its helper "MallocHelperZone" (only
 *     when nano is on): a default zone next to a helper zone is nano.
 *   - xzone (src/xzone_malloc/, real code from libmalloc-792.41.1 on):
 *     identified by introspect->zone_type == MALLOC_ZONE_TYPE_XZONE
 *     (malloc_common.h; the field exists for zone version >= 14, the test
 *     of xzone_inline_internal.h _xzm_malloc_zone_is_xzm). Its
 *     zone_locked is xzm_locked (xzone_introspect.c
 *     xzm_malloc_zone_introspect), which is xzm_abort("xzm_locked not
 *     implemented") -> __builtin_trap() (xzone_malloc.c xzm_locked,
 *     xzone_inline_internal.h xzm_abort): it is NEVER called. Its
 *     enumerator (xzone_introspect.c xzm_ptr_in_use_enumerator) takes no
 *     lock and allocates nothing: per-chunk block tables are stack arrays
 *     of XZM_CHUNK_MAX_BLOCK_COUNT entries whose indices are bounded by
 *     XZM_FREE_LIMIT (= that count, xzone_malloc.h), its debug aborts are
 *     compiled out of release builds, and every structure it follows
 *     (zone, segment tables, segments, thread caches, early-malloc arena)
 *     is reached through the memory reader, which capture/darwin/zones.c
 *     makes check the VM regions. And it is written to run without the
 *     segment locks: xzone_introspect.c:27-32
 *     (xzm_segment_group_segment_foreach_span) "the kind bits of a chunk
 *     are updated last, after the rest of the chunk metadata is
 *     initialized, so if we see a chunk slice it should be valid ...
 *     rather than iterating span-by-span as we would under the lock we
 *     need to scan linearly from chunk to chunk". So it is enumerated while
 *     frozen (HG_ZONE_XZONE), without a lock test; a chunk caught mid-update
 *     reads as a free span (its blocks missed, never a wild read);
 *     docs/capture.md says so.
 *   - A zone without zone_locked (NULL, or version < 5) cannot be asked
 *     about its locks and is not enumerated.
 * A zone that is not enumerated is named as such in the snapshot (its heap
 * record says why) and its malloc regions that hold no enumerated block
 * are scanned conservatively as root memory (_hg_zone_demote_unwalked):
 * objects they reference are then held by an "other" root, never reported
 * as leaks they are not. Regions a walked zone reported as its own
 * (MALLOC_PTR_REGION_RANGE_TYPE) stay heap even when empty: their stale
 * contents are free memory, not roots.
 *
 * Pure; never calls malloc.
 */
#include <stdio.h>
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

int _hg_zone_plan(const struct hg_zone_facts *f) {
  int xzone = f->version >= 14 && f->zone_type == HG_MALLOC_ZONE_TYPE_XZONE;
  if (xzone) return f->has_enumerator ? HG_ZONE_XZONE : HG_ZONE_NO_ENUMERATOR;
  if (f->helper_present && f->name && strcmp(f->name, "DefaultMallocZone") == 0)
    return f->nano_layout_ok ? HG_ZONE_NANO_OWN : HG_ZONE_NANO;
  if (!f->has_enumerator) return HG_ZONE_NO_ENUMERATOR;
  if (f->version < 5 || !f->has_zone_locked) return HG_ZONE_NO_LOCK_QUERY;
  return HG_ZONE_WALK;
}

int _hg_zone_plan_walks(int plan) {
  return plan == HG_ZONE_WALK || plan == HG_ZONE_XZONE || plan == HG_ZONE_NANO_OWN;
}

const char *_hg_zone_plan_reason(int plan) {
  switch (plan) {
  case HG_ZONE_WALK: return NULL;
  case HG_ZONE_NO_ENUMERATOR: return "no enumerator";
  case HG_ZONE_NO_LOCK_QUERY: return "no zone_locked: its locks cannot be checked";
  case HG_ZONE_NANO: return "nano v2: its enumerator allocates, its layout was not recognised";
  case HG_ZONE_XZONE: return NULL;
  case HG_ZONE_NANO_OWN: return NULL;
  default: return "unknown plan";
  }
}

const char *_hg_zone_heap_name(const char *zone, int plan, int listed, char *buf, size_t size) {
  const char *why = _hg_zone_plan_reason(plan);
  if (!zone) zone = "malloc zone";
  if (!why) return zone;
  snprintf(buf, size, "%s (not walked: %s%s)", zone, why,
           listed ? "; blocks listed from the allocation recorder" : "");
  return buf;
}

int _hg_zones_busy(const uint8_t *plans, uint32_t n, int (*zone_locked)(void *ctx, uint32_t i),
                   int (*msl_locked)(void *ctx), void *ctx) {
  if (msl_locked && msl_locked(ctx)) return 1;
  for (uint32_t i = 0; i < n; i++) /* only HG_ZONE_WALK: never xzone's trap */
    if (plans[i] == HG_ZONE_WALK && zone_locked(ctx, i)) return 1;
  return 0;
}

int _hg_zones_walk_stable(const uint8_t *plans, uint32_t n, const struct hg_zwalk_ops *o,
                          void *ctx, uint32_t tries) {
  for (uint32_t attempt = 0;; attempt++) {
    int changed = 0, rc = 0;
    for (uint32_t i = 0; i < n && !changed; i++) {
      if (!_hg_zone_plan_walks(plans[i])) continue;
      if ((rc = o->walk_zone(ctx, i)) < 0) return rc;
      if ((rc = o->threads_changed(ctx)) < 0) return rc;
      changed = rc;
    }
    if (!changed) return 0;
    o->reset(ctx);
    if (attempt + 1 >= tries) return HG_EBUSY;
    if ((rc = o->refreeze(ctx)) < 0) return rc;
  }
}

static int overlaps_claimed(const struct hg_zrange *cl, size_t n, size_t *k, uint64_t lo,
                            uint64_t hi) {
  while (*k < n && cl[*k].hi <= lo) (*k)++;
  for (size_t j = *k; j < n && cl[j].lo < hi; j++)
    if (cl[j].hi > lo) return 1;
  return 0;
}

uint32_t _hg_zone_demote_unwalked(struct hg_cap *c, struct hg_zrange *claimed, size_t nclaimed) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t nseg = _hg_vec_len(&c->segments), k = 0, kc = 0;
  uint32_t demoted = 0;
  if (claimed) _hg_sort_u64key(claimed, nclaimed, sizeof *claimed);
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    while (k < nseg && segs[k].end <= r->start) k++;
    if (r->kind != HG_RK_HEAP) continue;
    int walked = 0; /* holds enumerated blocks (recorded ones do not count) */
    for (size_t j = k; j < nseg && segs[j].base < r->end && !walked; j++) walked = !segs[j].recorded;
    if (walked) continue;
    /* a walked zone's region without live blocks: free memory, not roots */
    if (claimed && overlaps_claimed(claimed, nclaimed, &kc, r->start, r->end)) continue;
    r->kind = HG_RK_OTHER;
    r->flags |= HG_RF_ANON;
    demoted++;
  }
  return demoted;
}
