/*
 * test_verify_stream.c — the streaming verifier (hg_snapshot_verify,
 * graph/reader.c's verify mode) against the loader (hg_graph_load): the
 * same verdict on valid files of several shapes (metadata, regions with
 * images, threads, heap ids, named edges, root owners, allocation stacks,
 * many large chunks, the golden file) with the same counts, checksum and
 * merged metadata; and on every single-bit corruption and many truncations
 * of small files, the same code and offset and the same message (except the
 * references checked after the last record, which the verifier names by
 * value). Plus its two limits, which the loader does not have.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "heapgraph.h"
#include "hg_test.h"
#include "test_format_util.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

/* n nodes (0-5 edges each, some named, some heap ids); with `extras`:
 * regions, an image, threads, root owners and allocation stacks. */
static int write_shape(const char *path, uint32_t n, int extras) {
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  if (rc) return rc;
  struct hg_kv app[] = {{"app.version", "3.1"}, {"device.model", "Pixel 7"}, {"device.install_id", "abc"}};
  struct hg_meta m = {.platform = "linux", .process = "shop", .pointer_size = 8, .page_size = 4096,
                      .app = app, .app_count = extras ? 3 : 0};
  rc = hg_writer_meta(w, &m);
  uint32_t heap = 0, field = 0, cls = 0;
  if (!rc) rc = hg_writer_heap(w, "arena", &heap);
  struct hg_class k = {"K", HG_CLASS_CXX, 16};
  if (!rc) rc = hg_writer_class(w, &k, &cls);
  if (!rc) rc = hg_writer_string(w, "next", &field);
  if (extras && !rc) {
    struct hg_image im = {.path = "/lib/x.so", .load_addr = 0x600000, .size = 0x10000};
    rc = hg_writer_image(w, &im);
    struct hg_region rg = {.start = 0x600000, .size = 0x10000, .prot = 5, .name = "/lib/x.so", .image = 0};
    if (!rc) rc = hg_writer_region(w, &rg);
    struct hg_region heapr = {.start = 0x10000, .size = 0x100000, .prot = 3, .name = "[heap]", .image = HG_NO_OWNER};
    if (!rc) rc = hg_writer_region(w, &heapr);
    struct hg_thread t = {.tid = 42, .name = "main", .stack_lo = 0x7000, .stack_hi = 0x8000};
    if (!rc) rc = hg_writer_thread(w, &t);
    struct hg_stack_info si = {.max_frames = 8, .status = "ok", .unwinder = "test"};
    if (!rc) rc = hg_writer_stack_info(w, &si);
    struct hg_stack_frame fr[2] = {{0, 0x120}, {HG_NO_OWNER, 0x7fff0000}};
    struct hg_stack st = {3, 96, 2, fr};
    if (!rc) rc = hg_writer_stack(w, &st);
    struct hg_large_alloc la = {0x900000, 1 << 20, 1, 42, 1};
    if (!rc) rc = hg_writer_large_alloc(w, &la);
  }
  uint64_t addr = 0x10000;
  for (uint32_t i = 0; i < n && !rc; i++) {
    uint64_t size = 16 + 16 * rnd(8);
    rc = hg_writer_node(w, addr, size, rnd(3) ? cls : 0, HG_NODE_MALLOC, rnd(5) ? 0 : heap);
    addr += size + 16 * rnd(3);
  }
  if (extras && n && !rc) {
    uint32_t ids[4] = {1, 0, 1, 1};
    rc = hg_writer_node_stacks(w, 0, n < 4 ? n : 4, ids);
  }
  for (uint32_t i = 0; i < n && !rc; i++) {
    uint32_t e = rnd(4) ? rnd(6) : 0;
    for (uint32_t j = 0; j < e && !rc; j++) {
      uint32_t kind = rnd(5) == 0 ? HG_EDGE_STRONG : rnd(8) == 0 ? HG_EDGE_WEAK : HG_EDGE_CONSERVATIVE;
      rc = hg_writer_edge(w, i, 8ull * j + (rnd(6) ? 0 : 4), rnd(n), kind, kind != HG_EDGE_CONSERVATIVE && rnd(2) ? field : 0);
    }
  }
  for (uint32_t r = 0; r < 6 && n && !rc; r++) {
    struct hg_root root = {HG_ROOT_GLOBAL, extras ? 0 : HG_NO_OWNER, 0x601000 + 8ull * r, rnd(n)};
    if (extras && r % 2) root = (struct hg_root){HG_ROOT_STACK, 0, 0x7f00 + 8ull * r, rnd(n)};
    rc = hg_writer_root(w, &root);
  }
  if (!rc) rc = hg_writer_finish(w);
  hg_writer_close(w);
  return rc;
}

