/*
 * mlog.c — the per-thread state and the chaining of the Darwin
 * malloc_logger hook (capture/darwin/alloc_logger.c), as plain logic over
 * a slot store, so that the re-entrancy is unit-tested on Linux
 * (tests/unit/test_darwin_mlog.c).
 *
 * Why slots and not thread-local variables: on Darwin a thread's first
 * access to a `__thread` variable runs dyld's lazy instantiation,
 * ThreadLocalVariables::instantiateVariable (dyld-1378
 * libdyld/ThreadLocalVariables.cpp), which calls ::malloc or ::calloc for
 * the thread's buffer before it stores it with dyld_thread_setspecific;
 * that malloc calls malloc_logger, i.e. our hook, which touches the
 * variable again — still not instantiated — and so on without end. The
 * hook's state lives instead in pthread keys: pthread_setspecific writes
 * thread->tsd[key], a fixed array inside the pthread_t, and
 * pthread_key_create takes a slot from a static table under a lock
 * (libpthread-539 src/pthread_tsd.c pthread_key_create,
 * _pthread_setspecific): neither allocates.
 *
 * Chaining: a logger already in libmalloc's malloc_logger slot (malloc.c
 * "malloc_logger_t *malloc_logger") is kept and called first; ours is
 * installed with a compare-and-swap after the previous one is recorded,
 * and taken out only when the slot still holds ours.
 *
 * Pure; never calls malloc.
 */
#include "capture/darwin_portable/darwin_portable.h"
#include "capture/stacks/alloc_record.h"

int _hg_mlog_enter(const struct hg_mlog_tls *t) {
  if (t->get(t->ctx, HG_MLOG_IN_HOOK)) return 0;
  t->set(t->ctx, HG_MLOG_IN_HOOK, 1);
  return 1;
}

void _hg_mlog_leave(const struct hg_mlog_tls *t) { t->set(t->ctx, HG_MLOG_IN_HOOK, 0); }

int _hg_mlog_sampled(const struct hg_mlog_tls *t, uint64_t T, uint64_t size) {
  uint64_t rng = t->get(t->ctx, HG_MLOG_RNG);
  int64_t left = (int64_t)t->get(t->ctx, HG_MLOG_SAMPLE_LEFT);
  if (!rng) { /* this thread's first gap (_hg_rec_gap seeds rng, never 0 after) */
    left = _hg_rec_gap(&rng, T);
    if (!rng) rng = 1;
  }
  left -= (int64_t)size;
  int hit = left <= 0;
  if (hit) left = _hg_rec_gap(&rng, T); /* exponential gaps: _hg_rec_weight holds */
  t->set(t->ctx, HG_MLOG_RNG, (uintptr_t)rng);
  t->set(t->ctx, HG_MLOG_SAMPLE_LEFT, (uintptr_t)left);
  return hit;
}

int _hg_mlog_chain(void **slot, void *ours, void **prev) {
  void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  for (;;) {
    __atomic_store_n(prev, cur, __ATOMIC_RELEASE); /* before ours is visible */
    if (__atomic_compare_exchange_n(slot, &cur, ours, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return 0;
  }
}

int _hg_mlog_unchain(void **slot, void *ours, void **prev) {
  void *expect = ours;
  void *p = __atomic_load_n(prev, __ATOMIC_ACQUIRE);
  if (__atomic_compare_exchange_n(slot, &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 0;
  return HG_EBUSY;
}
