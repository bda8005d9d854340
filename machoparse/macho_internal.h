/*
 * macho_internal.h — helpers shared by the machoparse .c files: bounds-checked
 * little-endian readers and ULEB128/SLEB128 decoders over a slice.
 *
 * Every reader takes an explicit end and fails rather than reading past it;
 * nothing here allocates.
 */
#ifndef HG_MACHO_INTERNAL_H
#define HG_MACHO_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "machoparse/macho.h"

static inline uint16_t macho_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t macho_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t macho_rd64(const uint8_t *p) {
  return (uint64_t)macho_rd32(p) | ((uint64_t)macho_rd32(p + 4) << 32);
}
static inline uint32_t macho_rd32be(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t macho_rd64be(const uint8_t *p) {
  return ((uint64_t)macho_rd32be(p) << 32) | macho_rd32be(p + 4);
}

/* ULEB128 at p[*pos] with p[end] the limit. 0 on success; -1 truncated,
 * -2 more than 64 significant bits. */
static inline int macho_uleb(const uint8_t *p, uint32_t end, uint32_t *pos, uint64_t *out) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint32_t i = *pos;
  for (;;) {
    if (i >= end) return -1;
    uint8_t b = p[i++];
    uint64_t low = b & 0x7f;
    if (shift >= 64 || (shift == 63 && low > 1)) {
      if (low != 0) return -2;
    } else {
      v |= low << shift;
    }
    shift += 7;
    if (!(b & 0x80)) break;
    if (shift > 70 + 63) return -2; /* absurdly long padding */
  }
  *pos = i;
  *out = v;
  return 0;
}

static inline int macho_sleb(const uint8_t *p, uint32_t end, uint32_t *pos, int64_t *out) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint32_t i = *pos;
  uint8_t b;
  do {
    if (i >= end) return -1;
    b = p[i++];
    uint64_t low = b & 0x7f;
    if (shift >= 64) {
      /* Only sign padding may follow. */
      uint64_t pad = (v >> 63) ? 0x7f : 0;
      if (low != pad) return -2;
    } else {
      if (shift == 63 && low != 0 && low != 0x7f) return -2;
      v |= low << shift;
    }
    shift += 7;
    if (shift > 70 + 63) return -2;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
  *pos = i;
  *out = (int64_t)v;
  return 0;
}

/* Length of the NUL-terminated string at p[pos] before end, or -1. */
static inline long macho_strlen(const uint8_t *p, uint32_t pos, uint32_t end) {
  if (pos >= end) return -1;
  const void *z = memchr(p + pos, 0, end - pos);
  return z ? (long)((const uint8_t *)z - (p + pos)) : -1;
}

/* Internal: start of the opcode or chained walker (macho_opcodes.c / macho_chained.c). */
void macho_opcodes_start(struct macho_fixup_iter *it, unsigned source);
int macho_opcodes_next(struct macho_fixup_iter *it, struct macho_fixup *out);
int macho_chained_start(struct macho_fixup_iter *it);
int macho_chained_next(struct macho_fixup_iter *it, struct macho_fixup *out);

/* Fixup budget for one table: bounds runaway loops (macho_image.c). */
uint64_t macho_fixup_budget(const struct macho_image *img);
/* Slice offset of unslid vmaddr inside segment seg's file-backed bytes, or -1. */
int64_t macho_vm_to_off(const struct macho_image *img, uint32_t seg, uint64_t vmaddr, uint64_t len);

#endif
