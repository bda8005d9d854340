/*
 * swift_fields.c — the Swift reflection parser, one for Linux and Darwin:
 * type descriptors (kind, parent, name, field descriptor, field offset
 * vector, generic header), dotted context names, and the stored properties
 * of a class from its swift5_fieldmd record (names; strong / weak / unowned
 * from the mangled type), so that a Swift object's references get field
 * names and strengths. The platform differences are the parameters of
 * struct hg_swift_abi (swift.h): where class metadata keeps its descriptor
 * (+64 with ObjC interop on Darwin, +40 on Linux) and the arm64e pointer
 * mask. Darwin matches the properties to the ObjC runtime's ivars by name
 * (objc_runtime.c, _hg_swift_fields); Linux takes their offsets from the
 * metadata's field offset vector (swift_meta.c).
 *
 * Layouts (Swift ABI, stable since Swift 5; docs/ABI/TypeMetadata.rst,
 * include/swift/ABI/Metadata.h, include/swift/RemoteInspection/Records.h):
 *   type descriptor: Flags u32 @0 (kind in the low 5 bits: 16 class,
 *     17 struct, 18 enum; 0x80 generic), Parent @4, Name @8,
 *     AccessFunction @12, Fields @16 — relative 32-bit pointers (target =
 *     field address + value; Parent indirect when its low bit is set);
 *     class: SuperclassType @20, MetadataNegativeSizeInWords @24,
 *     MetadataPositiveSizeInWords @28, NumImmediateMembers @32, NumFields
 *     @36, FieldOffsetVectorOffset @40, generic header @44; struct/enum:
 *     generic header @28. Generic header: InstantiationCache, Pattern (two
 *     rel32), NumParams u16 @+8, NumRequirements u16, NumKeyArguments u16.
 *   field descriptor: MangledTypeName @0, Superclass @4, Kind u16 @8,
 *     FieldRecordSize u16 @10, NumFields u32 @12, records from @16;
 *   field record: Flags u32 @0, MangledTypeName rel32 @4, FieldName rel32
 *     @8.
 * A mangled type's strength: a trailing "Xw" is weak, "Xo"/"Xu" unowned;
 * otherwise, less a trailing "Sg" (Optional), a class ('C' last, also
 * imported "So…C"; a bound generic class "…Cy…G"), Array / Dictionary /
 * Set (one reference to their storage), AnyObject or a class-bound
 * existential ("Xl") is a strong reference in its first word; a generic
 * parameter of the class ("x", "q_", "q<n>_") is one when its argument is a
 * class (HG_SWIFT_PARAM: the caller knows the arguments); an escaping
 * function ("…c") holds its context strongly in its second word; a
 * symbolic reference (\x01 + rel32 to a context descriptor, \x02 + rel32 to
 * a pointer to one) is followed to the descriptor's kind. Anything else
 * (structs, enums, Int …) is not named.
 *
 * Pure; every read goes through the caller's fault-free reader, every
 * count is bounded; never calls malloc.
 */
#include <string.h>

#include "capture/classify/swift.h"

#define MAX_FIELDS 1024u
#define NAME_MAX_BYTES 128u
#define MAX_DEPTH 8

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

/* The kind letter of the nominal type a mangled name starts with
 * (module, then <len><identifier><kind> per level), stopping at its
 * generic arguments ('y'): 'C', 'V', 'O', or 0 when not of that form. */
static char base_kind(const char *m, size_t n) {
  size_t i = 0;
  if (n >= 2 && m[0] == 'S' && m[1] == 'o') i = 2;   /* imported ObjC module */
  else if (n >= 1 && m[0] == 's') i = 1;             /* Swift module */
  char kind = 0;
  for (int level = 0; i < n && level < MAX_DEPTH; level++) {
    if (m[i] < '0' || m[i] > '9') return 0;
    size_t len = 0;
    while (i < n && m[i] >= '0' && m[i] <= '9' && len < 10000) len = len * 10 + (size_t)(m[i++] - '0');
    if (len == 0 || i + len > n) return 0;
    i += len;
    if (i == n) return level == 0 ? 0 : kind; /* a module name alone */
    if (m[i] == 'C' || m[i] == 'V' || m[i] == 'O') kind = m[i++];
    else if (level == 0) continue;            /* that was the module */
    else return 0;
    if (i == n || m[i] == 'y') return kind;
  }
  return 0;
}

