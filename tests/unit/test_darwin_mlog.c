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
 * The events (mlog_event.c) against a fake libmalloc whose entry points
 * call the logger as libmalloc-792.41.1 src/malloc.c does (arguments and
 * order below, at each fake) over zones that round like nano v2 and the
 * scalable zone: the live map keeps each block's usable size (not the size
 * asked for), frees take it from the map without a size lookup, a failed
 * realloc keeps the old block, a realloc to 0 frees it.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "capture/stacks/alloc_record.h"
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

/* ---- a fake libmalloc ---- */

/* Usable sizes as the zones round them: nano v2 16-byte classes up to 256
 * (nanov2_malloc.c nanov2_size_class_from_size), then the scalable zone's
 * tiny 16-byte quanta up to TINY_LIMIT_THRESHOLD 1008 (64-bit) and small
 * 512-byte quanta above (src/thresholds.h:38, :60, :79). */
static uint64_t round_usable(uint64_t n) {
  if (n == 0) n = 1; /* malloc(0) gets the smallest block */
  if (n <= 1008) return (n + 15) & ~(uint64_t)15;
  return (n + 511) & ~(uint64_t)511;
}

#define FM_MAX 256
static struct fake_heap {
  uintptr_t addr[FM_MAX];
  uint64_t usable[FM_MAX];
  int live[FM_MAX];
  uint32_t n;
  uintptr_t next;
  uint64_t size_calls; /* malloc_size lookups (each walks the zones) */
  int fail_next;       /* the zone's next allocation fails */
  struct hg_rec *rec;
  int recording;
} H;

static int fh_find(uintptr_t p) {
  for (uint32_t i = 0; i < H.n; i++)
    if (H.live[i] && H.addr[i] == p) return (int)i;
  return -1;
}
/* malloc_size: _find_registered_zone asks each zone's size(); 0 when none has it */
static uint64_t fh_size(void *ctx, uintptr_t p) {
  (void)ctx;
  H.size_calls++;
  int i = fh_find(p);
  return i < 0 ? 0 : H.usable[i];
}
static uint64_t added_requested[FM_MAX];
static void fh_add(void *ctx, uintptr_t p, uint64_t requested, uint64_t size, uint32_t skip) {
  (void)ctx, (void)skip;
  uintptr_t f = 0x4000 + (p & 0xff0);
  uint32_t id = _hg_rec_intern(H.rec, &f, 1);
  int i = fh_find(p);
  if (i >= 0) added_requested[i] = requested;
  _hg_rec_add(H.rec, p, size, id);
}
static const struct hg_mlog_sink FH_SINK = {fh_size, fh_add, NULL};
static void logger(uint32_t type, uintptr_t zone, uintptr_t a2, uintptr_t a3, uintptr_t result) {
  (void)zone;
  _hg_mlog_event(H.rec, H.recording, type, a2, a3, result, 0, &FH_SINK);
}
static uintptr_t zone_alloc(uint64_t n) {
  if (H.fail_next) {
    H.fail_next = 0;
    return 0;
  }
  uint32_t i = H.n++;
  H.addr[i] = H.next;
  H.usable[i] = round_usable(n);
  H.live[i] = 1;
  H.next += H.usable[i] + 16; /* a gap: blocks never touch */
  return H.addr[i];
}
static void zone_free(uintptr_t p) {
  int i = fh_find(p);
  if (i >= 0) H.live[i] = 0;
}
#define ZONE 0x7000u
/* _malloc_zone_malloc_instrumented_or_legacy: zone->malloc, then
 * malloc_logger(ALLOCATE | HAS_ZONE, zone, size, 0, ptr, 0) */
static uintptr_t fm_malloc(uint64_t n) {
  uintptr_t p = zone_alloc(n);
  logger(HG_MLOG_ALLOCATE | HG_MLOG_HAS_ZONE, ZONE, n, 0, p);
  return p;
}
/* _malloc_zone_calloc_instrumented_or_legacy: ALLOCATE | HAS_ZONE | CLEARED,
 * arg2 = num_items * size */
static uintptr_t fm_calloc(uint64_t k, uint64_t n) {
  uintptr_t p = zone_alloc(k * n);
  logger(HG_MLOG_ALLOCATE | HG_MLOG_HAS_ZONE | HG_MLOG_CLEARED, ZONE, k * n, 0, p);
  return p;
}
/* _malloc_zone_realloc: zone->realloc, then malloc_logger(ALLOCATE |
 * DEALLOCATE | HAS_ZONE, zone, ptr, size, new_ptr, 0). The zone
 * (szone_realloc, magazine_malloc.c:449-): size 0 frees and returns
 * malloc(1); in place when the usable size still fits; else new block,
 * copy, free; on failure NULL and the old block untouched. */
static uintptr_t fm_realloc(uintptr_t old, uint64_t n) {
  uintptr_t np;
  int i = fh_find(old);
  if (n == 0) {
    zone_free(old);
    np = zone_alloc(1);
  } else if (i >= 0 && round_usable(n) == H.usable[i]) {
    np = old;
  } else {
    np = zone_alloc(n);
    if (np) zone_free(old);
  }
  logger(HG_MLOG_ALLOCATE | HG_MLOG_DEALLOCATE | HG_MLOG_HAS_ZONE, ZONE, old, n, np);
  return np;
}
/* malloc_zone_free: malloc_logger(DEALLOCATE | HAS_ZONE, zone, ptr, 0, 0,
 * 0) before zone->free (free() reaches it through find_zone_and_free
 * whenever a logger is set: _free) */
