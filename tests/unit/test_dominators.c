/*
 * test_dominators.c — dominator tree, retained sizes, class retained sizes
 * and top retainers on hand-made graphs with known answers, a 1M-node chain
 * (no recursion), and a property test: 1,000 random graphs against a naive
 * "remove the node and see what becomes unreachable" algorithm.
 */
#include "hg_test.h"
#include "graph_fixture.h"

static struct hg_dominators *dom(struct hg_graph *g) {
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  if (rc) fprintf(stderr, "hg_dominators_compute: %d\n", rc);
  return d;
}

/* Lengauer & Tarjan 1979, figure 1: R A B C D E F G H I J K L = 0..12. */
static void test_textbook(void) {
  enum { R, A, B, C, D, E, F, G, H, I, J, K, L };
  struct fx *f = fx_new(13);
  static const int ed[][2] = {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E},
                              {C, F}, {C, G}, {D, L}, {E, H}, {F, I}, {G, I}, {G, J},
                              {H, E}, {H, K}, {I, K}, {J, I}, {K, I}, {K, R}, {L, H}};
  for (size_t i = 0; i < sizeof ed / sizeof ed[0]; i++) fx_edge(f, ed[i][0], ed[i][1]);
  fx_root(f, R);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  static const uint32_t want[13] = {HG_SUPER_ROOT, R, R, R, R, R, C, C, R, R, G, R, D};
  for (int v = 0; v < 13; v++) CHECK_EQ_U(d->idom[v], want[v]);
  CHECK_EQ_U(d->reachable_count, 13);
  CHECK_EQ_U(d->retained[R], 13);
  CHECK_EQ_U(d->retained[C], 4); /* C F G J */
  CHECK_EQ_U(d->retained[D], 2); /* D L */
  CHECK_EQ_U(d->reachable_bytes, 13);
  uint32_t top[3];
  CHECK_EQ_U(hg_dominators_top(d, 3, top), 3);
  CHECK_EQ_U(top[0], R);
  CHECK_EQ_U(top[1], C);
  CHECK_EQ_U(top[2], D); /* ties (2 bytes: D) — D is the only other with 2 */
  hg_dominators_free(d);
  hg_graph_free(g);
}

static void test_diamond_and_two_roots(void) {
  /* 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3; second root at 4 -> 5, and root at 5. */
  struct fx *f = fx_new(7);
  fx_edge(f, 0, 1);
  fx_edge(f, 0, 2);
  fx_edge(f, 1, 3);
  fx_edge(f, 2, 3);
  fx_edge(f, 4, 5);
  f->size[3] = 100;
  fx_root(f, 0);
  fx_root(f, 4);
  fx_root(f, 5);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  CHECK_EQ_U(d->idom[3], 0);
  CHECK_EQ_U(d->idom[1], 0);
  CHECK_EQ_U(d->retained[0], 103);
  CHECK_EQ_U(d->retained[1], 1);
  CHECK_EQ_U(d->idom[5], HG_SUPER_ROOT); /* held by root 4's target and a root */
  CHECK_EQ_U(d->retained[4], 1);
  CHECK_EQ_U(d->idom[6], HG_NONE); /* unreachable */
  CHECK_EQ_U(d->retained[6], 0);
  CHECK_EQ_U(d->reachable_count, 6);
  CHECK_EQ_U(d->reachable_bytes, 105);
  hg_dominators_free(d);
  hg_graph_free(g);
}

static void test_weak_edges_do_not_retain(void) {
  /* root 0 -> 1 strong, 0 -> 2 weak, 1 -> 2 strong, 2 -> 1 weak back-edge,
   * 0 -> 3 unowned only (unreachable), 1 -> 4 interior, 4 -> 5 conservative. */
  struct fx *f = fx_new(6);
  fx_edge(f, 0, 1);
  fx_edge_f(f, 0, 2, HG_EDGE_WEAK, 0);
  fx_edge(f, 1, 2);
  fx_edge_f(f, 2, 1, HG_EDGE_WEAK, 0);
  fx_edge_f(f, 0, 3, HG_EDGE_UNOWNED, 0);
  fx_edge_f(f, 1, 4, HG_EDGE_INTERIOR, 0);
  fx_edge_f(f, 4, 5, HG_EDGE_CONSERVATIVE, 0);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  CHECK_EQ_U(d->idom[2], 1);
  CHECK_EQ_U(d->idom[1], 0);
  CHECK_EQ_U(d->idom[3], HG_NONE);
  CHECK_EQ_U(d->idom[5], 4);
  CHECK_EQ_U(d->retained[1], 4);
  CHECK_EQ_U(d->retained[0], 5);
  CHECK(hg_edge_kind_retains(HG_EDGE_STRONG) && hg_edge_kind_retains(HG_EDGE_INTERIOR) &&
        hg_edge_kind_retains(HG_EDGE_CONSERVATIVE));
  CHECK(!hg_edge_kind_retains(HG_EDGE_WEAK) && !hg_edge_kind_retains(HG_EDGE_UNOWNED) &&
        !hg_edge_kind_retains(99));
  hg_dominators_free(d);
  hg_graph_free(g);
}

static void test_cycle_off_root(void) {
  /* 0 (root) -> 1 -> 2 -> 3 -> 1 */
  struct fx *f = fx_new(4);
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_edge(f, 2, 3);
  fx_edge(f, 3, 1);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  CHECK_EQ_U(d->idom[1], 0);
  CHECK_EQ_U(d->idom[2], 1);
  CHECK_EQ_U(d->idom[3], 2);
  CHECK_EQ_U(d->retained[1], 3);
  hg_dominators_free(d);
  hg_graph_free(g);
}

