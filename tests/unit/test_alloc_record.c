/*
 * test_alloc_record.c — the allocation-stack recorder core (capture/alloc_record.c):
 * interning, live map add/remove/lookup with growth and backward-shift
 * deletion, per-stack counts, threads, budget exhaustion, sampling weights,
 * the per-block sizes the Darwin hook keeps (moved with their slots by
 * growth and backward shifts, listed by _hg_rec_each, counted at removal).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "capture/stacks/alloc_record.h"
#include "hg_test.h"

static struct hg_rec R;

static void test_intern(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001};
  uint32_t ia = _hg_rec_intern(&R, a, 3), ib = _hg_rec_intern(&R, b, 3);
  CHECK(ia != 0 && ib != 0 && ia != ib);
  CHECK_EQ_U(_hg_rec_intern(&R, a, 3), ia);
  CHECK_EQ_U(_hg_rec_intern(&R, a, 2), 3); /* a prefix is another stack */
  const struct hg_rec_stack *s = _hg_rec_stack(&R, ib);
  REQUIRE(s);
  CHECK_EQ_U(s->nframes, 3);
  CHECK_EQ_U(s->frames[2], 0x3001);
  CHECK(_hg_rec_stack(&R, 99) == NULL);
  _hg_rec_destroy(&R);
}

static void test_map(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  uintptr_t f1 = 0x111, f2 = 0x222;
  uint32_t s1 = _hg_rec_intern(&R, &f1, 1), s2 = _hg_rec_intern(&R, &f2, 1);
  enum { N = 200000 };
  /* many blocks: every shard grows several times */
  for (uintptr_t i = 0; i < N; i++) CHECK(_hg_rec_add(&R, 0x10000000 + i * 48, 40, i & 1 ? s2 : s1) == 0);
  CHECK_EQ_U(R.live, N);
  for (uintptr_t i = 0; i < N; i += 7) CHECK_EQ_U(_hg_rec_lookup(&R, 0x10000000 + i * 48), i & 1 ? s2 : s1);
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x10000000 + 8), 0); /* not 16-aligned */
  CHECK_EQ_U(_hg_rec_lookup(&R, 0x0fff0000), 0);
  /* remove every third: the rest stay findable (backward shift) */
  uint64_t left1 = 0, left2 = 0;
  for (uintptr_t i = 0; i < N; i++) {
    if (i % 3 == 0)
      CHECK_EQ_U(_hg_rec_remove(&R, 0x10000000 + i * 48, 40), i & 1 ? s2 : s1);
    else
      *(i & 1 ? &left2 : &left1) += 1;
  }
  CHECK_EQ_U(_hg_rec_remove(&R, 0x10000000, 40), 0); /* already gone */
  for (uintptr_t i = 0; i < N; i++)
    if (_hg_rec_lookup(&R, 0x10000000 + i * 48) != (i % 3 == 0 ? 0 : (i & 1 ? s2 : s1))) {
      CHECK(!"lookup after removals");
      break;
    }
  CHECK_EQ_U(_hg_rec_count(&R, s1)->count_fx, left1 * HG_REC_FX);
  CHECK_EQ_U(_hg_rec_count(&R, s2)->bytes, left2 * 40);
  /* tracking memory per live block (8-byte slots, load 1/2..3/4 once grown) */
  uint64_t map_b = 0;
  for (unsigned i = 0; i < HG_REC_SHARDS; i++) map_b += R.shards[i].cap * 8;
  CHECK(map_b <= 16 * (uint64_t)N); /* measured at the peak of N live blocks */
  _hg_rec_destroy(&R);
}

