/*
 * zones.c — the live blocks of every libmalloc zone, under the freeze
 * protocol of zone_policy.c (which cites the libmalloc lines it rests on;
 * docs/capture.md, Darwin section, gives the whole protocol).
 *
 * Before the freeze: malloc_get_all_zones (with an in-process memory reader
 * that hands back the address itself, so nothing is copied or allocated)
 * lists the zones; each gets a plan (walk, or not walked and why) and a
 * heap named after it ("… (not walked: why)" when refused); the
 * stack-logging lock query is resolved with dlsym, and so is the ObjC
 * runtime's tagged-pointer mask (hg_cap.nonptr_mask: words with a low tag
 * bit are never followed).
 * While frozen: _hg_plat_heap_busy asks the stack-logging lock and each
 * walked zone's introspect->zone_locked (a try-lock, never waits); the
 * orchestrator thaws, waits and re-freezes while any is held (bounded,
 * then HG_EBUSY). The walk calls each walked zone's enumerator with
 * MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE; the recorder
 * appends live blocks to capture scratch (zone_blocks.c turns them into
 * segments and nodes) and the zone's regions to a fixed table. Malloc
 * regions no walked zone claims are then scanned as root memory (never
 * false leaks).
 *
 * While frozen: no malloc, no locks taken (the zones' locks are only
 * try-locked by zone_locked, and nobody else runs).
 */
#include <dlfcn.h>
#include <mach/mach.h>
#include <malloc/malloc.h>
#include <stdio.h>
#include <string.h>

#include "capture/darwin/darwin.h"
#include "capture/classify/objc.h"
#include "capture/platform.h"

#define MAX_ZONES 64u
#define MAX_CLAIMED 16384u /* zone regions; bss, touched only as used */

static struct hg_zrange claimed[MAX_CLAIMED];
static size_t nclaimed;
static int claimed_overflow;

static struct {
  malloc_zone_t *zone[MAX_ZONES];
  uint32_t heap[MAX_ZONES];
  uint8_t plan[MAX_ZONES];
  uint32_t n;
  boolean_t (*msl_locked)(void);
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
  int helper = 0;
  for (unsigned i = 0; i < count; i++) {
    malloc_zone_t *z = (malloc_zone_t *)zones[i];
    if (z && z->zone_name && strcmp(z->zone_name, "MallocHelperZone") == 0) helper = 1;
  }
  uint32_t walked = 0;
  for (unsigned i = 0; i < count && Z.n < MAX_ZONES; i++) {
    malloc_zone_t *z = (malloc_zone_t *)zones[i];
    if (!z) continue;
    struct hg_zone_facts f = {z->zone_name, z->version, z->introspect && z->introspect->enumerator,
                              z->introspect && z->introspect->zone_locked, helper};
    int plan = _hg_zone_plan(&f);
    char named[64], label[160];
    const char *zn = z->zone_name;
    if (!zn) {
      snprintf(named, sizeof named, "malloc zone %u", i);
      zn = named;
    }
    uint32_t id = 0;
    if (hg_writer_heap(c->w, _hg_zone_heap_name(zn, plan, label, sizeof label), &id) != 0)
      return HG_ENOMEM;
    Z.zone[Z.n] = z;
    Z.heap[Z.n] = id;
    Z.plan[Z.n] = (uint8_t)plan;
    Z.n++;
    if (plan != HG_ZONE_WALK) {
      c->heap_errors++; /* loud: counted, and named in the heap record */
      continue;
    }
    walked++;
  }
  Z.msl_locked = (boolean_t(*)(void))dlsym(RTLD_DEFAULT, "msl_stack_logging_locked");
  /* ObjC tagged pointers with low tag bits (macOS x86_64) are never edges */
  const uintptr_t *tm = dlsym(RTLD_DEFAULT, "objc_debug_taggedpointer_mask");
  c->nonptr_mask = tm ? _hg_objc_nonptr_mask(*tm) : 0;
  if (walked == 0) {
    c->heap_status = HG_EUNSUPPORTED;
    snprintf(c->heap_reason, sizeof c->heap_reason,
             "no malloc zone can be enumerated safely (%u zones, none with zone_locked)", count);
  }
  return 0;
}

static int zone_locked(void *ctx, uint32_t i) {
  (void)ctx;
  return Z.zone[i]->introspect->zone_locked(Z.zone[i]) != 0;
}

static int msl_locked(void *ctx) {
  (void)ctx;
  return Z.msl_locked() != 0;
}

int _hg_plat_heap_busy(struct hg_cap *c) {
  if (c->heap_status) return 0;
  return _hg_zones_busy(Z.plan, Z.n, zone_locked, Z.msl_locked ? msl_locked : NULL, NULL);
}

struct rec_ctx {
  struct hg_cap *c;
  uint64_t heap;
  int full;
};

static void recorder(task_t task, void *ctx, unsigned type, vm_range_t *ranges, unsigned n) {
  struct rec_ctx *x = ctx;
  (void)task;
  if (type & MALLOC_PTR_REGION_RANGE_TYPE) {
    for (unsigned i = 0; i < n; i++) {
      if (nclaimed >= MAX_CLAIMED) {
        claimed_overflow = 1;
        break;
      }
      claimed[nclaimed].lo = ranges[i].address;
      claimed[nclaimed].hi = ranges[i].address + ranges[i].size;
      nclaimed++;
    }
    return;
  }
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
  nclaimed = 0;
  claimed_overflow = 0;
  for (uint32_t i = 0; i < Z.n; i++) {
    if (Z.plan[i] != HG_ZONE_WALK) continue; /* counted at prepare */
    struct rec_ctx x = {c, Z.heap[i], 0};
    kern_return_t kr = Z.zone[i]->introspect->enumerator(
        mach_task_self(), &x, MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE,
        (vm_address_t)Z.zone[i],
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
  if (rc) return rc;
  if (claimed_overflow) c->heap_errors++;
  _hg_zone_demote_unwalked(c, claimed_overflow ? NULL : claimed, nclaimed);
  rc = _hg_darwin_threads_late(c);
  return rc < 0 ? rc : 0;
}
