/*
 * test_scan.c — unit tests of the scan itself (capture/scan_nodes.c,
 * scan_pipe.c, names.c, scan.c): a synthetic heap of blocks in one mmap,
 * words planted in them (block starts, interior pointers, pointers into the
 * gaps and out of the heap), a tiny classifier that names two words of its
 * blocks, and a root area. The snapshot each scan path writes (one thread,
 * pipelined on a helper) must hold exactly the edges and roots computed
 * here by brute force. mk/capture.mk links this file a second time with a
 * 64-entry ring (test_scan_ring64), where the ring wraps and both threads
 * wait on each other.
 */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/classify/classify.h"
#include "capture/linux/linux.h"
#include "capture/ptrindex.h"
#include "heapgraph.h"
#include "hg_test.h"

#define HELPER_POSSIBLE (!HG_TEST_ASAN) /* capture/linux/helper.c: no helper under ASan */

#define ARENA (1u << 20)
#define NBLOCKS 3000
#define MAGIC 0x7e57b10c5ca11edull

static uint64_t *arena, *roots_area;
static uint64_t blk_addr[NBLOCKS], blk_size[NBLOCKS];
static uint32_t nblk;
static uint64_t nonptr; /* the capture's nonptr_mask for the next scan */

/* ---- the classifier: blocks whose first word is MAGIC are "unit.T";
 * their word 1 is a strong edge "next", word 2 a weak one "prev" ---- */

struct tstate {
  uint32_t cls, field[3];
};
static struct tstate ts;

static int t_prepare(struct hg_classify_reg *reg) {
  memset(&ts, 0, sizeof ts);
  reg->state = &ts;
  return 0;
}
static uint64_t lane_calls[HG_SCAN_LANES + 1]; /* identify() calls per lane, [2]: bad lanes */
static uint32_t t_identify(void *state, const struct hg_cap *c, uint32_t lane, uint64_t addr,
                           uint64_t size, const uint64_t *w, uint32_t n) {
  (void)state, (void)c, (void)addr, (void)size;
  __atomic_add_fetch(&lane_calls[lane < HG_SCAN_LANES ? lane : HG_SCAN_LANES], 1, __ATOMIC_RELAXED);
  return n >= 3 && w[0] == MAGIC;
}
static uint64_t count_calls; /* count() calls: once per unit.T block, however often identified */
static void t_count(struct hg_classify_reg *reg, uint32_t token, uint64_t addr, uint64_t size) {
  (void)reg, (void)addr, (void)size;
  count_calls += token == 1;
}
static uint32_t t_class_of(struct hg_classify_reg *reg, uint32_t token) {
  struct tstate *s = reg->state;
  if (token != 1) return 0;
  if (!s->cls) s->cls = _hg_classify_class(reg, "unit.T", HG_CLASS_OTHER, 24);
  return s->cls;
}
static uint32_t t_edge_identify(void *state, const struct hg_cap *c, uint32_t token, uint64_t off) {
  (void)state, (void)c;
  return token == 1 && (off == 8 || off == 16) ? (uint32_t)(off / 8) : 0;
}
static uint32_t t_edge_of(struct hg_classify_reg *reg, uint32_t etok, uint32_t *field) {
  struct tstate *s = reg->state;
  *field = 0;
  if (etok < 1 || etok > 2) return HG_EDGE_CONSERVATIVE;
  if (!s->field[etok]) s->field[etok] = _hg_classify_string(reg, etok == 1 ? "next" : "prev");
  *field = s->field[etok];
  return etok == 1 ? HG_EDGE_STRONG : HG_EDGE_WEAK;
}
static const struct hg_classifier unit_t = {.name = "unit-t", .prepare = t_prepare,
                                            .identify = t_identify, .class_of = t_class_of, .count = t_count,
                                            .edge_identify = t_edge_identify, .edge_of = t_edge_of};

/* ---- the synthetic heap ---- */

