/*
 * test_darwin_mlog.c — the malloc_logger hook's per-thread state (mlog.c)
 * on Linux, with a model of the two Darwin facts it rests on:
 *   - dyld-1378 libdyld/ThreadLocalVariables.cpp
 *     ThreadLocalVariables::instantiateVariable: a thread's first access
 *     to a thread-local variable mallocs (or callocs) its buffer and only
 *     then stores it (dyld_thread_setspecific) — modelled by tlv_get/set,
 *     whose first touch on a thread calls fake_malloc;
 *   - libmalloc-792.41.1 src/malloc.c: every malloc calls malloc_logger —
 *     modelled by fake_malloc calling the hook;
 *   - libpthread-539 src/pthread_tsd.c _pthread_setspecific: a key's value
 *     is thread->tsd[key], a fixed array — modelled by tsd_get/set on a
 *     per-thread array (never allocates).
 * The hook with thread-local state (what alloc_logger.c had) recurses
 * without end on a thread's first allocation; with TSD slots (what it has
 * now) it records once. Chaining: the previous logger is kept and put back
 * with compare-and-swap.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

#define DEPTH_LIMIT 32

struct fake_thread {
  int tlv_instantiated;      /* dyld: this thread's TLV buffer exists */
  uintptr_t tlv[HG_MLOG_NSLOTS];
  uintptr_t tsd[HG_MLOG_NSLOTS]; /* libpthread: pthread_t.tsd[] slots */
  int depth, max_depth, recorded, mallocs;
};

static const struct hg_mlog_tls *hook_state; /* the state the hook uses */
static void fake_malloc(struct fake_thread *t);

static void hook(struct fake_thread *t) {
  if (!_hg_mlog_enter(hook_state)) return;
  t->recorded++;
  _hg_mlog_leave(hook_state);
}

static void fake_malloc(struct fake_thread *t) {
  t->mallocs++;
  if (++t->depth > t->max_depth) t->max_depth = t->depth;
  if (t->depth <= DEPTH_LIMIT) hook(t); /* libmalloc calls malloc_logger */
  t->depth--;
}

/* dyld's lazy TLV: the first touch on a thread mallocs the buffer first */
static void tlv_touch(struct fake_thread *t) {
  if (t->tlv_instantiated) return;
  fake_malloc(t);          /* instantiateVariable: ::calloc(size, 1) ... */
  t->tlv_instantiated = 1; /* ... then dyld_thread_setspecific(key, buffer) */
}
static uintptr_t tlv_get(void *ctx, unsigned slot) {
  struct fake_thread *t = ctx;
  tlv_touch(t);
  return t->tlv[slot];
}
static void tlv_set(void *ctx, unsigned slot, uintptr_t v) {
  struct fake_thread *t = ctx;
  tlv_touch(t);
  t->tlv[slot] = v;
}
static uintptr_t tsd_get(void *ctx, unsigned slot) { return ((struct fake_thread *)ctx)->tsd[slot]; }
static void tsd_set(void *ctx, unsigned slot, uintptr_t v) {
  ((struct fake_thread *)ctx)->tsd[slot] = v;
}

static void test_first_allocation_of_a_thread(void) {
  /* the old state: __thread variables */
  struct fake_thread a;
  memset(&a, 0, sizeof a);
  struct hg_mlog_tls tlv = {tlv_get, tlv_set, &a};
  hook_state = &tlv;
  fake_malloc(&a); /* the thread's first allocation */
  CHECK(a.max_depth > DEPTH_LIMIT); /* the model reproduces the unbounded recursion */
  /* the state alloc_logger.c uses now: pthread keys (TSD slots) */
  struct fake_thread b;
  memset(&b, 0, sizeof b);
  struct hg_mlog_tls tsd = {tsd_get, tsd_set, &b};
  hook_state = &tsd;
  fake_malloc(&b);
  CHECK_EQ_U(b.max_depth, 1);
  CHECK_EQ_U(b.mallocs, 1);
  CHECK_EQ_U(b.recorded, 1);
  CHECK_EQ_U(b.tsd[HG_MLOG_IN_HOOK], 0); /* left the hook */
  /* re-entry on the same thread (the hook's own callee allocating) is refused */
  CHECK_EQ_U(_hg_mlog_enter(&tsd), 1);
  CHECK_EQ_U(_hg_mlog_enter(&tsd), 0);
  _hg_mlog_leave(&tsd);
}

static void test_sampling_state(void) {
  struct fake_thread t;
  memset(&t, 0, sizeof t);
  struct hg_mlog_tls tsd = {tsd_get, tsd_set, &t};
  uint64_t hits = 0, n = 200000;
  for (uint64_t i = 0; i < n; i++) hits += (uint64_t)_hg_mlog_sampled(&tsd, 4096, 64);
  /* mean one sample per 4096 bytes: 200000 * 64 / 4096 = 3125 expected */
  CHECK(hits > 2800 && hits < 3450);
  CHECK(t.tsd[HG_MLOG_RNG] != 0);
}

static void msl_logger(void) {}
static void our_logger(void) {}
static void debugger_logger(void) {}

static void test_chain_unchain(void) {
  void *slot = (void *)msl_logger, *prev = NULL;
  CHECK_EQ_U(_hg_mlog_chain(&slot, (void *)our_logger, &prev), 0);
  CHECK(slot == (void *)our_logger && prev == (void *)msl_logger);
  CHECK_EQ_U(_hg_mlog_unchain(&slot, (void *)our_logger, &prev), 0);
  CHECK(slot == (void *)msl_logger);
  /* someone installed over ours: ours is not taken out from under them */
  CHECK_EQ_U(_hg_mlog_chain(&slot, (void *)our_logger, &prev), 0);
  slot = (void *)debugger_logger;
  CHECK(_hg_mlog_unchain(&slot, (void *)our_logger, &prev) == HG_EBUSY);
  CHECK(slot == (void *)debugger_logger);
}

int main(void) {
  RUN(test_first_allocation_of_a_thread);
  RUN(test_sampling_state);
  RUN(test_chain_unchain);
  return hg_test_done();
}
