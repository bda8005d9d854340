/*
 * images.c — loaded Mach-O images through dyld (_dyld_image_count,
 * _dyld_get_image_header, _dyld_get_image_vmaddr_slide, _dyld_get_image_name):
 * path, LC_UUID, header address, slide, extent; the data segments chosen by
 * image_segments.c become global root ranges (owner = image index); every
 * segment goes into a sorted table regions.c uses to link regions to images.
 *
 * Runs before the freeze (dyld takes its own lock). The segment table is a
 * persistent mmap reused by later captures; everything else is scratch.
 */
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"

#define MAX_SEGS 65536u

static struct hg_dseg *segs;
static size_t nsegs;

const struct hg_dseg *_hg_darwin_segs(size_t *n) {
  *n = nsegs;
  return segs;
}

static int seg_table(void) {
  if (segs) return 0;
  void *m = mmap(NULL, MAX_SEGS * sizeof *segs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON,
                 -1, 0);
  if (m == MAP_FAILED) return HG_ENOMEM;
  segs = m;
  return 0;
}

int _hg_plat_images(struct hg_cap *c) {
  int rc = seg_table();
  if (rc) return rc;
  nsegs = 0;
  uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) {
    const struct mach_header *mh = _dyld_get_image_header(i);
    if (!mh || mh->magic != MH_MAGIC_64) continue;
    const struct mach_header_64 *h = (const struct mach_header_64 *)mh;
    uint64_t slide = (uint64_t)_dyld_get_image_vmaddr_slide(i);
    size_t avail = sizeof *h + (h->sizeofcmds < (1u << 24) ? h->sizeofcmds : 0);
    struct hg_macho_info info;
    if (_hg_macho_parse((const uint8_t *)h, avail, &info) != 0) continue;
    uint32_t index = (uint32_t)_hg_vec_len(&c->images);
    struct hg_cimage *im = _hg_vec_push(&c->images, 1);
    if (!im) return HG_ENOMEM;
    im->load_addr = (uint64_t)(uintptr_t)h;
    im->bias = slide;
    uint64_t end = 0;
    for (uint32_t k = 0; k < info.nsegs; k++) {
      const struct hg_macho_seg *s = &info.segs[k];
      if (!s->vmsize || !s->initprot) continue; /* __PAGEZERO */
      uint64_t lo = s->vmaddr + slide, hi = lo + s->vmsize;
      if (strcmp(s->name, "__LINKEDIT") && hi > end) end = hi; /* LINKEDIT is shared in the cache */
      if (nsegs < MAX_SEGS) {
        segs[nsegs].lo = lo;
        segs[nsegs].hi = hi;
        segs[nsegs].image = index;
        nsegs++;
      }
      if (!s->root) continue;
      struct hg_crange *r = _hg_vec_push(&c->ranges, 1);
      if (!r) return HG_ENOMEM;
      r->lo = lo;
      r->hi = hi;
      r->kind = HG_ROOT_GLOBAL;
      r->owner = index;
    }
    im->size = end > im->load_addr ? end - im->load_addr : 0;
    if (info.has_uuid) {
      memcpy(im->id, info.uuid, 16);
      im->id_len = 16;
    }
    const char *name = _dyld_get_image_name(i);
    if (name) im->path = _hg_str_add(&c->strings, name, strlen(name));
  }
  _hg_sort_u64key(segs, nsegs, sizeof *segs);
  return 0;
}