/* Block containing v, or -1. */
static int64_t block_of(uint64_t v) {
  uint32_t lo = 0, hi = nblk;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (v < blk_addr[mid]) hi = mid;
    else if (v >= blk_addr[mid] + blk_size[mid]) lo = mid + 1;
    else return mid;
  }
  return -1;
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* A word for the heap: a block start, an interior pointer, a gap, beyond
 * the heap, or plain data. */
static uint64_t some_word(uint64_t *seed) {
  uint64_t r = rnd(seed), b = r % nblk;
  switch ((r >> 32) % 6) {
    case 0: case 1: return blk_addr[b];
    case 2: return blk_addr[b] + 8 * ((r >> 40) % (blk_size[b] / 8));
    case 3: return blk_addr[b] + blk_size[b] + 8; /* maybe in a gap */
    case 4: return (uint64_t)(uintptr_t)arena + ARENA + (r % 4096) * 8;
    default: return r & 0xffff;
  }
}

static void build_heap(void) {
  uint64_t seed = 88172645463325252ull, a = (uint64_t)(uintptr_t)arena + 64;
  nblk = 0;
  while (nblk < NBLOCKS) {
    uint64_t z = 16 * (1 + rnd(&seed) % 12);
    if (a + z + 64 > (uint64_t)(uintptr_t)arena + ARENA) break;
    blk_addr[nblk] = a;
    blk_size[nblk++] = z;
    a += z + 16 * (rnd(&seed) % 3); /* gaps: pointers there are no edges */
  }
  for (uint32_t i = 0; i < nblk; i++) {
    uint64_t *w = (uint64_t *)(uintptr_t)blk_addr[i];
    for (uint64_t k = 0; k < blk_size[i] / 8; k++) w[k] = some_word(&seed);
    if (i % 5 == 0 && blk_size[i] >= 24) w[0] = MAGIC; /* a unit.T */
  }
  for (uint32_t k = 0; k < 512; k++) roots_area[k] = some_word(&seed);
}

/* ---- one scan into a snapshot ---- */

static struct hg_graph *scan_once(uint32_t helpers, int classify, int *helper_used) {
  char path[128];
  snprintf(path, sizeof path, "/tmp/hg_test_scan_%d.hgsnap", (int)getpid());
  struct hg_cap *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  struct hg_options o;
  hg_options_init(&o);
  o.helpers = helpers;
  c->opt = &o;
  _hg_scratch_init(&c->scratch, 1ull << 30);
  c->nonptr_mask = nonptr;
  struct hg_graph *g = NULL;
  uint32_t heap = 0;
  if (hg_writer_open(&c->w, path) || hg_writer_heap(c->w, "unit", &heap)) goto out;
  _hg_vec_init(&c->scratch, &c->segments, sizeof(struct hg_segment), 64);
  _hg_vec_init(&c->scratch, &c->nodes, sizeof(struct hg_cnode), NBLOCKS);
  _hg_vec_init(&c->scratch, &c->index, 4, 1 << 20);
  _hg_vec_init(&c->scratch, &c->regions, sizeof(struct hg_cregion), 4);
  _hg_vec_init(&c->scratch, &c->ranges, sizeof(struct hg_crange), 4);
  uint64_t lo = (uint64_t)(uintptr_t)arena, half = blk_addr[nblk / 2];
  /* two segments: pointers cross between them */
  if (_hg_seg_begin(c, lo, half, HG_NODE_MALLOC, heap)) goto out;
  for (uint32_t i = 0; i < nblk; i++) {
    if (blk_addr[i] == half) {
      _hg_seg_end(c);
      if (_hg_seg_begin(c, half, lo + ARENA, HG_NODE_MALLOC, heap)) goto out;
    }
    if (_hg_node_add(c, blk_addr[i], blk_size[i])) goto out;
  }
  _hg_seg_end(c);
  if (_hg_index_build(c)) goto out;
  struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
  uint64_t ra = (uint64_t)(uintptr_t)roots_area;
  *r = (struct hg_cregion){.start = ra, .end = ra + 4096, .prot = HG_PROT_READ | HG_PROT_WRITE,
                           .image = HG_NO_OWNER, .kind = HG_RK_IMAGE};
  struct hg_crange *rg = _hg_vec_push(&c->ranges, 1);
  *rg = (struct hg_crange){.lo = ra, .hi = ra + 4096, .kind = HG_ROOT_OTHER, .owner = HG_NO_OWNER};
  if (classify) {
    c->classifiers[0] = &unit_t;
    struct hg_classify_reg reg = {c, NULL};
    if (unit_t.prepare(&reg)) goto out;
    c->classifier_state[0] = reg.state;
    c->nclassifiers = 1;
  }
  int rc = _hg_scan_nodes(c);
  rc = rc ? rc : _hg_scan_roots(c);
  rc = rc ? rc : hg_writer_finish(c->w);
  *helper_used = c->helper_used;
  if (rc) fprintf(stderr, "scan: %s\n", hg_error_string(rc));
  else g = hg_graph_load(path, NULL);
out:
  if (c->w) hg_writer_close(c->w);
  unlink(path);
  _hg_scratch_free(&c->scratch);
  free(c);
  return g;
}