static int same_meta(const struct hg_meta *a, const struct hg_meta *b) {
  if (a->app_count != b->app_count || a->capture_count != b->capture_count || a->pid != b->pid ||
      !fmt_streq(a->platform, b->platform) || !fmt_streq(a->process, b->process))
    return 0;
  for (size_t i = 0; i < a->app_count; i++)
    if (strcmp(a->app[i].key, b->app[i].key) || strcmp(a->app[i].value, b->app[i].value)) return 0;
  for (size_t i = 0; i < a->capture_count; i++)
    if (strcmp(a->capture[i].key, b->capture[i].key) || a->capture[i].value != b->capture[i].value) return 0;
  return 1;
}

static uint32_t n_same_msg, n_ref_msg;

/* One file: 1 when the loader and the verifier agree (see the top). */
static int agree(const char *path, uint64_t size, unsigned flags) {
  struct hg_load_error e1, e2;
  struct hg_graph *g = hg_graph_load_flags(path, flags, &e1);
  struct hg_verify_info v;
  int rc = hg_snapshot_verify(path, flags, &v, &e2);
  int ok;
  if (g) {
    ok = rc == 0 && v.checksum == g->checksum && v.file_size == g->file_size && v.node_count == g->node_count &&
         v.edge_count == g->edge_count && v.root_count == g->root_count && v.string_count == g->string_count &&
         v.image_count == g->image_count && v.region_count == g->region_count && same_meta(&v.meta, &g->meta);
  } else {
    int same_msg = !strcmp(e1.message, e2.message);
    /* references after the last record: named by value ("a node refers to …") */
    int ref_msg = e1.offset == size && (!strncmp(e2.message, "a ", 2) || !strncmp(e2.message, "an ", 3));
    ok = rc == e1.code && e2.code == e1.code && e2.offset == e1.offset && (same_msg || ref_msg);
    n_same_msg += same_msg;
    n_ref_msg += !same_msg && ref_msg;
    if (!ok)
      fprintf(stderr, "  %s: load %d @%llu \"%s\" / verify %d @%llu \"%s\"\n", path, e1.code,
              (unsigned long long)e1.offset, e1.message, e2.code, (unsigned long long)e2.offset, e2.message);
  }
  hg_graph_free(g);
  if (!rc) hg_verify_info_free(&v);
  return ok;
}

static int agree_mem(const void *buf, size_t size) {
  const char *path = "build/tests/verify_stream_mut.hgsnap";
  if (fmt_write(path, buf, size)) return 0;
  return agree(path, size, 0);
}

