/*
 * root_clip.h — keeping root ranges off a thread's dead stack (portable;
 * capture/root_clip.c). Used by the platform backends where thread root
 * ranges are produced.
 */
#ifndef HG_CAPTURE_ROOT_CLIP_H
#define HG_CAPTURE_ROOT_CLIP_H

#include <stddef.h>
#include <stdint.h>

/* [lo, hi) less [cut_lo, cut_hi): 0, 1 or 2 pieces into out, in order. */
size_t _hg_range_minus(uint64_t lo, uint64_t hi, uint64_t cut_lo, uint64_t cut_hi, uint64_t out[2][2]);

struct hg_root_clip {
  /* in */
  uint64_t map_lo, map_hi; /* the thread's stack mapping                    */
  uint64_t live_lo;        /* lowest live stack address: SP less red zone   */
  /* in: the TLS range as computed; out: clipped (0, 0 when nothing left)  */
  uint64_t tls_lo, tls_hi;
  /* out: the live stack less TLS                                          */
  uint64_t stack_lo, stack_hi;
};

/* TLS less the dead stack [map_lo, live_lo); stack = live part less TLS. */
void _hg_clip_thread_roots(struct hg_root_clip *k);

#endif
