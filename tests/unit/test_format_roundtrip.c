/*
 * test_format_roundtrip.c — snapshot format v1: what is written is what is
 * read. The golden file (tests/golden/v1-small.hgsnap) byte for byte and
 * field by field; the builder with every record type; and a big raw-writer
 * graph (>200,000 nodes, a source with >100,000 out-edges, interleaved
 * writes) compared array by array, through both the file and memory loaders.
 *
 * HG_REGEN_GOLDEN=1 rewrites the golden file instead of comparing with it
 * (only when the format changes on purpose; bump the version then).
 */
#include "test_format_util.h"

/* ---------------------------------------------------------- golden */

static void test_golden_bytes(void) {
  char path[512], golden[512];
  fmt_path(path, sizeof path, "golden.hgsnap");
  fmt_src(golden, sizeof golden, "tests/golden/v1-small.hgsnap");
  REQUIRE(golden_write(path) == 0);
  fmt_save(path, "golden-written.hgsnap");
  size_t n1 = 0, n2 = 0;
  uint8_t *a = fmt_read(path, &n1);
  REQUIRE(a);
  const char *regen = getenv("HG_REGEN_GOLDEN");
  if (regen && !strcmp(regen, "1")) {
    CHECK(fmt_write(golden, a, n1) == 0);
    fprintf(stderr, "rewrote %s (%zu bytes)\n", golden, n1);
  }
  uint8_t *b = fmt_read(golden, &n2);
  CHECK(b != NULL);
  if (b) {
    CHECK_EQ_U(n1, n2);
    size_t i = 0;
    while (i < n1 && i < n2 && a[i] == b[i]) i++;
    if (n1 != n2 || i != n1)
      fprintf(stderr, "golden file differs from the writer's output at byte %zu\n", i);
    CHECK(n1 == n2 && i == n1);
  }
  free(a);
  free(b);
  unlink(path);
}

static void test_golden_load(void) {
  char golden[512];
  fmt_src(golden, sizeof golden, "tests/golden/v1-small.hgsnap");
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(golden, &err);
  if (!g) fprintf(stderr, "golden: %s at %llu\n", err.message, (unsigned long long)err.offset);
  REQUIRE(g);
  golden_check(g);
  size_t n;
  uint8_t *data = fmt_read(golden, &n);
  REQUIRE(data);
  CHECK_EQ_U(g->file_size, n);
  /* the checksum covers every byte before the trailer record */
  static const uint8_t trailer_head[] = {0x83, 0x0b, 0xa9, 0x67, 'r', 'e', 'g', 'i', 'o', 'n', 's'};
  size_t at = 0;
  for (size_t i = 0; i + sizeof trailer_head <= n; i++)
    if (!memcmp(data + i, trailer_head, sizeof trailer_head)) at = i;
  CHECK(at > 0);
  CHECK_EQ_U(g->checksum, XXH64(data, at, 0));
  CHECK_EQ_U(data[n - 1], 0xff);
  struct hg_graph *m = hg_graph_load_mem(data, n, &err);
  REQUIRE(m);
  CHECK(fmt_graphs_equal(g, m));
  /* lookups over the golden graph */
  CHECK_EQ_U(hg_graph_find(g, 0x10000), 0);
  CHECK_EQ_U(hg_graph_find(g, 0x1001f), 0);
  CHECK_EQ_U(hg_graph_find(g, 0x10020), 1);
  CHECK(hg_graph_find(g, 0x10050) == -1);
  CHECK(hg_graph_find(g, 0xffff) == -1);
  CHECK_EQ_U(hg_graph_find(g, 0x7f00001fffffull), 5);
  CHECK(hg_graph_find(g, 0x7f0000200000ull) == -1);
  CHECK(fmt_streq(hg_graph_node_class_name(g, 0), "User"));
  CHECK(hg_graph_node_class_name(g, 2) == NULL);
  CHECK(hg_graph_node_class_name(g, 99) == NULL);
  REQUIRE(hg_graph_build_reverse(g) == 0);
  CHECK(hg_graph_build_reverse(g) == 0); /* idempotent */
  /* in-edges of node 0: from 1 (edge 4) and 3 (edge 7) */
  CHECK_EQ_U(g->in_start[1] - g->in_start[0], 2);
  CHECK_EQ_U(g->in_source[g->in_start[0]], 1);
  CHECK_EQ_U(g->in_source[g->in_start[0] + 1], 3);
  CHECK_EQ_U(g->in_edge[g->in_start[0] + 1], 7);
  CHECK_EQ_U(g->in_start[GOLDEN_NODES], GOLDEN_EDGES);
  hg_graph_free(m);
  hg_graph_free(g);
  free(data);
}

