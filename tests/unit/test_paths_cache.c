/*
 * test_paths_cache.c — hg_paths_to_roots keeps its BFS from the roots on the
 * graph (what `heapgraph view` relies on to answer paths at once): on random
 * graphs, every node's paths with the cache equal those computed afresh
 * (hg_graph_drop_cache before each call), and a graph whose edges changed
 * is not answered from a stale BFS.
 */
#include "hg_test.h"
#include "graph_fixture.h"

static int same_paths(const struct hg_paths *a, const struct hg_paths *b) {
  if (a->count != b->count) return 0;
  for (uint32_t i = 0; i < a->count; i++) {
    const struct hg_path *x = &a->paths[i], *y = &b->paths[i];
    if (x->root != y->root || x->length != y->length) return 0;
    if (memcmp(x->nodes, y->nodes, ((size_t)x->length + 1) * sizeof *x->nodes)) return 0;
    if (x->length && memcmp(x->edges, y->edges, (size_t)x->length * sizeof *x->edges)) return 0;
  }
  return 1;
}

static void test_random(void) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 20; round++) {
    uint32_t n = 20 + fx_rnd(&seed, 200);
    struct fx *f = fx_new(n);
    for (uint32_t e = 0; e < 2 * n; e++) {
      uint32_t k = fx_rnd(&seed, 10);
      fx_edge_f(f, fx_rnd(&seed, n), fx_rnd(&seed, n), k == 0 ? HG_EDGE_WEAK : k == 1 ? HG_EDGE_UNOWNED : HG_EDGE_STRONG, 0);
    }
    for (int r = 0; r < 3; r++) fx_root(f, fx_rnd(&seed, n));
    struct hg_graph *g = fx_build(f);
    int bad = 0;
    for (uint32_t v = 0; v < n; v++) {
      struct hg_paths *cached = NULL, *fresh = NULL;
      int rc1 = hg_paths_to_roots(g, v, 4, &cached); /* BFS from the previous call */
      hg_graph_drop_cache(g);
      int rc2 = hg_paths_to_roots(g, v, 4, &fresh);
      if (rc1 != rc2 || (rc1 == 0 && !same_paths(cached, fresh))) bad++;
      hg_paths_free(cached);
      hg_paths_free(fresh);
    }
    CHECK_EQ_U(bad, 0);
    hg_graph_free(g);
  }
}

static void test_stale(void) {
  /* root 0 -> 1 -> 2; then the edge 1 -> 2 is dropped (edge_count changes) */
  struct fx *f = fx_new(3);
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_paths *p = NULL;
  REQUIRE(hg_paths_to_roots(g, 2, 1, &p) == 0);
  CHECK_EQ_U(p->paths[0].length, 2);
  hg_paths_free(p);
  p = NULL;
  g->edge_count = 1;                 /* 0 -> 1 only */
  g->edge_start[2] = g->edge_start[3] = 1;
  free(g->in_start), free(g->in_source), free(g->in_edge);
  g->in_start = g->in_source = g->in_edge = NULL;
  CHECK_EQ_U(hg_paths_to_roots(g, 2, 1, &p), (uint64_t)(int64_t)HG_ENOTFOUND);
  hg_graph_free(g);
}

int main(void) {
  RUN(test_random);
  RUN(test_stale);
  return hg_test_done();
}
