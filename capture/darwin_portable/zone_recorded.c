/*
 * zone_recorded.c — the blocks of malloc zones that are not walked, listed
 * from the allocation recorder's live map (the way OOMDetector lists blocks
 * on iOS), and what the snapshot says when they cannot be.
 *
 * Zones refused by the freeze protocol (zone_policy.c: nano v2 whose
 * layout was not recognised, zones without zone_locked, zones without an
 * enumerator) are never called while the process is frozen. When the
 * Darwin hook records every block (hg_stacks_start without sampling) the
 * live map holds each block's address, stack and usable size — malloc_size
 * asked at allocation time, never while frozen (mlog_event.c) — so their
 * blocks can still become nodes:
 *
 *   - a live-map block is a walked zone's when it lies in a VM region that
 *     a walked zone reported a block or a region in (the walk found it, or
 *     it was freed without a log: malloc_destroy_zone frees a zone's blocks
 *     unlogged, malloc.c malloc_destroy_zone); those are skipped;
 *   - the rest must lie in readable regions that are heap or anonymous
 *     memory (never a stack, an image, ours) and become blocks of the nano
 *     zone's heap when their region has the MALLOC_NANO tag (nano v2 maps
 *     its regions with VM_MEMORY_MALLOC_NANO: nano_malloc_common.c
 *     _nano_common_map_vm_space), else of the other refused zones' heap;
 *     the logged zone cannot say which zone owns a block (mlog_event.c);
 *   - they are marked recorded (HG_ZBLOCK_RECORDED): their segments do not
 *     make a region walked (_hg_zone_demote_unwalked), so the region is
 *     still scanned as root memory around them (scan.c): blocks allocated
 *     before recording started, or after hg_stacks_stop, are in no list,
 *     and what only they reference must not look leaked.
 *
 * Pure; never calls malloc (blocks go to c->work, capture scratch).
 */
#include <stdio.h>
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "capture/stacks/alloc_record.h"

/* Marks (HG_RF_ZWALKED) the regions a walked block or claimed range
 * overlaps; blocks and claims sorted. */
static void mark_walked(struct hg_cap *c, const struct hg_zblock *b, size_t nb,
                        const struct hg_zrange *cl, size_t ncl) {
  size_t kb = 0, kc = 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    r->flags &= ~HG_RF_ZWALKED;
    /* a block may span regions: keep it until it ends before this one */
    while (kb < nb && b[kb].addr + b[kb].size <= r->start) kb++;
    for (size_t j = kb; j < nb && b[j].addr < r->end; j++)
      if (b[j].addr + b[j].size > r->start) {
        r->flags |= HG_RF_ZWALKED;
        break;
      }
    while (kc < ncl && cl[kc].hi <= r->start) kc++;
    for (size_t j = kc; j < ncl && cl[j].lo < r->end; j++)
      if (cl[j].hi > r->start) {
        r->flags |= HG_RF_ZWALKED;
        break;
      }
  }
}

struct collect {
  struct hg_cap *c;
  const struct hg_zrec_plan *p;
  struct hg_zrec_stats *st;
};

/* 1 when [a, z) lies in contiguous readable regions that no walked zone
 * touched and that are heap or anonymous "other" memory; -1 when a walked
 * zone's region holds it; 0 when it is not such memory. *tag: the first
 * region's. */
static int placement(const struct hg_cap *c, uint64_t a, uint64_t z, uint32_t *tag) {
  int64_t ri = _hg_region_find(c, a);
  if (ri < 0) return 0;
  const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
  *tag = r->tag;
  for (size_t i = (size_t)ri;;) {
    if (r->flags & HG_RF_ZWALKED) return -1;
    if (!(r->prot & HG_PROT_READ) || (r->kind != HG_RK_HEAP && r->kind != HG_RK_OTHER)) return 0;
    if (r->end >= z) return 1;
    if (++i >= _hg_vec_len(&c->regions)) return 0;
    const struct hg_cregion *nx = _hg_vec_at(&c->regions, i);
    if (nx->start != r->end) return 0;
    r = nx;
  }
}

static int collect_one(void *ctx, uintptr_t addr, uint32_t id, uint64_t size) {
  struct collect *x = ctx;
  (void)id;
  uint64_t a = addr, z = a + (size & ~(uint64_t)7);
  uint32_t tag = 0;
  int where = z > a ? placement(x->c, a, z, &tag) : 0;
  if (where < 0) {
    x->st->in_walked++;
    return 0;
  }
  if (where == 0) {
    x->st->unreadable++;
    return 0;
  }
  uint64_t heap = tag == HG_VM_MEMORY_MALLOC_NANO && x->p->nano_heap != HG_ZREC_NONE ? x->p->nano_heap
                                                                                    : x->p->other_heap;
  if (heap == HG_ZREC_NONE) { /* no refused zone can own it: freed unlogged */
    x->st->unowned++;
    return 0;
  }
  struct hg_zblock *b = _hg_vec_push(&x->c->work, sizeof *b / 8);
  if (!b) return HG_ENOMEM;
  b->addr = a;
  b->size = z - a;
  b->heap = heap | HG_ZBLOCK_RECORDED;
  x->st->listed++;
  return 0;
}

int _hg_zone_recorded_collect(struct hg_cap *c, const struct hg_rec *r, size_t mark,
                              struct hg_zrange *claimed, size_t nclaimed,
                              const struct hg_zrec_plan *p, struct hg_zrec_stats *st) {
  memset(st, 0, sizeof *st);
  if (!r || !r->sizes) return HG_EUNSUPPORTED;
  struct hg_zblock *walked = (struct hg_zblock *)_hg_vec_at(&c->work, mark);
  size_t nw = (_hg_vec_len(&c->work) - mark) * 8 / sizeof *walked;
  _hg_sort_u64key(walked, nw, sizeof *walked);
  _hg_sort_u64key(claimed, nclaimed, sizeof *claimed);
  mark_walked(c, walked, nw, claimed, nclaimed);
  struct collect x = {c, p, st};
  return _hg_rec_each(r, collect_one, &x);
}

uint32_t _hg_zone_recorded_plan(const uint8_t *plans, const uint32_t *heaps, const char *const *names,
                                uint32_t n, struct hg_zrec_plan *p, int *shared, char *list, size_t size) {
  uint32_t unwalked = 0, others = 0;
  p->nano_heap = p->other_heap = HG_ZREC_NONE;
  if (size) *list = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (_hg_zone_plan_walks(plans[i])) continue;
    size_t u = strlen(list);
    if (u < size) snprintf(list + u, size - u, "%s%s", unwalked ? ", " : "", names[i] ? names[i] : "malloc zone");
    unwalked++;
    if (plans[i] == HG_ZONE_NANO) p->nano_heap = heaps[i];
    else if (others++ == 0) p->other_heap = heaps[i];
  }
  *shared = others > 1;
  if (*shared) p->other_heap = HG_ZREC_NONE; /* which of them owns a block is not known */
  return unwalked;
}

const char *_hg_zone_recorded_note(char *buf, size_t size, const char *zones, const char *why_not) {
  if (!why_not)
    snprintf(buf, size, "ok: %s not walked, their blocks are the allocation recorder's", zones);
  else
    snprintf(buf, size, "ok: %s not walked (their blocks are not heap nodes): %s", zones, why_not);
  return buf;
}
