/*
 * alloc_heap.c — a heap the capture cannot walk, listed from the allocation
 * recorder instead (portable): when the backend refused the allocator (on
 * Linux any malloc that is not glibc's: jemalloc, tcmalloc, mimalloc …) and
 * the recorder tracks every block, its live map is the list of blocks —
 * address, stack, and the usable size the allocator itself reports — the
 * way OOMDetector lists blocks on iOS. Otherwise the snapshot says which
 * heap was not walked and how to get its blocks.
 *
 * Sizes: when the recorder keeps each block's size (hg_rec_config.sizes:
 * the Darwin hook, which has it at allocation time) they come from the
 * live map, in any mode. Otherwise the live map holds addresses and stacks
 * only, so each block's size is asked of its allocator
 * (malloc_usable_size: a lock-free lookup in jemalloc, tcmalloc and
 * mimalloc). That is done in fork mode only, in the fork child, where a
 * lookup that went wrong could end the child but never the app; in
 * suspend mode the heap is not listed (the reason says so).
 * Every block is checked against the readable regions before it becomes a
 * node, and the regions that hold blocks become heap regions (not scanned as
 * roots), as the glibc walker marks its arenas.
 */
#include <stdio.h>
#include <string.h>

#include "capture/internal.h"
#include "capture/stacks/alloc_record.h"

/* Appends to c->heap_reason what the snapshot should say about the heap. */
static void say(struct hg_cap *c, const char *why) {
  size_t n = strlen(c->heap_reason);
  snprintf(c->heap_reason + n, sizeof c->heap_reason - n, "; this heap was not walked (no heap nodes): %s", why);
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

const char *_hg_stacks_unlisted_why(const struct hg_rec *r, int mode) {
  if (!r) return "record its blocks with `heapgraph run --stacks` (HEAPGRAPH_STACKS=1, or hg_stacks_start)";
  if (r->sample_bytes)
    return "the allocation recorder samples (--sample-bytes), so it does not list every block; "
           "use --stacks without --sample-bytes";
  if (r->sizes) return NULL; /* sizes from the map: no allocator call */
  if (!_hg_hook_usable) return "the allocator reports no block sizes (malloc_usable_size)";
  if (mode != HG_MODE_FORK) return "blocks are listed from the allocation recorder in fork mode only";
  return NULL;
}

int _hg_stacks_heap_plan(struct hg_cap *c) {
  c->rec_heap = 0;
  if (!c->heap_status) return 0;
  const struct hg_rec *r = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  const char *why = _hg_stacks_unlisted_why(r, c->mode);
  if (why) say(c, why);
  else c->rec_heap = 1;
  if (*_hg_hook_allocator && c->allocator && !strcmp(c->allocator, "unknown"))
    c->allocator = base_name(_hg_hook_allocator);
  return c->rec_heap;
}

static int collect_one(void *ctx, uintptr_t addr, uint32_t id, uint64_t size) {
  struct hg_cap *c = ctx;
  (void)id;
  uint64_t *e = _hg_vec_push(&c->work, 2);
  if (!e) return HG_ENOMEM;
  e[0] = addr;
  e[1] = size;
  return 0;
}

int _hg_stacks_heap_walk(struct hg_cap *c) {
  const struct hg_rec *r = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  if (!c->rec_heap || !r || (!r->sizes && !_hg_hook_usable)) return HG_EUNSUPPORTED;
  size_t (*usable)(void *) = _hg_hook_usable;
  size_t mark = _hg_vec_len(&c->work);
  int rc = _hg_rec_each(r, collect_one, c);
  if (rc) return rc;
  size_t n = (_hg_vec_len(&c->work) - mark) / 2;
  uint64_t *e = _hg_vec_at(&c->work, mark);
  _hg_sort_u64key(e, n, 16);
  char name[96];
  snprintf(name, sizeof name, "recorded blocks (%s)", *_hg_hook_allocator ? base_name(_hg_hook_allocator) : "malloc");
  uint32_t heap = 0;
  if ((rc = hg_writer_heap(c->w, name, &heap))) return rc;
  uint64_t seg_end = 0;
  int open = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = e[2 * i];
    /* only now, with the address known readable, is its allocator asked */
    if (!_hg_readable(c, a, 8)) {
      c->heap_errors++;
      continue;
    }
    uint64_t size = (r->sizes ? e[2 * i + 1] : (uint64_t)usable((void *)(uintptr_t)a)) & ~(uint64_t)7;
    if (!size || !_hg_readable(c, a, size) || (open && a < seg_end && a + size > seg_end)) {
      c->heap_errors++;
      continue;
    }
    if (!open || a >= seg_end) {
      if (open) _hg_seg_end(c);
      const struct hg_cregion *rg = _hg_vec_at(&c->regions, (size_t)_hg_region_find(c, a));
      uint64_t end = rg->end > a + size ? rg->end : a + size;
      if (end - a > ((uint64_t)UINT32_MAX << 3)) end = a + size;
      if ((rc = _hg_seg_begin(c, a, end, HG_NODE_MALLOC, heap))) return rc;
      seg_end = end;
      open = 1;
    }
    if ((rc = _hg_node_add(c, a, size))) {
      if (rc != HG_EINVAL) return rc;
      c->heap_errors++; /* overlaps the previous block */
      continue;
    }
    c->recorded_blocks++;
    /* the regions holding blocks are the allocator's heap, not roots */
    for (int64_t ri = _hg_region_find(c, a); ri >= 0 && (size_t)ri < _hg_vec_len(&c->regions); ri++) {
      struct hg_cregion *rg = _hg_vec_at(&c->regions, (size_t)ri);
      if (rg->start >= a + size) break;
      if (rg->kind == HG_RK_OTHER) rg->kind = HG_RK_HEAP;
    }
  }
  if (open) _hg_seg_end(c);
  _hg_vec_truncate(&c->work, mark);
  c->heap_status = 0;
  snprintf(c->heap_reason, sizeof c->heap_reason, "ok: %s not walked, its blocks are the allocation recorder's",
           c->allocator);
  return 0;
}
