/*
 * test_format_stacks.c — the optional allocation-stack records (types 12-15):
 * round trip through the writer and reader; the same file read the way a
 * reader that predates them reads it (HG_LOAD_SKIP_OPTIONAL: skipped as
 * unknown records, every other part identical); hostile stack records
 * (frames naming missing images, node ids past the stack table, records
 * without the info record, oversized payloads, truncation at every byte)
 * fail with an error and an offset, never a crash.
 */
#include "test_format_util.h"

static const uint8_t bid[4] = {0xde, 0xad, 0xbe, 0xef};

static int write_stacks(const char *path) {
  struct hg_writer *w;
  int rc = hg_writer_open(&w, path);
  if (rc) return rc;
  struct hg_image im = {"/usr/bin/app", bid, 4, 0x400000, 0, 0x10000};
  struct hg_stack_info si = {32, 0, 1u << 20, 4096, 1024, 2, 0, "ok", "libunwind"};
  struct hg_stack_frame f1[2] = {{0, 0x1234}, {HG_NO_OWNER, 0x7fff0000}};
  struct hg_stack_frame f2[1] = {{0, 0x42}};
  struct hg_stack s1 = {1, 48, 2, f1}, s2 = {1, 32, 1, f2};
  uint32_t ids[3] = {1, 0, 2};
  struct hg_large_alloc la = {0x2000, 9u << 20, 123456789, 77, 2};
  struct hg_root root = {HG_ROOT_OTHER, HG_NO_OWNER, 0x10, 0};
  rc = rc ? rc : hg_writer_image(w, &im);
  rc = rc ? rc : hg_writer_node(w, 0x1000, 48, 0, HG_NODE_MALLOC, 0);
  rc = rc ? rc : hg_writer_node(w, 0x1040, 16, 0, HG_NODE_MALLOC, 0);
  rc = rc ? rc : hg_writer_node(w, 0x2000, 32, 0, HG_NODE_MALLOC, 0);
  uint32_t field = 0; /* a named edge: fmt_graphs_equal compares named arrays */
  rc = rc ? rc : hg_writer_string(w, "next", &field);
  rc = rc ? rc : hg_writer_edge(w, 0, 8, 2, HG_EDGE_STRONG, field);
  rc = rc ? rc : hg_writer_root(w, &root);
  rc = rc ? rc : hg_writer_stack_info(w, &si);
  rc = rc ? rc : hg_writer_stack(w, &s1);
  rc = rc ? rc : hg_writer_stack(w, &s2);
  rc = rc ? rc : hg_writer_node_stacks(w, 0, 3, ids);
  rc = rc ? rc : hg_writer_large_alloc(w, &la);
  rc = rc ? rc : hg_writer_finish(w);
  hg_writer_close(w);
  return rc;
}

static void test_roundtrip(void) {
  char p[512];
  fmt_path(p, sizeof p, "stacks.hgsnap");
  REQUIRE(write_stacks(p) == 0);
  fmt_save(p, "stacks.hgsnap"); /* decoded again by tests/format/check_cbor2.py */
  struct hg_load_error e;
  struct hg_graph *g = hg_graph_load(p, &e);
  REQUIRE(g);
  CHECK(g->has_stacks);
  CHECK(fmt_streq(g->stack_info.status, "ok") && fmt_streq(g->stack_info.unwinder, "libunwind"));
  CHECK_EQ_U(g->stack_info.max_frames, 32);
  CHECK_EQ_U(g->stack_info.live_blocks, 2);
  REQUIRE(g->stack_count == 2);
  CHECK_EQ_U(g->stacks[0].frame_count, 2);
  CHECK_EQ_U(g->stacks[0].frames[0].image, 0);
  CHECK_EQ_U(g->stacks[0].frames[0].offset, 0x1234);
  CHECK_EQ_U(g->stacks[0].frames[1].image, HG_NO_OWNER);
  CHECK_EQ_U(g->stacks[0].frames[1].offset, 0x7fff0000);
  CHECK_EQ_U(g->stacks[1].bytes, 32);
  REQUIRE(g->node_stack);
  CHECK_EQ_U(g->node_stack[0], 1);
  CHECK_EQ_U(g->node_stack[1], 0);
  CHECK_EQ_U(g->node_stack[2], 2);
  REQUIRE(g->large_count == 1);
  CHECK_EQ_U(g->large[0].size, 9u << 20);
  CHECK_EQ_U(g->large[0].stack, 2);
  CHECK_EQ_U(g->large[0].tid, 77);
  /* the v1 reader path: optional records skipped as unknown, all else equal */
  struct hg_graph *v1 = hg_graph_load_flags(p, HG_LOAD_SKIP_OPTIONAL, &e);
  REQUIRE(v1);
  CHECK(!v1->has_stacks && !v1->stack_count && !v1->node_stack && !v1->large_count);
  CHECK(fmt_graphs_equal(g, v1));
  /* totals: node 0 (stack 1) retains node 2 (stack 2) */
  struct hg_dominators *d = NULL;
  struct hg_stack_total *t = NULL;
  REQUIRE(hg_dominators_compute(g, &d) == 0);
  REQUIRE(hg_stack_totals(g, d, &t) == 0);
  CHECK_EQ_U(t[1].nodes, 1);
  CHECK_EQ_U(t[1].retained, 80);
  CHECK_EQ_U(t[2].retained, 32);
  CHECK_EQ_U(t[0].nodes, 1);
  free(t);
  hg_dominators_free(d);
  hg_graph_free(v1);
  hg_graph_free(g);
}

