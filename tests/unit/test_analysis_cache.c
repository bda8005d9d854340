/*
 * test_analysis_cache.c — the DFS view hg_dominators_compute caches on the
 * graph (graph/analysis.h, struct _hg_view): leaks, cycles and the
 * heapsnapshot export give identical results with and without it (random
 * graphs with weak edges, region nodes and several roots; graphs made
 * without the loader, from a file and from memory), hg_graph_drop_cache
 * really drops it (a graph changed in place afterwards is analysed afresh),
 * and cycles of equal size come out in address order on both paths.
 */
#include <stdio.h>
#include <unistd.h>

#include "hg_test.h"
#include "graph_fixture.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { return fx_rnd(&rng, n); }

static uint64_t leaks_print(struct hg_graph *g) {
  struct hg_leaks *l = NULL;
  if (hg_leaks_find(g, &l)) return 0;
  uint64_t h = 1469598103934665603ull;
  h = fx_fnv(h, &l->leaked_count, sizeof l->leaked_count);
  h = fx_fnv(h, &l->leaked_bytes, sizeof l->leaked_bytes);
  h = fx_fnv(h, &l->count, sizeof l->count);
  h = fx_fnv(h, &l->held_exact, sizeof l->held_exact);
  for (uint32_t i = 0; i < l->count; i++) h = fx_fnv(h, &l->leaks[i], sizeof l->leaks[i]);
  hg_leaks_free(l);
  return h;
}

static uint64_t cycles_print(struct hg_graph *g) {
  struct hg_cycles *c = NULL;
  if (hg_cycles_find(g, 2, &c)) return 0;
  uint64_t h = 1469598103934665603ull;
  h = fx_fnv(h, &c->count, sizeof c->count);
  for (uint32_t i = 0; i < c->count; i++) {
    h = fx_fnv(h, &c->cycles[i], sizeof c->cycles[i]);
    h = fx_fnv(h, c->members + c->cycles[i].first, c->cycles[i].count * sizeof *c->members);
  }
  hg_cycles_free(c);
  return h;
}

static int sink(void *ctx, const void *data, size_t len) {
  *(uint64_t *)ctx = fx_fnv(*(uint64_t *)ctx, data, len);
  return 0;
}

static uint64_t export_print(struct hg_graph *g) {
  uint64_t h = 1469598103934665603ull;
  struct hg_export_options o = {.format = HG_EXPORT_HEAPSNAPSHOT, .focus = HG_NONE};
  return hg_export(g, &o, sink, &h, NULL) ? 0 : h;
}

static uint64_t dom_print(struct hg_graph *g) {
  struct hg_dominators *d = NULL;
  if (hg_dominators_compute(g, &d)) return 0;
  uint64_t h = 1469598103934665603ull;
  h = fx_fnv(h, d->idom, (size_t)g->node_count * sizeof *d->idom);
  h = fx_fnv(h, d->retained, (size_t)g->node_count * sizeof *d->retained);
  h = fx_fnv(h, d->order, (size_t)d->reachable_count * sizeof *d->order);
  h = fx_fnv(h, &d->reachable_bytes, sizeof d->reachable_bytes);
  hg_dominators_free(d);
  return h;
}

static struct hg_graph *random_graph(void) {
  uint32_t n = 1 + rnd(120), m = rnd(4 * n + 1);
  struct fx *f = fx_new(n);
  for (uint32_t i = 0; i < n; i++) {
    f->size[i] = 1 + rnd(100);
    if (rnd(20) == 0) f->flags[i] = HG_NODE_REGION; /* whole region: a leak root */
  }
  for (uint32_t e = 0; e < m; e++) fx_edge_f(f, rnd(n), rnd(n), (uint8_t)rnd(HG_EDGE_KIND_COUNT), 0);
  for (uint32_t r = rnd(5); r > 0; r--) fx_root(f, rnd(n));
  return fx_build(f);
}

/* Random graphs: leaks, cycles and export computed first on a fresh graph
 * (no view), then after hg_dominators_compute (view cached), then after
 * hg_graph_drop_cache: all equal. Dominators twice (view replaced) equal. */
static void test_random_same(void) {
  int bad = 0;
  for (int iter = 0; iter < 1000 && !bad; iter++) {
    struct hg_graph *g = random_graph();
    uint64_t l0 = leaks_print(g), c0 = cycles_print(g), x0 = export_print(g);
    uint64_t d0 = dom_print(g);
    uint64_t l1 = leaks_print(g), c1 = cycles_print(g), x1 = export_print(g);
    uint64_t d1 = dom_print(g);
    hg_graph_drop_cache(g);
    uint64_t l2 = leaks_print(g), c2 = cycles_print(g);
    if (!l0 || !c0 || !x0 || !d0 || l0 != l1 || c0 != c1 || x0 != x1 || d0 != d1 || l0 != l2 ||
        c0 != c2) {
      fprintf(stderr, "mismatch at iteration %d\n", iter);
      bad = 1;
    }
    hg_graph_free(g);
  }
  CHECK(!bad);
}

/* Equal cycles: reported in address order of their lowest member, with or
 * without the view (the view's numbering differs from node order). */