static void test_chain_1m(void) {
  uint32_t n = 1000000;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i + 1 < n; i++) fx_edge(f, i, i + 1);
  fx_edge(f, n - 1, 0); /* and back to the start: one huge cycle */
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  int ok = 1;
  for (uint32_t i = 1; i < n; i++) ok &= d->idom[i] == i - 1;
  CHECK(ok);
  CHECK_EQ_U(d->retained[0], n);
  CHECK_EQ_U(d->retained[n / 2], n - n / 2);
  hg_dominators_free(d);
  hg_graph_free(g);
}

static void test_class_retained(void) {
  /* root 0 (A) -> 1 (A) -> 2 (B) -> 3 (A); root 4 (B) */
  struct fx *f = fx_new(5);
  uint32_t A = fx_class(f, "A"), B = fx_class(f, "B");
  f->cls[0] = A, f->cls[1] = A, f->cls[2] = B, f->cls[3] = A, f->cls[4] = B;
  f->size[3] = 10;
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_edge(f, 2, 3);
  fx_root(f, 0);
  fx_root(f, 4);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = dom(g);
  REQUIRE(d);
  uint64_t counts[3], bytes[3], ret[3];
  CHECK_EQ_U(hg_class_retained(g, d, counts, bytes, ret), 0);
  CHECK_EQ_U(counts[A], 3);
  CHECK_EQ_U(bytes[A], 12);
  CHECK_EQ_U(ret[A], 13);      /* node 0 only: the others sit under it */
  CHECK_EQ_U(ret[B], 11 + 1);  /* node 2 (2 + 3) and node 4 */
  CHECK_EQ_U(ret[0], 0);
  hg_dominators_free(d);
  hg_graph_free(g);
}

/* ---- Property test ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { return fx_rnd(&rng, n); }

/* Nodes reachable from the roots avoiding `skip` (HG_NONE = none). */
static void reach(const struct hg_graph *g, uint32_t skip, uint8_t *seen) {
  uint32_t q[64], h = 0, t = 0;
  memset(seen, 0, g->node_count);
  for (uint32_t i = 0; i < g->root_count; i++) {
    uint32_t r = g->roots[i].target;
    if (r != skip && !seen[r]) seen[r] = 1, q[t++] = r;
  }
  while (h < t) {
    uint32_t v = q[h++];
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++) {
      uint32_t w = g->edge_target[e];
      if (hg_edge_kind_retains(g->edge_kind[e]) && w != skip && !seen[w]) seen[w] = 1, q[t++] = w;
    }
  }
}

static void test_random_vs_naive(void) {
  int bad = 0;
  for (int iter = 0; iter < 1000 && !bad; iter++) {
    uint32_t n = 1 + rnd(40), m = rnd(3 * n + 1);
    struct fx *f = fx_new(n);
    for (uint32_t i = 0; i < n; i++) f->size[i] = 1 + rnd(100);
    for (uint32_t e = 0; e < m; e++)
      fx_edge_f(f, rnd(n), rnd(n), (uint8_t)rnd(HG_EDGE_KIND_COUNT), 0);
    uint32_t nr = rnd(4);
    for (uint32_t r = 0; r < nr; r++) fx_root(f, rnd(n));
    struct hg_graph *g = fx_build(f);
    struct hg_dominators *d = dom(g);
    if (!d) {
      bad = 1;
      break;
    }
    /* dominated[v][w]: removing v makes w unreachable (v strictly dominates w). */
    uint8_t base[64], seen[64], dominated[64][64], depth[64] = {0};
    reach(g, HG_NONE, base);
    for (uint32_t v = 0; v < n; v++) {
      reach(g, v, seen);
      for (uint32_t w = 0; w < n; w++) dominated[v][w] = base[v] && base[w] && w != v && !seen[w];
    }
    for (uint32_t w = 0; w < n; w++)
      for (uint32_t v = 0; v < n; v++) depth[w] += dominated[v][w];
    for (uint32_t w = 0; w < n; w++) {
      uint32_t want = base[w] ? HG_SUPER_ROOT : HG_NONE;
      for (uint32_t v = 0; v < n; v++) /* idom = the deepest strict dominator */
        if (dominated[v][w] && (want >= n || depth[v] > depth[want])) want = v;
      uint64_t ret = 0;
      for (uint32_t x = 0; x < n; x++)
        if (base[w] && (x == w || dominated[w][x])) ret += g->node_size[x];
      if (d->idom[w] != want || d->retained[w] != ret) {
        fprintf(stderr, "iter %d node %u: idom %u want %u, retained %llu want %llu\n", iter, w,
                d->idom[w], want, (unsigned long long)d->retained[w], (unsigned long long)ret);
        bad = 1;
      }
    }
    hg_dominators_free(d);
    hg_graph_free(g);
  }
  CHECK(!bad);
}

int main(void) {
  RUN(test_textbook);
  RUN(test_diamond_and_two_roots);
  RUN(test_weak_edges_do_not_retain);
  RUN(test_cycle_off_root);
  RUN(test_chain_1m);
  RUN(test_class_retained);
  RUN(test_random_vs_naive);
  return hg_test_done();
}
