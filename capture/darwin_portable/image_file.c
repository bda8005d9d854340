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
 * Names come from the process, not the file: App Store and TestFlight
 * binaries are FairPlay-encrypted on disk in [cryptoff, cryptoff +
 * cryptsize) of __TEXT (LC_ENCRYPTION_INFO_64, cryptid != 0; xnu
 * EXTERNAL_HEADERS/mach-o/loader.h encryption_info_command_64), where the
 * _ZTS name strings live (__TEXT,__const); the kernel decrypts the pages it
 * maps. So the file gives where each type_info and its name pointer are
 * (the data segments and __LINKEDIT are never encrypted), and the name is
 * read in the loaded image at its unslid address (macho_string_at on the
 * loaded image = name address + slide, bounded by the segment). The file's
 * copy is used only where memory lacks it, and never from an encrypted
 * range.
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

#define LC_ENCRYPTION_INFO 0x21u
#define LC_ENCRYPTION_INFO_64 0x2cu

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int _hg_macho_crypt_info(const uint8_t *hdr, size_t avail, struct hg_macho_crypt *out) {
  memset(out, 0, sizeof *out);
  if (!hdr || avail < 32 || rd32(hdr) != 0xfeedfacfu) return HG_EFORMAT; /* MH_MAGIC_64 */
  uint32_t ncmds = rd32(hdr + 16), sizeofcmds = rd32(hdr + 20);
  if (sizeofcmds > avail - 32) return HG_EFORMAT;
  const uint8_t *p = hdr + 32, *end = p + sizeofcmds;
  for (uint32_t i = 0; i < ncmds; i++) {
    if ((size_t)(end - p) < 8) return HG_EFORMAT;
    uint32_t cmd = rd32(p), size = rd32(p + 4);
    if (size < 8 || size > (size_t)(end - p)) return HG_EFORMAT;
    if ((cmd == LC_ENCRYPTION_INFO || cmd == LC_ENCRYPTION_INFO_64) && size >= 20) {
      out->present = 1;
      out->cryptoff = rd32(p + 8);
      out->cryptsize = rd32(p + 12);
      out->cryptid = rd32(p + 16);
    }
    p += size;
  }
  return 0;
}

/* Whether the file bytes of [vmaddr, +1) lie in img's encrypted range. */
static int encrypted_at(const struct macho_image *img, const struct hg_macho_crypt *cr,
                        uint64_t vmaddr) {
  if (!cr->cryptid) return 0;
  const struct macho_segment *g = macho_segment_at(img, vmaddr);
  if (!g) return 1; /* unknown: not trusted */
  uint64_t off = g->fileoff + (vmaddr - g->vmaddr);
  return off >= cr->cryptoff && off - cr->cryptoff < cr->cryptsize;
}

int _hg_macho_typeinfos(const struct macho_image *img, const struct macho_image *mem,
                        uint64_t slide, hg_typeinfo_fn add, void *ctx,
                        struct hg_typeinfo_stats *st) {
  struct macho_typeinfo_iter it;
  struct macho_typeinfo ti;
  struct hg_typeinfo_stats local;
  struct hg_macho_crypt cr;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (img->loaded || _hg_macho_crypt_info(img->header, (size_t)img->slice_size, &cr) != 0)
    memset(&cr, 0, sizeof cr); /* a loaded image: the kernel decrypted it */
  st->cryptid = cr.cryptid;
  int found = 0, r;
  macho_typeinfo_begin(&it, img);
  while ((r = macho_typeinfo_next(&it, &ti)) == 1) {
    if (ti.kind > MACHO_TI_VMI_CLASS) continue; /* classes only */
    const char *name = ti.name_symbol ? ti.name : NULL; /* __LINKEDIT: never encrypted */
    if (!name && ti.name_addr && mem && (name = macho_string_at(mem, ti.name_addr))) st->names_memory++;
    if (!name && ti.name && !encrypted_at(img, &cr, ti.name_addr)) name = ti.name;
    if (!name) {
      if (ti.name || ti.name_addr) st->names_unreadable++;
      continue;
    }
    st->candidates++;
    int k = add(ctx, ti.vmaddr + slide, name, strlen(name));
    if (k < 0) return k;
    found++;
  }
  return r < 0 && found == 0 ? HG_EFORMAT : found;
}