/* ---------------------------------------------------------- builder */

static void test_builder_roundtrip(void) {
  char path[512];
  fmt_path(path, sizeof path, "builder.hgsnap");
  struct hg_builder *b = hg_builder_new();
  REQUIRE(b);
  struct hg_kv app[] = {{"k1", "v1"}, {"k2", "v2"}};
  struct hg_num cap[] = {{"walk_ns", 10}, {"scan_ns", 20}};
  struct hg_meta m = {.platform = "linux", .arch = "arm64", .pointer_size = 8, .page_size = 16384,
                      .pid = -7, .process = "bproc", .time_ns = 5, .trigger = "signal",
                      .app_count = 2, .app = app, .capture_count = 2, .capture = cap};
  CHECK(hg_builder_meta(b, &m) == 0);
  struct hg_kv app2[] = {{"k1", "v1-late"}, {"k0", "zero"}};
  struct hg_num cap2[] = {{"scan_ns", 21}};
  struct hg_meta m2 = {.heap_status = "partial", .app_count = 2, .app = app2, .capture_count = 1, .capture = cap2};
  CHECK(hg_builder_meta(b, &m2) == 0);
  uint8_t uuid[16];
  for (int i = 0; i < 16; i++) uuid[i] = (uint8_t)(i * 17);
  struct hg_image im = {"/System/Lib/libfoo.dylib", uuid, 16, 0x100000000ull, 0x4000, 0x8000};
  CHECK(hg_builder_image(b, &im) == 0);
  struct hg_region rg = {0x1000, 0x100000, HG_PROT_READ | HG_PROT_WRITE, 1, "MALLOC_TINY", 100, 50, 25, HG_NO_OWNER};
  struct hg_region rg2 = {0x100000000ull, 0x8000, HG_PROT_READ | HG_PROT_EXEC, 0, "/System/Lib/libfoo.dylib", 0x8000, 0, 0, 0};
  CHECK(hg_builder_region(b, &rg) == 0);
  CHECK(hg_builder_region(b, &rg2) == 0);
  struct hg_thread th = {77, "worker", 0x5000, 0x9000};
  CHECK(hg_builder_thread(b, &th) == 0);
  uint32_t h1 = hg_builder_heap(b, "zone A"), h2 = hg_builder_heap(b, "zone B");
  CHECK_EQ_U(h1, 1);
  CHECK_EQ_U(h2, 2);
  CHECK_EQ_U(hg_builder_heap(b, "zone A"), 1);
  uint32_t cA = hg_builder_class(b, "A", HG_CLASS_SWIFT, 64);
  uint32_t cB = hg_builder_class(b, "B", HG_CLASS_CF, 0);
  CHECK_EQ_U(cA, 1);
  CHECK_EQ_U(cB, 2);
  CHECK_EQ_U(hg_builder_class(b, "A", HG_CLASS_SWIFT, 64), 1);
  CHECK_EQ_U(hg_builder_class(b, "A", HG_CLASS_OBJC, 64), 3); /* kind distinguishes */
  /* nodes out of order */
  CHECK(hg_builder_node(b, 0x3000, 0x40, cB, HG_NODE_MALLOC, h2) == 0);
  CHECK(hg_builder_node(b, 0x1000, 0x40, cA, HG_NODE_MALLOC, h1) == 0);
  CHECK(hg_builder_node(b, 0x2000, 0x40, 0, HG_NODE_MALLOC | HG_NODE_MMAPPED, 0) == 0);
  /* edges by address: to a start (conservative), inside (→ interior), named */
  CHECK(hg_builder_edge(b, 0x3000, 8, 0x1000, HG_EDGE_CONSERVATIVE, NULL) == 0);
  CHECK(hg_builder_edge(b, 0x1000, 0, 0x2010, HG_EDGE_CONSERVATIVE, NULL) == 0);
  CHECK(hg_builder_edge(b, 0x1000, 16, 0x3000, HG_EDGE_STRONG, "child") == 0);
  CHECK(hg_builder_edge(b, 0x1008, 1, 0x1000, HG_EDGE_WEAK, "parent") == 0); /* offset 9 */
  CHECK(hg_builder_edge(b, 0x1000, 24, 0x9999999, HG_EDGE_STRONG, NULL) == 0); /* dangling */
  CHECK(hg_builder_edge(b, 0x2000, 0, 0x3008, HG_EDGE_UNOWNED, "child") == 0);
  CHECK(hg_builder_root(b, HG_ROOT_STACK, 0, 0x5008, 0x1000) == 0);
  CHECK(hg_builder_root(b, HG_ROOT_GLOBAL, 0, 0x100004000ull, 0x3010) == 0);
  CHECK(hg_builder_root(b, HG_ROOT_REGISTER, HG_NO_OWNER, 3, 0x2000) == 0);
  CHECK(hg_builder_root(b, HG_ROOT_OTHER, HG_NO_OWNER, 0, 0x77777777) == 0); /* dangling */
  uint64_t dropped = 99;
  int rc = hg_builder_write(b, path, &dropped);
  if (rc) fprintf(stderr, "builder: %s\n", hg_builder_message(b));
  REQUIRE(rc == 0);
  CHECK_EQ_U(dropped, 2);
  hg_builder_free(b);

  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  REQUIRE(g);
  fmt_save(path, "builder.hgsnap");
  CHECK(fmt_streq(g->meta.platform, "linux") && fmt_streq(g->meta.arch, "arm64"));
  CHECK_EQ_U(g->meta.page_size, 16384);
  CHECK(g->meta.pid == -7);
  CHECK(fmt_streq(g->meta.heap_status, "partial"));
  CHECK(fmt_streq(g->meta.trigger, "signal"));
  REQUIRE(g->meta.app_count == 3 && g->meta.capture_count == 2);
  CHECK(fmt_streq(g->meta.app[0].key, "k0") && fmt_streq(g->meta.app[0].value, "zero"));
  CHECK(fmt_streq(g->meta.app[1].key, "k1") && fmt_streq(g->meta.app[1].value, "v1-late"));
  CHECK(fmt_streq(g->meta.app[2].key, "k2") && fmt_streq(g->meta.app[2].value, "v2"));
  CHECK(fmt_streq(g->meta.capture[0].key, "scan_ns") && g->meta.capture[0].value == 21);
  CHECK(fmt_streq(g->meta.capture[1].key, "walk_ns") && g->meta.capture[1].value == 10);
  REQUIRE(g->image_count == 1 && g->region_count == 2 && g->thread_count == 1);
  CHECK_EQ_U(g->images[0].id_len, 16);
  CHECK(memcmp(g->images[0].id, uuid, 16) == 0);
  CHECK_EQ_U(g->images[0].slide, 0x4000);
  CHECK(fmt_streq(g->regions[0].name, "MALLOC_TINY") && g->regions[0].tag == 1);
  CHECK_EQ_U(g->regions[0].dirty, 50);
  CHECK_EQ_U(g->regions[1].image, 0);
  CHECK(fmt_streq(g->threads[0].name, "worker") && g->threads[0].tid == 77);
  REQUIRE(g->heap_count == 2 && g->class_count == 3 && g->string_count == 2);
  CHECK(fmt_streq(g->classes[0].name, "A") && g->classes[0].kind == HG_CLASS_SWIFT &&
        g->classes[0].instance_size == 64);
  CHECK(g->classes[2].kind == HG_CLASS_OBJC);
  CHECK(fmt_streq(g->strings[0], "child") && fmt_streq(g->strings[1], "parent"));
  REQUIRE(g->node_count == 3);
  CHECK_EQ_U(g->node_addr[0], 0x1000);
  CHECK_EQ_U(g->node_class[0], cA);
  CHECK_EQ_U(g->node_heap[0], 1);
  CHECK_EQ_U(g->node_addr[1], 0x2000);
  CHECK_EQ_U(g->node_flags[1], HG_NODE_MALLOC | HG_NODE_MMAPPED);
  CHECK_EQ_U(g->node_heap[1], 0);
  CHECK_EQ_U(g->node_heap[2], 2);
  REQUIRE(g->edge_count == 5);
  /* source 0: offsets 0 (interior → 1), 9 (weak parent → 0), 16 (strong child → 2) */
  CHECK_EQ_U(g->edge_start[1], 3);
  CHECK_EQ_U(g->edge_offset[0], 0);
  CHECK_EQ_U(g->edge_kind[0], HG_EDGE_INTERIOR);
  CHECK_EQ_U(g->edge_target[0], 1);
  CHECK_EQ_U(g->edge_offset[1], 9);
  CHECK_EQ_U(g->edge_kind[1], HG_EDGE_WEAK);
  CHECK(fmt_streq(hg_graph_edge_field(g, 1), "parent"));
  CHECK_EQ_U(g->edge_offset[2], 16);
  CHECK(fmt_streq(hg_graph_edge_field(g, 2), "child"));
  CHECK(hg_graph_edge_field(g, 0) == NULL);
  CHECK_EQ_U(g->edge_kind[3], HG_EDGE_UNOWNED);
  CHECK(fmt_streq(hg_graph_edge_field(g, 3), "child"));
  CHECK_EQ_U(g->edge_target[3], 2);
  CHECK_EQ_U(g->edge_kind[4], HG_EDGE_CONSERVATIVE);
  CHECK_EQ_U(g->edge_target[4], 0);
  CHECK_EQ_U(g->edge_offset[4], 8);
  REQUIRE(g->root_count == 3);
  CHECK(g->roots[0].kind == HG_ROOT_STACK && g->roots[0].owner == 0 && g->roots[0].addr == 0x5008 &&
        g->roots[0].target == 0);
  CHECK(g->roots[1].kind == HG_ROOT_GLOBAL && g->roots[1].owner == 0 && g->roots[1].target == 2);
  CHECK(g->roots[2].kind == HG_ROOT_REGISTER && g->roots[2].owner == HG_NO_OWNER &&
        g->roots[2].addr == 3 && g->roots[2].target == 1);
  hg_graph_free(g);
  unlink(path);
}

