/*
 * test_dom_paths.c — every internal path of the dominator computation gives
 * the same results: the steps split between two threads (predecessor lists,
 * renumbering, the side job filling the view while the idoms are computed)
 * against one thread, and SEMI-NCA against the iterative scheme, on random
 * graphs from 1 node to 200 K (weak edges, region nodes, several roots),
 * long chains (a 200 K-deep DFS) and a ladder. Compared: idom, retained,
 * order, reachable count and bytes, the cached DFS view (CSR, numbering,
 * reachability bitmap), and leaks (which run the core on the leaked
 * subgraph). The thresholds are moved through the test hooks in
 * graph/analysis.h; the answers themselves are checked against a naive
 * algorithm in test_dominators.c.
 */
#include <stdint.h>

#include "graph/analysis.h"
#include "graph_fixture.h"
#include "hg_test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) { return fx_rnd(&rng, n); }

/* Fingerprint of everything the dominators step produces and caches, plus
 * the leaks report (0 on failure). */
static uint64_t print(struct hg_graph *g) {
  hg_graph_drop_cache(g);
  struct hg_dominators *d = NULL;
  if (hg_dominators_compute(g, &d)) return 0;
  uint32_t n = g->node_count;
  uint64_t h = 1469598103934665603ull;
  h = fx_fnv(h, d->idom, ((size_t)n + 1) * sizeof *d->idom);
  h = fx_fnv(h, d->retained, ((size_t)n + 1) * sizeof *d->retained);
  h = fx_fnv(h, d->order, (size_t)n * sizeof *d->order);
  h = fx_fnv(h, &d->reachable_count, sizeof d->reachable_count);
  h = fx_fnv(h, &d->reachable_bytes, sizeof d->reachable_bytes);
  hg_dominators_free(d);
  const struct _hg_view *v = _hg_view_get(g);
  if (!v) return 0;
  h = fx_fnv(h, &v->reached, sizeof v->reached);
  h = fx_fnv(h, v->c.start, ((size_t)n + 1) * sizeof *v->c.start);
  h = fx_fnv(h, v->c.target, (size_t)v->c.start[n] * sizeof *v->c.target);
  h = fx_fnv(h, v->node, (size_t)n * sizeof *v->node);
  h = fx_fnv(h, v->reach, ((size_t)n / 64 + 1) * sizeof *v->reach);
  struct hg_leaks *l = NULL;
  if (hg_leaks_find(g, &l)) return 0;
  h = fx_fnv(h, &l->leaked_count, sizeof l->leaked_count);
  h = fx_fnv(h, &l->count, sizeof l->count);
  for (uint32_t i = 0; i < l->count; i++) h = fx_fnv(h, &l->leaks[i], sizeof l->leaks[i]);
  hg_leaks_free(l);
  return h;
}

/* The same fingerprint under each setting: one thread / two threads for
 * any work size, iterative / SEMI-NCA. */
static int same_on_all_paths(struct hg_graph *g, const char *what) {
  static const struct {
    uint32_t par_min;
    int passes;
  } cfg[] = {{UINT32_MAX, 8}, {0, 8}, {UINT32_MAX, 0}, {0, 0}, {1, 1}};
  uint64_t want = 0;
  int ok = 1;
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    _hg_dom_par_min = cfg[i].par_min;
    _hg_dom_max_passes = cfg[i].passes;
    uint64_t h = print(g);
    if (i == 0) want = h;
    if (!h || h != want) {
      fprintf(stderr, "%s: setting %zu (par_min %u, passes %d) differs\n", what, i,
              cfg[i].par_min, cfg[i].passes);
      ok = 0;
    }
  }
  _hg_dom_par_min = (uint32_t)1 << 16;
  _hg_dom_max_passes = 8;
  return ok;
}

static struct hg_graph *random_graph(uint32_t n, uint32_t m) {
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i < n; i++) {
    f->size[i] = 1 + rnd(100);
    if (rnd(50) == 0) f->flags[i] = HG_NODE_REGION;
  }
  for (uint32_t e = 0; e < m; e++) fx_edge_f(f, rnd(n), rnd(n), (uint8_t)rnd(HG_EDGE_KIND_COUNT), 0);
  for (uint32_t r = rnd(5); r > 0; r--) fx_root(f, rnd(n));
  return fx_build(f);
}

static void test_random_small(void) {
  int ok = 1;
  for (int iter = 0; iter < 300 && ok; iter++) {
    uint32_t n = 1 + rnd(iter < 200 ? 40 : 3000);
    struct hg_graph *g = random_graph(n, rnd(3 * n + 1));
    REQUIRE(g);
    char what[64];
    snprintf(what, sizeof what, "random graph %d (%u nodes)", iter, n);
    ok = same_on_all_paths(g, what);
    hg_graph_free(g);
  }
  CHECK(ok);
}

/* Big enough for many 4096-number blocks, both halves of every split, and
 * the default two-thread threshold. */
static void test_random_big(void) {
  for (int iter = 0; iter < 3; iter++) {
    uint32_t n = 50000 + 75000 * (uint32_t)iter;
    struct hg_graph *g = random_graph(n, 3 * n);
    REQUIRE(g);
    CHECK(same_on_all_paths(g, "big random graph"));
    hg_graph_free(g);
  }
}

/* A chain (the DFS is as deep as the graph), with back edges every 1000
 * nodes and a second root half-way. */
static void test_chain(void) {
  uint32_t n = 200000;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i + 1 < n; i++) fx_edge(f, i, i + 1);
  for (uint32_t i = 1000; i < n; i += 1000) fx_edge(f, i, i - 999);
  fx_root(f, 0);
  fx_root(f, n / 2);
  struct hg_graph *g = fx_build(f);
  REQUIRE(g);
  CHECK(same_on_all_paths(g, "chain"));
  hg_graph_free(g);
}

/* A ladder: two chains with rungs both ways — a deep dominator tree, the
 * case where the iterative scheme gives up and SEMI-NCA takes over. */
static void test_ladder(void) {
  uint32_t k = 50000, n = 2 * k;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i + 1 < k; i++) {
    fx_edge(f, i, i + 1);
    fx_edge(f, k + i, k + i + 1);
    if (i % 3 == 0) fx_edge(f, i, k + i + 1);
    if (i % 5 == 0) fx_edge(f, k + i, i + 1);
  }
  fx_root(f, 0);
  fx_root(f, k);
  struct hg_graph *g = fx_build(f);
  REQUIRE(g);
  CHECK(same_on_all_paths(g, "ladder"));
  hg_graph_free(g);
}

/* No roots, and a graph whose only root is out of range: nothing reached. */
static void test_nothing_reached(void) {
  struct hg_graph *g = random_graph(100, 300);
  REQUIRE(g);
  g->root_count = 0;
  CHECK(same_on_all_paths(g, "no roots"));
  hg_graph_free(g);
}

int main(void) {
  RUN(test_random_small);
  RUN(test_random_big);
  RUN(test_chain);
  RUN(test_ladder);
  RUN(test_nothing_reached);
  return hg_test_done();
}