/* The graph holds the brute-force edges and roots, and nothing else. */
static uint64_t typed_blocks; /* unit.T blocks of the last check_graph */
static void check_graph(const struct hg_graph *g, int classify) {
  typed_blocks = 0;
  CHECK_EQ_U(g->node_count, nblk);
  uint64_t want_edges = 0, bad = 0, named = 0;
  for (uint32_t i = 0; i < nblk && i < g->node_count; i++) {
    const uint64_t *w = (const uint64_t *)(uintptr_t)blk_addr[i];
    int is_t = classify && blk_size[i] >= 24 && w[0] == MAGIC;
    typed_blocks += is_t;
    if (g->node_addr[i] != blk_addr[i] || g->node_size[i] != blk_size[i]) bad++;
    if ((g->node_class[i] != 0) != is_t) bad++;
    uint32_t e = g->edge_start[i], end = g->edge_start[i + 1];
    for (uint64_t k = 0; k < blk_size[i] / 8; k++) {
      int64_t t = block_of(w[k]);
      if (t < 0 || (w[k] & nonptr)) continue;
      want_edges++;
      uint32_t kind = w[k] == blk_addr[t] ? HG_EDGE_CONSERVATIVE : HG_EDGE_INTERIOR;
      const char *field = NULL;
      if (is_t && (k == 1 || k == 2)) {
        kind = k == 1 ? HG_EDGE_STRONG : HG_EDGE_WEAK;
        field = k == 1 ? "next" : "prev";
      }
      if (e >= end || g->edge_offset[e] != 8 * k || g->edge_target[e] != (uint32_t)t ||
          g->edge_kind[e] != kind) {
        bad++;
        continue;
      }
      const char *f = hg_graph_edge_field(g, e);
      if (field ? !f || strcmp(f, field) : f != NULL) bad++;
      named += field != NULL;
      e++;
    }
    bad += end - e; /* edges the brute force did not find */
  }
  CHECK_EQ_U(g->edge_count, want_edges);
  CHECK_EQ_U(bad, 0);
  CHECK(!classify || named > 100);
  uint64_t want_roots = 0, rbad = 0;
  for (uint32_t k = 0; k < 512; k++) {
    int64_t t = block_of(roots_area[k]);
    if (t < 0 || (roots_area[k] & nonptr)) continue;
    uint32_t j = (uint32_t)want_roots++;
    if (j >= g->root_count || g->roots[j].target != (uint32_t)t ||
        g->roots[j].addr != (uint64_t)(uintptr_t)&roots_area[k] || g->roots[j].kind != HG_ROOT_OTHER)
      rbad++;
  }
  CHECK_EQ_U(g->root_count, want_roots);
  CHECK_EQ_U(rbad, 0);
}