static void test_builder_overlap(void) {
  char path[512];
  fmt_path(path, sizeof path, "overlap.hgsnap");
  struct hg_builder *b = hg_builder_new();
  CHECK(hg_builder_node(b, 0x1000, 0x20, 0, 0, 0) == 0);
  CHECK(hg_builder_node(b, 0x1010, 0x20, 0, 0, 0) == 0);
  CHECK(hg_builder_node(b, 0x1000, 0, 0, 0, 0) == HG_EINVAL);
  CHECK(hg_builder_write(b, path, NULL) == HG_EINVAL);
  CHECK(strstr(hg_builder_message(b), "overlap") != NULL);
  CHECK(!fmt_exists(path));
  hg_builder_free(b);
}

/* Empty snapshot: no records but the header and trailer. */
static void test_empty(void) {
  char path[512];
  fmt_path(path, sizeof path, "empty.hgsnap");
  struct hg_writer *w;
  REQUIRE(hg_writer_open(&w, path) == 0);
  REQUIRE(hg_writer_finish(w) == 0);
  uint64_t bytes = hg_writer_bytes(w);
  hg_writer_close(w);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK_EQ_U(st.st_mode & 0777, 0600);
  CHECK_EQ_U((uint64_t)st.st_size, bytes);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  REQUIRE(g);
  CHECK_EQ_U(g->node_count, 0);
  CHECK_EQ_U(g->edge_count, 0);
  CHECK(g->edge_start && g->edge_start[0] == 0);
  CHECK(hg_graph_find(g, 0) == -1);
  CHECK(hg_graph_build_reverse(g) == 0);
  CHECK(g->meta.platform == NULL && g->meta.app_count == 0);
  hg_graph_free(g);
  fmt_save(path, "empty.hgsnap");
  unlink(path);
}