uint32_t _hg_swift_type_kind(const char *m, size_t n, uint64_t addr, hg_objc_read_fn rd,
                             void *ctx, uint64_t ptr_mask) {
  if (ends_with(m, n, "Xw")) return HG_EDGE_WEAK;
  if (ends_with(m, n, "Xo") || ends_with(m, n, "Xu")) return HG_EDGE_UNOWNED;
  if (ends_with(m, n, "Sg")) n -= 2;
  if (n == 0) return 0;
  if (n == 1 && m[0] == 'x') return HG_SWIFT_PARAM; /* generic parameter 0 */
  if (n >= 2 && m[0] == 'q' && m[n - 1] == '_') {   /* q_ = 1, q<k>_ = k + 2 */
    uint32_t k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
      if (m[i] < '0' || m[i] > '9' || k > 1000) return 0;
      k = k * 10 + (uint32_t)(m[i] - '0');
    }
    return HG_SWIFT_PARAM | ((n == 2 ? 1 : k + 2) << 16);
  }
  if ((m[0] == 1 || m[0] == 2) && n >= 5 && (n == 5 || m[5] == 'y') && rd) {
    /* one symbolic reference, maybe with generic arguments after it */
    uint64_t target;
    if (rel32(rd, ctx, addr + 1, &target) || !target) return 0;
    if (m[0] == 2) { /* indirect: a pointer to the descriptor */
      uint64_t p;
      if (rd(ctx, target, &p, 8)) return 0;
      target = strip(p, ptr_mask);
    }
    uint32_t flags;
    if (!target || rd(ctx, target, &flags, 4)) return 0;
    return (flags & 0x1fu) == HG_SWIFT_CTX_CLASS ? HG_EDGE_STRONG : 0;
  }
  if (m[n - 1] == 'c') return HG_EDGE_STRONG | HG_SWIFT_SECOND_WORD; /* escaping function */
  /* Array, Dictionary, Set: one reference to the storage object */
  if (n >= 4 && m[n - 1] == 'G' && m[0] == 'S' && (m[1] == 'a' || m[1] == 'D' || m[1] == 'h') &&
      m[2] == 'y')
    return HG_EDGE_STRONG;
  for (size_t i = 0; i < n; i++) /* other symbolic references: not read */
    if ((unsigned char)m[i] < 0x20) return 0;
  if (m[n - 1] == 'C') return HG_EDGE_STRONG;
  if (ends_with(m, n, "Xl")) return HG_EDGE_STRONG; /* AnyObject, class-bound */
  if (m[n - 1] == 'G' && base_kind(m, n) == 'C') return HG_EDGE_STRONG;
  return 0;
}

int _hg_swift_desc_read(uint64_t desc, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                        struct hg_swift_desc *out) {
  memset(out, 0, sizeof *out);
  uint32_t w[11];
  if (!desc || (desc & 3) || rd(ctx, desc, w, 20)) return HG_EFORMAT;
  out->flags = w[0];
  uint32_t kind = w[0] & 0x1fu;
  if (kind != HG_SWIFT_CTX_CLASS && kind != HG_SWIFT_CTX_STRUCT && kind != HG_SWIFT_CTX_ENUM)
    return HG_EFORMAT;
  uint64_t parent;
  if (rel32(rd, ctx, desc + 4, &parent) || rel32(rd, ctx, desc + 8, &out->name) ||
      rel32(rd, ctx, desc + 16, &out->fields))
    return HG_EFORMAT;
  if (w[1] & 1) { /* indirectable: a pointer to the parent */
    uint64_t p;
    if (rd(ctx, parent - 1, &p, 8)) return HG_EFORMAT;
    parent = strip(p, ptr_mask);
  }
  out->parent = parent;
  uint64_t gen = desc + 28;
  if (kind == HG_SWIFT_CTX_CLASS) {
    if (rd(ctx, desc, w, 44)) return HG_EFORMAT;
    out->num_fields = w[9];
    out->fovo = w[10];
    /* generic arguments come first among the immediate members; unknown
     * (0) with a resilient superclass, whose bounds are found at run time */
    if (!(w[0] & HG_SWIFT_CLASS_RESILIENT_SUPER) && w[7] >= w[8]) out->generic_off = w[7] - w[8];
    gen = desc + 44;
  } else {
    if (rd(ctx, desc + 20, w, 8)) return HG_EFORMAT;
    out->num_fields = w[0];
    out->fovo = w[1];
    out->generic_off = 2;
  }
  if (out->flags & HG_SWIFT_DESC_GENERIC) {
    uint16_t h[3];
    if (rd(ctx, gen + 8, h, sizeof h)) return HG_EFORMAT;
    out->num_params = h[0];
    out->key_params = h[2];
    if (out->num_params > 64 || out->key_params > 256) return HG_EFORMAT;
  }
  return 0;
}

