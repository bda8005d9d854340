/*
 * test_leaks.c — leak folding (root leaks, held and owned sizes), region
 * nodes as roots, weak edges not keeping blocks alive, and a 1M-node leaked
 * chain and cycle (iterative SCC and dominators on the leaked subgraph),
 * and the same leaks with root reachability handed in (_hg_leaks_find_from).
 */
#include "graph/analysis.h"
#include "hg_test.h"
#include "graph_fixture.h"

static struct hg_leaks *leaks(struct hg_graph *g) {
  struct hg_leaks *l = NULL;
  int rc = hg_leaks_find(g, &l);
  if (rc) fprintf(stderr, "hg_leaks_find: %d\n", rc);
  return l;
}

static void test_folding(void) {
  /* 0 root -> 1. Leaked: 2 -> 3 -> 2 (cycle), 3 -> 4; 5 -> 2 (5 holds the
   * cycle, so 5 is the root leak); lone 6; 7 and 8 share 9. Root 0 holds 6
   * only weakly. */
  struct fx *f = fx_new(10);
  fx_edge(f, 0, 1);
  fx_edge_f(f, 0, 6, HG_EDGE_WEAK, 0);
  fx_edge(f, 2, 3);
  fx_edge(f, 3, 2);
  fx_edge(f, 3, 4);
  fx_edge(f, 5, 2);
  fx_edge(f, 7, 9);
  fx_edge(f, 8, 9);
  f->size[6] = 50;
  f->size[9] = 20;
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l);
  CHECK_EQ_U(l->leaked_count, 8);
  CHECK_EQ_U(l->leaked_bytes, 6 + 50 + 20);
  CHECK(l->held_exact);
  REQUIRE(l->count == 4);
  /* Sorted by bytes: 6 (50), then 7 and 8 (21 each, by node), then 5 (4). */
  CHECK_EQ_U(l->leaks[0].node, 6);
  CHECK_EQ_U(l->leaks[0].bytes, 50);
  CHECK_EQ_U(l->leaks[1].node, 7);
  CHECK_EQ_U(l->leaks[1].count, 2);
  CHECK_EQ_U(l->leaks[1].bytes, 21);
  CHECK_EQ_U(l->leaks[1].owned_count, 1); /* 9 is shared with 8 */
  CHECK_EQ_U(l->leaks[2].node, 8);
  CHECK_EQ_U(l->leaks[3].node, 5);
  CHECK_EQ_U(l->leaks[3].group_count, 1);
  CHECK_EQ_U(l->leaks[3].count, 4);
  CHECK_EQ_U(l->leaks[3].owned_count, 4);
  CHECK_EQ_U(l->leaks[3].owned_bytes, 4);
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_cycle_is_root_leak(void) {
  /* 1 <-> 2 with nothing pointing in: one root leak, a group of 2. */
  struct fx *f = fx_new(4);
  fx_edge(f, 1, 2);
  fx_edge(f, 2, 1);
  fx_edge(f, 2, 3);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l && l->count == 1);
  CHECK_EQ_U(l->leaks[0].node, 1);
  CHECK_EQ_U(l->leaks[0].group_count, 2);
  CHECK_EQ_U(l->leaks[0].count, 3);
  CHECK_EQ_U(l->leaks[0].owned_count, 3);
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_regions_are_roots(void) {
  /* 0 is a whole-region node nobody points at; it holds block 1. */
  struct fx *f = fx_new(3);
  f->flags[0] = HG_NODE_REGION;
  fx_edge(f, 0, 1);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l);
  CHECK_EQ_U(l->leaked_count, 1); /* only block 2 */
  REQUIRE(l->count == 1);
  CHECK_EQ_U(l->leaks[0].node, 2);
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_no_leaks(void) {
  struct fx *f = fx_new(2);
  fx_edge(f, 0, 1);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l);
  CHECK_EQ_U(l->leaked_count, 0);
  CHECK_EQ_U(l->count, 0);
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_big_leaked_chain_and_cycle(void) {
  uint32_t n = 1000000;
  struct fx *f = fx_new(2 * n + 1);
  for (uint32_t i = 1; i < n; i++) fx_edge(f, i, i + 1); /* chain 1..n */
  for (uint32_t i = n + 1; i < 2 * n; i++) fx_edge(f, i, i + 1);
  fx_edge(f, 2 * n, n + 1); /* cycle n+1..2n */
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l);
  CHECK_EQ_U(l->leaked_count, 2 * n);
  REQUIRE(l->count == 2);
  CHECK_EQ_U(l->leaks[0].count, n);
  CHECK_EQ_U(l->leaks[1].count, n);
  CHECK_EQ_U(l->leaks[0].owned_count, n);
  CHECK((l->leaks[0].node == 1 && l->leaks[1].group_count == n) ||
        (l->leaks[0].node == n + 1 && l->leaks[0].group_count == n));
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_budget(void) {
  /* 3000 lone root leaks all pointing at one 6000-node chain: exact held
   * sizes cost 3000 x 6000 = 18M steps; the budget here is
   * 16 x (n + m) + 2^24 = 17M, so the last root leaks fall back. */
  uint32_t k = 3000, c = 6000, n = k + c;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i < k; i++) fx_edge(f, i, k);
  for (uint32_t i = k; i + 1 < n; i++) fx_edge(f, i, i + 1);
  struct hg_graph *g = fx_build(f);
  struct hg_leaks *l = leaks(g);
  REQUIRE(l);
  CHECK_EQ_U(l->count, k);
  CHECK(!l->held_exact);
  CHECK_EQ_U(l->leaks[0].count, c + 1); /* the first ones were exact */
  CHECK_EQ_U(l->leaks[k - 1].count, 1); /* the last fell back to owned */
  hg_leaks_free(l);
  hg_graph_free(g);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { return fx_rnd(&rng, n); }

