/*
 * zones.c — the live blocks of every libmalloc zone, under the freeze
 * protocol of zone_policy.c (which cites the libmalloc lines it rests on;
 * docs/capture.md, Darwin section, gives the whole protocol).
 *
 * Before the freeze: malloc_get_all_zones (with an in-process memory reader
 * that hands back the address itself, so nothing is copied or allocated)
 * lists the zones; each gets a plan (walk; xzone: walk, never zone_locked;
 * nano v2: nano_walk.c over its metadata; or not walked and why) and a
 * heap named after it ("… (not walked: why)" when refused); the
 * stack-logging lock query is resolved with dlsym, and so is the ObjC
 * runtime's tagged-pointer mask (hg_cap.nonptr_mask: words with a low tag
 * bit are never followed).
 * While frozen: _hg_plat_heap_busy asks the stack-logging lock and each
 * walked zone's introspect->zone_locked (a try-lock, never waits); the
 * orchestrator thaws, waits and re-freezes while any is held (bounded,
 * then HG_EBUSY). The walk calls each walked zone's enumerator with
 * MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE and a memory
 * reader that hands back the address only when the range lies in the
 * capture's VM regions (else the enumerator gets KERN_FAILURE); the
 * recorder (zone_ranges.c) appends live blocks to capture scratch
 * (zone_blocks.c turns them into segments and nodes) and the zone's
 * regions to a fixed table. After each zone the thread list is compared
 * with the frozen set: a thread the kernel made meanwhile ran during the
 * enumeration, so the walk is redone after a new freeze (zone_policy.c
 * _hg_zones_walk_stable; HG_EBUSY after HG_ZWALK_TRIES). Zones that are not
 * walked: when the allocation recorder keeps every block with its size
 * (hg_stacks_start without sampling, capture/stacks/darwin/alloc_logger.c),
 * its live map lists their blocks (zone_recorded.c: the blocks in memory no
 * walked zone touched), else heap_status says which zones were not walked
 * and how to get their blocks. Malloc regions no walked zone claims are
 * then scanned as root memory (never false leaks), around the listed
 * blocks.
 *
 * While frozen: no malloc, no locks taken (the zones' locks are only
 * try-locked by zone_locked, and nobody else runs).
 */
#include <dlfcn.h>
#include <mach/mach.h>
#include <malloc/malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/stacks/alloc_record.h"
#include "capture/darwin/darwin.h"
#include "capture/classify/objc.h"
#include "capture/platform.h"

#define MAX_ZONES 64u
#define MAX_CLAIMED 16384u /* zone regions; bss, touched only as used */

_Static_assert(sizeof(vm_range_t) == sizeof(struct hg_vmrange), "vm_range_t");
_Static_assert(offsetof(vm_range_t, size) == offsetof(struct hg_vmrange, size), "vm_range_t");
_Static_assert(MALLOC_PTR_IN_USE_RANGE_TYPE == HG_MALLOC_PTR_IN_USE, "range type");
_Static_assert(MALLOC_PTR_REGION_RANGE_TYPE == HG_MALLOC_PTR_REGION, "range type");
_Static_assert(MALLOC_ADMIN_REGION_RANGE_TYPE == HG_MALLOC_ADMIN_REGION, "range type");

static struct hg_zrange claimed[MAX_CLAIMED];

static struct {
  malloc_zone_t *zone[MAX_ZONES];
  uint32_t heap[MAX_ZONES];
  uint8_t plan[MAX_ZONES];
  const char *name[MAX_ZONES];
  struct hg_nano_layout nano[MAX_ZONES];
  uint32_t n;
  boolean_t (*msl_locked)(void);
  struct hg_cap *c; /* the capture the reader checks against (walk only) */
  struct hg_zclaims cl;
  size_t mark;
  int full;
  uint32_t walked;
  int rec_on;               /* the live map lists the zones not walked      */
  struct hg_zrec_plan rplan;
} Z;

static kern_return_t in_process_reader(task_t task, vm_address_t addr, vm_size_t size, void **out) {
  (void)task;
  (void)size;
  *out = (void *)addr;
  return KERN_SUCCESS;
}

