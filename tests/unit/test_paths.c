/*
 * test_paths.c — shortest retaining paths to roots: several retainers
 * (shortest first), roots pointing straight at the node, weak edges never
 * used, unreachable nodes, and a 1M-node chain (path of 999,999 edges).
 */
#include "hg_test.h"
#include "graph_fixture.h"

static void test_paths(void) {
  /* root 0 -> 1 -> 2 -> 5 ; root 3 -> 4 -> 5 ; 0 -> 5 weak ; 6 -> 5 (6 unreachable) */
  struct fx *f = fx_new(7);
  uint32_t fld = fx_string(f, "next");
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_edge_f(f, 2, 5, HG_EDGE_STRONG, fld);
  fx_edge(f, 3, 4);
  fx_edge(f, 4, 5);
  fx_edge_f(f, 0, 5, HG_EDGE_WEAK, 0);
  fx_edge(f, 6, 5);
  fx_root(f, 0);
  fx_root(f, 3);
  struct hg_graph *g = fx_build(f);
  struct hg_paths *p = NULL;
  REQUIRE(hg_paths_to_roots(g, 5, 10, &p) == 0);
  REQUIRE(p->count == 2);
  CHECK_EQ_U(p->paths[0].length, 2);
  CHECK_EQ_U(p->paths[0].root, 1);
  CHECK_EQ_U(p->paths[0].nodes[0], 3);
  CHECK_EQ_U(p->paths[0].nodes[1], 4);
  CHECK_EQ_U(p->paths[0].nodes[2], 5);
  CHECK_EQ_U(p->paths[1].length, 3);
  CHECK_EQ_U(p->paths[1].root, 0);
  CHECK_EQ_U(p->paths[1].nodes[2], 2);
  uint32_t last = p->paths[1].edges[2];
  CHECK_EQ_U(g->edge_target[last], 5);
  CHECK(hg_graph_edge_field(g, last) && !strcmp(hg_graph_edge_field(g, last), "next"));
  for (uint32_t i = 0; i < p->paths[1].length; i++)
    CHECK_EQ_U(g->edge_target[p->paths[1].edges[i]], p->paths[1].nodes[i + 1]);
  hg_paths_free(p);
  REQUIRE(hg_paths_to_roots(g, 5, 1, &p) == 0);
  CHECK_EQ_U(p->count, 1);
  hg_paths_free(p);
  /* A root target: length 0 through its root. */
  REQUIRE(hg_paths_to_roots(g, 3, 0, &p) == 0);
  REQUIRE(p->count == 1);
  CHECK_EQ_U(p->paths[0].length, 0);
  CHECK_EQ_U(p->paths[0].root, 1);
  hg_paths_free(p);
  CHECK_EQ_U(hg_paths_to_roots(g, 6, 1, &p), (uint64_t)(int64_t)HG_ENOTFOUND);
  CHECK(p == NULL);
  CHECK_EQ_U(hg_paths_to_roots(g, 99, 1, &p), (uint64_t)(int64_t)HG_EINVAL);
  hg_graph_free(g);
}

static void test_only_weak(void) {
  struct fx *f = fx_new(2);
  fx_edge_f(f, 0, 1, HG_EDGE_UNOWNED, 0);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_paths *p = NULL;
  CHECK_EQ_U(hg_paths_to_roots(g, 1, 1, &p), (uint64_t)(int64_t)HG_ENOTFOUND);
  hg_graph_free(g);
}

static void test_long_chain(void) {
  uint32_t n = 1000000;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i + 1 < n; i++) fx_edge(f, i, i + 1);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_paths *p = NULL;
  REQUIRE(hg_paths_to_roots(g, n - 1, 3, &p) == 0);
  REQUIRE(p->count == 1);
  CHECK_EQ_U(p->paths[0].length, n - 1);
  CHECK_EQ_U(p->paths[0].nodes[n / 2], n / 2);
  hg_paths_free(p);
  hg_graph_free(g);
}

int main(void) {
  RUN(test_paths);
  RUN(test_only_weak);
  RUN(test_long_chain);
  return hg_test_done();
}
