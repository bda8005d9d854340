/*
 * objc_isa.c — from an object's first word (isa) to its class pointer, for
 * the GNU runtime (plain isa) and Apple's runtime (non-pointer isa with a
 * class mask and a magic field; tagged pointers), plus the Swift name test.
 *
 * Portable: no Apple header, compiled and unit-tested everywhere. The
 * Apple constants below are the fallbacks used when the runtime's exported
 * objc_debug_isa_class_mask / objc_debug_isa_magic_mask / _value /
 * objc_debug_taggedpointer_mask cannot be found (see objc_runtime.c).
 * Pure functions: safe while the process is frozen.
 */
#include <string.h>

#include "capture/classify/objc.h"

void _hg_objc_isa_plain(struct hg_objc_isa *m) { memset(m, 0, sizeof *m); }

/* objc4 runtime/isa.h (objc4-951): ISA_MASK / ISA_MAGIC_* per architecture;
 * objc-runtime-new.mm: objc_debug_isa_class_mask = ISA_MASK &
 * coveringMask(OBJC_VM_MAX_ADDRESS - 1), with MACH_VM_MAX_ADDRESS
 * 0x7FFFFE000000 on macOS and 0xFC0000000 on iOS (xnu
 * osfmk/mach/arm/vm_param.h). Tagged pointers: objc-internal.h, the low
 * bit only for macOS x86_64 (the simulators use the high bit). */
static uint64_t vm_cover(int os) {
  return os == HG_OBJC_OS_IOS ? 0x0000000fffffffffull : 0x00007fffffffffffull;
}

int _hg_objc_isa_apple(struct hg_objc_isa *m, int arch, int os) {
  memset(m, 0, sizeof *m);
  if (os != HG_OBJC_OS_MACOS && os != HG_OBJC_OS_IOS && os != HG_OBJC_OS_SIMULATOR)
    return HG_EINVAL;
  switch (arch) {
  case HG_OBJC_ARCH_X86_64: /* 44-bit shiftcls, 6-bit magic 0x3b at bit 47 */
    m->class_mask = 0x00007ffffffffff8ull & vm_cover(os);
    m->magic_mask = 0x001f800000000001ull;
    m->magic_value = 0x001d800000000001ull;
    m->tag_mask = os == HG_OBJC_OS_MACOS ? 1ull : 1ull << 63;
    return 0;
  case HG_OBJC_ARCH_ARM64:
    if (os == HG_OBJC_OS_SIMULATOR) break; /* simulators use the ptrauth layout */
    /* 33-bit shiftcls, 6-bit magic 0x1a at bit 36 */
    m->class_mask = 0x0000000ffffffff8ull & vm_cover(os);
    m->magic_mask = 0x000003f000000001ull;
    m->magic_value = 0x000001a000000001ull;
    m->tag_mask = 1ull << 63;
    return 0;
  case HG_OBJC_ARCH_ARM64E:
    break;
  default:
    return HG_EINVAL;
  }
  /* ptrauth (and simulator) layout: the class bits share 52 bits with the
   * signature; only the nonpointer bit is magic */
  m->class_mask = 0x007ffffffffffff8ull & vm_cover(os);
  m->magic_mask = 1ull;
  m->magic_value = 1ull;
  m->tag_mask = 1ull << 63;
  /* arm64e: raw isas (Swift's HeapObject metadata) and the pointers inside
   * class data (Swift's Description) are signed: strip the signature above
   * the VA (39 bits on iOS: xnu osfmk/arm64/proc_reg.h T0SZ_BOOT 25; 47 on
   * macOS) and nothing else, as ptrauth_strip does. Not ISA_MASK's low
   * zeros: what is signed need not be 8-byte aligned (Swift context
   * descriptors are 4-aligned: swift lib/IRGen/Linking.cpp
   * LinkEntity::getAlignment); callers check alignment themselves. */
  if (arch == HG_OBJC_ARCH_ARM64E)
    m->ptr_mask = os == HG_OBJC_OS_IOS ? 0x0000007fffffffffull : 0x00007fffffffffffull;
  return 0;
}