/* [addr, addr + size) inside the capture's VM regions, without a hole, its
 * first region readable. Looser than _hg_readable on purpose: an xzone
 * segment body (the enumerator maps it whole) holds guard slices, which
 * xzone_introspect.c enumerates like chunks but never reads. */
static int mapped(uint64_t addr, uint64_t size) {
  const struct hg_cap *c = Z.c;
  if (!c || addr + size < addr) return 0;
  int64_t ri = _hg_region_find(c, addr);
  if (ri < 0) return 0;
  const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
  if (!(r->prot & HG_PROT_READ)) return 0;
  uint64_t end = addr + size;
  for (size_t i = (size_t)ri; r->end < end;) {
    if (++i >= _hg_vec_len(&c->regions)) return 0;
    const struct hg_cregion *nx = _hg_vec_at(&c->regions, i);
    if (nx->start != r->end) return 0;
    r = nx;
  }
  return 1;
}

static kern_return_t checked_reader(task_t task, vm_address_t addr, vm_size_t size, void **out) {
  (void)task;
  if (!mapped(addr, size)) return KERN_FAILURE;
  *out = (void *)addr;
  return KERN_SUCCESS;
}

static const void *nano_map(void *ctx, uint64_t addr, uint64_t len) {
  (void)ctx;
  return _hg_readable(Z.c, addr, len) ? (const void *)(uintptr_t)addr : NULL;
}

/* introspect->zone_type (version >= 14): the field after task_statistics
 * (libmalloc-792.41.1 include/malloc/malloc.h); older SDKs lack it. */
static uint32_t zone_type(const malloc_zone_t *z) {
  if (z->version < 14 || !z->introspect) return 0;
  unsigned t;
  memcpy(&t, (const char *)z->introspect + offsetof(malloc_introspection_t, task_statistics) +
                 sizeof(void *), sizeof t);
  return t;
}

/* The nano v2 zone's layout, checked against the helper zone it names
 * (nano_walk.c); 0 when recognised. nanozonev2_t's first part is padded to
 * libmalloc's compile-time PAGE_MAX_SIZE (16 KiB on arm64, 4 KiB on
 * x86_64); its bytes are copied with vm_read_overwrite, which fails
 * instead of faulting should the guess run past the zone's mapping. */
static uint8_t zone_copy[PAGE_MAX_SIZE + 16384];

