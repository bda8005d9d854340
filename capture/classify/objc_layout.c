/*
 * objc_layout.c — decoders for what the Objective-C runtime says about an
 * ivar: Apple's ivar layout strings (class_getIvarLayout /
 * class_getWeakIvarLayout) and type encodings (ivar_getTypeEncoding).
 *
 * Layout string: bytes (skip << 4) | scan, counted in pointer-sized words,
 * the skip applied first, a 0 byte ends it. Since ARC the strings describe
 * only the class's own ivars, starting at the class's word-aligned
 * instanceStart (objc4 _class_lookUpIvar); the caller passes word indices
 * relative to that start.
 *
 * Every read is bounded by a caller-given length: layout strings come from
 * runtime memory we do not trust to be terminated. Pure functions.
 */
#include "capture/classify/objc.h"

int _hg_objc_layout_has(const uint8_t *layout, size_t max_len, uint64_t word) {
  if (!layout) return 0;
  uint64_t index = 0;
  for (size_t i = 0; i < max_len && layout[i]; i++) {
    index += (uint64_t)(layout[i] >> 4);
    if (word < index) return 0;
    index += (uint64_t)(layout[i] & 0x0f);
    if (word < index) return 1;
  }
  return 0;
}

uint64_t _hg_objc_layout_expand(const uint8_t *layout, size_t max_len, uint8_t *bits,
                                uint64_t nwords) {
  for (uint64_t w = 0; w < nwords; w++) bits[w] = 0;
  if (!layout) return 0;
  uint64_t index = 0;
  for (size_t i = 0; i < max_len && layout[i]; i++) {
    index += (uint64_t)(layout[i] >> 4);
    for (unsigned k = 0; k < (unsigned)(layout[i] & 0x0f); k++, index++)
      if (index < nwords) bits[index] = 1;
  }
  return index;
}

#define MAX_ARRAY_REFS 65536u

uint32_t _hg_objc_type_refs(const char *type) {
  if (!type) return 0;
  /* Qualifiers may precede a type in method encodings; skip them here too
   * (r const, n in, N inout, o out, O bycopy, R byref, V oneway, A atomic). */
  while (*type == 'r' || *type == 'n' || *type == 'N' || *type == 'o' || *type == 'O' ||
         *type == 'R' || *type == 'V' || *type == 'A')
    type++;
  if (type[0] == '@') return 1; /* id, @"Name", @? (block) */
  if (type[0] != '[') return 0;
  /* "[N@…]": a C array of object references. */
  uint64_t n = 0;
  const char *p = type + 1;
  if (*p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') {
    n = n * 10 + (uint64_t)(*p - '0');
    if (n > MAX_ARRAY_REFS) return 0;
    p++;
  }
  if (*p != '@') return 0;
  return (uint32_t)n;
}

uint32_t _hg_objc_ivar_kind(const char *type, uint64_t offset, uint64_t start,
                            const uint8_t *strong, const uint8_t *weak) {
  int obj = _hg_objc_type_refs(type) > 0;
  if (!strong && !weak) return obj ? HG_EDGE_STRONG : 0;
  if (offset >= start && ((offset - start) & 7u) == 0) {
    uint64_t word = (offset - start) / 8;
    if (_hg_objc_layout_has(strong, HG_OBJC_LAYOUT_MAX, word)) return HG_EDGE_STRONG;
    if (_hg_objc_layout_has(weak, HG_OBJC_LAYOUT_MAX, word)) return HG_EDGE_WEAK;
  }
  return obj ? HG_EDGE_UNOWNED : 0; /* ARC class, in no layout: __unsafe_unretained */
}
