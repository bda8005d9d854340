/*
 * test_cycles.c — retain cycles (SCCs over retaining edges): hand-made
 * graphs with known answers, weak edges breaking cycles, a 1M-node cycle
 * (iterative SCC), and 1,000 random graphs against a naive mutual
 * reachability check, on the graph's own CSR and on the dominators' cached
 * view with the giant-component step (scc.c); a 200,000-node graph whose
 * giant component the step finds, against the plain path.
 */
#include "graph/analysis.h"
#include "hg_test.h"
#include "graph_fixture.h"

static void test_known(void) {
  /* root 0 -> 1 <-> 2 (strong); 3 -> 4 -> 5 -> 3 (conservative, leaked);
   * 6 <-> 7 only through a weak edge back: not a cycle; 8 -> 8 self loop. */
  struct fx *f = fx_new(9);
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_edge(f, 2, 1);
  fx_edge_f(f, 3, 4, HG_EDGE_CONSERVATIVE, 0);
  fx_edge_f(f, 4, 5, HG_EDGE_CONSERVATIVE, 0);
  fx_edge_f(f, 5, 3, HG_EDGE_INTERIOR, 0);
  fx_edge(f, 6, 7);
  fx_edge_f(f, 7, 6, HG_EDGE_WEAK, 0);
  fx_edge(f, 8, 8);
  f->size[1] = 100;
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_cycles *c = NULL;
  REQUIRE(hg_cycles_find(g, 2, &c) == 0);
  REQUIRE(c->count == 2);
  CHECK_EQ_U(c->cycles[0].count, 2);
  CHECK_EQ_U(c->cycles[0].bytes, 101);
  CHECK_EQ_U(c->cycles[0].leaked, 0);
  CHECK_EQ_U(c->members[c->cycles[0].first], 1);
  CHECK_EQ_U(c->members[c->cycles[0].first + 1], 2);
  CHECK_EQ_U(c->cycles[1].count, 3);
  CHECK_EQ_U(c->cycles[1].leaked, 1);
  CHECK_EQ_U(c->members[c->cycles[1].first], 3);
  hg_cycles_free(c);
  REQUIRE(hg_cycles_find(g, 3, &c) == 0);
  CHECK_EQ_U(c->count, 1);
  hg_cycles_free(c);
  hg_graph_free(g);
}

static void test_big_cycle(void) {
  uint32_t n = 1000000;
  struct fx *f = fx_new(n + 1);
  for (uint32_t i = 0; i < n; i++) fx_edge(f, i, (i + 1) % n);
  struct hg_graph *g = fx_build(f);
  struct hg_cycles *c = NULL;
  REQUIRE(hg_cycles_find(g, 2, &c) == 0);
  REQUIRE(c->count == 1);
  CHECK_EQ_U(c->cycles[0].count, n);
  CHECK_EQ_U(c->cycles[0].leaked, 1);
  hg_cycles_free(c);
  hg_graph_free(g);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) { return fx_rnd(&rng, n); }

/* view: compute the dominators first, so the SCC runs on their cached view
 * (then the giant-component step runs too, made to on these small graphs). */
static int random_vs_naive(int view) {
  int bad = 0;
  for (int iter = 0; iter < 1000 && !bad; iter++) {
    uint32_t n = 1 + rnd(30), m = rnd(3 * n + 1);
    struct fx *f = fx_new(n);
    for (uint32_t e = 0; e < m; e++)
      fx_edge_f(f, rnd(n), rnd(n), (uint8_t)rnd(HG_EDGE_KIND_COUNT), 0);
    struct hg_graph *g = fx_build(f);
    uint8_t r[32][32] = {{0}}; /* transitive closure over retaining edges */
    for (uint32_t v = 0; v < n; v++) {
      r[v][v] = 1;
      for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++)
        if (hg_edge_kind_retains(g->edge_kind[e])) r[v][g->edge_target[e]] = 1;
    }
    for (uint32_t k = 0; k < n; k++)
      for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) r[i][j] |= r[i][k] & r[k][j];
    struct hg_cycles *c = NULL;
    if (view) {
      struct hg_dominators *d = NULL;
      if (hg_dominators_compute(g, &d)) bad = 1;
      hg_dominators_free(d);
    }
    if (bad || hg_cycles_find(g, 2, &c)) {
      bad = 1;
      hg_graph_free(g);
      break;
    }
    uint32_t group[32];
    memset(group, 0xff, sizeof group);
    for (uint32_t k = 0; k < c->count; k++)
      for (uint32_t i = 0; i < c->cycles[k].count; i++) group[c->members[c->cycles[k].first + i]] = k;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t same = 0;
      for (uint32_t j = 0; j < n; j++) same += r[i][j] && r[j][i];
      if ((same >= 2) != (group[i] != HG_NONE)) bad = 1;
      for (uint32_t j = 0; j < n; j++)
        if (same >= 2 && group[j] != HG_NONE && (r[i][j] && r[j][i]) != (group[i] == group[j]))
          bad = 1;
    }
    if (bad) fprintf(stderr, "mismatch at iteration %d\n", iter);
    hg_cycles_free(c);
    hg_graph_free(g);
  }
  return !bad;
}

static void test_random_vs_naive(void) { CHECK(random_vs_naive(0)); }

static void test_random_giant_vs_naive(void) {
  _hg_scc_giant_min = 0;
  CHECK(random_vs_naive(1));
  _hg_scc_giant_min = (uint32_t)1 << 16;
}

/* A big graph whose giant component the pivot finds (a ring with chords,
 * 1/8 of it hanging off as trees and small rings): the view path (giant
 * step, then the DFS) and the graph's own CSR (DFS only) agree. */
static void test_giant_agrees(void) {
  uint32_t n = 200000, ring = n - n / 8;
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i < ring; i++) {
    fx_edge(f, i, (i + 1) % ring);
    if (i % 7 == 0) fx_edge(f, i, rnd(ring));
  }
  for (uint32_t i = ring; i < n; i++) {
    fx_edge(f, rnd(ring), i); /* reached from the ring */
    if (i % 3 == 0 && i + 1 < n) fx_edge(f, i, i + 1);
    if (i % 3 == 1) fx_edge(f, i, i - 1); /* small rings of two */
  }
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_cycles *plain = NULL, *viewed = NULL;
  REQUIRE(hg_cycles_find(g, 2, &plain) == 0);
  struct hg_dominators *d = NULL;
  REQUIRE(hg_dominators_compute(g, &d) == 0);
  hg_dominators_free(d);
  REQUIRE(hg_cycles_find(g, 2, &viewed) == 0);
  CHECK_EQ_U(plain->count, viewed->count);
  CHECK(plain->count > 1);
  CHECK(plain->cycles[0].count >= ring); /* plus tails that lead back */
  int same = plain->count == viewed->count;
  for (uint32_t k = 0; same && k < plain->count; k++)
    same = plain->cycles[k].count == viewed->cycles[k].count &&
           plain->cycles[k].bytes == viewed->cycles[k].bytes &&
           !memcmp(plain->members + plain->cycles[k].first, viewed->members + viewed->cycles[k].first,
                   plain->cycles[k].count * sizeof *plain->members);
  CHECK(same);
  hg_cycles_free(plain);
  hg_cycles_free(viewed);
  hg_graph_free(g);
}

int main(void) {
  RUN(test_known);
  RUN(test_big_cycle);
  RUN(test_random_vs_naive);
  RUN(test_random_giant_vs_naive);
  RUN(test_giant_agrees);
  return hg_test_done();
}
