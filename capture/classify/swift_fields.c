/*
 * swift_fields.c — the stored properties of a Swift class from its Swift
 * reflection metadata (the __swift5_fieldmd records the compiler emits,
 * reached from the class's own metadata), so that a Swift object's
 * references get field names and strengths: Swift gives the ObjC runtime
 * ivar names but empty type encodings and no ARC layouts (swift IRGen
 * GenClass.cpp), so the ObjC path alone names nothing.
 *
 * Layouts (Swift ABI, stable since Swift 5; docs/ABI/TypeMetadata.rst,
 * include/swift/ABI/Metadata.h, include/swift/RemoteInspection/Records.h):
 *   class metadata (ObjC interop): the objc_class words (40 bytes), then
 *     Flags u32 @40, InstanceAddressPoint @44, InstanceSize @48,
 *     InstanceAlignMask u16 @52, Reserved u16, ClassSize @56,
 *     ClassAddressPoint @60, Description (signed pointer on arm64e) @64;
 *   class descriptor: Flags u32 @0 (kind in the low 5 bits: 16 class,
 *     17 struct, 18 enum), Parent @4, Name @8, AccessFunction @12, Fields
 *     @16 — relative 32-bit pointers (target = field address + value);
 *   field descriptor: MangledTypeName @0, Superclass @4, Kind u16 @8,
 *     FieldRecordSize u16 @10, NumFields u32 @12, records from @16;
 *   field record: Flags u32 @0, MangledTypeName rel32 @4, FieldName rel32
 *     @8.
 * A mangled type's strength: a trailing "Xw" is weak, "Xo"/"Xu" unowned;
 * otherwise, less a trailing "Sg" (Optional), a class ('C' last, also
 * imported "So…C"), AnyObject or a class-bound existential ("Xl") is a
 * strong reference in its first word; a symbolic reference (\x01 + rel32 to
 * a context descriptor, \x02 + rel32 to a pointer to one) is followed to
 * the descriptor's kind. Anything else (structs, enums, Int …) is not
 * named.
 *
 * Pure; every read goes through the caller's fault-free reader, every
 * count is bounded; never calls malloc.
 */
#include <string.h>

#include "capture/classify/objc.h"

#define MAX_FIELDS 1024u
#define NAME_MAX_BYTES 96u

static uint64_t strip(uint64_t p, uint64_t ptr_mask) { return ptr_mask ? p & ptr_mask : p; }

static int rel32(hg_objc_read_fn rd, void *ctx, uint64_t at, uint64_t *out) {
  int32_t v;
  if (rd(ctx, at, &v, 4)) return -1;
  *out = v ? at + (uint64_t)(int64_t)v : 0;
  return 0;
}

/* Reads a string of up to max-1 bytes at addr (shorter reads near the end
 * of a mapping); the bytes, NUL-terminated in buf. Returns its length, the
 * symbolic references (\x01..\x17 + 4 bytes, \x18..\x1f + 8) skipped over
 * when looking for the end; -1 when unreadable. */
static int read_name(hg_objc_read_fn rd, void *ctx, uint64_t addr, char *buf, size_t max) {
  size_t got = 0;
  for (size_t want = max - 1; want >= 8 && !got; want /= 2)
    if (!rd(ctx, addr, buf, want)) got = want;
  if (!got) return -1;
  size_t i = 0;
  while (i < got && buf[i]) {
    unsigned char b = (unsigned char)buf[i];
    if (b >= 0x01 && b <= 0x17) i += 5;
    else if (b >= 0x18 && b <= 0x1f) i += 9;
    else i++;
  }
  if (i >= got) return -1; /* too long, or runs past what was read */
  buf[i] = 0;
  return (int)i;
}

static int ends_with(const char *m, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(m + n - k, suffix, k) == 0;
}

uint32_t _hg_swift_type_kind(const char *m, size_t n, uint64_t addr, hg_objc_read_fn rd,
                             void *ctx, uint64_t ptr_mask) {
  if (ends_with(m, n, "Xw")) return HG_EDGE_WEAK;
  if (ends_with(m, n, "Xo") || ends_with(m, n, "Xu")) return HG_EDGE_UNOWNED;
  if (ends_with(m, n, "Sg")) n -= 2;
  if (n == 0) return 0;
  if (n == 5 && (m[0] == 1 || m[0] == 2) && rd) { /* one symbolic reference */
    uint64_t target;
    if (rel32(rd, ctx, addr + 1, &target) || !target) return 0;
    if (m[0] == 2) { /* indirect: a pointer to the descriptor */
      uint64_t p;
      if (rd(ctx, target, &p, 8)) return 0;
      target = strip(p, ptr_mask);
    }
    uint32_t flags;
    if (!target || rd(ctx, target, &flags, 4)) return 0;
    return (flags & 0x1fu) == 16u ? HG_EDGE_STRONG : 0;
  }
  for (size_t i = 0; i < n; i++) /* other symbolic references: not read */
    if ((unsigned char)m[i] < 0x20) return 0;
  if (m[n - 1] == 'C') return HG_EDGE_STRONG;
  if (ends_with(m, n, "Xl")) return HG_EDGE_STRONG; /* AnyObject, class-bound */
  return 0;
}

int _hg_swift_fields(uint64_t cls, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                     hg_swift_field_fn fn, void *arg) {
  uint64_t desc = 0, fd = 0;
  if (!cls || (cls & 7)) return HG_EINVAL;
  if (rd(ctx, cls + 64, &desc, 8)) return HG_EFORMAT;
  desc = strip(desc, ptr_mask);
  uint32_t dflags;
  if (!desc || (desc & 3) || rd(ctx, desc, &dflags, 4)) return HG_EFORMAT;
  if ((dflags & 0x1fu) != 16u) return HG_EFORMAT; /* not a class descriptor */
  if (rel32(rd, ctx, desc + 16, &fd)) return HG_EFORMAT;
  if (!fd) return 0; /* no reflection metadata (stripped) */
  struct {
    int32_t type, super;
    uint16_t kind, record_size;
    uint32_t count;
  } h;
  if ((fd & 3) || rd(ctx, fd, &h, sizeof h)) return HG_EFORMAT;
  if (h.record_size < 12 || h.count > MAX_FIELDS) return HG_EFORMAT;
  int n = 0;
  for (uint32_t i = 0; i < h.count; i++) {
    uint64_t rec = fd + 16 + (uint64_t)i * h.record_size, tname, fname;
    char type[NAME_MAX_BYTES], name[NAME_MAX_BYTES];
    if (rel32(rd, ctx, rec + 4, &tname) || rel32(rd, ctx, rec + 8, &fname)) return HG_EFORMAT;
    if (!fname) continue;
    int nl = read_name(rd, ctx, fname, name, sizeof name);
    if (nl <= 0) continue;
    int tl = tname ? read_name(rd, ctx, tname, type, sizeof type) : -1;
    uint32_t kind = tl > 0 ? _hg_swift_type_kind(type, (size_t)tl, tname, rd, ctx, ptr_mask) : 0;
    int rc = fn(arg, name, (size_t)nl, kind);
    if (rc < 0) return rc;
    n++;
  }
  return n;
}
