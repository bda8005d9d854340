/*
 * macho_typeinfo.c — Darwin discovery of the process's C++ type_info
 * objects for the portable cxxabi/ set (_hg_cxx_discover): every image dyld
 * has loaded is opened in memory with machoparse (macho_open_loaded); its
 * readable segments (not __PAGEZERO, not the shared __LINKEDIT) are image
 * ranges, __DATA_CONST / __AUTH_CONST and the __const sections of __DATA /
 * __AUTH are where vtables may live; then machoparse's type_info iterator
 * (binds and chained fixups against the __cxxabiv1 class_type_info vtables)
 * gives each class type_info and its name.
 *
 * Before the freeze only (dyld calls, mmap'd set). Images of the dyld shared
 * cache have had their fixups applied and stripped: their type_infos are
 * not found this way (the app's own images are).
 */
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <string.h>
#include <time.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "machoparse/macho.h"

static struct macho_image img; /* large: static, used under the capture lock */

static int open_image(uint32_t i) {
  const struct mach_header *mh = _dyld_get_image_header(i);
  if (!mh || mh->magic != MH_MAGIC_64) return -1;
  return macho_open_loaded(&img, mh, (uint64_t)_dyld_get_image_vmaddr_slide(i)) == 0 ? 0 : -1;
}

static void declare_ranges(struct hg_cxx_set *s) {
  uint64_t slide = img.slide;
  for (uint32_t k = 0; k < img.segment_count; k++) {
    const struct macho_segment *g = &img.segments[k];
    if (!g->vmsize || !(g->initprot & 1) || !strcmp(g->name, "__LINKEDIT")) continue;
    uint64_t lo = g->vmaddr + slide, hi = lo + g->vmsize;
    _hg_cxx_set_add_image_range(s, lo, hi);
    if (!strcmp(g->name, "__DATA_CONST") || !strcmp(g->name, "__AUTH_CONST")) {
      _hg_cxx_set_add_ro_range(s, lo, hi);
      continue;
    }
    if (strcmp(g->name, "__DATA") && strcmp(g->name, "__AUTH")) continue;
    for (uint32_t j = 0; j < g->nsects; j++) {
      struct macho_section sec;
      if (macho_section_get(&img, g->first_section + j, &sec) != 0) break;
      if (!strcmp(sec.sectname, "__const") && sec.size)
        _hg_cxx_set_add_ro_range(s, sec.addr + slide, sec.addr + slide + sec.size);
    }
  }
}

int _hg_cxx_discover(struct hg_cxx_set *s, struct hg_cxx_discovery *d) {
  struct hg_cxx_discovery local;
  if (!d) d = &local;
  memset(d, 0, sizeof *d);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) /* every range first: names may cross images */
    if (open_image(i) == 0) declare_ranges(s);
  int rc = 0;
  for (uint32_t i = 0; i < count && !rc; i++) {
    if (open_image(i) != 0) continue;
    d->images++;
    struct macho_typeinfo_iter it;
    struct macho_typeinfo ti;
    uint32_t found = 0;
    macho_typeinfo_begin(&it, &img);
    while (macho_typeinfo_next(&it, &ti) == 1) {
      if (ti.kind > MACHO_TI_VMI_CLASS || !ti.name) continue; /* classes only */
      d->candidates++;
      int k = _hg_cxx_set_add_name(s, ti.vmaddr + img.slide, ti.name, strlen(ti.name));
      if (k == HG_ENOMEM || k == HG_ELIMIT) {
        rc = k;
        break;
      }
      found++;
    }
    if (found) d->images_symbolic++;
  }
  _hg_cxx_set_seal(s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  d->ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
  return rc;
}
