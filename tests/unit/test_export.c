/*
 * test_export.c — exporters on a hand-made graph: heapsnapshot layout
 * (counts, synthetic nodes, edge types, to_node offsets), uint32 clamping,
 * DOT bounds, JSON shape, write errors. The full DevTools format rules are
 * checked by tests/analysis/check_heapsnapshot.py on CLI output.
 */
#include "hg_test.h"
#include "graph_fixture.h"

struct buf {
  char *p;
  size_t n;
  int fail;
};

static int sink(void *ctx, const void *data, size_t len) {
  struct buf *b = ctx;
  if (b->fail) return -1;
  b->p = realloc(b->p, b->n + len + 1);
  memcpy(b->p + b->n, data, len);
  b->n += len;
  b->p[b->n] = 0;
  return 0;
}

static struct hg_graph *sample(void) {
  /* root 0 (Foo) -> 1 (Bar, field "child") -> 2 weak; 2 -> 0 interior; 3 leaked. */
  struct fx *f = fx_new(4);
  uint32_t foo = fx_class(f, "Foo"), bar = fx_class(f, "Bar\"quoted\"");
  uint32_t child = fx_string(f, "child");
  f->cls[0] = foo, f->cls[1] = bar;
  f->size[3] = (uint64_t)1 << 33;
  fx_edge_f(f, 0, 1, HG_EDGE_STRONG, child);
  fx_edge_f(f, 1, 2, HG_EDGE_WEAK, 0);
  fx_edge_f(f, 2, 0, HG_EDGE_INTERIOR, 0);
  fx_edge_f(f, 2, 1, HG_EDGE_CONSERVATIVE, 0);
  fx_root(f, 0);
  return fx_build(f);
}

static void test_heapsnapshot(void) {
  struct hg_graph *g = sample();
  struct buf b = {0};
  struct hg_export_options o = {.format = HG_EXPORT_HEAPSNAPSHOT, .focus = HG_NONE};
  struct hg_export_stats st;
  REQUIRE(hg_export(g, &o, sink, &b, &st) == 0);
  /* root, (GC roots), (Global roots), (Unreachable) + 4 blocks. */
  CHECK_EQ_U(st.nodes, 8);
  /* root->gc, root->unreach, gc->global, global->0, unreach->2?,3 … */
  CHECK(strstr(b.p, "\"node_count\":8,"));
  CHECK(strstr(b.p, "\"(Global roots)\""));
  CHECK(strstr(b.p, "\"Bar\\\"quoted\\\"\""));
  CHECK_EQ_U(st.clamped_sizes, 1);
  CHECK(strstr(b.p, ",4294967295,"));
  CHECK_EQ_U(st.bytes, b.n);
  /* Edges of block 0 (ordinal 4): property "child" -> block 1 (ordinal 5, offset 35). */
  CHECK(strstr(b.p, "2,") && strstr(b.p, ",35\n"));
  free(b.p);
  b = (struct buf){.fail = 1};
  CHECK_EQ_U(hg_export(g, &o, sink, &b, NULL), (uint64_t)(int64_t)HG_EIO);
  hg_graph_free(g);
}

static const char *shout(void *ctx, const char *name, uint32_t kind) {
  (void)kind;
  snprintf(ctx, 64, "<%s>", name);
  return ctx;
}

static void test_dot_and_json(void) {
  struct hg_graph *g = sample();
  struct buf b = {0};
  char tmp[64];
  struct hg_export_options o = {.format = HG_EXPORT_DOT, .focus = 1, .depth = 1,
                                .class_name = shout, .class_name_ctx = tmp};
  struct hg_export_stats st;
  REQUIRE(hg_export(g, &o, sink, &b, &st) == 0);
  CHECK(strstr(b.p, "digraph heapgraph {"));
  CHECK(strstr(b.p, "n1 [label=\"<Bar\\\"quoted\\\">"));
  CHECK(strstr(b.p, "style=dashed"));
  CHECK_EQ_U(st.nodes, 3); /* 1, its neighbours 0 and 2 */
  free(b.p);
  b = (struct buf){0};
  o.focus = HG_NONE;
  o.max_nodes = 2;
  REQUIRE(hg_export(g, &o, sink, &b, &st) == 0);
  CHECK_EQ_U(st.nodes, 2);
  CHECK(strstr(b.p, "roots -> n0 [color=blue"));
  free(b.p);
  b = (struct buf){0};
  o = (struct hg_export_options){.format = HG_EXPORT_JSON};
  REQUIRE(hg_export(g, &o, sink, &b, &st) == 0);
  CHECK(strstr(b.p, "\"format\":\"heapgraph-json\""));
  CHECK(strstr(b.p, "{\"index\":3,\"addr\":\"0x1300\",\"size\":8589934592,\"class\":0,"
                    "\"flags\":1,\"heap\":0,\"idom\":null,\"retained\":0}"));
  CHECK(strstr(b.p, "\"idom\":-1,\"retained\":2"));
  CHECK(strstr(b.p, "\"kind\":\"strong\",\"field\":\"child\""));
  free(b.p);
  o.format = 77;
  CHECK_EQ_U(hg_export(g, &o, sink, &b, NULL), (uint64_t)(int64_t)HG_EINVAL);
  hg_graph_free(g);
}

int main(void) {
  RUN(test_heapsnapshot);
  RUN(test_dot_and_json);
  return hg_test_done();
}