static void test_cycle_order(void) {
  struct fx *f = fx_new(8);
  fx_edge(f, 0, 6); /* DFS from the root meets the cycles in order 6, 4, 2 */
  fx_edge(f, 0, 4);
  fx_edge(f, 0, 2);
  for (uint32_t a = 2; a < 8; a += 2) {
    fx_edge(f, a, a + 1);
    fx_edge(f, a + 1, a);
  }
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  for (int pass = 0; pass < 2; pass++) {
    struct hg_cycles *c = NULL;
    REQUIRE(hg_cycles_find(g, 2, &c) == 0);
    REQUIRE(c->count == 3);
    for (uint32_t i = 0; i < 3; i++) {
      CHECK_EQ_U(c->cycles[i].first, 2 * i);
      CHECK_EQ_U(c->members[c->cycles[i].first], 2 + 2 * i);
      CHECK_EQ_U(c->members[c->cycles[i].first + 1], 3 + 2 * i);
    }
    hg_cycles_free(c);
    struct hg_dominators *d = NULL;
    REQUIRE(hg_dominators_compute(g, &d) == 0); /* second pass: with the view */
    hg_dominators_free(d);
  }
  hg_graph_free(g);
}

/* After hg_graph_drop_cache the graph may be changed in place: a cut edge
 * makes its subtree leak, which a stale view would hide. */
static void test_drop_then_change(void) {
  struct fx *f = fx_new(4);
  fx_edge(f, 0, 1);
  fx_edge(f, 1, 2);
  fx_edge(f, 2, 1);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct hg_dominators *d = NULL;
  REQUIRE(hg_dominators_compute(g, &d) == 0);
  hg_dominators_free(d);
  struct hg_leaks *l = NULL;
  REQUIRE(hg_leaks_find(g, &l) == 0);
  CHECK_EQ_U(l->leaked_count, 1); /* node 3 */
  hg_leaks_free(l);
  hg_graph_drop_cache(g);
  hg_graph_drop_cache(g); /* twice is fine */
  hg_graph_drop_cache(NULL);
  g->edge_kind[0] = HG_EDGE_WEAK; /* 0 -> 1 no longer retains */
  REQUIRE(hg_leaks_find(g, &l) == 0);
  CHECK_EQ_U(l->leaked_count, 3);
  hg_leaks_free(l);
  struct hg_cycles *c = NULL;
  REQUIRE(hg_cycles_find(g, 2, &c) == 0);
  REQUIRE(c->count == 1);
  CHECK_EQ_U(c->cycles[0].leaked, 1);
  hg_cycles_free(c);
  hg_graph_free(g);
}

/* Through the loader: a snapshot written to a file, loaded from the file and
 * from memory; the view of one graph never leaks into the other. */
static void test_loaded(void) {
  char path[] = "/tmp/hg_cache_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  struct hg_writer *w = NULL;
  REQUIRE(hg_writer_open(&w, path) == 0);
  struct hg_meta meta = {.platform = "linux", .arch = "x86_64", .pointer_size = 8,
                         .page_size = 4096, .process = "test"};
  REQUIRE(hg_writer_meta(w, &meta) == 0);
  uint32_t n = 3000;
  for (uint32_t i = 0; i < n; i++)
    REQUIRE(hg_writer_node(w, 0x10000 + 64ull * i, 16 + rnd(48), 0,
                           i % 97 == 5 ? HG_NODE_REGION : HG_NODE_MALLOC, 0) == 0);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < 3; k++)
      REQUIRE(hg_writer_edge(w, i, 8ull * k, rnd(n), k == 2 ? HG_EDGE_WEAK : HG_EDGE_CONSERVATIVE,
                             0) == 0);
  for (uint32_t r = 0; r < 4; r++) {
    struct hg_root root = {HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000 + 8ull * r, rnd(n)};
    REQUIRE(hg_writer_root(w, &root) == 0);
  }
  REQUIRE(hg_writer_finish(w) == 0);
  hg_writer_close(w);
  FILE *fp = fopen(path, "rb");
  REQUIRE(fp);
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  void *buf = malloc((size_t)size);
  REQUIRE(buf && fread(buf, 1, (size_t)size, fp) == (size_t)size);
  fclose(fp);
  struct hg_load_error err;
  struct hg_graph *a = hg_graph_load(path, &err), *b = hg_graph_load_mem(buf, (size_t)size, &err);
  REQUIRE(a && b);
  uint64_t la = leaks_print(a), ca = cycles_print(a), xa = export_print(a);
  CHECK(dom_print(b) == dom_print(a)); /* both have a view now */
  CHECK(leaks_print(b) == la);
  CHECK(cycles_print(b) == ca);
  CHECK(export_print(b) == xa);
  CHECK(leaks_print(a) == la);
  CHECK(cycles_print(a) == ca);
  hg_graph_free(a);
  CHECK(leaks_print(b) == la); /* b's view is its own */
  hg_graph_free(b);
  free(buf);
  unlink(path);
}

int main(void) {
  RUN(test_random_same);
  RUN(test_cycle_order);
  RUN(test_drop_then_change);
  RUN(test_loaded);
  return hg_test_done();
}