static int nano_layout(malloc_zone_t *z, malloc_zone_t *helper, struct hg_nano_layout *out) {
  vm_size_t got = 0;
  if (vm_read_overwrite(mach_task_self(), (vm_address_t)z, sizeof zone_copy,
                        (vm_address_t)zone_copy, &got) != KERN_SUCCESS)
    return HG_EFORMAT;
  return _hg_nano_layout_from_zone(zone_copy, (size_t)got, PAGE_MAX_SIZE,
                                   (uint64_t)(uintptr_t)helper, out);
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
  malloc_zone_t *helper = NULL;
  for (unsigned i = 0; i < count; i++) {
    malloc_zone_t *z = (malloc_zone_t *)zones[i];
    if (z && z->zone_name && strcmp(z->zone_name, "MallocHelperZone") == 0) helper = z;
  }
  /* the recorder lists the blocks of zones not walked, or says why not */
  const struct hg_rec *rec = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  const char *why_not = rec ? _hg_stacks_unlisted_why(rec, c->mode)
                            : "record their blocks with hg_stacks_start (Swift: "
                              "HeapGraph.startRecordingAllocationStacks) before the capture";
  Z.rec_on = !why_not;
  uint32_t walked = 0;
  for (unsigned i = 0; i < count && Z.n < MAX_ZONES; i++) {
    malloc_zone_t *z = (malloc_zone_t *)zones[i];
    if (!z) continue;
    struct hg_zone_facts f = {z->zone_name, z->version, z->introspect && z->introspect->enumerator,
                              z->introspect && z->introspect->zone_locked, helper != NULL,
                              zone_type(z), 0};
    if (helper && z != helper && z->zone_name && !strcmp(z->zone_name, "DefaultMallocZone")) {
      f.nano_layout_ok = nano_layout(z, helper, &Z.nano[Z.n]) == 0;
      /* libmalloc read the same variable at start-up (nanov2_init); the
       * boot-argument form (nanov2_size_class_blocks) is not seen here */
      _hg_nano_units_parse(getenv("MallocNanoSizeClassBlocks"), Z.nano[Z.n].units);
    }
    int plan = _hg_zone_plan(&f);
    char named[64], label[160];
    const char *zn = z->zone_name;
    if (!zn) {
      snprintf(named, sizeof named, "malloc zone %u", i);
      zn = named;
    }
    uint32_t id = 0;
    int walks = _hg_zone_plan_walks(plan);
    if (hg_writer_heap(c->w, _hg_zone_heap_name(zn, plan, !walks && Z.rec_on, label, sizeof label), &id) != 0)
      return HG_ENOMEM;
    Z.zone[Z.n] = z;
    Z.heap[Z.n] = id;
    Z.plan[Z.n] = (uint8_t)plan;
    Z.name[Z.n] = z->zone_name;
    Z.n++;
    if (!walks) {
      c->heap_errors++; /* loud: counted, and named in the heap record */
      continue;
    }
    walked++;
  }
  char unwalked[160];
  int shared = 0;
  if (_hg_zone_recorded_plan(Z.plan, Z.heap, Z.name, Z.n, &Z.rplan, &shared, unwalked, sizeof unwalked)) {
    _hg_zone_recorded_note(c->heap_reason, sizeof c->heap_reason, unwalked, why_not);
    uint32_t id = 0;
    if (shared && Z.rec_on) {
      if (hg_writer_heap(c->w, "recorded blocks of the zones not walked (not nano)", &id) != 0) return HG_ENOMEM;
      Z.rplan.other_heap = id;
    }
  } else {
    Z.rec_on = 0; /* every zone is walked */
  }
  Z.msl_locked = (boolean_t(*)(void))dlsym(RTLD_DEFAULT, "msl_stack_logging_locked");
  /* ObjC tagged pointers with low tag bits (macOS x86_64) are never edges */
  const uintptr_t *tm = dlsym(RTLD_DEFAULT, "objc_debug_taggedpointer_mask");
  c->nonptr_mask = tm ? _hg_objc_nonptr_mask(*tm) : 0;
  if (walked == 0 && !Z.rec_on) { /* _hg_stacks_heap_plan adds how to get blocks */
    c->heap_status = HG_EUNSUPPORTED;
    snprintf(c->heap_reason, sizeof c->heap_reason, "no malloc zone can be enumerated safely (%u zones: %s)",
             count, unwalked);
  }
  return 0;
}

static int zone_locked(void *ctx, uint32_t i) {
  (void)ctx;
  /* _hg_zones_busy asks HG_ZONE_WALK zones only: never xzone (xzm_locked
   * traps), never a NULL zone_locked */
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
};

static void recorder(task_t task, void *ctx, unsigned type, vm_range_t *ranges, unsigned n) {
  struct rec_ctx *x = ctx;
  (void)task;
  if (Z.full) return;
  if (_hg_zone_ranges_add(x->c, &Z.cl, x->heap, type, (const struct hg_vmrange *)ranges, n))
    Z.full = 1;
}

static int nano_block(void *ctx, uint64_t addr, uint64_t size) {
  struct rec_ctx *x = ctx;
  struct hg_vmrange r = {addr, size};
  return _hg_zone_ranges_add(x->c, &Z.cl, x->heap, HG_MALLOC_PTR_IN_USE, &r, 1) ? HG_ENOMEM : 0;
}

static int nano_region(void *ctx, uint64_t addr, uint64_t size) {
  struct rec_ctx *x = ctx;
  struct hg_vmrange r = {addr, size};
  _hg_zone_ranges_add(x->c, &Z.cl, x->heap, HG_MALLOC_PTR_REGION, &r, 1);
  return 0;
}

static int walk_zone(void *ctx, uint32_t i) {
  struct hg_cap *c = ctx;
  struct rec_ctx x = {c, Z.heap[i]};
  if (Z.plan[i] == HG_ZONE_NANO_OWN) {
    struct hg_nano_sink sink = {nano_block, nano_region, &x};
    struct hg_nano_stats st;
    int rc = _hg_nano_walk(&Z.nano[i], nano_map, NULL, &sink, &st);
    if (rc == HG_ENOMEM) return rc;
    if (rc || st.unreadable || st.bad_lists) c->heap_errors++;
    if (!rc) Z.walked++;
    return 0;
  }
  kern_return_t kr = Z.zone[i]->introspect->enumerator(
      mach_task_self(), &x, MALLOC_PTR_IN_USE_RANGE_TYPE | MALLOC_PTR_REGION_RANGE_TYPE,
      (vm_address_t)Z.zone[i], checked_reader, recorder);
  if (Z.full) return HG_ENOMEM;
  if (kr != KERN_SUCCESS) c->heap_errors++;
  else Z.walked++;
  return 0;
}

