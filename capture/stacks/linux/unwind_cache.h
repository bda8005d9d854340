/*
 * unwind_cache.h — the interposer's cached .eh_frame unwinder (x86_64 Linux;
 * see unwind_cache.c). Thread-safe, never calls malloc except through
 * libunwind/pthread_getattr_np on a cache miss (the caller's re-entrancy
 * guard must be set).
 */
#ifndef HG_UNWIND_CACHE_H
#define HG_UNWIND_CACHE_H

#include <stdint.h>

/* A thread's memo of its last complete walk (one that reached the stack's
 * outermost frame), outermost frame first: frame i has return address pc[i]
 * at stack pointer sp[i], and h[i] is the stack hash state
 * (alloc_record.h) folded over frames 0..i. The next walk of the thread
 * stops as soon as it reaches a frame with the same pc and sp and takes the
 * rest from here once every outer frame's return-address slot still holds
 * the same value (see unwind_cache.c: why that is the same walk). */
#define HG_UNWIND_MEMO 167 /* frames: the memo's arrays fill a 4 KiB page */

/* A thread's recent complete walks by their first frame (pc, sp), for the
 * allocation sites a thread comes back to at the same stack depth (a loop,
 * an event handler): frame i's return address and its sp - sp0. A walk
 * starting at (pc, sp) is taken whole, stack id and all, once every
 * frame's return-address slot still holds the same value (the same
 * argument as the memo's). */
#define HG_WALKS 16        /* direct-mapped by (pc, sp)                        */
#define HG_WALK_FRAMES 28  /* longer walks are not kept here                   */
struct hg_walk {
  uintptr_t sp0;      /* 0: empty                                            */
  uint32_t id;        /* the stack id the walk was interned as               */
  uint32_t n;         /* frames                                              */
  uint32_t gen;       /* rule-table generation                               */
  uint32_t pad;
  uintptr_t pc[HG_WALK_FRAMES];
  uint32_t off[HG_WALK_FRAMES];
};

struct hg_unwind_memo {
  uint32_t depth;     /* frames held (0: none)                                */
  uint32_t gen;       /* rule-table generation they were walked under         */
  uint32_t whole;     /* the last walk's out[] is the whole memo (out[i] is
                         frame depth-1-i): its hash states apply              */
  uint32_t deep_pause; /* walks left without the memo (the stack was deeper
                          than HG_UNWIND_MEMO frames)                         */
  uint64_t spliced;   /* walks that took the memo's outer part              */
  uint64_t changed;   /* matches whose outer part had changed (tests)        */
  uint64_t recalled;  /* allocations whose whole walk was a kept one         */
  uintptr_t pc[HG_UNWIND_MEMO];
  uintptr_t sp[HG_UNWIND_MEMO];
  uint64_t h[HG_UNWIND_MEMO];
  struct hg_walk walks[HG_WALKS];
};

_Static_assert(sizeof(struct hg_unwind_memo) <= 3 * 4096, "a memo is three pages");

/* The calling thread's memo (linux_hook.c; NULL before its first recorded
 * allocation): for tests. */
const struct hg_unwind_memo *_hg_stacks_memo_self(void);

/* Return addresses of the calling thread's stack from the frame (pc, sp)
 * out, innermost first: pc is a function's return address and sp its CFA
 * (__builtin_return_address(0) and __builtin_dwarf_cfa() of a caller of
 * this function, or its caller's), so out[0] = pc. At most max; returns the
 * count. With a memo (NULL: none) the walk reuses and updates it. */
int _hg_unwind_cached(uintptr_t *out, int max, struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp);

/* The stack id of the walk from (pc, sp) if it is one of the thread's
 * kept walks and unchanged, else 0. */
uint32_t _hg_unwind_recall(struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp);
/* After _hg_unwind_cached(out, n, m, pc, sp) and interning its frames as
 * id: keeps the walk (when the memo holds all of it). */
void _hg_unwind_keep(struct hg_unwind_memo *m, int n, uint32_t id);

/* After _hg_unwind_cached(out, n, m) returned n frames: 1 and the hash
 * state folded over out[i..n) (outermost first) when the memo has it. */
static inline int _hg_unwind_hash(const struct hg_unwind_memo *m, int i, int n, uint64_t *state) {
  if (!m || !m->whole || (uint32_t)n != m->depth || i < 0 || i >= n) return 0;
  *state = m->h[n - 1 - i];
  return 1;
}

#endif