/* ------------------------------------------------------------ big raw */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

#define BIG_NODES 250000u
#define BIG_SRC 1000u   /* node with >100,000 out-edges */
#define BIG_FAN 120000u

struct big {
  uint64_t *addr, *size;
  uint32_t *cls, *heap;
  uint8_t *flags;
  uint32_t *esrc, *edst, *eoff, *efield;
  uint8_t *ekind;
  size_t m, mcap;
  struct hg_root *roots;
  size_t r;
  uint32_t classes, heaps, strings;
};

static void big_edge(struct big *B, uint32_t s, uint32_t off, uint32_t d, uint32_t k, uint32_t f) {
  if (B->m == B->mcap) {
    B->mcap = B->mcap ? B->mcap * 2 : 1024;
    B->esrc = realloc(B->esrc, B->mcap * 4);
    B->edst = realloc(B->edst, B->mcap * 4);
    B->eoff = realloc(B->eoff, B->mcap * 4);
    B->efield = realloc(B->efield, B->mcap * 4);
    B->ekind = realloc(B->ekind, B->mcap);
  }
  B->esrc[B->m] = s;
  B->edst[B->m] = d;
  B->eoff[B->m] = off;
  B->efield[B->m] = f;
  B->ekind[B->m] = (uint8_t)k;
  B->m++;
}

