/*
 * test_alloc_queue.c — the recorder's live-map update queue
 * (capture/alloc_queue.c): order of events, a full ring drained by its
 * producers, reservations filled late or never (fork child), addresses
 * reused across threads while a drainer thread applies batches, the drain
 * lock never waited for, the budget.
 */
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "capture/stacks/alloc_queue.h"
#include "heapgraph.h"
#include "hg_test.h"

static struct hg_rec R;
static struct hg_rq Q;

static uint32_t stack(uintptr_t f) { return _hg_rec_intern(&R, &f, 1); }

static void test_order(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 4) == 0); /* 16 slots: pushes below fill it */
  uint32_t a = stack(0xa), b = stack(0xb);
  /* the same address added, removed, added again under another stack */
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x1000, 32, a);
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x1000, 32, 0);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x1000, 48, b);
  CHECK_EQ_U(_hg_rq_pending(&Q), 3);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x1000), 0); /* nothing applied yet */
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, 2), 2);    /* at most max */
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x1000), 0);
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 1);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x1000), b);
  CHECK_EQ_U(_hg_rec_count(&R, a)->count_fx, 0);
  CHECK_EQ_U(_hg_rec_count(&R, b)->bytes, 48);
  /* 100 pushes through 16 slots: producers drain the full ring themselves */
  for (uintptr_t i = 0; i < 100; i++) _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x100000 + i * 16, 16, a);
  CHECK(Q.self_drains > 0);
  CHECK(_hg_rq_pending(&Q) <= 16);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  CHECK_EQ_U(_hg_rq_pending(&Q), 0);
  CHECK_EQ_U(R.live, 101);
  CHECK_EQ_U(_hg_rec_count(&R, a)->count_fx, 100 * HG_REC_FX);
  /* the drain lock is never waited for */
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x100000, 16, 0);
  Q.lock = 1;
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 0);
  Q.lock = 0;
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 1);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x100000), 0);
  _hg_rec_destroy(&R);
}

/* A realloc reserves its ticket before the allocator call: events pushed by
 * others meanwhile wait behind it, and a no-op fill (failed realloc) keeps
 * the block. */
static void test_reservation(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 6) == 0);
  uint32_t a = stack(0xa), b = stack(0xb);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x2000, 32, a);
  uint64_t t = _hg_rq_reserve(&Q, &R); /* realloc(0x2000) in progress */
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x2000, 64, b); /* another thread got 0x2000 */
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 1); /* stops at the open ticket */
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x2000), a);
  _hg_rq_fill(&Q, t, HG_RQ_REMOVE, 0x2000, 32, 0);
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 2);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x2000), b);
  CHECK_EQ_U(_hg_rec_count(&R, a)->count_fx, 0);
  CHECK_EQ_U(_hg_rec_count(&R, b)->count_fx, HG_REC_FX);
  t = _hg_rq_reserve(&Q, &R); /* a failed realloc */
  _hg_rq_fill(&Q, t, HG_RQ_NOP, 0x2000, 64, 0);
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 1);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x2000), b);
  _hg_rec_destroy(&R);
}

/* Fork child: tickets reserved by threads that are gone become no-ops, even
 * when the ring had wrapped around them. */
static void test_orphans(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 3) == 0); /* 8 slots */
  uint32_t a = stack(0xa);
  for (uintptr_t i = 0; i < 5; i++) _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x3000 + i * 16, 16, a);
  uint64_t t1 = _hg_rq_reserve(&Q, &R); /* never filled: its thread is gone */
  (void)t1;
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x4000, 16, a);
  uint64_t t2 = _hg_rq_reserve(&Q, &R);
  (void)t2;
  CHECK_EQ_U(_hg_rq_pending(&Q), 8);
  Q.lock = 1; /* as fork_prepare leaves it */
  _hg_rq_after_fork_child(&Q, &R);
  Q.lock = 0;
  CHECK_EQ_U(_hg_rq_pending(&Q), 0);
  CHECK_EQ_U(R.live, 6);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x4000), a);
  /* the ring goes on: more than a lap of pushes */
  for (uintptr_t i = 0; i < 20; i++) _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x3000 + (i % 5) * 16, 16, 0);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  CHECK_EQ_U(R.live, 1);
  _hg_rec_destroy(&R);
}

/* A run's events are netted per address: the last one decides, the block
 * there before the run loses the size its remove said. */
