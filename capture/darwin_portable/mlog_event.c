/*
 * mlog_event.c — what one malloc_logger call means for the allocation
 * recorder (the Darwin hook, capture/stacks/darwin/alloc_logger.c, passes
 * every call here), as plain logic unit-tested on Linux against a fake
 * libmalloc (tests/unit/test_darwin_mlog.c).
 *
 * The calls, libmalloc-792.41.1 src/malloc.c (type bits from
 * private/stack_logging.h: alloc 2, dealloc 4, zone 8, cleared 64):
 *   malloc, valloc, memalign/aligned_alloc, batch_malloc, malloc_with_options
 *     (_malloc_zone_malloc_instrumented_or_legacy, _malloc_zone_valloc,
 *     _malloc_zone_memalign, malloc_zone_batch_malloc,
 *     malloc_zone_malloc_with_options_np): ALLOCATE, arg1 = zone, arg2 =
 *     the requested size, result = the block, after the zone returned it;
 *   calloc (_malloc_zone_calloc_instrumented_or_legacy): ALLOCATE | CLEARED,
 *     arg2 = num_items * size (requested);
 *   realloc (_malloc_zone_realloc): ALLOCATE | DEALLOCATE, arg2 = the old
 *     block, arg3 = the requested new size, result = the new block (NULL
 *     when the zone failed and kept the old one), after the zone ran;
 *   free, free_definite_size, batch_free (malloc_zone_free,
 *     malloc_zone_free_definite_size, malloc_zone_batch_free; free() goes
 *     there through find_zone_and_free whenever a logger is set, _free):
 *     DEALLOCATE, arg2 = the block, before the zone frees it.
 * The logged size is what the caller asked for. A block's usable size —
 * what malloc_size reports, what the zone's enumerator reports and what a
 * capture must scan (CoreFoundation grows into malloc_size's slack) — is
 * asked of libmalloc (sink->size: malloc_size, which finds the block's zone
 * with each zone's size(), _find_registered_zone) when the block is new
 * and kept in the live map (hg_rec_config.sizes), so a free needs no
 * lookup and a capture needs no zone call.
 * The zone in arg1 is not the block's owner: _malloc_zone_malloc resolves
 * the default zone to malloc_zones[0] (nano v2 when on), which hands sizes
 * above its limit to its helper zone inside its own malloc; so nothing here
 * keys on it.
 *
 * Pure; never calls malloc (the sink's functions are the hook's).
 */
#include "capture/darwin_portable/darwin_portable.h"
#include "capture/stacks/alloc_record.h"

static void new_block(const struct hg_mlog_sink *s, uintptr_t p, uint64_t requested, uint32_t skip) {
  uint64_t size = s->size(s->ctx, p);
  if (size) s->add(s->ctx, p, requested, size, skip); /* 0: no registered zone's block */
}

/* The size a remove counts: the map's own when it keeps sizes. */
static uint64_t gone_size(struct hg_rec *r, const struct hg_mlog_sink *s, uintptr_t p) {
  return r->sizes || !p ? 0 : s->size(s->ctx, p);
}

void _hg_mlog_event(struct hg_rec *r, int recording, uint32_t type, uintptr_t a2, uintptr_t a3,
                    uintptr_t result, uint32_t skip, const struct hg_mlog_sink *s) {
  uint32_t both = HG_MLOG_ALLOCATE | HG_MLOG_DEALLOCATE;
  if ((type & both) == both) { /* realloc */
    /* a failed realloc (NULL for a non-zero size) left the old block live;
     * a realloc to 0 freed it (szone_realloc, magazine_malloc.c:462-467) */
    if (a2 && (result || a3 == 0)) _hg_rec_remove(r, a2, gone_size(r, s, result));
    if (result && recording) new_block(s, result, a3, skip);
  } else if (type & HG_MLOG_DEALLOCATE) {
    if (a2) _hg_rec_remove(r, a2, gone_size(r, s, a2));
  } else if ((type & HG_MLOG_ALLOCATE) && result && recording) {
    new_block(s, result, a2, skip);
  }
}
