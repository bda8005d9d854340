/*
 * test_load_paths.c — the two ways through the reader (graph/reader.c) give
 * the same graph and the same errors: the two-thread load sized from the
 * trailer (load_fast) against the sequential one (forced through the
 * _hg_load_sequential hook), on snapshots of many chunks with named edges,
 * heap ids, nodes without edges, one node's edges spread over several
 * chunks, and, for errors, every single-byte corruption of a small file
 * and truncations (code, offset and message compared).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"
#include "hg_test.h"
#include "test_format_util.h"

extern int _hg_load_sequential;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

/* n nodes; node `wide` gets 200,000 edges (several chunks); others 0-5. */
static int write_graph(const char *path, uint32_t n, uint32_t wide) {
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  if (rc) return rc;
  struct hg_meta m = {.platform = "linux", .pointer_size = 8, .page_size = 4096};
  rc = hg_writer_meta(w, &m);
  uint32_t heap = 0, field = 0;
  if (!rc) rc = hg_writer_heap(w, "arena", &heap);
  struct hg_class k = {"K", HG_CLASS_CXX, 16};
  if (!rc) rc = hg_writer_class(w, &k, NULL);
  if (!rc) rc = hg_writer_string(w, "next", &field);
  uint64_t addr = 0x10000;
  for (uint32_t i = 0; i < n && !rc; i++) {
    uint64_t size = wide == i ? 8u * 200000u + 8 : 16 + 16 * rnd(8);
    rc = hg_writer_node(w, addr, size, rnd(3) ? 1 : 0, HG_NODE_MALLOC, rnd(5) ? 0 : heap);
    addr += size + 16 * rnd(3);
  }
  for (uint32_t i = 0; i < n && !rc; i++) {
    uint32_t k = i == wide ? 200000 : rnd(4) ? rnd(6) : 0;
    for (uint32_t j = 0; j < k && !rc; j++) {
      uint32_t kind = rnd(10) == 0 ? HG_EDGE_STRONG : rnd(10) == 0 ? HG_EDGE_WEAK : HG_EDGE_CONSERVATIVE;
      rc = hg_writer_edge(w, i, 8ull * j, rnd(n), kind, kind == HG_EDGE_STRONG && rnd(2) ? field : 0);
    }
  }
  for (uint32_t r = 0; r < 8 && !rc; r++) {
    struct hg_root root = {HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000 + 8ull * r, rnd(n)};
    rc = hg_writer_root(w, &root);
  }
  if (!rc) rc = hg_writer_finish(w);
  hg_writer_close(w);
  return rc;
}

#define SAME(a, b, n) (((a) == NULL && (b) == NULL) || ((a) && (b) && !memcmp((a), (b), (n) * sizeof *(a))))

static int same_graph(const struct hg_graph *a, const struct hg_graph *b) {
  for (uint32_t i = 0; i < a->root_count && i < b->root_count; i++)
    if (a->roots[i].kind != b->roots[i].kind || a->roots[i].owner != b->roots[i].owner ||
        a->roots[i].addr != b->roots[i].addr || a->roots[i].target != b->roots[i].target)
      return 0;
  if (a->node_count != b->node_count || a->edge_count != b->edge_count ||
      a->named_count != b->named_count || a->root_count != b->root_count)
    return 0;
  size_t n = a->node_count, m = a->edge_count;
  return SAME(a->node_addr, b->node_addr, n) && SAME(a->node_size, b->node_size, n) &&
         SAME(a->node_class, b->node_class, n) && SAME(a->node_flags, b->node_flags, n) &&
         SAME(a->node_heap, b->node_heap, n) && SAME(a->edge_start, b->edge_start, n + 1) &&
         SAME(a->edge_target, b->edge_target, m) && SAME(a->edge_offset, b->edge_offset, m) &&
         SAME(a->edge_kind, b->edge_kind, m) &&
         (!a->named_count || (SAME(a->named_edge, b->named_edge, a->named_count) &&
                              SAME(a->named_field, b->named_field, a->named_count))) &&
         a->checksum == b->checksum;
}