/* Writes a big graph through the raw writer, interleaving classes, strings,
 * heaps, roots and metadata with nodes and edges as a capture backend would. */
static int big_write(struct big *B, const char *path) {
  struct hg_writer *w;
  int rc = hg_writer_open(&w, path);
  if (rc) return rc;
  B->addr = malloc(BIG_NODES * 8);
  B->size = malloc(BIG_NODES * 8);
  B->cls = malloc(BIG_NODES * 4);
  B->heap = malloc(BIG_NODES * 4);
  B->flags = malloc(BIG_NODES);
  B->roots = malloc(BIG_NODES / 50 * sizeof *B->roots + sizeof *B->roots);
  struct hg_thread t = {1, "t", 0x1000, 0x2000};
  rc = hg_writer_thread(w, &t);
  uint64_t a = 0x10;
  uint32_t id;
  for (uint32_t i = 0; i < BIG_NODES && !rc; i++) {
    /* a new class or heap now and then, right before its first use */
    if (i % 5000 == 0) {
      char name[32];
      snprintf(name, sizeof name, "Class%u", i / 5000);
      struct hg_class c = {name, (uint32_t)(rnd() % 5), rnd() % 256};
      rc = hg_writer_class(w, &c, &id);
      B->classes = id;
    }
    if (i % 70000 == 0 && !rc) {
      char name[32];
      snprintf(name, sizeof name, "heap%u", i);
      rc = hg_writer_heap(w, name, &id);
      B->heaps = id;
    }
    uint64_t r = rnd();
    uint64_t gap = (r & 3) == 0 ? 0 : (r & 3) == 1 ? (r >> 8) % 64 : (r & 3) == 2 ? 16 : (r >> 20) % 100000;
    uint64_t size = (r >> 40) % 7 == 0 ? ((r >> 10) % 1000000) + 1 : ((r >> 30) % 256) + 1;
    if (i == BIG_SRC) size = 0x100000000ull; /* room for the fan-out offsets, > 4 GiB */
    a += gap;
    B->addr[i] = a;
    B->size[i] = size;
    B->cls[i] = (r >> 33) % 3 == 0 ? 0 : 1 + (uint32_t)((r >> 35) % B->classes);
    B->heap[i] = (r >> 50) % 10 == 0 ? 0 : 1 + (uint32_t)((r >> 51) % B->heaps);
    B->flags[i] = (uint8_t)((r >> 55) & HG_NODE_FLAG_MASK);
    a += size;
    rc = rc ? rc : hg_writer_node(w, B->addr[i], size, B->cls[i], B->flags[i], B->heap[i]);
    /* edges of node i, right after it; targets anywhere, earlier or later */
    if (i >= 3 && i % 4 != 0 && !rc) {
      uint32_t src = i - 3 + (uint32_t)(r % 2); /* sources lag the nodes: later writes still sorted */
      if (B->m && B->esrc[B->m - 1] > src) src = B->esrc[B->m - 1];
      if (i == BIG_SRC + 2) src = BIG_SRC;
      uint32_t n = i == BIG_SRC + 2 ? BIG_FAN : (uint32_t)(rnd() % 6);
      uint32_t off = B->m && B->esrc[B->m - 1] == src ? B->eoff[B->m - 1] : 0;
      int first = !(B->m && B->esrc[B->m - 1] == src);
      for (uint32_t k = 0; k < n && !rc; k++) {
        uint64_t q = rnd();
        uint32_t step = (q & 1) ? 8u * (uint32_t)(1 + (q >> 1) % 4) : 1u + (uint32_t)((q >> 1) % 13);
        if (src == BIG_SRC) step = (q & 63) ? 8 : 32003;
        if (first && k == 0) step = (q >> 3) % 3 == 0 ? 0 : (uint32_t)((q >> 8) % 40);
        off += step;
        uint32_t dst = (uint32_t)((q >> 20) % BIG_NODES);
        if (q % 3 == 0) dst = src > 100 ? src - (uint32_t)((q >> 40) % 100) : src; /* negative delta */
        uint32_t kind = (uint32_t)((q >> 45) % 5), field = 0;
        if (kind >= HG_EDGE_STRONG && (q >> 50) % 2) {
          if (B->strings < 40 && (q >> 52) % 64 == 0) {
            char fname[32];
            snprintf(fname, sizeof fname, "field_%u", B->strings);
            rc = hg_writer_string(w, fname, &id);
            B->strings = id;
          }
          if (B->strings) field = 1 + (uint32_t)((q >> 56) % B->strings);
        }
        rc = rc ? rc : hg_writer_edge(w, src, off, dst, kind, field);
        big_edge(B, src, off, dst, kind, field);
      }
    }
    if (i % 50 == 7 && !rc) {
      uint64_t q = rnd();
      struct hg_root rt = {(uint32_t)(q % 5), HG_NO_OWNER, q >> 16, (uint32_t)((q >> 8) % BIG_NODES)};
      if (rt.kind == HG_ROOT_STACK && (q >> 60) % 2) rt.owner = 0;
      B->roots[B->r++] = rt;
      rc = hg_writer_root(w, &rt);
    }
    if (i == BIG_NODES / 2 && !rc) {
      struct hg_num cap[] = {{"midway", i}};
      struct hg_meta m = {.capture_count = 1, .capture = cap};
      rc = hg_writer_meta(w, &m);
    }
  }
  if (!rc) {
    CHECK_EQ_U(hg_writer_node_count(w), BIG_NODES);
    CHECK_EQ_U(hg_writer_edge_count(w), B->m);
    rc = hg_writer_finish(w);
  }
  if (rc) fprintf(stderr, "big_write: %s\n", hg_writer_message(w));
  hg_writer_close(w);
  return rc;
}