int _hg_swift_class_desc(const struct hg_swift_abi *abi, uint64_t cls, hg_objc_read_fn rd,
                         void *ctx, uint64_t *desc) {
  *desc = 0;
  if (!cls || (cls & 7)) return HG_EINVAL;
  uint64_t d;
  if (rd(ctx, cls + abi->desc_off, &d, 8)) return HG_EFORMAT;
  d = strip(d, abi->ptr_mask);
  uint32_t dflags;
  if (!d || (d & 3) || rd(ctx, d, &dflags, 4)) return HG_EFORMAT;
  if ((dflags & 0x1fu) != HG_SWIFT_CTX_CLASS) return HG_EFORMAT; /* not a class descriptor */
  *desc = d;
  return 0;
}

int _hg_swift_fd_fields(uint64_t fd, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                        hg_swift_rec_fn fn, void *arg) {
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
    int rc = fn(arg, i, name, (size_t)nl, kind);
    if (rc < 0) return rc;
    n++;
  }
  return n;
}

int _hg_swift_context_name(uint64_t desc, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                           char *buf, size_t size) {
  /* the chain innermost first, then written outermost first */
  uint64_t names[MAX_DEPTH];
  int depth = 0;
  int steps = 0;
  for (uint64_t d = desc; d && depth < MAX_DEPTH; steps++) {
    if (steps == 2 * MAX_DEPTH) return -1; /* a cycle of nameless contexts */
    uint32_t f[2];
    if ((d & 3) || rd(ctx, d, f, 8)) return -1;
    uint32_t kind = f[0] & 0x1fu;
    uint64_t name = 0, parent;
    if (kind == HG_SWIFT_CTX_MODULE || kind >= HG_SWIFT_CTX_CLASS)
      if (rel32(rd, ctx, d + 8, &name)) return -1;
    if (rel32(rd, ctx, d + 4, &parent)) return -1;
    if (parent && (f[1] & 1)) {
      uint64_t p;
      if (rd(ctx, parent - 1, &p, 8)) return -1;
      parent = strip(p, ptr_mask);
    }
    if (name) names[depth++] = name;
    if (kind == HG_SWIFT_CTX_MODULE) break;
    d = parent;
    if (d && depth == MAX_DEPTH) return -1; /* too deep, or a cycle */
  }
  if (depth == 0 || size == 0) return -1;
  size_t at = 0;
  for (int i = depth - 1; i >= 0; i--) {
    char part[NAME_MAX_BYTES];
    int n = read_name(rd, ctx, names[i], part, sizeof part);
    if (n <= 0) return -1;
    for (int k = 0; k < n; k++) /* a name is plain text */
      if ((unsigned char)part[k] < 0x20) return -1;
    if (at + (size_t)n + 2 > size) return -1;
    if (at) buf[at++] = '.';
    memcpy(buf + at, part, (size_t)n);
    at += (size_t)n;
  }
  buf[at] = 0;
  return (int)at;
}

/* ---- Darwin: the properties of a class reached through ObjC interop ---- */

struct old_cb {
  hg_swift_field_fn fn;
  void *arg;
};

static int to_old(void *arg, uint32_t index, const char *name, size_t len, uint32_t kind) {
  struct old_cb *o = arg;
  (void)index;
  /* an ivar's edge is at its start: a reference in a second word (a
   * closure's context) is not the ivar's */
  return o->fn(o->arg, name, len, (kind & (HG_SWIFT_SECOND_WORD | HG_SWIFT_PARAM)) ? 0 : kind);
}

int _hg_swift_fields(uint64_t cls, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                     hg_swift_field_fn fn, void *arg) {
  const struct hg_swift_abi abi = {HG_SWIFT_DESC_INTEROP, 48, ptr_mask};
  uint64_t desc = 0, fd = 0;
  int rc = _hg_swift_class_desc(&abi, cls, rd, ctx, &desc);
  if (rc) return rc;
  if (rel32(rd, ctx, desc + 16, &fd)) return HG_EFORMAT;
  if (!fd) return 0; /* no reflection metadata (stripped) */
  struct old_cb o = {fn, arg};
  return _hg_swift_fd_fields(fd, ptr_mask, rd, ctx, to_old, &o);
}