static void test_netting(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 12) == 0);
  uint32_t a = stack(0xa), b = stack(0xb);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x5000, 32, a);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  /* freed and handed out again within a run: one update */
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x5000, 32, 0);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x5000, 48, b);
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), 2);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x5000), b);
  CHECK_EQ_U(_hg_rec_count(&R, a)->count_fx, 0);
  CHECK_EQ_U(_hg_rec_count(&R, a)->bytes, 0);
  CHECK_EQ_U(_hg_rec_count(&R, b)->bytes, 48);
  CHECK_EQ_U(R.live, 1);
  /* allocated and freed within a run: nothing */
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x6000, 16, a);
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x6000, 16, 0);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x6000), 0);
  CHECK_EQ_U(_hg_rec_count(&R, a)->count_fx, 0);
  CHECK_EQ_U(R.live, 1);
  /* removed, added, removed: gone, with the first remove's size */
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x5000, 48, 0);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x5000, 64, a);
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x5000, 64, 0);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x5000), 0);
  CHECK_EQ_U(_hg_rec_count(&R, b)->bytes, 0);
  CHECK_EQ_U(_hg_rec_count(&R, a)->bytes, 0);
  CHECK_EQ_U(R.live, 0);
  /* an add at the end of one run and its remove in the next */
  for (uintptr_t i = 1; i < HG_RQ_RUN; i++) _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x100000 + i * 16, 16, a);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x7000, 32, b);
  _hg_rq_push(&Q, &R, HG_RQ_REMOVE, 0x7000, 32, 0);
  CHECK_EQ_U(_hg_rq_drain(&Q, &R, UINT64_MAX), HG_RQ_RUN + 1);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x7000), 0);
  CHECK_EQ_U(R.live, HG_RQ_RUN - 1);
  CHECK_EQ_U(_hg_rec_count(&R, b)->count_fx, 0);
  _hg_rec_destroy(&R);
}

/* Netted runs end where applying every event in order ends: a random
 * allocator-like stream (a pool of addresses, each taken or given back)
 * through the queue against the same stream applied directly. */
static struct hg_rec D;
static void test_netting_equivalence(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rec_init(&D, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 14) == 0);
  enum { ADDRS = 700, STACKS = 5 };
  static uint32_t sz[ADDRS];
  static uint8_t live[ADDRS];
  uint32_t sr[STACKS], sd[STACKS];
  for (uintptr_t k = 0; k < STACKS; k++) {
    uintptr_t f = 0x100 + k;
    sr[k] = _hg_rec_intern(&R, &f, 1);
    sd[k] = _hg_rec_intern(&D, &f, 1);
  }
  uint64_t x = 88172645463325252ull;
  for (int step = 0; step < 200000; step++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned i = (unsigned)(x % ADDRS), k = (unsigned)((x >> 20) % STACKS);
    uintptr_t addr = 0x10000000 + (uintptr_t)i * 64;
    if (live[i]) {
      _hg_rq_push(&Q, &R, HG_RQ_REMOVE, addr, sz[i], 0);
      _hg_rec_remove(&D, addr, sz[i]);
    } else {
      sz[i] = 16 + (uint32_t)((x >> 40) % 48) * 16;
      _hg_rq_push(&Q, &R, HG_RQ_ADD, addr, sz[i], sr[k]);
      _hg_rec_add(&D, addr, sz[i], sd[k]);
    }
    live[i] ^= 1;
    if ((x >> 50) % 997 == 0) _hg_rq_drain(&Q, &R, (x >> 30) % 3000); /* runs cut anywhere */
  }
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  int same = 1;
  for (unsigned i = 0; i < ADDRS; i++) {
    uint32_t r = _hg_rec_lookup(&R, 0x10000000 + (uintptr_t)i * 64), d = _hg_rec_lookup(&D, 0x10000000 + (uintptr_t)i * 64);
    unsigned kr = STACKS, kd = STACKS;
    for (unsigned k = 0; k < STACKS; k++) kr = sr[k] == r ? k : kr, kd = sd[k] == d ? k : kd;
    same &= (r == 0) == (d == 0) && kr == kd;
  }
  CHECK(same);
  CHECK_EQ_U(R.live, D.live);
  for (unsigned k = 0; k < STACKS; k++) {
    CHECK_EQ_U(_hg_rec_count(&R, sr[k])->count_fx, _hg_rec_count(&D, sd[k])->count_fx);
    CHECK_EQ_U(_hg_rec_count(&R, sr[k])->bytes, _hg_rec_count(&D, sd[k])->bytes);
  }
  _hg_rec_destroy(&R);
  _hg_rec_destroy(&D);
}

/* A capture's flush applies what it can and says how many events stay
 * queued behind a thread frozen between taking its ticket and filling it
 * (the snapshot's "stacks_unapplied"). */
