/*
 * root_clip.c — keeping root ranges off a thread's dead stack (portable).
 *
 * Below a thread's stack pointer (less the ABI's red zone) its stack holds
 * only stale words: frames that returned, spilled values of calls long
 * gone. Reported as roots they keep leaked blocks alive. A root range that
 * overlaps the stack mapping — on glibc the static TLS block and TCB sit at
 * the top of the thread's stack mapping, and with a shallow stack the TLS
 * range computed from tls_static_size reaches below the stack pointer —
 * is cut to the live part, and the stack range stops where the TLS range
 * begins, so that no word is reported twice.
 */
#include "capture/root_clip.h"

size_t _hg_range_minus(uint64_t lo, uint64_t hi, uint64_t cut_lo, uint64_t cut_hi, uint64_t out[2][2]) {
  size_t n = 0;
  if (lo >= hi) return 0;
  if (cut_lo >= cut_hi || cut_hi <= lo || cut_lo >= hi) {
    out[0][0] = lo, out[0][1] = hi;
    return 1;
  }
  if (lo < cut_lo) out[n][0] = lo, out[n][1] = cut_lo, n++;
  if (cut_hi < hi) out[n][0] = cut_hi, out[n][1] = hi, n++;
  return n;
}

void _hg_clip_thread_roots(struct hg_root_clip *k) {
  /* live stack: [live_lo, map_hi); dead: [map_lo, live_lo) */
  uint64_t live_lo = k->live_lo < k->map_lo ? k->map_lo : k->live_lo;
  if (live_lo > k->map_hi) live_lo = k->map_hi;
  k->stack_lo = live_lo;
  k->stack_hi = k->map_hi;
  uint64_t out[2][2];
  /* TLS: less the dead stack; a range below the mapping keeps its part */
  size_t n = _hg_range_minus(k->tls_lo, k->tls_hi, k->map_lo, live_lo, out);
  k->tls_lo = k->tls_hi = 0;
  if (n) { /* TLS lies at one end of the dead part: at most one piece is inside the mapping */
    k->tls_lo = out[n - 1][0];
    k->tls_hi = out[n - 1][1];
  }
  /* the stack stops where TLS begins (TLS sits at the top of the mapping) */
  if (k->tls_hi > k->tls_lo && k->tls_hi > k->stack_lo && k->tls_lo < k->stack_hi) {
    if (k->tls_lo <= k->stack_lo) {
      /* TLS covers the live stack's low end: it takes the words it covers */
      k->stack_lo = k->tls_hi < k->stack_hi ? k->tls_hi : k->stack_hi;
    } else {
      k->stack_hi = k->tls_lo;
    }
  }
}