static void run(uint32_t helpers, int classify) {
  int used = -1;
  memset(lane_calls, 0, sizeof lane_calls);
  count_calls = 0;
  struct hg_graph *g = scan_once(helpers, classify, &used);
  REQUIRE(g != NULL);
  check_graph(g, classify);
  hg_graph_free(g);
  /* identify() runs on lane 0 on the capturing thread, lane 1 on the helper
   * (which may find every chunk taken on a heap this small) */
  CHECK_EQ_U(lane_calls[HG_SCAN_LANES], 0);
  if (classify) CHECK(lane_calls[0] + lane_calls[1] >= nblk);
  /* identify() may see a block twice (a steal); count() sees it once */
  if (classify) CHECK_EQ_U(count_calls, typed_blocks);
  if (classify && lane_calls[0] + lane_calls[1] > nblk)
    printf("  identify(): %llu calls for %u blocks (re-identified after steals), count(): %llu\n",
           (unsigned long long)(lane_calls[0] + lane_calls[1]), nblk, (unsigned long long)count_calls);
  if (classify && !used) CHECK_EQ_U(lane_calls[1], 0);
  if (helpers && !HELPER_POSSIBLE) SKIP("no helper thread under ASan: the one-thread scan ran");
  CHECK_EQ_U(used, helpers != 0); /* the path asked for is the path taken */
}

static void test_alone(void) { run(0, 0); }
static void test_alone_named(void) { run(0, 1); }
static void test_piped(void) { run(1, 0); }
static void test_piped_named(void) { run(1, 1); }

/* Words with a nonptr_mask bit (macOS x86_64 ObjC tagged pointers: bit 0)
 * are neither edges nor roots. Bit 3 here: it drops the interior pointers
 * at odd multiples of 8 (blocks start 16-aligned), by both scan paths. */
static void nonptr_run(uint32_t helpers, int classify) {
  nonptr = 8;
  run(helpers, classify);
  nonptr = 0;
}
static void test_nonptr_alone(void) { nonptr_run(0, 1); }
static void test_nonptr_piped(void) { nonptr_run(1, 0); }

/* The helper leaves its creator's CPU when another one is allowed (with
 * every CPU busy, the two would otherwise share one for the whole scan:
 * capture/linux/helper.c), and stays on the only one when the process is
 * pinned to a single CPU; the output is exact either way. */
static void test_helper_apart(void) {
  if (!HELPER_POSSIBLE) SKIP("no helper thread under ASan");
  cpu_set_t all;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  long creator = -1, helper = -1;
  if (CPU_COUNT(&all) >= 2) {
    run(1, 0);
    _hg_linux_helper_cpus(&creator, &helper);
    CHECK(creator >= 0 && helper >= 0);
    CHECK(helper != creator);
  }
  int cpu = sched_getcpu();
  REQUIRE(cpu >= 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  run(1, 0);
  _hg_linux_helper_cpus(&creator, &helper);
  CHECK_EQ_U(creator, cpu);
  CHECK_EQ_U(helper, cpu); /* nowhere else to go */
  REQUIRE(sched_setaffinity(0, sizeof all, &all) == 0);
  if (CPU_COUNT(&all) < 2) SKIP("one CPU: only the pinned case ran");
}

int main(void) {
  arena = mmap(NULL, ARENA + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  roots_area = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED || roots_area == MAP_FAILED) {
    printf("0 passed, 1 failed\n");
    return 1;
  }
  build_heap();
  RUN(test_alone);
  RUN(test_alone_named);
  RUN(test_piped);
  RUN(test_piped_named);
  RUN(test_nonptr_alone);
  RUN(test_nonptr_piped);
  RUN(test_helper_apart);
  return hg_test_done();
}
