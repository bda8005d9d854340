/*
 * macho_typeinfo.c — Darwin discovery of the process's C++ type_info
 * objects for the portable cxxabi/ set (_hg_plat_cxx_images, under
 * _hg_cxx_discover): every image dyld has loaded is opened in memory with
 * machoparse (macho_open_loaded); its readable segments (not __PAGEZERO,
 * not the shared __LINKEDIT) are image ranges, __DATA_CONST / __AUTH_CONST
 * and the __const sections of __DATA / __AUTH are where vtables may live;
 * then machoparse's type_info iterator
 * (binds and chained fixups against the __cxxabiv1 class_type_info vtables)
 * gives each class type_info and its name.
 *
 * A loaded image with chained fixups (dyld consumed them: every arm64e
 * image, newer ld64 output) is read from its file instead: the path dyld
 * gives is mapped read-only, the slice matching the loaded LC_UUID is
 * opened and walked (image_file.c), the loaded slide applied; the names
 * are read in the loaded image (the file's __TEXT is FairPlay-encrypted in
 * App Store builds), the file's copy only where memory lacks it.
 *
 * The images are images.c's consistent copy (dyld's callbacks), held for
 * the whole discovery: no dyld call in between (the path is the copy's).
 * Before the freeze only (open/mmap, mmap'd set). Images of the
 * dyld shared cache (MH_DYLIB_IN_CACHE) have no file of their own and their
 * fixups are applied: out of scope (the app's own images are covered).
 */
#include <fcntl.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "machoparse/macho.h"

static struct macho_image img;  /* large: static, used under the capture lock */
static struct macho_image fimg; /* the image's file, when read from disk     */

#ifndef MH_DYLIB_IN_CACHE
#define MH_DYLIB_IN_CACHE 0x80000000u
#endif
#define MAX_FILE (1ull << 31)

static int add_name(void *ctx, uint64_t ti, const char *name, size_t len) {
  int k = _hg_cxx_set_add_name(ctx, ti, name, len);
  return k == HG_ENOMEM || k == HG_ELIMIT ? k : 0;
}

/* Type_infos of loaded image e from its file. >= 0 found, < 0 error. */
static int from_file(const struct hg_image_ent *e, struct hg_cxx_set *s, uint32_t *candidates) {
  const char *path = e->name;
  if (!path || !img.has_uuid || (img.flags & MH_DYLIB_IN_CACHE)) return HG_ENOTFOUND;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return HG_ENOTFOUND;
  struct stat st;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < MAX_FILE)
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return HG_ENOTFOUND;
  int rc = _hg_macho_open_matching(&fimg, map, (uint64_t)st.st_size, img.uuid);
  struct hg_typeinfo_stats ts;
  if (rc == 0) rc = _hg_macho_typeinfos(&fimg, &img, img.slide, add_name, s, &ts);
  if (rc >= 0) *candidates += ts.candidates;
  munmap(map, (size_t)st.st_size);
  return rc;
}

static int open_image(const struct hg_image_ent *e) {
  const struct mach_header *mh = (const struct mach_header *)(uintptr_t)e->mh;
  if (!mh || mh->magic != MH_MAGIC_64) return -1;
  return macho_open_loaded(&img, mh, e->slide) == 0 ? 0 : -1;
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

int _hg_plat_cxx_images(struct hg_cxx_set *s, struct hg_cxx_discovery *d) {
  const struct hg_image_ent *ims;
  size_t count = _hg_darwin_images_begin(&ims);
  for (size_t i = 0; i < count; i++) /* every range first: names may cross images */
    if (open_image(&ims[i]) == 0) declare_ranges(s);
  int rc = 0;
  for (size_t i = 0; i < count && !rc; i++) {
    if (open_image(&ims[i]) != 0) continue;
    d->images++;
    uint32_t cand = 0;
    struct hg_typeinfo_stats ts;
    int found = _hg_macho_typeinfos(&img, NULL, img.slide, add_name, s, &ts);
    if (found >= 0) cand = ts.candidates;
    if (found == HG_EFORMAT && img.has_chained) { /* consumed by dyld: read the file */
      cand = 0;
      found = from_file(&ims[i], s, &cand);
    }
    d->candidates += cand;
    if (found == HG_ENOMEM || found == HG_ELIMIT) rc = found;
    else if (found > 0) d->images_symbolic++;
  }
  _hg_darwin_images_end();
  return rc;
}
