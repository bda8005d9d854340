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
                    "\"flags\":1,\"heap\":0,\"idom\":null,\"retained\":0,\"devtools_id\":609}"));
  CHECK(strstr(b.p, "\"time_ns\":\"0\""));
  CHECK(strstr(b.p, "\"idom\":-1,\"retained\":2"));
  CHECK(strstr(b.p, "\"kind\":\"strong\",\"field\":\"child\""));
  free(b.p);
  o.format = 77;
  CHECK_EQ_U(hg_export(g, &o, sink, &b, NULL), (uint64_t)(int64_t)HG_EINVAL);
  hg_graph_free(g);
}

/* The repro of issue 16: root -> A (16 B) -> B (1000 B), unreachable L -> B.
 * L -> B must be weak (not essential in DevTools' dominators) and
 * "(Unreachable)" must point at the root leak L only, not at every block. */
static void test_garbage_does_not_retain(void) {
  struct fx *f = fx_new(5); /* 0 A, 1 B, 2 L, 3 M (held by L), 4 N (held by L and M) */
  f->size[0] = 16, f->size[1] = 1000, f->size[2] = 24, f->size[3] = 40, f->size[4] = 3;
  fx_edge(f, 0, 1);
  fx_edge_f(f, 2, 1, HG_EDGE_CONSERVATIVE, 0);
  fx_edge(f, 2, 3);
  fx_edge(f, 3, 4);
  fx_edge(f, 2, 4);
  fx_root(f, 0);
  struct hg_graph *g = fx_build(f);
  struct buf b = {0};
  struct hg_export_options o = {.format = HG_EXPORT_HEAPSNAPSHOT, .focus = HG_NONE};
  struct hg_export_stats st;
  REQUIRE(hg_export(g, &o, sink, &b, &st) == 0);
  /* ordinals: 0 root, 1 (GC roots), 2 (Global roots), 3 (Unreachable), 4.. blocks */
  CHECK(strstr(b.p, "\"(from unreachable)\""));
  CHECK(strstr(b.p, "\"(unclassified <=1024 B)\""));
  CHECK(strstr(b.p, "\n,9,7,8,0,1,0,0\n"));  /* (Unreachable): id 8 (even), 1 edge */
  CHECK(strstr(b.p, "\n,1,0,42\n"));         /* (Unreachable) -> L (ordinal 6 x 7) only */
  CHECK(strstr(b.p, "\n,6,12,35\n"));        /* L -> B weak "(from unreachable)" (string 12) */
  CHECK(strstr(b.p, "\n,1,16,49\n"));        /* L -> M stays an element edge (offset 16) */
  CHECK(strstr(b.p, "\n,8,17,513,16,1,0,0\n")); /* A "(unclassified <=16 B)", id 2*0x100+1 */
  CHECK_EQ_U(st.moved_ids, 0);
  free(b.p);
  hg_graph_free(g);
}

/* Ids: odd, (id - 1) x 8 = low 35 bits of the address; unique even when
 * addresses 32 GiB apart (or in one granule) share a key. */
static void test_ids(void) {
  struct fx *f = fx_new(6);
  struct hg_graph *g = fx_build(f);
  uint64_t G32 = (uint64_t)32 << 30;
  uint64_t addr[6] = {0x1000, 0x1008, 0x2000, 0x2000 + G32, 0x1000 + 2 * G32, 0x7fff0000 + 2 * G32};
  memcpy(g->node_addr, addr, sizeof addr);
  uint32_t ids[6];
  uint64_t moved = 99;
  REQUIRE(hg_export_node_ids(g, ids, &moved) == 0);
  CHECK_EQ_U(ids[0], 2 * 0x100 + 1);
  CHECK_EQ_U(ids[2], 2 * 0x200 + 1);
  CHECK_EQ_U(ids[5], 2 * 0x7fff000 + 1);
  CHECK_EQ_U(moved, 3); /* 0x1008 (same granule as 0x1000), 0x2000+32G, 0x1000+64G */
  for (int i = 0; i < 6; i++) {
    CHECK(ids[i] & 1);
    for (int j = 0; j < i; j++) CHECK(ids[i] != ids[j]);
  }
  /* a heap within 32 GiB: every id is the formula, none moved */
  uint64_t near[6] = {G32 - 0x20, G32 - 0x10, G32, G32 + 0x10, 2 * G32 - 0x40, 2 * G32 - 0x30};
  memcpy(g->node_addr, near, sizeof near);
  REQUIRE(hg_export_node_ids(g, ids, &moved) == 0);
  CHECK_EQ_U(moved, 0);
  for (int i = 0; i < 6; i++) CHECK_EQ_U((uint64_t)(ids[i] - 1) * 8, g->node_addr[i] & (G32 - 1));
  CHECK_EQ_U(ids[2], 1); /* the window wraps: 32 GiB itself is id 1 */
  hg_graph_free(g);
}

/* JSON lines: one record per line, each a whole JSON object. */
static void test_jsonl(void) {
  struct hg_graph *g = sample();
  g->node_size[3] = (uint64_t)1 << 60; /* past 2^53: written as a string */
  struct buf b = {0};
  struct hg_export_options o = {.format = HG_EXPORT_JSONL};
  REQUIRE(hg_export(g, &o, sink, &b, NULL) == 0);
  unsigned lines = 0, nodes = 0, edges = 0;
  for (char *p = b.p; *p; p = strchr(p, '\n') + 1) {
    CHECK(*p == '{');
    nodes += !strncmp(p, "{\"type\":\"node\",", 15);
    edges += !strncmp(p, "{\"type\":\"edge\",", 15);
    lines++;
    char *nl = strchr(p, '\n');
    REQUIRE(nl && nl[-1] == '}');
  }
  CHECK_EQ_U(nodes, 4);
  CHECK_EQ_U(edges, 4);
  CHECK_EQ_U(lines, 1 + 2 + 4 + 4 + 1); /* meta, classes, nodes, edges, roots */
  CHECK(strstr(b.p, "{\"type\":\"meta\",\"format\":\"heapgraph-jsonl\""));
  CHECK(strstr(b.p, "\"size\":\"1152921504606846976\","));
  CHECK(strstr(b.p, "\"size\":1,"));
  free(b.p);
  hg_graph_free(g);
}

int main(void) {
  RUN(test_heapsnapshot);
  RUN(test_dot_and_json);
  RUN(test_garbage_does_not_retain);
  RUN(test_ids);
  RUN(test_jsonl);
  return hg_test_done();
}
