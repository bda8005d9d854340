/*
 * macho_fixups.c — the one fixup iterator over every table of an image
 * (rebase, bind, weak-bind, lazy-bind opcode streams, then chained fixups),
 * and reading a rebased pointer back from an image.
 *
 * Never allocates; dispatches to macho_opcodes.c and macho_chained.c.
 */
#include <string.h>

#include "heapgraph.h"
#include "machoparse/macho_format.h"
#include "machoparse/macho_internal.h"

static const unsigned order[] = {MACHO_SRC_REBASE, MACHO_SRC_BIND, MACHO_SRC_WEAK_BIND,
                                 MACHO_SRC_LAZY_BIND, MACHO_SRC_CHAINED};

void macho_fixups_begin(struct macho_fixup_iter *it, const struct macho_image *img, unsigned sources) {
  memset(it, 0, sizeof *it);
  it->img = img;
  it->sources = sources & MACHO_SRC_ALL;
}

int macho_fixups_next(struct macho_fixup_iter *it, struct macho_fixup *out) {
  for (;;) {
    if (it->err.code) return it->err.code;
    if (!it->current) {
      unsigned pick = 0;
      for (size_t i = 0; i < sizeof order / sizeof order[0] && !pick; i++)
        if (it->sources & order[i]) pick = order[i];
      if (!pick) return 0;
      it->sources &= ~pick;
      it->current = pick;
      if (pick == MACHO_SRC_CHAINED) {
        int rc = macho_chained_start(it);
        if (rc) return rc;
      } else {
        macho_opcodes_start(it, pick);
      }
    }
    int rc = it->current == MACHO_SRC_CHAINED ? macho_chained_next(it, out)
                                              : macho_opcodes_next(it, out);
    if (rc < 0) {
      it->sources = 0;
      return rc;
    }
    if (rc > 0) return 1;
    it->current = 0;
  }
}

int macho_read_pointer(const struct macho_image *img, uint64_t vmaddr, uint64_t *target,
                       uint64_t *value, struct macho_error *err) {
  const struct macho_segment *s = macho_segment_at(img, vmaddr);
  int64_t off = s ? macho_vm_to_off(img, s->index, vmaddr, 8) : -1;
  const uint8_t *p = off < 0 ? NULL : macho_bytes(img, (uint64_t)off, 8);
  if (!p)
    return macho_fail(err, HG_ENOTFOUND, 0, "vmaddr 0x%llx is not in the image's file bytes",
                      (unsigned long long)vmaddr);
  uint64_t fo = img->loaded ? (uint64_t)off : img->slice_off + (uint64_t)off;
  uint64_t v = macho_rd64(p), t;
  if (img->loaded) {
    /* Live pointer: strip PAC/high byte (top 17 bits for 47-bit VA), unslide. */
    uint64_t high8 = v & 0xff00000000000000ull;
    t = (v & 0x00007fffffffffffull) - img->slide;
    v = t | high8;
  } else if (img->threaded) {
    struct macho_fixup f;
    uint64_t next;
    memset(&f, 0, sizeof f);
    macho_chained_decode(CHAINED_PTR_ARM64E, v, img->base_vmaddr, &f, &next);
    if (f.kind != MACHO_FIXUP_REBASE)
      return macho_fail(err, HG_EFORMAT, fo, "pointer at vmaddr 0x%llx is a bind, not a rebase",
                        (unsigned long long)vmaddr);
    v = f.target;
    t = v & 0x00ffffffffffffffull;
  } else if (img->has_chained) {
    struct macho_fixup f;
    int rc = macho_chained_fixup_at(img, vmaddr, &f, err);
    if (rc && rc != HG_ENOTFOUND) return rc;
    if (rc == 0) {
      if (f.kind != MACHO_FIXUP_REBASE)
        return macho_fail(err, HG_EFORMAT, fo, "pointer at vmaddr 0x%llx is a bind, not a rebase",
                          (unsigned long long)vmaddr);
      v = f.target;
    }
    t = v & 0x00ffffffffffffffull;
  } else {
    t = v & 0x00ffffffffffffffull;
  }
  if (target) *target = t;
  if (value) *value = v;
  return 0;
}