struct targ { uint32_t id; uintptr_t base; };
static void *worker(void *p) {
  struct targ *t = p;
  for (int round = 0; round < 4; round++) {
    for (uintptr_t i = 0; i < 50000; i++) _hg_rec_add(&R, t->base + i * 16, 16, t->id);
    for (uintptr_t i = 0; i < 50000; i += 2) _hg_rec_remove(&R, t->base + i * 16, 16);
    for (uintptr_t i = 1; i < 50000; i += 2) _hg_rec_remove(&R, t->base + i * 16, 16);
  }
  for (uintptr_t i = 0; i < 1000; i++) _hg_rec_add(&R, t->base + i * 16, 16, t->id);
  return NULL;
}

/* Per-block sizes (hg_rec_config.sizes): every block keeps its size through
 * growth and backward-shift deletions; a remove counts the stored size
 * whatever the caller passes; _hg_rec_each lists address, stack, size. */
struct each_acc {
  uint64_t n, bytes, bad;
};
static int each_sized(void *ctx, uintptr_t addr, uint32_t id, uint64_t size) {
  struct each_acc *a = ctx;
  uint64_t i = (addr - 0x20000000) / 32;
  a->n++;
  a->bytes += size;
  if (size != (i % 50 + 1) * 16 || id != 1 + (i & 1)) a->bad++;
  return 0;
}
static int each_plain(void *ctx, uintptr_t addr, uint32_t id, uint64_t size) {
  (void)addr, (void)id;
  ((struct each_acc *)ctx)->bad += size != 0;
  return 0;
}

static void test_sizes(void) {
  struct hg_rec_config cfg = {8, 0, 0, 1};
  REQUIRE(_hg_rec_init(&R, &cfg) == 0);
  uintptr_t f1 = 0x111, f2 = 0x222;
  uint32_t s1 = _hg_rec_intern(&R, &f1, 1), s2 = _hg_rec_intern(&R, &f2, 1);
  REQUIRE(s1 == 1 && s2 == 2);
  enum { N = 300000 };
  uint64_t want = 0;
  for (uintptr_t i = 0; i < N; i++) { /* sizes 16 .. 800: grows every shard */
    CHECK(_hg_rec_add(&R, 0x20000000 + i * 32, (i % 50 + 1) * 16, i & 1 ? s2 : s1) == 0);
    want += (i % 50 + 1) * 16;
  }
  /* bytes per live block at the peak: 12-byte slots at load 1/2 .. 3/4 */
  uint64_t map_b = 0;
  for (unsigned i = 0; i < HG_REC_SHARDS; i++) map_b += R.shards[i].cap * _hg_rec_slot_bytes(&R);
  printf("  sizes: %.1f bytes per live block (%u blocks)\n", (double)map_b / N, (unsigned)N);
  CHECK(map_b <= 24 * (uint64_t)N);
  for (uintptr_t i = 0; i < N; i += 3) { /* the caller's size is ignored */
    CHECK(_hg_rec_remove(&R, 0x20000000 + i * 32, 999999) != 0);
    want -= (i % 50 + 1) * 16;
  }
  struct each_acc a = {0, 0, 0};
  CHECK_EQ_U(_hg_rec_each(&R, each_sized, &a), 0);
  CHECK_EQ_U(a.n, N - (N + 2) / 3);
  CHECK_EQ_U(a.bad, 0);
  CHECK_EQ_U(a.bytes, want);
  CHECK_EQ_U(_hg_rec_count(&R, s1)->bytes + _hg_rec_count(&R, s2)->bytes, want);
  /* replaced in place (a free we missed): the old size leaves its stack */
  CHECK(_hg_rec_add(&R, 0x20000000 + 32, 4096, s1) == 0);
  CHECK_EQ_U(_hg_rec_count(&R, s1)->bytes + _hg_rec_count(&R, s2)->bytes, want - 32 + 4096);
  /* unit and saturation: bytes / 8 in 32 bits, like a node's size */
  CHECK_EQ_U(_hg_rec_size_decode(_hg_rec_size_code(20)), 16);
  CHECK_EQ_U(_hg_rec_size_code(HG_REC_SIZE_MAX + 4096), UINT32_MAX);
  CHECK_EQ_U(_hg_rec_size_decode(_hg_rec_size_code((uint64_t)5 << 32)), (uint64_t)5 << 32);
  _hg_rec_destroy(&R);
  /* without sizes nothing changes: 8-byte slots, size 0 in _hg_rec_each */
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  s1 = _hg_rec_intern(&R, &f1, 1);
  for (uintptr_t i = 0; i < 1000; i++) _hg_rec_add(&R, 0x20000000 + i * 32, 48, s1);
  a.bad = 0;
  _hg_rec_each(&R, each_plain, &a);
  CHECK_EQ_U(a.bad, 0);
  CHECK_EQ_U(_hg_rec_slot_bytes(&R), 8);
  _hg_rec_destroy(&R);
}