static void fm_free(uintptr_t p) {
  logger(HG_MLOG_DEALLOCATE | HG_MLOG_HAS_ZONE, ZONE, p, 0, 0);
  zone_free(p);
}

struct sum {
  uint64_t n, bytes, mismatch;
};
static int sum_each(void *ctx, uintptr_t addr, uint32_t id, uint64_t size) {
  struct sum *s = ctx;
  (void)id;
  int i = fh_find(addr);
  s->n++;
  s->bytes += size;
  if (i < 0 || H.usable[i] != size) s->mismatch++;
  return 0;
}
static uint64_t rec_bytes(void) {
  uint64_t b = 0;
  for (uint32_t id = 1; id <= _hg_rec_stack_count(H.rec); id++) b += _hg_rec_count(H.rec, id)->bytes;
  return b;
}
static uint64_t live_usable(void) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < H.n; i++) b += H.live[i] ? H.usable[i] : 0;
  return b;
}

static void test_events_keep_usable_sizes(void) {
  static struct hg_rec r;
  struct hg_rec_config cfg = {8, 0, 0, 1};
  REQUIRE(_hg_rec_init(&r, &cfg) == 0);
  memset(&H, 0, sizeof H);
  H.rec = &r;
  H.recording = 1;
  H.next = 0x10000000;
  uintptr_t a = fm_malloc(20);      /* usable 32 */
  uintptr_t b = fm_calloc(3, 10);   /* 30 asked: usable 32 */
  uintptr_t c = fm_malloc(5000);    /* small: 5120 */
  uintptr_t d = fm_malloc(100);
  CHECK_EQ_U(added_requested[fh_find(a)], 20);  /* the hook still sees the size asked for */
  CHECK_EQ_U(added_requested[fh_find(b)], 30);
  CHECK_EQ_U(r.live, 4);
  CHECK_EQ_U(rec_bytes(), 32 + 32 + 5120 + 112);
  /* grow: a new block, the old one gone with its own size */
  uintptr_t a2 = fm_realloc(a, 2000);
  CHECK(a2 && a2 != a);
  CHECK_EQ_U(_hg_rec_lookup(&r, a), 0);
  /* in place (same usable size): same address, still one entry */
  uintptr_t d2 = fm_realloc(d, 110);
  CHECK(d2 == d);
  /* failed (NULL for a non-zero size): the old block stays recorded */
  H.fail_next = 1;
  CHECK(fm_realloc(c, 1 << 20) == 0);
  CHECK(_hg_rec_lookup(&r, c) != 0);
  /* to 0: the zone freed it and returned malloc(1) */
  uintptr_t b2 = fm_realloc(b, 0);
  CHECK(b2 && _hg_rec_lookup(&r, b) == 0 && _hg_rec_lookup(&r, b2) != 0);
  CHECK_EQ_U(rec_bytes(), live_usable());
  /* frees need no size lookup: the map has it */
  uint64_t calls = H.size_calls;
  fm_free(c);
  fm_free(a2);
  CHECK_EQ_U(H.size_calls, calls);
  CHECK_EQ_U(rec_bytes(), live_usable());
  /* a block no registered zone claims (malloc_size 0) is not recorded */
  logger(HG_MLOG_ALLOCATE | HG_MLOG_HAS_ZONE, ZONE, 64, 0, 0x5000);
  CHECK_EQ_U(_hg_rec_lookup(&r, 0x5000), 0);
  /* stopped: new blocks pass, frees of recorded ones still leave the map */
  H.recording = 0;
  uintptr_t e = fm_malloc(48);
  CHECK_EQ_U(_hg_rec_lookup(&r, e), 0);
  fm_free(d2);
  CHECK_EQ_U(_hg_rec_lookup(&r, d2), 0);
  H.recording = 1;
  struct sum s = {0, 0, 0};
  _hg_rec_each(&r, sum_each, &s);
  CHECK_EQ_U(s.mismatch, 0);
  CHECK_EQ_U(s.n, 1); /* b2 (e passed unrecorded) */
  CHECK_EQ_U(s.bytes, live_usable() - round_usable(48));
  _hg_rec_destroy(&r);
}

/* Without sizes in the map (the Linux layout) a free asks the size. */
static void test_events_without_sizes(void) {
  static struct hg_rec r;
  REQUIRE(_hg_rec_init(&r, NULL) == 0);
  memset(&H, 0, sizeof H);
  H.rec = &r;
  H.recording = 1;
  H.next = 0x10000000;
  uintptr_t a = fm_malloc(40);
  uint64_t calls = H.size_calls;
  fm_free(a);
  CHECK_EQ_U(H.size_calls, calls + 1);
  CHECK_EQ_U(rec_bytes(), 0);
  _hg_rec_destroy(&r);
}

int main(void) {
  RUN(test_first_allocation_of_a_thread);
  RUN(test_sampling_state);
  RUN(test_chain_unchain);
  RUN(test_events_keep_usable_sizes);
  RUN(test_events_without_sizes);
  return hg_test_done();
}