int _hg_objc_arch_of(uint32_t cputype, uint32_t cpusubtype) {
  if (cputype == 0x01000007u) return HG_OBJC_ARCH_X86_64; /* CPU_TYPE_X86_64 */
  if (cputype != 0x0100000cu) return 0;                   /* CPU_TYPE_ARM64  */
  /* the high byte holds capability bits (CPU_SUBTYPE_MASK); 2 = ARM64E */
  return (cpusubtype & 0x00ffffffu) == 2u ? HG_OBJC_ARCH_ARM64E : HG_OBJC_ARCH_ARM64;
}

uint64_t _hg_objc_nonptr_mask(uint64_t tag_mask) {
  /* low tag bits (macOS x86_64) can fall inside the heap's address span;
   * the high bit (everywhere else) never does, and costs nothing to skip */
  return tag_mask & 7u;
}

int _hg_objc_is_tagged(const struct hg_objc_isa *m, uint64_t v) {
  return (v & m->tag_mask) != 0;
}

uint64_t _hg_objc_isa_class(const struct hg_objc_isa *m, uint64_t isa) {
  /* No tagged-pointer test here: an isa word is never a tagged pointer,
   * and its bits overlap the tag bits (x86_64's nonpointer bit 0 is the
   * tag bit; arm64's extra_rc reaches bit 63). */
  if (isa == 0) return 0;
  if (m->class_mask == 0) /* plain isa */
    return (isa & 7u) ? 0 : isa;
  if ((isa & 1u) == 0) { /* raw class pointer (Swift metadata, no nonpointer isa) */
    if (isa & 7u) return 0;
    return m->ptr_mask ? isa & m->ptr_mask : isa; /* arm64e: signed */
  }
  if ((isa & m->magic_mask) != m->magic_value) return 0;
  return isa & m->class_mask;
}

uint32_t _hg_objc_name_kind(const char *name) {
  if (!name) return HG_CLASS_OBJC;
  /* Swift classes exposed to the ObjC runtime keep their mangled name:
   * _TtC<module><class> (and _TtCs for the standard library), generic
   * instantiations _TtGC…, and the Swift 5 mangling $s… / _$s…. */
  if (strncmp(name, "_TtC", 4) == 0 || strncmp(name, "_TtGC", 5) == 0 ||
      strncmp(name, "$s", 2) == 0 || strncmp(name, "_$s", 3) == 0)
    return HG_CLASS_SWIFT;
  return HG_CLASS_OBJC;
}

/* One <length><identifier> of the old Swift mangling; 0 on a bad form. */
static const char *ident(const char *p, const char **s, size_t *n) {
  size_t len = 0;
  if (*p < '1' || *p > '9') return NULL;
  while (*p >= '0' && *p <= '9' && len < 4096) len = len * 10 + (size_t)(*p++ - '0');
  for (size_t i = 0; i < len; i++)
    if (!p[i]) return NULL;
  *s = p;
  *n = len;
  return p + len;
}

const char *_hg_swift_readable_name(const char *name, char *buf, size_t size) {
  if (!name || strncmp(name, "_TtC", 4) != 0 || size < 2) return name;
  const char *p = name + 3;
  uint32_t depth = 0;
  while (*p == 'C' && depth < 16) p++, depth++;
  size_t o = 0;
  const char *s;
  size_t n;
  if (*p == 's') { /* the standard library module */
    s = "Swift";
    n = 5;
    p++;
  } else if (!(p = ident(p, &s, &n))) {
    return name;
  }
  for (uint32_t d = 0; d <= depth; d++) {
    if (d > 0) {
      if (*p == 'P' && !(p = ident(p + 1, &s, &n))) return name; /* private discriminator */
      if (!(p = ident(p, &s, &n))) return name;
    }
    if (o + n + 2 > size) return name;
    if (d > 0) buf[o++] = '.';
    memcpy(buf + o, s, n);
    o += n;
  }
  if (*p) return name; /* something we do not read (generic arguments …) */
  buf[o] = 0;
  return buf;
}