static int same_leaks(const struct hg_leaks *a, const struct hg_leaks *b) {
  if (a->count != b->count || a->leaked_count != b->leaked_count || a->leaked_bytes != b->leaked_bytes ||
      a->held_exact != b->held_exact)
    return 0;
  for (uint32_t i = 0; i < a->count; i++) {
    const struct hg_leak *x = &a->leaks[i], *y = &b->leaks[i];
    if (x->node != y->node || x->count != y->count || x->bytes != y->bytes || x->owned_count != y->owned_count ||
        x->owned_bytes != y->owned_bytes || x->group_count != y->group_count || x->group_bytes != y->group_bytes)
      return 0;
  }
  return 1;
}

/* b is a without held sizes: the same root leaks, each with count/bytes
 * = its owned ones, sorted by them (then count, node), held_exact 0
 * (1 when there is no leak: nothing is inexact). */
static int same_owned_only(const struct hg_leaks *a, const struct hg_leaks *b) {
  if (a->count != b->count || a->leaked_count != b->leaked_count || a->leaked_bytes != b->leaked_bytes ||
      (b->count && b->held_exact))
    return 0;
  for (uint32_t i = 0; i < b->count; i++) {
    const struct hg_leak *y = &b->leaks[i], *x = NULL;
    for (uint32_t j = 0; j < a->count && !x; j++)
      if (a->leaks[j].node == y->node) x = &a->leaks[j];
    if (!x || y->count != x->owned_count || y->bytes != x->owned_bytes || y->owned_count != x->owned_count ||
        y->owned_bytes != x->owned_bytes || y->group_count != x->group_count || y->group_bytes != x->group_bytes)
      return 0;
    if (i && (b->leaks[i - 1].bytes < y->bytes ||
              (b->leaks[i - 1].bytes == y->bytes && b->leaks[i - 1].count < y->count)))
      return 0;
  }
  return 1;
}

static void test_from_reach(void) {
  /* _hg_leaks_find_from (the fleet summary's: root reachability handed in,
   * closed under retaining edges) finds what hg_leaks_find finds, given
   * the whole root reach, none of it, or after the dominators cached it,
   * and without held sizes the same root leaks with their owned sizes;
   * random graphs with every edge kind, region nodes and every root kind. */
  for (int round = 0; round < 300; round++) {
    uint32_t n = 1 + rnd(60), m = rnd(3 * n + 1);
    struct fx *f = fx_new(n);
    for (uint32_t i = 0; i < n; i++) {
      f->size[i] = 1 + rnd(100);
      if (rnd(25) == 0) f->flags[i] = HG_NODE_REGION;
    }
    for (uint32_t e = 0; e < m; e++) fx_edge_f(f, rnd(n), rnd(n), (uint8_t)rnd(HG_EDGE_KIND_COUNT), 0);
    for (uint32_t r = rnd(6); r > 0; r--) {
      fx_root(f, rnd(n));
      f->roots[f->nroots - 1].kind = (uint8_t)rnd(HG_ROOT_KIND_COUNT);
    }
    struct hg_graph *g = fx_build(f);
    struct hg_leaks *want = leaks(g), *got = NULL, *none = NULL, *cached = NULL, *owned = NULL;
    REQUIRE(want);
    CHECK(_hg_leaks_find_from(g, _hg_reachable(g, 0), 1, &got) == 0);
    CHECK(_hg_leaks_find_from(g, _hg_bits_new(n), 1, &none) == 0);
    CHECK(_hg_leaks_find_from(g, _hg_bits_new(n), 0, &owned) == 0);
    REQUIRE(owned);
    CHECK(same_owned_only(want, owned));
    hg_leaks_free(owned);
    struct hg_dominators *d = NULL;
    REQUIRE(hg_dominators_compute(g, &d) == 0);
    cached = leaks(g);
    REQUIRE(got && none && cached);
    CHECK(same_leaks(want, got));
    CHECK(same_leaks(want, none));
    CHECK(same_leaks(want, cached));
    hg_dominators_free(d);
    hg_leaks_free(want);
    hg_leaks_free(got);
    hg_leaks_free(none);
    hg_leaks_free(cached);
    hg_graph_free(g);
  }
}

int main(void) {
  RUN(test_folding);
  RUN(test_cycle_is_root_leak);
  RUN(test_regions_are_roots);
  RUN(test_no_leaks);
  RUN(test_big_leaked_chain_and_cycle);
  RUN(test_budget);
  RUN(test_from_reach);
  return hg_test_done();
}