static void test_unapplied(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 6) == 0);
  R.queue = &Q;
  struct hg_rec *saved = _hg_rec_global;
  _hg_rec_global = &R;
  uint32_t a = stack(0xa);
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x8000, 16, a);
  uint64_t t = _hg_rq_reserve(&Q, &R); /* its thread frozen here */
  _hg_rq_push(&Q, &R, HG_RQ_ADD, 0x9000, 16, a);
  CHECK_EQ_U(_hg_stacks_flush(), 2); /* the open ticket and the event behind it */
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x8000), a);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x9000), 0);
  _hg_rq_fill(&Q, t, HG_RQ_NOP, 0, 0, 0);
  CHECK_EQ_U(_hg_stacks_flush(), 0);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x9000), a);
  _hg_rec_global = saved;
  _hg_rec_destroy(&R);
}

/* Threads pass blocks to each other through a shared pool (as an allocator
 * does): each remove is pushed before the block goes back to the pool, each
 * add after it came out, with a drainer thread applying batches and a ring
 * small enough to fill. The map must end with exactly the blocks held. */
enum { POOL = 4096, THREADS = 4, OPS = 200000 };
static uintptr_t pool[POOL];
static unsigned pool_n;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static uint32_t ids[THREADS];

struct held { uintptr_t addr[64]; unsigned n; uint64_t bytes; };
static struct held held[THREADS];

static void *producer(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  struct held *h = &held[me];
  uint64_t rng = 0x9e3779b97f4a7c15ull * (me + 1);
  for (int i = 0; i < OPS; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    if (h->n < 64 && (rng & 1 || !h->n)) {
      pthread_mutex_lock(&pool_mu);
      uintptr_t a = pool_n ? pool[--pool_n] : 0;
      pthread_mutex_unlock(&pool_mu);
      if (!a) continue;
      _hg_rq_push(&Q, &R, HG_RQ_ADD, a, 16 + me, ids[me]);
      h->addr[h->n++] = a;
    } else {
      uintptr_t a = h->addr[--h->n];
      _hg_rq_push(&Q, &R, HG_RQ_REMOVE, a, 16 + me, 0);
      pthread_mutex_lock(&pool_mu);
      pool[pool_n++] = a;
      pthread_mutex_unlock(&pool_mu);
    }
  }
  return NULL;
}

static void *drainer(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
    if (!_hg_rq_drain(&Q, &R, 256)) sched_yield();
  return NULL;
}

static void test_threads(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  REQUIRE(_hg_rq_init(&Q, &R, 8) == 0); /* 256 slots */
  for (unsigned i = 0; i < POOL; i++) pool[i] = 0x10000000 + (uintptr_t)i * 64;
  pool_n = POOL;
  for (unsigned i = 0; i < THREADS; i++) ids[i] = stack(0x100 + i);
  pthread_t d, th[THREADS];
  pthread_create(&d, NULL, drainer, NULL);
  for (unsigned i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i);
  for (unsigned i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(d, NULL);
  _hg_rq_drain(&Q, &R, UINT64_MAX);
  CHECK_EQ_U(_hg_rq_pending(&Q), 0);
  uint64_t total = 0;
  int wrong = 0;
  for (unsigned t = 0; t < THREADS; t++) {
    total += held[t].n;
    CHECK_EQ_U(_hg_rec_count(&R, ids[t])->count_fx, (uint64_t)held[t].n * HG_REC_FX);
    CHECK_EQ_U(_hg_rec_count(&R, ids[t])->bytes, (uint64_t)held[t].n * (16 + t));
    for (unsigned k = 0; k < held[t].n; k++) wrong += _hg_rec_lookup(&R, held[t].addr[k]) != ids[t];
  }
  CHECK_EQ_U(R.live, total);
  CHECK_EQ_U(wrong, 0);
  for (unsigned i = 0; i < pool_n; i++) wrong += _hg_rec_lookup(&R, pool[i]) != 0;
  CHECK_EQ_U(wrong, 0);
  _hg_rec_destroy(&R);
}

static void test_budget(void) {
  struct hg_rec_config cfg = {8, 1u << 20, 0, 0};
  REQUIRE(_hg_rec_init(&R, &cfg) == 0);
  CHECK(_hg_rq_init(&Q, &R, 16) == HG_ENOMEM); /* 2 MiB of ring > 1 MiB */
  _hg_rec_destroy(&R);
}

int main(void) {
  RUN(test_order);
  RUN(test_reservation);
  RUN(test_orphans);
  RUN(test_netting);
  RUN(test_netting_equivalence);
  RUN(test_unapplied);
  RUN(test_threads);
  RUN(test_budget);
  return hg_test_done();
}
