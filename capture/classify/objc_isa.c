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

int _hg_objc_isa_apple(struct hg_objc_isa *m, int arch) {
  memset(m, 0, sizeof *m);
  switch (arch) {
  case HG_OBJC_ARCH_X86_64: /* 44-bit shiftcls, 6-bit magic 0x3b at bit 47 */
    m->class_mask = 0x00007ffffffffff8ull;
    m->magic_mask = 0x001f800000000001ull;
    m->magic_value = 0x001d800000000001ull;
    m->tag_mask = 1ull; /* macOS x86_64: low bit */
    return 0;
  case HG_OBJC_ARCH_ARM64: /* 33-bit shiftcls, 6-bit magic 0x1a at bit 36 */
    m->class_mask = 0x0000000ffffffff8ull;
    m->magic_mask = 0x000003f000000001ull;
    m->magic_value = 0x000001a000000001ull;
    m->tag_mask = 1ull << 63;
    return 0;
  case HG_OBJC_ARCH_ARM64E: /* signed class bits; only the nonpointer bit */
    m->class_mask = 0x007ffffffffffff8ull;
    m->magic_mask = 1ull;
    m->magic_value = 1ull;
    m->tag_mask = 1ull << 63;
    return 0;
  default:
    return HG_EINVAL;
  }
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
  if ((isa & 1u) == 0) /* raw class pointer (non-pointer isa disabled) */
    return (isa & 7u) ? 0 : isa;
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
