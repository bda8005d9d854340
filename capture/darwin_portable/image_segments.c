/*
 * image_segments.c — reads the load commands of a 64-bit Mach-O image as it
 * lies in memory (the header dyld reports) and says which segments hold
 * global roots: __DATA, __DATA_CONST, __DATA_DIRTY, and arm64e's __AUTH and
 * __AUTH_CONST. Also the image's LC_UUID and its extent.
 *
 * Own minimal layouts (mach_header_64: 32 bytes; segment_command_64: 72;
 * uuid_command: 24), every command bounds-checked against the bytes given
 * and the header's sizeofcmds: a damaged header is an error, never a crash.
 * Pure and portable (unit-tested on Linux); never calls malloc.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

#define MH_MAGIC_64 0xfeedfacfu
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define HDR_BYTES 32u
#define SEG_BYTES 72u
#define UUID_BYTES 24u

static uint32_t u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint64_t u64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

int _hg_macho_is_root_segment(const char *segname16) {
  static const char *const roots[] = {"__DATA", "__DATA_CONST", "__DATA_DIRTY", "__AUTH",
                                      "__AUTH_CONST"};
  char name[17];
  memcpy(name, segname16, 16);
  name[16] = 0;
  for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
    if (!strcmp(name, roots[i])) return 1;
  return 0;
}

int _hg_macho_parse(const uint8_t *hdr, size_t avail, struct hg_macho_info *out) {
  memset(out, 0, sizeof *out);
  if (!hdr || avail < HDR_BYTES || u32(hdr) != MH_MAGIC_64) return HG_EFORMAT;
  out->cputype = u32(hdr + 4);
  out->filetype = u32(hdr + 12);
  out->ncmds = u32(hdr + 16);
  uint32_t sizeofcmds = u32(hdr + 20);
  if (sizeofcmds > avail - HDR_BYTES) return HG_EFORMAT;
  const uint8_t *p = hdr + HDR_BYTES, *end = p + sizeofcmds;
  out->lo = UINT64_MAX;
  for (uint32_t i = 0; i < out->ncmds; i++) {
    if ((size_t)(end - p) < 8) return HG_EFORMAT;
    uint32_t cmd = u32(p), size = u32(p + 4);
    if (size < 8 || size > (size_t)(end - p) || (size & 3)) return HG_EFORMAT;
    if (cmd == LC_SEGMENT_64) {
      if (size < SEG_BYTES) return HG_EFORMAT;
      struct hg_macho_seg s;
      memset(&s, 0, sizeof s);
      memcpy(s.name, p + 8, 16);
      s.vmaddr = u64(p + 24);
      s.vmsize = u64(p + 32);
      s.initprot = u32(p + 60);
      if (s.vmaddr + s.vmsize < s.vmaddr) return HG_EFORMAT;
      s.root = _hg_macho_is_root_segment(s.name);
      if (!strcmp(s.name, "__TEXT")) out->text_vmaddr = s.vmaddr;
      /* __PAGEZERO (no access, at 0) is not part of the image's extent */
      if (s.initprot != 0 && s.vmsize) {
        if (s.vmaddr < out->lo) out->lo = s.vmaddr;
        if (s.vmaddr + s.vmsize > out->hi) out->hi = s.vmaddr + s.vmsize;
      }
      if (out->nsegs < HG_MACHO_MAX_SEGS) out->segs[out->nsegs++] = s;
    } else if (cmd == LC_UUID) {
      if (size < UUID_BYTES) return HG_EFORMAT;
      memcpy(out->uuid, p + 8, 16);
      out->has_uuid = 1;
    }
    p += size;
  }
  if (out->lo == UINT64_MAX) out->lo = out->hi = 0;
  return 0;
}