static void test_same_graph(void) {
  const char *path = "build/tests/load_paths.hgsnap";
  static const uint32_t sizes[][2] = {{1, 0}, {7, 3}, {3000, 1000}, {120000, 60000}, {200000, 199999}};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    REQUIRE(write_graph(path, sizes[s][0], sizes[s][1]) == 0);
    struct hg_load_error e1, e2;
    _hg_load_sequential = 0;
    struct hg_graph *fast = hg_graph_load(path, &e1);
    _hg_load_sequential = 1;
    struct hg_graph *seq = hg_graph_load(path, &e2);
    _hg_load_sequential = 0;
    CHECK(fast && seq);
    if (fast && seq && !same_graph(fast, seq)) {
      const struct hg_graph *a = fast, *b = seq;
      size_t n = a->node_count, m = a->edge_count;
      fprintf(stderr, "size %zu: n %u/%u m %u/%u named %u/%u addr %d size %d class %d flags %d heap %d start %d tgt %d off %d kind %d ned %d nf %d\n", s,
              a->node_count, b->node_count, a->edge_count, b->edge_count, a->named_count, b->named_count,
              SAME(a->node_addr, b->node_addr, n), SAME(a->node_size, b->node_size, n),
              SAME(a->node_class, b->node_class, n), SAME(a->node_flags, b->node_flags, n),
              SAME(a->node_heap, b->node_heap, n), SAME(a->edge_start, b->edge_start, n + 1),
              SAME(a->edge_target, b->edge_target, m), SAME(a->edge_offset, b->edge_offset, m),
              SAME(a->edge_kind, b->edge_kind, m), SAME(a->named_edge, b->named_edge, a->named_count),
              SAME(a->named_field, b->named_field, a->named_count));
      CHECK(0);
    }
    size_t size = 0;
    uint8_t *buf = fmt_read(path, &size);
    struct hg_graph *mem = buf ? hg_graph_load_mem(buf, size, &e1) : NULL;
    CHECK(mem && seq && same_graph(mem, seq));
    hg_graph_free(mem);
    free(buf);
    hg_graph_free(fast);
    hg_graph_free(seq);
  }
}

static int same_error(const void *buf, size_t size) {
  struct hg_load_error e1, e2;
  _hg_load_sequential = 0;
  struct hg_graph *a = hg_graph_load_mem(buf, size, &e1);
  _hg_load_sequential = 1;
  struct hg_graph *b = hg_graph_load_mem(buf, size, &e2);
  _hg_load_sequential = 0;
  int ok = (a == NULL) == (b == NULL) && e1.code == e2.code && e1.offset == e2.offset &&
           !strcmp(e1.message, e2.message) && (!a || same_graph(a, b));
  hg_graph_free(a);
  hg_graph_free(b);
  return ok;
}

static void test_same_errors(void) {
  const char *path = "build/tests/load_paths.hgsnap";
  REQUIRE(write_graph(path, 40, UINT32_MAX) == 0);
  size_t size = 0;
  uint8_t *buf = fmt_read(path, &size);
  REQUIRE(buf != NULL);
  uint32_t bad = 0;
  for (size_t i = 0; i < size; i++) {
    uint8_t keep = buf[i];
    buf[i] ^= (uint8_t)(1u << (i % 8));
    bad += !same_error(buf, size);
    buf[i] = keep;
  }
  for (size_t n = 0; n < size; n += 1 + n / 8) bad += !same_error(buf, n);
  CHECK_EQ_U(bad, 0);
  free(buf);
}

/* HG_LOAD_NO_EDGE_OFFSETS / _NAMES on both paths: the same graph without
 * edge_offset / named edges (validated all the same). */
static void test_no_edge_detail(void) {
  const char *path = "build/tests/load_paths.hgsnap";
  const unsigned drop = HG_LOAD_NO_EDGE_OFFSETS | HG_LOAD_NO_EDGE_NAMES;
  REQUIRE(write_graph(path, 120000, 60000) == 0);
  struct hg_load_error e;
  struct hg_graph *full = hg_graph_load(path, &e);
  REQUIRE(full && full->named_count && full->edge_offset);
  for (int seq = 0; seq < 2; seq++)
    for (unsigned f = HG_LOAD_NO_EDGE_OFFSETS; f <= drop; f += HG_LOAD_NO_EDGE_OFFSETS) {
      _hg_load_sequential = seq;
      struct hg_graph *g = hg_graph_load_flags(path, f, &e);
      _hg_load_sequential = 0;
      REQUIRE(g);
      CHECK((g->edge_offset == NULL) == !!(f & HG_LOAD_NO_EDGE_OFFSETS));
      CHECK((g->named_count == 0) == !!(f & HG_LOAD_NO_EDGE_NAMES));
      /* The rest as the full load's. */
      uint32_t *off = g->edge_offset, *ne = g->named_edge, *nf = g->named_field, nc = g->named_count;
      g->edge_offset = full->edge_offset;
      g->named_edge = full->named_edge;
      g->named_field = full->named_field;
      g->named_count = full->named_count;
      CHECK(same_graph(g, full));
      CHECK(!off || !memcmp(off, full->edge_offset, full->edge_count * sizeof *off));
      CHECK(!nc || (nc == full->named_count && !memcmp(ne, full->named_edge, nc * sizeof *ne) &&
                    !memcmp(nf, full->named_field, nc * sizeof *nf)));
      g->edge_offset = off;
      g->named_edge = ne;
      g->named_field = nf;
      g->named_count = nc;
      hg_graph_free(g);
    }
  hg_graph_free(full);
}

int main(void) {
  RUN(test_same_graph);
  RUN(test_no_edge_detail);
  RUN(test_same_errors);
  return hg_test_done();
}
