/*
 * objc_classdata.c — what a realized Apple class's read-only data says that
 * no public function returns: the unaligned instanceStart (objc4 aligns it
 * with word_align for the ARC layouts: objc-runtime-new.h
 * alignedInstanceStart, used by objc-class.mm), instanceSize, and whether
 * the class is a Swift class (the FAST_IS_SWIFT_LEGACY / _STABLE bits of
 * its data bits; objc_debug_swift_stable_abi_bit is exported).
 *
 * Reached the way debuggers do (objc4 objc-gdb.h exports
 * objc_debug_class_rw_data_mask for it): objc_class = {isa, superclass,
 * cache (16 bytes), bits} so bits at +32; class_rw_t = {u32 flags (bit 31
 * RW_REALIZED), u16 witness, [u16 index], uintptr ro_or_rw_ext} with
 * ro_or_rw_ext at +8 (low bit 1: a class_rw_ext_t whose first field is the
 * ro pointer); class_ro_t = {u32 flags, u32 instanceStart, u32
 * instanceSize, …} (objc-runtime-new.h). On arm64e those inner pointers are
 * signed: stripped with ptr_mask. Every read goes through the caller's
 * reader (a fault-free one in the process); the results are checked for
 * consistency and the caller cross-checks them with public functions.
 *
 * Pure; never calls malloc.
 */
#include "capture/classify/objc.h"

#define RW_REALIZED (1u << 31)

static uint64_t strip(uint64_t p, uint64_t ptr_mask) { return ptr_mask ? p & ptr_mask : p; }

int _hg_objc_class_data(uint64_t cls, const struct hg_objc_data_masks *k, hg_objc_read_fn rd,
                        void *ctx, struct hg_objc_ro *out) {
  uint64_t bits = 0, rwe = 0, ro = 0;
  uint32_t rw_flags = 0, ro3[3];
  if (!cls || (cls & 7) || !k->rw_mask) return HG_EINVAL;
  if (rd(ctx, cls + 32, &bits, 8)) return HG_EFORMAT;
  out->swift = (bits & k->swift_bits) != 0;
  uint64_t rw = bits & k->rw_mask;
  if (!rw || (rw & 7)) return HG_EFORMAT;
  if (rd(ctx, rw, &rw_flags, 4) || rd(ctx, rw + 8, &rwe, 8)) return HG_EFORMAT;
  if (!(rw_flags & RW_REALIZED)) return HG_EFORMAT;
  if (rwe & 1) { /* class_rw_ext_t: its ro pointer first */
    uint64_t ext = strip(rwe & ~1ull, k->ptr_mask);
    if (!ext || (ext & 7) || rd(ctx, ext, &ro, 8)) return HG_EFORMAT;
    ro = strip(ro, k->ptr_mask);
  } else {
    ro = strip(rwe, k->ptr_mask);
  }
  if (!ro || (ro & 3) || rd(ctx, ro, ro3, sizeof ro3)) return HG_EFORMAT;
  if (ro3[1] > ro3[2] || ro3[2] > (1u << 24)) return HG_EFORMAT;
  out->ro_flags = ro3[0];
  out->instance_start = ro3[1];
  out->instance_size = ro3[2];
  return 0;
}

uint64_t _hg_objc_layout_start(const struct hg_objc_ro *ro, int have_ro, uint64_t aligned_size,
                               uint64_t min_ivar_offset) {
  if (have_ro && (ro->instance_size + 7u) / 8u * 8u == aligned_size &&
      ro->instance_start <= min_ivar_offset)
    return (ro->instance_start + 7u) & ~7ull; /* word_align(ro->instanceStart) */
  /* without trustworthy class data: the first ivar's offset, word-aligned
   * (wrong only when that ivar is over-aligned) */
  if (min_ivar_offset == UINT64_MAX) return 0;
  return (min_ivar_offset + 7u) & ~7ull;
}