static void test_valid_shapes(void) {
  const char *path = "build/tests/verify_stream.hgsnap";
  static const struct { uint32_t n; int extras; } shapes[] = {{0, 0}, {1, 1}, {40, 1}, {3000, 0}, {150000, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    REQUIRE(write_shape(path, shapes[s].n, shapes[s].extras) == 0);
    size_t size = 0;
    free(fmt_read(path, &size));
    struct hg_verify_info v;
    struct hg_load_error e;
    CHECK(hg_snapshot_verify(path, 0, &v, &e) == 0);
    CHECK_EQ_U(v.node_count, shapes[s].n);
    hg_verify_info_free(&v);
    CHECK(agree(path, size, 0));
    CHECK(agree(path, size, HG_LOAD_SKIP_OPTIONAL));
  }
  char golden[512];
  fmt_src(golden, sizeof golden, "tests/golden/v1-small.hgsnap");
  size_t size = 0;
  free(fmt_read(golden, &size));
  CHECK(agree(golden, size, 0));
}

/* Offset of the trailer record [11, {counts}, xxh64 (9-byte head)] of a
 * valid file, or 0. */
static size_t trailer_at(const uint8_t *b, size_t size) {
  for (size_t i = size - 11; i > 0; i--)
    if (b[i] == 0x83 && b[i + 1] == 0x0b && b[size - 10] == 0x1b) return i;
  return 0;
}

/* Writes the checksum of b[0, t) into the trailer (see trailer_at). */
static void fix_checksum(uint8_t *b, size_t size, size_t t) {
  uint64_t h = XXH64(b, t, 0);
  for (int k = 0; k < 8; k++) b[size - 9 + k] = (uint8_t)(h >> (56 - 8 * k));
}

static void corrupt_all(const char *path) {
  size_t size = 0;
  uint8_t *buf = fmt_read(path, &size);
  REQUIRE(buf != NULL);
  size_t t = trailer_at(buf, size);
  REQUIRE(t > 0);
  uint32_t bad = 0, tried = 0;
  uint8_t sum[8];
  memcpy(sum, buf + size - 9, 8);
  for (size_t i = 0; i < size; i++) {
    uint8_t keep = buf[i];
    buf[i] ^= (uint8_t)(1u << (i % 8));
    bad += !agree_mem(buf, size);
    tried++;
    if (i < t) { /* the same flip with a matching checksum: structure and references */
      fix_checksum(buf, size, t);
      bad += !agree_mem(buf, size);
      memcpy(buf + size - 9, sum, 8);
      tried++;
    }
    buf[i] = keep;
  }
  for (size_t n = 0; n < size; n += 1 + n / 16, tried++) bad += !agree_mem(buf, n);
  CHECK_EQ_U(bad, 0);
  printf("  %s: %u corruptions and truncations agree\n", path, tried);
  free(buf);
}

static void test_same_errors(void) {
  const char *path = "build/tests/verify_stream.hgsnap";
  REQUIRE(write_shape(path, 30, 1) == 0);
  corrupt_all(path);
  REQUIRE(write_shape(path, 60, 0) == 0);
  corrupt_all(path);
  char golden[512];
  fmt_src(golden, sizeof golden, "tests/golden/v1-small.hgsnap");
  corrupt_all(golden);
  printf("  messages identical: %u, named by value (references after the last record): %u\n", n_same_msg,
         n_ref_msg);
  CHECK(n_same_msg > 1000);
  CHECK(n_ref_msg > 10);
}

/* The verifier's own limits (the loader reads these files), and a path that
 * is no file. */
static void test_limits(void) {
  const char *path = "build/tests/verify_stream_big.hgsnap";
  size_t len = HG_VERIFY_ITEM_MAX + 10;
  char *big = malloc(len + 1);
  REQUIRE(big != NULL);
  memset(big, 'x', len);
  big[len] = 0;
  struct hg_writer *w = NULL;
  struct hg_kv app[] = {{"note", big}};
  struct hg_meta m = {.platform = "linux", .app = app, .app_count = 1};
  REQUIRE(hg_writer_open(&w, path) == 0);
  CHECK(hg_writer_meta(w, &m) == 0);
  CHECK(hg_writer_finish(w) == 0);
  hg_writer_close(w);
  struct hg_load_error e;
  struct hg_graph *g = hg_graph_load(path, &e);
  CHECK(g != NULL);
  hg_graph_free(g);
  struct hg_verify_info v;
  CHECK(hg_snapshot_verify(path, 0, &v, &e) == HG_ELIMIT);
  CHECK(strstr(e.message, "verifier's limit") != NULL);
  /* metadata: many records of 100 KB values, each under the item limit */
  big[100000] = 0;
  REQUIRE(hg_writer_open(&w, path) == 0);
  for (int i = 0; i < 12; i++) CHECK(hg_writer_meta(w, &m) == 0);
  CHECK(hg_writer_finish(w) == 0);
  hg_writer_close(w);
  g = hg_graph_load(path, &e);
  CHECK(g != NULL);
  hg_graph_free(g);
  CHECK(hg_snapshot_verify(path, 0, &v, &e) == HG_ELIMIT);
  CHECK(strstr(e.message, "metadata of more than") != NULL);
  free(big);
  CHECK(hg_snapshot_verify("build/tests/no/such.hgsnap", 0, &v, &e) == HG_EIO && e.code == HG_EIO);
  CHECK(hg_snapshot_verify("build/tests", 0, &v, &e) == HG_EIO);
}

int main(void) {
  RUN(test_valid_shapes);
  RUN(test_same_errors);
  RUN(test_limits);
  return hg_test_done();
}
