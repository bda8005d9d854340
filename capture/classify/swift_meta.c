/*
 * swift_meta.c — what a Swift heap object's first word says, on Linux (no
 * ObjC interop): which metadata kinds are instances we name (classes,
 * closure contexts, boxes, tasks), the readable name of a type's metadata
 * with its generic arguments (Zoo.Box<Zoo.Node>), and the layout of a
 * closure context's captures. Pure: reads go through the caller's
 * fault-free reader, names are written into the caller's buffer; never
 * calls malloc.
 *
 * Metadata kinds (swiftlang/swift include/swift/ABI/MetadataKind.def): 0
 * class (without interop the kind word is 0), 0x200 struct, 0x201 enum,
 * 0x202 optional, 0x300 foreign class, 0x301 tuple, 0x302 function, 0x303
 * existential, 0x400 heap local variable (closure contexts: offset to the
 * first capture u32 @8, capture descriptor @16), 0x500 heap generic local
 * variable (boxes: offset of the value u32 @8, boxed type's metadata @16),
 * 0x501 error object, 0x502 task, 0x503 job.
 * Capture descriptor (include/swift/RemoteInspection/Records.h): NumCaptureTypes
 * u32 @0, NumMetadataSources u32 @4, NumBindings u32 @8, then one rel32
 * mangled type name per capture from @12.
 */
#include <string.h>

#include "capture/classify/swift_meta.h"

#define ARG_DEPTH 3

static int put(char *buf, size_t size, size_t *at, const char *s, size_t n) {
  if (*at + n + 1 > size) return -1;
  memcpy(buf + *at, s, n);
  *at += n;
  buf[*at] = 0;
  return 0;
}

/* The name of the type whose metadata is at m, appended to buf. */
static int type_name(const struct hg_swift_names *nm, uint64_t m, int depth, char *buf,
                     size_t size, size_t *at) {
  uint64_t kind, desc;
  if (!m || (m & 7) || nm->rd(nm->ctx, m, &kind, 8)) return put(buf, size, at, "?", 1);
  if (kind == HG_SWIFT_MK_TUPLE) return put(buf, size, at, "(tuple)", 7);
  if (kind == HG_SWIFT_MK_FUNCTION) return put(buf, size, at, "(function)", 10);
  if (kind == HG_SWIFT_MK_EXISTENTIAL) return put(buf, size, at, "(existential)", 13);
  uint64_t doff = kind == HG_SWIFT_MK_CLASS ? HG_SWIFT_DESC_NATIVE : 8;
  if ((kind != HG_SWIFT_MK_CLASS && (kind < HG_SWIFT_MK_STRUCT || kind > HG_SWIFT_MK_OPTIONAL)) ||
      nm->rd(nm->ctx, m + doff, &desc, 8) || !nm->known(nm->ctx, desc))
    return put(buf, size, at, "?", 1);
  return _hg_swift_meta_name(nm, m, desc, depth, buf, size, at);
}

int _hg_swift_meta_name(const struct hg_swift_names *nm, uint64_t m, uint64_t desc, int depth,
                        char *buf, size_t size, size_t *at) {
  struct hg_swift_desc d;
  if (*at >= size || _hg_swift_desc_read(desc, 0, nm->rd, nm->ctx, &d)) return -1;
  int n = _hg_swift_context_name(desc, 0, nm->rd, nm->ctx, buf + *at, size - *at);
  if (n < 0) return -1;
  *at += (size_t)n;
  if (!d.num_params || !d.generic_off) return 0;
  if (depth >= ARG_DEPTH) return put(buf, size, at, "<…>", 5);
  if (put(buf, size, at, "<", 1)) return -1;
  for (uint32_t i = 0; i < d.num_params && i < d.key_params; i++) {
    uint64_t arg;
    if (i && put(buf, size, at, ", ", 2)) return -1;
    if (nm->rd(nm->ctx, m + 8ull * (d.generic_off + i), &arg, 8)) arg = 0;
    if (type_name(nm, arg, depth + 1, buf, size, at)) return -1;
  }
  return put(buf, size, at, ">", 1);
}

int _hg_swift_type_of(const struct hg_swift_names *nm, uint64_t m, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = 0;
  return type_name(nm, m, 0, buf, size, &at) ? -1 : (int)at;
}

int _hg_swift_captures(const struct hg_swift_names *nm, uint64_t m, hg_swift_capture_fn fn,
                       void *arg) {
  uint32_t first;
  uint64_t cd;
  uint32_t h[3];
  if (nm->rd(nm->ctx, m + 8, &first, 4) || nm->rd(nm->ctx, m + 16, &cd, 8)) return -1;
  if (!cd || (cd & 3) || nm->rd(nm->ctx, cd, h, sizeof h)) return 0; /* no reflection */
  /* generic bindings sit before the captures: their sizes are not known */
  if (h[2] || h[0] > 256 || first < 16 || first > 4096) return 0;
  uint64_t off = first;
  int n = 0;
  for (uint32_t i = 0; i < h[0]; i++) {
    int32_t rel;
    uint64_t at = cd + 12 + 4ull * i;
    if (nm->rd(nm->ctx, at, &rel, 4) || !rel) return n;
    uint64_t tname = at + (uint64_t)(int64_t)rel;
    char type[128];
    size_t got = 0;
    for (size_t want = sizeof type - 1; want >= 8 && !got; want /= 2)
      if (!nm->rd(nm->ctx, tname, type, want)) got = want;
    if (!got) return n;
    type[got] = 0;
    size_t len = 0; /* the mangled name's length, symbolic references skipped */
    while (len < got && type[len]) len += (unsigned char)type[len] <= 0x17 ? 5 : (unsigned char)type[len] <= 0x1f ? 9 : 1;
    if (len >= got) return n;
    uint32_t kind = _hg_swift_type_kind(type, len, tname, nm->rd, nm->ctx, 0);
    if (!kind && len == 2 && type[0] == 'S' && strchr("iud", type[1])) { /* Int, UInt, Double */
      off += 8;
      continue;
    }
    if (!kind || (kind & HG_SWIFT_PARAM)) return n; /* unknown size: the rest cannot be placed */
    uint64_t where = off + ((kind & HG_SWIFT_SECOND_WORD) ? 8 : 0);
    if (fn(arg, i, where, kind & ~HG_SWIFT_SECOND_WORD) < 0) return -1;
    off += (kind & HG_SWIFT_SECOND_WORD) ? 16 : 8;
    n++;
  }
  return n;
}