static void test_threads(void) {
  REQUIRE(_hg_rec_init(&R, NULL) == 0);
  pthread_t th[4];
  struct targ a[4];
  for (int i = 0; i < 4; i++) {
    uintptr_t f[2] = {0x500, (uintptr_t)i};
    a[i].id = _hg_rec_intern(&R, f, 2);
    a[i].base = 0x20000000 + (uintptr_t)i * 0x1000000;
    pthread_create(&th[i], NULL, worker, &a[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_EQ_U(R.live, 4000);
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_U(_hg_rec_count(&R, a[i].id)->count_fx, 1000 * HG_REC_FX);
    CHECK_EQ_U(_hg_rec_lookup(&R, a[i].base + 999 * 16), a[i].id);
  }
  _hg_rec_destroy(&R);
}

static void test_budget(void) {
  struct hg_rec_config cfg = {8, 2u << 20, 0, 0}; /* 2 MiB: the map cannot grow far */
  REQUIRE(_hg_rec_init(&R, &cfg) == 0);
  uintptr_t f = 1;
  uint32_t id = _hg_rec_intern(&R, &f, 1);
  REQUIRE(id);
  uint64_t ok = 0;
  for (uintptr_t i = 0; i < 1000000; i++) ok += _hg_rec_add(&R, 0x40000000 + i * 16, 16, id) == 0;
  CHECK_EQ_U(R.status, 1);
  CHECK(R.dropped > 0 && ok + R.dropped == 1000000);
  CHECK(_hg_rec_mem(&R) <= cfg.budget);
  CHECK_EQ_U(_hg_rec_count(&R, id)->count_fx, ok * HG_REC_FX);
  /* stacks too: interning fails cleanly once the table is full */
  uint32_t last = 1;
  for (uintptr_t i = 2; i < 100000 && last; i++) last = _hg_rec_intern(&R, &i, 1);
  CHECK_EQ_U(last, 0);
  _hg_rec_destroy(&R);
}

static void test_weight(void) {
  uint64_t c, b;
  _hg_rec_weight(0, 100, &c, &b);
  CHECK_EQ_U(c, HG_REC_FX);
  CHECK_EQ_U(b, 100);
  /* p = 1 - e^-1 for size == T */
  _hg_rec_weight(1000, 1000, &c, &b);
  CHECK(b > 1581 && b < 1583);
  /* tiny blocks: about T/size blocks each, T bytes */
  _hg_rec_weight(524288, 16, &c, &b);
  CHECK(b > 524280 && b < 524300);
  CHECK(c / HG_REC_FX > 32760 && c / HG_REC_FX < 32780);
  _hg_rec_weight(4096, 1u << 30, &c, &b); /* always sampled */
  CHECK_EQ_U(c, HG_REC_FX);
}

/* The sampler both platforms use: gaps average T, and counting a stream of
 * blocks down with them, weighing each picked block with _hg_rec_weight,
 * estimates the stream's count and bytes without bias (per size class). */
static void test_sampler(void) {
  uint64_t rng = 12345, T = 65536;
  double sum = 0;
  enum { G = 200000 };
  for (int i = 0; i < G; i++) {
    int64_t g = _hg_rec_gap(&rng, T);
    CHECK(g >= 1);
    sum += (double)g;
  }
  CHECK(sum / G > 0.98 * T && sum / G < 1.02 * T);
  uint64_t sizes[3] = {32, 4096, 200000}, est_c[3] = {0}, est_b[3] = {0}, n[3] = {0};
  int64_t left = _hg_rec_gap(&rng, T);
  for (int i = 0; i < 3000000; i++) {
    int k = i % 100 == 0 ? 2 : (i % 7 == 0 ? 1 : 0); /* a mix: mostly small */
    n[k]++;
    left -= (int64_t)sizes[k];
    if (left > 0) continue;
    left = _hg_rec_gap(&rng, T);
    uint64_t c, b;
    _hg_rec_weight(T, sizes[k], &c, &b);
    est_c[k] += c;
    est_b[k] += b;
  }
  for (int k = 0; k < 3; k++) {
    double ratio = (double)est_c[k] / HG_REC_FX / (double)n[k];
    if (!(ratio > 0.95 && ratio < 1.05)) fprintf(stderr, "size %lu: estimate/true %.3f\n", (unsigned long)sizes[k], ratio);
    CHECK(ratio > 0.95 && ratio < 1.05);
    CHECK(est_b[k] / (double)(n[k] * sizes[k]) > 0.95 && est_b[k] / (double)(n[k] * sizes[k]) < 1.05);
  }
}

static void test_filter(void) {
  struct hg_rec_config cfg = {8, 0, 4096, 0}; /* sampled: the free-path filter is kept */
  REQUIRE(_hg_rec_init(&R, &cfg) == 0);
  uintptr_t f = 7;
  uint32_t id = _hg_rec_intern(&R, &f, 1);
  CHECK(!_hg_rec_maybe(&R, 0x50000000));
  CHECK(_hg_rec_add(&R, 0x50000000, 64, id) == 0);
  CHECK(_hg_rec_maybe(&R, 0x50000000));
  uint64_t maybe = 0;
  for (uintptr_t i = 1; i < 10000; i++) maybe += _hg_rec_maybe(&R, 0x50000000 + i * 16);
  CHECK(maybe < 10); /* one bucket of 32768 taken */
  CHECK_EQ_U(_hg_rec_remove(&R, 0x50000000, 64), id);
  CHECK(!_hg_rec_maybe(&R, 0x50000000));
  _hg_rec_destroy(&R);
}

/* The own-mapping registry holds every mapping a recorder with the most
 * shards makes at once: a table per shard, one more while a shard grows,
 * the fixed tables, the queue's ring and the large-allocation ring. A
 * mapping left out would be scanned as the app's memory (false roots). */
static void test_own_registry(void) {
  enum { N = HG_REC_SHARDS + 4 };
  const uint64_t base = 0x7e0000000000ull, step = 1u << 20;
  for (uint64_t i = 0; i < N; i++) _hg_rec_own_add((const void *)(uintptr_t)(base + i * step), 4096);
  uint32_t owned = 0;
  for (uint64_t i = 0; i < N; i++) owned += _hg_rec_owns(base + i * step, base + i * step + 4096);
  CHECK_EQ_U(owned, N);
  CHECK(!_hg_rec_owns(base + step / 2, base + step / 2 + 4096)); /* between two: not ours */
  for (uint64_t i = 0; i < N; i++) _hg_rec_own_remove((const void *)(uintptr_t)(base + i * step));
  CHECK(!_hg_rec_owns(base, base + 4096));
}

int main(void) {
  RUN(test_own_registry);
  RUN(test_filter);
  RUN(test_intern);
  RUN(test_map);
  RUN(test_sizes);
  RUN(test_threads);
  RUN(test_budget);
  RUN(test_weight);
  RUN(test_sampler);
  return hg_test_done();
}