static void test_writer_rejects(void) {
  char p[512];
  fmt_path(p, sizeof p, "bad.hgsnap");
  struct hg_writer *w;
  REQUIRE(hg_writer_open(&w, p) == 0);
  struct hg_stack_frame f = {3, 1}; /* no image 3 */
  struct hg_stack s = {1, 1, 1, &f};
  CHECK_EQ_U(hg_writer_stack(w, &s), HG_EINVAL);
  hg_writer_close(w);
  REQUIRE(hg_writer_open(&w, p) == 0);
  uint32_t id = 5;
  CHECK(hg_writer_node(w, 0x1000, 16, 0, 1, 0) == 0);
  CHECK_EQ_U(hg_writer_node_stacks(w, 0, 1, &id), HG_EINVAL); /* stack 5 unwritten */
  hg_writer_close(w);
  CHECK_EQ_U(fmt_tmp_entries(fmt_tmpdir()), 0);
}

/* A file with one node and the given stack records after the info record. */
static struct hg_graph *crafted(int info, uint64_t frame_image, uint64_t node_stack, size_t pad,
                                struct hg_load_error *e, size_t *len_out, struct cb *keep) {
  struct cb c = {0};
  cb_prefix(&c, 1);
  cb_array(&c, 5);
  cb_uint(&c, 8);
  cb_uint(&c, 0);
  cb_uint(&c, 1);
  cb_uint(&c, 0x1000);
  uint8_t row[4] = {0, 16, 0, 1};
  cb_bytes(&c, row, 4);
  if (info) {
    cb_array(&c, 10);
    cb_uint(&c, 12);
    for (int i = 0; i < 7; i++) cb_uint(&c, 1);
    cb_text(&c, "ok");
    cb_text(&c, "x");
  }
  struct cb fr = {0};
  cb_varint(&fr, frame_image);
  cb_varint(&fr, 0x10);
  for (size_t i = 0; i < pad; i++) cb_byte(&fr, 0);
  cb_array(&c, 5);
  cb_uint(&c, 13);
  cb_uint(&c, 1);
  cb_uint(&c, 1);
  cb_uint(&c, 16);
  cb_bytes(&c, fr.buf, fr.len);
  cb_free(&fr);
  cb_array(&c, 3);
  cb_uint(&c, 14);
  cb_uint(&c, 0);
  uint8_t ns = (uint8_t)node_stack;
  cb_bytes(&c, &ns, 1);
  struct cb_counts k = {{0, 0, 0, 0, 0, 0, 1, 0, 0}};
  cb_trailer(&c, &k);
  struct hg_graph *g = hg_graph_load_mem(c.buf, c.len, e);
  *len_out = c.len;
  if (keep) *keep = c;
  else cb_free(&c);
  return g;
}

static void test_hostile(void) {
  struct hg_load_error e;
  size_t len;
  struct hg_graph *g = crafted(1, 0, 1, 0, &e, &len, NULL);
  CHECK(g && g->node_stack && g->node_stack[0] == 1);
  hg_graph_free(g);
  CHECK(!crafted(1, 2, 1, 0, &e, &len, NULL)); /* frame in image 1: none */
  CHECK(e.code == HG_EFORMAT && strstr(e.message, "image") && e.offset == len);
  CHECK(!crafted(1, 0, 2, 0, &e, &len, NULL)); /* node names stack 2 of 1 */
  CHECK(e.code == HG_EFORMAT && strstr(e.message, "stack 2"));
  CHECK(!crafted(0, 0, 1, 0, &e, &len, NULL)); /* no info record */
  CHECK(e.code == HG_EFORMAT);
  CHECK(!crafted(1, 0, 1, 600, &e, &len, NULL)); /* 300 frames > 256 */
  CHECK(e.code == HG_ELIMIT);
  /* every prefix of the good file: an error, never a crash */
  struct cb c;
  g = crafted(1, 0, 1, 0, &e, &len, &c);
  REQUIRE(g);
  hg_graph_free(g);
  int all = 1;
  for (size_t n = 0; n < c.len; n++) {
    struct hg_graph *t = hg_graph_load_mem(c.buf, n, &e);
    if (t || e.code != HG_ETRUNCATED) all = 0;
    hg_graph_free(t);
  }
  CHECK(all);
  /* and every single-byte change loads or fails cleanly */
  for (size_t i = 0; i < c.len; i++) {
    uint8_t o = c.buf[i];
    c.buf[i] ^= 0x41;
    hg_graph_free(hg_graph_load_mem(c.buf, c.len, &e));
    c.buf[i] = o;
  }
  cb_free(&c);
}

int main(void) {
  RUN(test_roundtrip);
  RUN(test_writer_rejects);
  RUN(test_hostile);
  fmt_cleanup();
  return hg_test_done();
}
