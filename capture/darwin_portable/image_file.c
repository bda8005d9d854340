/*
 * image_file.c — C++ type_info discovery for a loaded Mach-O image whose
 * fixups dyld has consumed (chained fixups: every arm64e image and newer
 * ld64 output): the image's own file is opened instead (dyld gives its
 * path; an iOS app can read its bundle), the slice whose LC_UUID equals the
 * loaded image's is chosen (a fat file's other slices, or a file replaced
 * on disk since, do not match), and machoparse's type_info iterator runs
 * on the file; each type_info's file vmaddr plus the loaded image's slide
 * is its address in the process. Images of the dyld shared cache have no
 * file of their own and stay out of scope.
 *
 * Portable (the caller maps the file); unit-tested on Linux with real
 * Mach-O files "loaded" at a slide. Never calls malloc.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

int _hg_macho_open_matching(struct macho_image *img, const void *data, uint64_t size,
                            const uint8_t uuid[16]) {
  const char *names[16];
  struct macho_error err;
  memset(&err, 0, sizeof err);
  int n = macho_fat_archs(data, size, names, 16, &err);
  if (n < 0) return HG_EFORMAT;
  if (n == 0) { /* thin */
    if (macho_open_file(img, data, size, NULL) != 0) return HG_EFORMAT;
    return img->has_uuid && memcmp(img->uuid, uuid, 16) == 0 ? 0 : HG_ENOTFOUND;
  }
  for (int i = 0; i < n && i < 16; i++) {
    if (!names[i] || macho_open_file(img, data, size, names[i]) != 0) continue;
    if (img->has_uuid && memcmp(img->uuid, uuid, 16) == 0) return 0;
  }
  return HG_ENOTFOUND;
}

int _hg_macho_typeinfos(const struct macho_image *img, uint64_t slide, hg_typeinfo_fn add,
                        void *ctx, uint32_t *candidates) {
  struct macho_typeinfo_iter it;
  struct macho_typeinfo ti;
  int found = 0, r;
  macho_typeinfo_begin(&it, img);
  while ((r = macho_typeinfo_next(&it, &ti)) == 1) {
    if (ti.kind > MACHO_TI_VMI_CLASS || !ti.name) continue; /* classes only */
    if (candidates) (*candidates)++;
    int k = add(ctx, ti.vmaddr + slide, ti.name, strlen(ti.name));
    if (k < 0) return k;
    found++;
  }
  return r < 0 && found == 0 ? HG_EFORMAT : found;
}
