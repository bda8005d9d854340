/*
 * zones.c — the live blocks of every libmalloc zone.
 *
 * Before the freeze: malloc_get_all_zones (with an in-process memory reader
 * that hands back the address itself, so nothing is copied or allocated)
 * lists the zones; each zone with an enumerator becomes a heap named after
 * the zone. While frozen: _hg_plat_heap_busy asks each zone whether one of
 * its locks is held (introspect->zone_locked, a try-lock, never waits);
 * the orchestrator thaws, waits and re-freezes while any is (bounded, then
 * HG_EBUSY). The walk calls each zone's introspect->enumerator with
 * MALLOC_PTR_IN_USE_RANGE_TYPE; the recorder appends to capture scratch and
 * zone_blocks.c turns the blocks into segments and nodes. Zones we cannot
 * ask about their locks (no zone_locked) are not enumerated (counted in
 * heap_errors): enumerating a zone whose lock a suspended thread holds
 * could read half-updated metadata.
 *
 * While frozen: no malloc, no locks taken (the zones' locks are only
 * try-locked by zone_locked, and nobody else runs).
 */
#include <mach/mach.h>
#include <malloc/malloc.h>
#include <stdio.h>
#include <string.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"

#define MAX_ZONES 64u

static struct {
  malloc_zone_t *zone[MAX_ZONES];
  uint32_t heap[MAX_ZONES];
  int lockable[MAX_ZONES];
  uint32_t n;
} Z;

static kern_return_t in_process_reader(task_t task, vm_address_t addr, vm_size_t size, void **out) {
  (void)task;
  (void)size;
  *out = (void *)addr;
  return KERN_SUCCESS;
}

int _hg_plat_heap_prepare(struct hg_cap *c) {
  vm_address_t *zones = NULL;
  unsigned count = 0;
  Z.n = 0;
  c->allocator = "darwin-malloc-zones";
  if (malloc_get_all_zones(mach_task_self(), in_process_reader, &zones, &count) != KERN_SUCCESS ||
      !zones) {
    c->heap_status = HG_EUNSUPPORTED;
    snprintf(c->heap_reason, sizeof c->heap_reason, "malloc_get_all_zones failed");
    return 0;
  }
  for (unsigned i = 0; i < count && Z.n < MAX_ZONES; i++) {
    malloc_zone_t *z = (malloc_zone_t *)zones[i];
    if (!z || !z->introspect || !z->introspect->enumerator) continue;
    char name[64];
    const char *zn = z->zone_name;
    if (!zn) {
      snprintf(name, sizeof name, "malloc zone %u", i);
      zn = name;
    }
    uint32_t id = 0;
    if (hg_writer_heap(c->w, zn, &id) != 0) return HG_ENOMEM;
    Z.zone[Z.n] = z;
    Z.heap[Z.n] = id;
    /* zone_locked is in the introspection table from version 5 on */
    Z.lockable[Z.n] = z->version >= 5 && z->introspect->zone_locked != NULL;
    Z.n++;
  }
  if (Z.n == 0) {
    c->heap_status = HG_EUNSUPPORTED;
    snprintf(c->heap_reason, sizeof c->heap_reason, "no malloc zone can be enumerated");
  }
  return 0;
}

int _hg_plat_heap_busy(struct hg_cap *c) {
  if (c->heap_status) return 0;
  for (uint32_t i = 0; i < Z.n; i++)
    if (Z.lockable[i] && Z.zone[i]->introspect->zone_locked(Z.zone[i])) return 1;
  return 0;
}

struct rec_ctx {
  struct hg_cap *c;
  uint64_t heap;
  int full;
};

static void recorder(task_t task, void *ctx, unsigned type, vm_range_t *ranges, unsigned n) {
  struct rec_ctx *x = ctx;
  (void)task;
  if (!(type & MALLOC_PTR_IN_USE_RANGE_TYPE) || x->full) return;
  for (unsigned i = 0; i < n; i++) {
    struct hg_zblock *b = _hg_vec_push(&x->c->work, sizeof *b / 8);
    if (!b) {
      x->full = 1;
      return;
    }
    b->addr = ranges[i].address;
    b->size = ranges[i].size;
    b->heap = x->heap;
  }
}

int _hg_plat_heap_walk(struct hg_cap *c) {
  size_t mark = _hg_vec_len(&c->work);
  uint32_t walked = 0;
  for (uint32_t i = 0; i < Z.n; i++) {
    if (!Z.lockable[i]) {
      c->heap_errors++;
      continue;
    }
    struct rec_ctx x = {c, Z.heap[i], 0};
    kern_return_t kr = Z.zone[i]->introspect->enumerator(
        mach_task_self(), &x, MALLOC_PTR_IN_USE_RANGE_TYPE, (vm_address_t)Z.zone[i],
        in_process_reader, recorder);
    if (x.full) {
      _hg_vec_truncate(&c->work, mark);
      return HG_ENOMEM;
    }
    if (kr != KERN_SUCCESS) c->heap_errors++;
    else walked++;
  }
  if (walked == 0) {
    _hg_vec_truncate(&c->work, mark);
    c->heap_status = HG_EUNSUPPORTED;
    strcpy(c->heap_reason, "no malloc zone could be enumerated safely");
    return HG_EUNSUPPORTED;
  }
  struct hg_zblock *blocks = (struct hg_zblock *)_hg_vec_at(&c->work, mark);
  size_t n = (_hg_vec_len(&c->work) - mark) * 8 / sizeof *blocks;
  int rc = _hg_zone_blocks_commit(c, blocks, n);
  _hg_vec_truncate(&c->work, mark);
  return rc;
}