static int threads_changed(void *ctx) {
  (void)ctx;
  return _hg_darwin_threads_changed();
}

static void reset(void *ctx) {
  struct hg_cap *c = ctx;
  _hg_vec_truncate(&c->work, Z.mark);
  Z.cl.n = 0;
  Z.cl.overflow = 0;
  Z.full = 0;
  Z.walked = 0;
}

/* A new freeze after the kernel made a thread during the walk: the
 * regions and threads are read again (they may have changed meanwhile). */
static int refreeze(void *ctx) {
  struct hg_cap *c = ctx;
  for (uint32_t attempt = 0;; attempt++) {
    _hg_plat_thaw(c);
    struct timespec ts = {0, 100000L * (attempt + 1)};
    nanosleep(&ts, NULL);
    int rc = _hg_plat_freeze(c);
    if (rc) return rc < 0 ? rc : HG_EBUSY;
    c->busy_retries++;
    if (!_hg_plat_heap_busy(c) && !_hg_stacks_busy()) break;
    if (attempt + 1 >= HG_ZWALK_TRIES) {
      _hg_plat_thaw(c);
      return HG_EBUSY;
    }
  }
  c->stacks_unapplied = _hg_stacks_flush(); /* as capture.c after a freeze */
  _hg_vec_truncate(&c->regions, 0);
  int rc = _hg_plat_regions(c);
  if (!rc) rc = _hg_plat_threads_finish(c);
  return rc;
}

static const struct hg_zwalk_ops WALK_OPS = {walk_zone, threads_changed, reset, refreeze};

int _hg_plat_heap_walk(struct hg_cap *c) {
  Z.c = c;
  Z.mark = _hg_vec_len(&c->work);
  Z.cl.r = claimed;
  Z.cl.max = MAX_CLAIMED;
  reset(c);
  int rc = _hg_zones_walk_stable(Z.plan, Z.n, &WALK_OPS, c, HG_ZWALK_TRIES);
  if (rc) { /* HG_EBUSY: the kernel kept making threads; no torn heap */
    _hg_vec_truncate(&c->work, Z.mark);
    return rc;
  }
  if (Z.walked == 0 && !Z.rec_on) {
    _hg_vec_truncate(&c->work, Z.mark);
    c->heap_status = HG_EUNSUPPORTED;
    strcpy(c->heap_reason, "no malloc zone could be enumerated safely");
    return HG_EUNSUPPORTED;
  }
  if (Z.rec_on && Z.cl.overflow) { /* walked zones' memory unknown: none listed */
    c->heap_errors++;
    size_t u = strlen(c->heap_reason);
    snprintf(c->heap_reason + u, sizeof c->heap_reason - u, " (not listed this time: too many zone regions)");
  } else if (Z.rec_on) {
    struct hg_zrec_stats st;
    rc = _hg_zone_recorded_collect(c, __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE), Z.mark, claimed,
                                   Z.cl.n, &Z.rplan, &st);
    if (rc == HG_ENOMEM) {
      _hg_vec_truncate(&c->work, Z.mark);
      return rc;
    }
    c->heap_errors += st.unreadable;
    c->recorded_blocks = st.listed;
  }
  struct hg_zblock *blocks = (struct hg_zblock *)_hg_vec_at(&c->work, Z.mark);
  size_t n = (_hg_vec_len(&c->work) - Z.mark) * 8 / sizeof *blocks;
  rc = _hg_zone_blocks_commit(c, blocks, n);
  _hg_vec_truncate(&c->work, Z.mark);
  if (rc) return rc;
  if (Z.cl.overflow) c->heap_errors++;
  _hg_zone_demote_unwalked(c, Z.cl.overflow ? NULL : claimed, Z.cl.n);
  return 0;
}
