/*
 * regions.c — the VM map of the task through vm_region_recurse_64, descending
 * into submaps (the dyld shared cache): range, protection, user_tag, share
 * mode, resident/dirty/swapped bytes. Names: on macOS proc_regionfilename
 * names file-backed regions (libproc.h is public only in the macOS SDK); on
 * iOS, whose SDK declares no way to name a mapping's file, a region inside a
 * loaded image gets the image's dyld path; the user_tag names the others
 * (darwin_tags.c). Marks heapgraph's own memory, stacks, malloc regions and
 * image regions, and anonymous memory (HG_RF_ANON): external_pager is 0
 * when every VM object in the region's shadow chain is internal, i.e. no
 * file (xnu osfmk/vm/vm_map.c, vm_map_region_walk: `if (!(obj->internal))
 * extended->external_pager = 1`, for the object and each shadow).
 *
 * Runs frozen: Mach traps and one syscall per region, results in capture
 * scratch; never malloc.
 */
#include <TargetConditionals.h>
#include <mach/mach.h>
#include <string.h>
#include <unistd.h>

#include "capture/stacks/alloc_record.h"
#include "capture/darwin/darwin.h"
#include "capture/platform.h"

#if TARGET_OS_OSX
#include <libproc.h>
#endif

#define MAX_STEPS (1u << 22)

static uint32_t image_of(uint64_t lo, uint64_t hi) {
  size_t n;
  const struct hg_dseg *s = _hg_darwin_segs(&n);
  size_t a = 0, b = n; /* first segment with lo >= hi, then look back */
  while (a < b) {
    size_t mid = (a + b) / 2;
    if (s[mid].lo < hi) a = mid + 1;
    else b = mid;
  }
  for (size_t k = a; k-- > 0;) {
    if (s[k].hi > lo) return (uint32_t)s[k].image;
    if (a - k > 64) break; /* segments do not nest deeply */
  }
  return HG_NO_OWNER;
}

static int add(struct hg_cap *c, uint64_t lo, uint64_t hi, const struct vm_region_submap_info_64 *in) {
  struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
  if (!r) return HG_ENOMEM;
  uint64_t page = vm_page_size;
  r->start = lo;
  r->end = hi;
  r->prot = ((in->protection & VM_PROT_READ) ? HG_PROT_READ : 0) |
            ((in->protection & VM_PROT_WRITE) ? HG_PROT_WRITE : 0) |
            ((in->protection & VM_PROT_EXECUTE) ? HG_PROT_EXEC : 0);
  if (in->share_mode == SM_SHARED || in->share_mode == SM_TRUESHARED ||
      in->share_mode == SM_SHARED_ALIASED)
    r->prot |= HG_PROT_SHARED;
  r->rss = (uint64_t)in->pages_resident * page;
  r->dirty = (uint64_t)in->pages_dirtied * page;
  r->swap = (uint64_t)in->pages_swapped_out * page;
  r->image = image_of(lo, hi);
  r->tag = in->user_tag;
  if (!in->external_pager) r->flags |= HG_RF_ANON;
#if TARGET_OS_OSX
  char path[PROC_PIDPATHINFO_MAXSIZE];
  int k = proc_regionfilename(getpid(), lo, path, sizeof path);
  if (k > 0)
    r->name = _hg_str_add(&c->strings, path, (size_t)k < sizeof path ? (size_t)k : sizeof path - 1);
#else
  if (r->image != HG_NO_OWNER && r->image < _hg_vec_len(&c->images))
    r->name = ((const struct hg_cimage *)_hg_vec_at(&c->images, r->image))->path;
#endif
  if (!r->name) {
    char buf[32];
    const char *label = _hg_darwin_tag_label(in->user_tag, buf, sizeof buf);
    r->name = _hg_str_add(&c->strings, label, strlen(label));
  }
  if (_hg_scratch_owns(&c->scratch, lo, hi) || _hg_rec_owns(lo, hi)) { /* ours (the recorder's tables too) */
    r->kind = HG_RK_OWN;
    return 0;
  }
  for (uint32_t i = 0; i < c->own_count; i++)
    if (lo < c->own_hi[i] && hi > c->own_lo[i]) r->kind = HG_RK_OWN;
  if (r->kind == HG_RK_OWN) return 0;
  r->kind = r->image != HG_NO_OWNER ? HG_RK_IMAGE : _hg_darwin_tag_kind(in->user_tag);
  return 0;
}

int _hg_plat_regions_finish(struct hg_cap *c) {
  (void)c; /* the figures come with the regions */
  return 0;
}

int _hg_plat_regions(struct hg_cap *c) {
  task_t task = mach_task_self();
  mach_vm_address_t addr = 0;
  natural_t depth = 0;
  for (uint32_t step = 0; step < MAX_STEPS; step++) {
    mach_vm_size_t size = 0;
    struct vm_region_submap_info_64 info;
    mach_msg_type_number_t count = VM_REGION_SUBMAP_INFO_COUNT_64;
    vm_address_t a = (vm_address_t)addr;
    vm_size_t z = 0;
    kern_return_t kr = vm_region_recurse_64(task, &a, &z, &depth, (vm_region_recurse_info_t)&info,
                                            &count);
    if (kr != KERN_SUCCESS) return 0; /* KERN_INVALID_ADDRESS: past the last region */
    addr = a;
    size = z;
    if (info.is_submap) {
      depth++; /* look inside at the same address */
      continue;
    }
    if (size == 0 || addr + size < addr) return 0;
    int rc = add(c, addr, addr + size, &info);
    if (rc) return rc;
    addr += size;
  }
  return HG_ELIMIT;
}