static void big_free(struct big *B) {
  free(B->addr);
  free(B->size);
  free(B->cls);
  free(B->heap);
  free(B->flags);
  free(B->esrc);
  free(B->edst);
  free(B->eoff);
  free(B->efield);
  free(B->ekind);
  free(B->roots);
}

static void test_big_raw(void) {
  char path[512];
  fmt_path(path, sizeof path, "big.hgsnap");
  struct big B;
  memset(&B, 0, sizeof B);
  REQUIRE(big_write(&B, path) == 0);
  uint32_t fan = 0;
  for (size_t e = 0; e < B.m; e++) fan += B.esrc[e] == BIG_SRC;
  CHECK(fan > 100000);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK((uint64_t)st.st_size > 4 * 256 * 1024); /* several node and edge chunks */
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  if (!g) fprintf(stderr, "big: %s at %llu\n", err.message, (unsigned long long)err.offset);
  REQUIRE(g);
  REQUIRE(g->node_count == BIG_NODES);
  REQUIRE(g->edge_count == B.m);
  REQUIRE(g->root_count == B.r);
  CHECK_EQ_U(g->class_count, B.classes);
  CHECK_EQ_U(g->heap_count, B.heaps);
  CHECK_EQ_U(g->string_count, B.strings);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < BIG_NODES; i++)
    bad += g->node_addr[i] != B.addr[i] || g->node_size[i] != B.size[i] || g->node_class[i] != B.cls[i] ||
           g->node_heap[i] != B.heap[i] || g->node_flags[i] != B.flags[i];
  CHECK_EQ_U(bad, 0);
  uint32_t named = 0;
  for (uint32_t e = 0; e < B.m; e++) {
    uint32_t s = B.esrc[e];
    int ok = g->edge_start[s] <= e && e < g->edge_start[s + 1] && g->edge_target[e] == B.edst[e] &&
             g->edge_offset[e] == B.eoff[e] && g->edge_kind[e] == B.ekind[e];
    const char *f = hg_graph_edge_field(g, e);
    ok = ok && (B.efield[e] ? f && f == g->strings[B.efield[e] - 1] : f == NULL);
    named += B.efield[e] != 0;
    bad += !ok;
  }
  CHECK_EQ_U(bad, 0);
  CHECK_EQ_U(g->named_count, named);
  CHECK(named > 1000);
  CHECK_EQ_U(g->edge_start[BIG_NODES], B.m);
  for (uint32_t i = 0; i < B.r; i++)
    bad += g->roots[i].kind != B.roots[i].kind || g->roots[i].owner != B.roots[i].owner ||
           g->roots[i].addr != B.roots[i].addr || g->roots[i].target != B.roots[i].target;
  CHECK_EQ_U(bad, 0);
  REQUIRE(g->meta.capture_count == 1);
  CHECK_EQ_U(g->meta.capture[0].value, BIG_NODES / 2);
  /* the memory loader sees the same graph */
  size_t n;
  uint8_t *data = fmt_read(path, &n);
  REQUIRE(data);
  struct hg_graph *m = hg_graph_load_mem(data, n, &err);
  REQUIRE(m);
  CHECK(fmt_graphs_equal(g, m));
  /* the fan-out source spans edge chunks: at least two edge records
   * [9, first_source = BIG_SRC, ...] (head 0x84 0x09, uint16 1000) */
  static const uint8_t fan_chunk[] = {0x84, 0x09, 0x19, BIG_SRC >> 8, BIG_SRC & 0xff};
  int fan_chunks = 0;
  for (size_t i = 0; i + sizeof fan_chunk <= n; i++) fan_chunks += !memcmp(data + i, fan_chunk, sizeof fan_chunk);
  CHECK(fan_chunks >= 2);
  /* reverse CSR agrees with the forward one */
  REQUIRE(hg_graph_build_reverse(g) == 0);
  uint64_t in_total = g->in_start[BIG_NODES];
  CHECK_EQ_U(in_total, B.m);
  for (uint32_t t = 0; t < BIG_NODES; t += 997)
    for (uint32_t i = g->in_start[t]; i < g->in_start[t + 1]; i++) CHECK(g->edge_target[g->in_edge[i]] == t);
  printf("big graph: %u nodes, %zu edges, %zu roots, %llu bytes (%.2f bytes/node+edge)\n", BIG_NODES, B.m,
         B.r, (unsigned long long)st.st_size, (double)st.st_size / (BIG_NODES + (double)B.m));
  hg_graph_free(m);
  hg_graph_free(g);
  free(data);
  fmt_save(path, "big.hgsnap");
  unlink(path);
  big_free(&B);
}

/* The writer's output is deterministic: the same calls give the same bytes. */
static void test_deterministic(void) {
  char p1[512], p2[512];
  fmt_path(p1, sizeof p1, "det1.hgsnap");
  fmt_path(p2, sizeof p2, "det2.hgsnap");
  REQUIRE(golden_write(p1) == 0);
  REQUIRE(golden_write(p2) == 0);
  size_t n1, n2;
  uint8_t *a = fmt_read(p1, &n1), *b = fmt_read(p2, &n2);
  REQUIRE(a && b);
  CHECK(n1 == n2 && memcmp(a, b, n1) == 0);
  free(a);
  free(b);
  unlink(p1);
  unlink(p2);
}

int main(void) {
  RUN(test_golden_bytes);
  RUN(test_golden_load);
  RUN(test_deterministic);
  RUN(test_builder_roundtrip);
  RUN(test_builder_overlap);
  RUN(test_empty);
  RUN(test_big_raw);
  CHECK_EQ_U(fmt_tmp_entries(fmt_tmpdir()), 0);
  fmt_cleanup();
  return hg_test_done();
}
