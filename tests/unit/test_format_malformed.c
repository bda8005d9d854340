/*
 * test_format_malformed.c — the reader against hostile snapshots. Truncation
 * at every byte and every single-bit flip of the golden file; then
 * hand-crafted files with a VALID xxh64 (raw CBOR via libcbor's encoders)
 * for each structural rule the reader enforces, each asserting the exact
 * error code, the byte offset and a telling message; and the
 * forward-compatibility rules (unknown records, keys and extra fields are
 * skipped).
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_format_util.h"

#define FMT_ASAN HG_TEST_ASAN

#define ANY_OFFSET UINT64_MAX

/* Loads from memory and asserts failure with `code`, at `offset` (or any
 * offset > 0 with ANY_OFFSET), with `needle` in the message. */
static int expect_err(const void *data, size_t len, int code, uint64_t offset, const char *needle,
                      int line) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load_mem(data, len, &err);
  int ok = 1;
  if (g) {
    fprintf(stderr, "line %d: loaded, expected %s\n", line, hg_error_string(code));
    hg_graph_free(g);
    return 0;
  }
  if (err.code != code) ok = 0;
  if (offset == ANY_OFFSET ? err.offset == 0 : err.offset != offset) ok = 0;
  if (err.offset > len) ok = 0;
  if (needle && !strstr(err.message, needle)) ok = 0;
  if (!ok)
    fprintf(stderr, "line %d: got %d (%s) at %llu: \"%s\"; expected %d at %lld: \"%s\"\n", line, err.code,
            hg_error_string(err.code), (unsigned long long)err.offset, err.message, code,
            offset == ANY_OFFSET ? -1LL : (long long)offset, needle ? needle : "");
  return ok;
}
#define EXPECT_ERR(c, code, off, needle) CHECK(expect_err((c)->buf, (c)->len, (code), (off), (needle), __LINE__))

static struct hg_graph *load_ok(const struct cb *c, int line) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load_mem(c->buf, c->len, &err);
  if (!g)
    fprintf(stderr, "line %d: load failed: %s at %llu: %s\n", line, hg_error_string(err.code),
            (unsigned long long)err.offset, err.message);
  return g;
}

/* ------------------------------------------------ golden, mutated */

static uint8_t *golden;
static size_t golden_len;

static void test_truncation_every_offset(void) {
  REQUIRE(golden);
  int truncated = 0, format = 0;
  for (size_t n = 0; n < golden_len; n++) {
    struct hg_load_error err;
    struct hg_graph *g = hg_graph_load_mem(golden, n, &err);
    if (g) {
      fprintf(stderr, "truncated to %zu bytes: loaded\n", n);
      hg_graph_free(g);
      CHECK(0);
      continue;
    }
    truncated += err.code == HG_ETRUNCATED;
    format += err.code == HG_EFORMAT;
    if (err.code == HG_EFORMAT)
      fprintf(stderr, "truncated to %zu bytes: %s at %llu\n", n, err.message, (unsigned long long)err.offset);
    if (err.code != HG_ETRUNCATED && err.code != HG_EFORMAT) {
      fprintf(stderr, "truncated to %zu bytes: %s (%s)\n", n, hg_error_string(err.code), err.message);
      CHECK(0);
    }
    if (err.offset > n || !err.message[0]) {
      fprintf(stderr, "truncated to %zu bytes: offset %llu, \"%s\"\n", n, (unsigned long long)err.offset,
              err.message);
      CHECK(0);
    }
  }
  /* cutting anywhere is reported as truncation, never as a structural fault */
  CHECK_EQ_U(truncated, golden_len);
  CHECK_EQ_U(format, 0);
  /* through the file reader too, at a few cuts */
  char path[512];
  fmt_path(path, sizeof path, "trunc.hgsnap");
  for (size_t n = 0; n < golden_len; n += 97) {
    REQUIRE(fmt_write(path, golden, n) == 0);
    struct hg_load_error err;
    struct hg_graph *g = hg_graph_load(path, &err);
    CHECK(!g && err.code == HG_ETRUNCATED);
    hg_graph_free(g);
  }
  unlink(path);
}

static void test_bit_flips(void) {
  REQUIRE(golden);
  struct hg_load_error err;
  struct hg_graph *ref = hg_graph_load_mem(golden, golden_len, &err);
  REQUIRE(ref);
  uint8_t *buf = malloc(golden_len);
  REQUIRE(buf);
  unsigned counts[16] = {0}, loaded = 0, bad = 0;
  for (size_t i = 0; i < golden_len; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(buf, golden, golden_len);
      buf[i] ^= (uint8_t)(1u << bit);
      struct hg_graph *g = hg_graph_load_mem(buf, golden_len, &err);
      if (g) {
        loaded++;
        if (!fmt_graphs_equal(g, ref)) {
          fprintf(stderr, "flip of byte %zu bit %d loads a different graph\n", i, bit);
          bad++;
        }
        hg_graph_free(g);
        continue;
      }
      if (err.code >= 0 || err.code < -15 || !err.message[0] || err.offset > golden_len) {
        fprintf(stderr, "flip of byte %zu bit %d: code %d offset %llu\n", i, bit, err.code,
                (unsigned long long)err.offset);
        bad++;
        continue;
      }
      counts[-err.code]++;
    }
  CHECK_EQ_U(bad, 0);
  printf("bit flips: %zu, loaded unchanged %u, checksum %u, format %u, truncated %u, version %u, limit %u\n",
         golden_len * 8, loaded, counts[-HG_ECHECKSUM], counts[-HG_EFORMAT], counts[-HG_ETRUNCATED],
         counts[-HG_EVERSION], counts[-HG_ELIMIT]);
  /* the checksum catches what the structure cannot */
  CHECK(counts[-HG_ECHECKSUM] > golden_len);
  free(buf);
  hg_graph_free(ref);
}

/* ----------------------------------------------------- crafted files */
/*
 * A small valid snapshot: 1 heap, 1 class, 1 string, 3 nodes, 3 edges,
 * 2 roots, 1 thread. Each test appends its own records; `mark` offsets are
 * taken just before the item a test expects the error at.
 */
struct craft {
  struct cb c;
  struct cb_counts k;
};

enum { K_REGIONS, K_IMAGES, K_THREADS, K_HEAPS, K_CLASSES, K_STRINGS, K_NODES, K_EDGES, K_ROOTS };

static void cr_begin(struct craft *x) {
  memset(x, 0, sizeof *x);
  cb_prefix(&x->c, 1);
}
static void cr_named(struct craft *x, unsigned type, uint64_t id, const char *s) {
  cb_array(&x->c, 3);
  cb_uint(&x->c, type);
  cb_uint(&x->c, id);
  cb_text(&x->c, s);
  x->k.v[type == 5 ? K_HEAPS : K_STRINGS]++;
}
static void cr_class(struct craft *x, uint64_t id, const char *name) {
  cb_array(&x->c, 5);
  cb_uint(&x->c, 6);
  cb_uint(&x->c, id);
  cb_text(&x->c, name);
  cb_uint(&x->c, 0);
  cb_uint(&x->c, 16);
  x->k.v[K_CLASSES]++;
}
static void cr_thread(struct craft *x) {
  cb_array(&x->c, 5);
  cb_uint(&x->c, 4);
  cb_uint(&x->c, 9);
  cb_text(&x->c, "main");
  cb_uint(&x->c, 0x100);
  cb_uint(&x->c, 0x200);
  x->k.v[K_THREADS]++;
}
/* Payload-level helpers: rows are built in a struct cb too. */
static void cr_nodes(struct craft *x, uint64_t first, uint64_t count, uint64_t base, const struct cb *rows) {
  cb_array(&x->c, 5);
  cb_uint(&x->c, 8);
  cb_uint(&x->c, first);
  cb_uint(&x->c, count);
  cb_uint(&x->c, base);
  cb_bytes(&x->c, rows->buf, rows->len);
  x->k.v[K_NODES] += count;
}
static void cr_edges(struct craft *x, uint64_t first, uint64_t count, const struct cb *rows) {
  cb_array(&x->c, 4);
  cb_uint(&x->c, 9);
  cb_uint(&x->c, first);
  cb_uint(&x->c, count);
  cb_bytes(&x->c, rows->buf, rows->len);
  x->k.v[K_EDGES] += count;
}
static void cr_roots(struct craft *x, uint64_t count, const struct cb *rows) {
  cb_array(&x->c, 3);
  cb_uint(&x->c, 10);
  cb_uint(&x->c, count);
  cb_bytes(&x->c, rows->buf, rows->len);
  x->k.v[K_ROOTS] += count;
}
static void node_row(struct cb *r, uint64_t gap, uint64_t size, uint64_t cls, uint8_t flags, int heap, uint64_t hid) {
  cb_varint(r, gap);
  cb_varint(r, size);
  cb_varint(r, cls);
  cb_byte(r, (uint8_t)(flags | (heap ? 0x80 : 0)));
  if (heap) cb_varint(r, hid);
}
/* Edge group header: source delta, then (rows << 1) | words flag. */
static void grp(struct cb *r, uint64_t sd, uint64_t n, int words) {
  cb_varint(r, sd);
  cb_varint(r, (n << 1) | (words ? 1 : 0));
}
/* Edge row: (offset delta [/ 8 in a words group] << 3) | kind code,
 * [field id for codes 5..7], zigzag(target - source). */
static void erow(struct cb *r, uint64_t delta, unsigned code, uint64_t field, int64_t tdelta, int words) {
  cb_varint(r, ((words ? delta / 8 : delta) << 3) | code);
  if (code >= 5) cb_varint(r, field);
  cb_varint(r, cb_zz(tdelta));
}
static void root_row(struct cb *r, unsigned kind, int owner, uint64_t oid, int64_t dwhere, int64_t dtarget) {
  cb_byte(r, (uint8_t)(kind | (owner ? 0x10 : 0)));
  if (owner) cb_varint(r, oid);
  cb_varint(r, cb_zz(dwhere));
  cb_varint(r, cb_zz(dtarget));
}

/* The small valid graph's records (after the prefix). */
static void cr_base_records(struct craft *x) {
  cr_thread(x);
  cr_named(x, 5, 1, "heap");
  cr_class(x, 1, "Cls");
  cr_named(x, 7, 1, "field");
  struct cb r = {0};
  node_row(&r, 0, 0x20, 1, 1, 1, 1);  /* 0x1000..0x1020 */
  node_row(&r, 0x10, 0x20, 0, 1, 0, 0); /* 0x1030..0x1050 */
  node_row(&r, 3, 0x8, 1, 4, 1, 0);  /* 0x1053..0x105b, heap back to 0 */
  cr_nodes(x, 0, 3, 0x1000, &r);
  cb_free(&r);
  grp(&r, 0, 2, 0);             /* source 0, 2 edges, byte deltas */
  erow(&r, 8, 5, 1, 1, 0);      /* strong "field" at 8 → 1 */
  erow(&r, 5, 1, 0, 2, 0);      /* interior at 13 → 2 */
  grp(&r, 2, 1, 1);             /* source 2, 1 edge, word deltas */
  erow(&r, 0, 0, 0, -2, 1);     /* at 0 → 0 */
  cr_edges(x, 0, 3, &r);
  cb_free(&r);
  root_row(&r, HG_ROOT_STACK, 1, 0, 0x150, 2);
  root_row(&r, HG_ROOT_REGISTER, 0, 0, -0x14f, -1);
  cr_roots(x, 2, &r);
  cb_free(&r);
}

static void cr_end(struct craft *x) { cb_trailer(&x->c, &x->k); }

static void base_check(const struct hg_graph *g) {
  CHECK_EQ_U(g->node_count, 3);
  CHECK_EQ_U(g->edge_count, 3);
  CHECK_EQ_U(g->root_count, 2);
  if (g->node_count != 3 || g->edge_count != 3 || g->root_count != 2) return;
  CHECK_EQ_U(g->node_addr[2], 0x1053);
  CHECK_EQ_U(g->node_heap[0], 1);
  CHECK_EQ_U(g->node_heap[1], 1);
  CHECK_EQ_U(g->node_heap[2], 0);
  CHECK_EQ_U(g->node_flags[2], HG_NODE_MMAPPED);
  CHECK_EQ_U(g->edge_offset[1], 13);
  CHECK_EQ_U(g->edge_kind[0], HG_EDGE_STRONG);
  CHECK(fmt_streq(hg_graph_edge_field(g, 0), "field"));
  CHECK_EQ_U(g->edge_target[2], 0);
  CHECK_EQ_U(g->edge_start[2], 2);
  CHECK_EQ_U(g->roots[1].addr, 1);
  CHECK_EQ_U(g->roots[1].target, 1);
  CHECK_EQ_U(g->roots[0].owner, 0);
  CHECK_EQ_U(g->roots[1].owner, HG_NO_OWNER);
}

static void test_crafted_valid(void) {
  struct craft x;
  cr_begin(&x);
  cr_base_records(&x);
  cr_end(&x);
  struct hg_graph *g = load_ok(&x.c, __LINE__);
  CHECK(g != NULL);
  if (g) base_check(g);
  hg_graph_free(g);
  fmt_save_mem(x.c.buf, x.c.len, "crafted-base.hgsnap");
  cb_free(&x.c);
}

static void test_header(void) {
  struct craft x;
  /* wrong magic */
  memset(&x, 0, sizeof x);
  cb_tag(&x.c, 55799);
  cb_byte(&x.c, 0x9f);
  cb_array(&x.c, 2);
  size_t mark = x.c.len;
  cb_text(&x.c, "heapgraph-snapshoX");
  cb_uint(&x.c, 1);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EVERSION, mark, "bad magic");
  cb_free(&x.c);
  /* version 2 */
  memset(&x, 0, sizeof x);
  cb_prefix(&x.c, 2);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EVERSION, 24, "unsupported format version 2");
  cb_free(&x.c);
  /* no self-describe tag */
  memset(&x, 0, sizeof x);
  cb_byte(&x.c, 0x9f);
  cb_array(&x.c, 2);
  cb_text(&x.c, "heapgraph-snapshot");
  cb_uint(&x.c, 1);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EVERSION, 0, "self-described");
  cb_free(&x.c);
  /* a definite array instead of the record stream */
  memset(&x, 0, sizeof x);
  cb_tag(&x.c, 55799);
  cb_array(&x.c, 1);
  cb_array(&x.c, 2);
  cb_text(&x.c, "heapgraph-snapshot");
  cb_uint(&x.c, 1);
  EXPECT_ERR(&x.c, HG_EVERSION, 3, "record stream");
  cb_free(&x.c);
  /* a header with extra elements is fine (forward compatible) */
  memset(&x, 0, sizeof x);
  cb_tag(&x.c, 55799);
  cb_byte(&x.c, 0x9f);
  cb_array(&x.c, 4);
  cb_text(&x.c, "heapgraph-snapshot");
  cb_uint(&x.c, 1);
  cb_text(&x.c, "future");
  cb_map(&x.c, 1);
  cb_uint(&x.c, 1);
  cb_array(&x.c, 0);
  cr_base_records(&x);
  cr_end(&x);
  struct hg_graph *g = load_ok(&x.c, __LINE__);
  CHECK(g != NULL);
  if (g) base_check(g);
  hg_graph_free(g);
  fmt_save_mem(x.c.buf, x.c.len, "compat-header-extra.hgsnap");
  cb_free(&x.c);
}

static void test_trailer(void) {
  struct craft x;
  /* counts that disagree with the records */
  cr_begin(&x);
  cr_base_records(&x);
  x.k.v[K_NODES] = 4;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, ANY_OFFSET, "trailer says 4 nodes but the file holds 3");
  cb_free(&x.c);
  cr_begin(&x);
  cr_base_records(&x);
  x.k.v[K_STRINGS] = 0;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, ANY_OFFSET, "strings");
  cb_free(&x.c);
  /* a missing key */
  cr_begin(&x);
  cr_base_records(&x);
  uint64_t h = XXH64(x.c.buf, x.c.len, 0);
  cb_array(&x.c, 3);
  cb_uint(&x.c, 11);
  size_t mark = x.c.len;
  cb_map(&x.c, 8);
  for (int i = 0; i < 8; i++) {
    cb_text(&x.c, cb_count_keys[i]);
    cb_uint(&x.c, x.k.v[i]);
  }
  cb_uint(&x.c, h);
  cb_break(&x.c);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "trailer lacks the roots count");
  cb_free(&x.c);
  /* unknown trailer keys and extra trailer fields are skipped */
  cr_begin(&x);
  cr_base_records(&x);
  h = XXH64(x.c.buf, x.c.len, 0);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 11);
  cb_map(&x.c, 10);
  cb_text(&x.c, "future_count");
  cb_array(&x.c, 2);
  cb_uint(&x.c, 1);
  cb_text(&x.c, "x");
  for (int i = 8; i >= 0; i--) {
    cb_text(&x.c, cb_count_keys[i]);
    cb_uint(&x.c, x.k.v[i]);
  }
  cb_uint(&x.c, h);
  cb_text(&x.c, "extra");
  cb_bytes(&x.c, "abc", 3);
  cb_break(&x.c);
  struct hg_graph *g = load_ok(&x.c, __LINE__);
  CHECK(g != NULL);
  if (g) base_check(g);
  hg_graph_free(g);
  fmt_save_mem(x.c.buf, x.c.len, "compat-trailer-extra.hgsnap");
  cb_free(&x.c);
  /* data after the final break */
  cr_begin(&x);
  cr_base_records(&x);
  cr_end(&x);
  size_t end = x.c.len;
  cb_byte(&x.c, 0x00);
  EXPECT_ERR(&x.c, HG_EFORMAT, end, "1 trailing bytes");
  /* a record after the trailer (instead of the break) */
  x.c.len = end - 1;
  cb_array(&x.c, 1);
  cb_uint(&x.c, 99);
  cb_break(&x.c);
  EXPECT_ERR(&x.c, HG_EFORMAT, end - 1, "data after the trailer");
  /* missing break */
  x.c.len = end - 1;
  EXPECT_ERR(&x.c, HG_ETRUNCATED, end - 1, "final break");
  cb_free(&x.c);
  /* break before any trailer */
  cr_begin(&x);
  cr_base_records(&x);
  mark = x.c.len;
  cb_break(&x.c);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "without a trailer");
  x.c.len = mark;
  EXPECT_ERR(&x.c, HG_ETRUNCATED, mark, "without a trailer");
  cb_free(&x.c);
}

static void test_checksum(void) {
  struct craft x;
  cr_begin(&x);
  cr_base_records(&x);
  cr_end(&x);
  size_t at = x.c.len - 9; /* last byte of the 8-byte digest */
  x.c.buf[at] ^= 1;
  EXPECT_ERR(&x.c, HG_ECHECKSUM, x.c.len - 10, "checksum mismatch");
  char path[512];
  fmt_path(path, sizeof path, "badsum.hgsnap");
  REQUIRE(fmt_write(path, x.c.buf, x.c.len) == 0);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  CHECK(!g && err.code == HG_ECHECKSUM);
  g = hg_graph_load_flags(path, HG_LOAD_ALLOW_BAD_CHECKSUM, &err);
  REQUIRE(g);
  CHECK_EQ_U(g->checksum_ok, 0);
  base_check(g);
  hg_graph_free(g);
  /* a content byte changed: the structure still holds, only xxh64 notices */
  x.c.buf[at] ^= 1;
  const uint8_t needle[] = {0x64, 'h', 'e', 'a', 'p'};
  uint8_t *p = memmem(x.c.buf, x.c.len, needle, sizeof needle);
  REQUIRE(p);
  p[1] = 'H';
  EXPECT_ERR(&x.c, HG_ECHECKSUM, ANY_OFFSET, "checksum mismatch");
  REQUIRE(fmt_write(path, x.c.buf, x.c.len) == 0);
  g = hg_graph_load_flags(path, HG_LOAD_ALLOW_BAD_CHECKSUM, &err);
  REQUIRE(g);
  CHECK(g->checksum_ok == 0 && g->heap_count == 1 && fmt_streq(g->heaps[0], "Heap"));
  hg_graph_free(g);
  unlink(path);
  cb_free(&x.c);
}

/* Ids of classes, heaps and strings: in sequence, and referenced in range. */
static void test_ids(void) {
  struct craft x;
  size_t mark;
  static const unsigned types[3] = {5, 6, 7};
  static const char *const what[3] = {"heap id 2 out of sequence", "class id 2 out of sequence",
                                      "string id 2 out of sequence"};
  for (int t = 0; t < 3; t++) {
    cr_begin(&x);
    cb_array(&x.c, types[t] == 6 ? 5 : 3);
    cb_uint(&x.c, types[t]);
    mark = x.c.len;
    cb_uint(&x.c, 2);
    cb_text(&x.c, "x");
    if (types[t] == 6) {
      cb_uint(&x.c, 0);
      cb_uint(&x.c, 0);
    }
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, what[t]);
    cb_free(&x.c);
  }
  /* the same id twice */
  cr_begin(&x);
  cr_class(&x, 1, "A");
  mark = x.c.len + 2;
  cr_class(&x, 1, "B");
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "class id 1 out of sequence (expected 2)");
  cb_free(&x.c);
  /* class kind unknown */
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 6);
  cb_uint(&x.c, 1);
  cb_text(&x.c, "K");
  mark = x.c.len;
  cb_uint(&x.c, 9);
  cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "class kind 9 unknown");
  cb_free(&x.c);
  /* node class, node heap and edge field beyond what the file defines */
  struct cb r = {0};
  cr_begin(&x);
  cr_class(&x, 1, "A");
  node_row(&r, 0, 8, 2, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "node 0 refers to class 2 of 1");
  cb_free(&x.c);
  cb_free(&r);
  cr_begin(&x);
  node_row(&r, 0, 8, 0, 1, 1, 3);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "node 0 refers to heap 3 of 0");
  cb_free(&x.c);
  cb_free(&r);
  cr_begin(&x);
  node_row(&r, 0, 8, 0, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cb_free(&r);
  grp(&r, 0, 1, 0);
  erow(&r, 0, 6, 4, 0, 0);
  cr_edges(&x, 0, 1, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "edge 0 refers to string 4 of 0");
  cb_free(&x.c);
  cb_free(&r);
  /* region image and root owners beyond what the file defines */
  cr_begin(&x);
  cb_array(&x.c, 10);
  cb_uint(&x.c, 2);
  cb_uint(&x.c, 0x1000); /* start */
  cb_uint(&x.c, 0x1000); /* size */
  cb_uint(&x.c, 0);      /* prot */
  cb_uint(&x.c, 0);      /* tag */
  cb_null(&x.c);
  for (int i = 0; i < 3; i++) cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  x.k.v[K_REGIONS]++;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "region 0 refers to image 0 of 0");
  cb_free(&x.c);
  cr_begin(&x);
  cr_thread(&x);
  node_row(&r, 0, 8, 0, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cb_free(&r);
  root_row(&r, HG_ROOT_TLS, 1, 1, 0, 0);
  cr_roots(&x, 1, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "root 0 refers to owner 1 of 1");
  cb_free(&x.c);
  cb_free(&r);
  cr_begin(&x);
  cr_thread(&x);
  node_row(&r, 0, 8, 0, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cb_free(&r);
  root_row(&r, HG_ROOT_GLOBAL, 1, 0, 0, 0); /* global roots are owned by images */
  cr_roots(&x, 1, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "root 0 refers to owner 0 of 0");
  cb_free(&x.c);
  cb_free(&r);
}

static void test_nodes(void) {
  struct craft x;
  struct cb r = {0};
  size_t mark;
  /* overlapping and decreasing nodes across chunks */
  for (int decreasing = 0; decreasing < 2; decreasing++) {
    cr_begin(&x);
    node_row(&r, 0, 0x20, 0, 1, 0, 0);
    cr_nodes(&x, 0, 1, 0x1000, &r);
    cb_free(&r);
    node_row(&r, 0, 0x20, 0, 1, 0, 0);
    cr_nodes(&x, 1, 1, decreasing ? 0x800 : 0x1010, &r);
    mark = x.c.len - r.len;
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, "overlaps or precedes the previous node");
    cb_free(&x.c);
    cb_free(&r);
  }
  /* adjacent nodes across chunks are fine */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x1000, &r);
  cr_nodes(&x, 1, 1, 0x1020, &r);
  cr_end(&x);
  struct hg_graph *g = load_ok(&x.c, __LINE__);
  CHECK(g && g->node_count == 2 && g->node_addr[1] == 0x1020);
  hg_graph_free(g);
  fmt_save_mem(x.c.buf, x.c.len, "crafted-adjacent-chunks.hgsnap");
  cb_free(&x.c);
  cb_free(&r);
  /* a chunk that does not continue the node indices */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 8);
  mark = x.c.len;
  cb_uint(&x.c, 5);
  cb_uint(&x.c, 1);
  cb_uint(&x.c, 0x1000);
  cb_bytes(&x.c, r.buf, r.len);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "nodes chunk starts at index 5, expected 0");
  cb_free(&x.c);
  cb_free(&r);
  /* empty node, wrapping node, unknown flag bits */
  struct { uint64_t base, size; uint8_t flags; const char *msg; } bad[] = {
      {0x1000, 0, 1, "empty or wrapping range"},
      {UINT64_MAX - 0x30, 0x20, 1, "empty or wrapping range"},
      {0x1000, 0x20, 0x10, "unknown flag bits"},
      {0x1000, 0x20, 0x40, "unknown flag bits"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_begin(&x);
    node_row(&r, 0, 0x20, 0, 1, 0, 0);
    node_row(&r, 0, bad[i].size, 0, bad[i].flags, 0, 0);
    cr_nodes(&x, 0, 2, bad[i].base, &r);
    mark = x.c.len - r.len + 4; /* the second row */
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, bad[i].msg);
    cb_free(&x.c);
    cb_free(&r);
  }
  /* an address gap that overflows */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  node_row(&r, UINT64_MAX - 0x10, 0x20, 0, 1, 0, 0);
  cr_nodes(&x, 0, 2, 0x1000, &r);
  mark = x.c.len - r.len + 4;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "node address overflows");
  cb_free(&x.c);
  cb_free(&r);
  /* varint overflow: 11 continuation bytes, and a 10th byte above bit 63 */
  for (int variant = 0; variant < 2; variant++) {
    cr_begin(&x);
    node_row(&r, 0, 0x20, 0, 1, 0, 0);
    cb_byte(&r, 0x00); /* gap */
    size_t at = r.len;
    for (int i = 0; i < 9; i++) cb_byte(&r, 0xff);
    cb_byte(&r, variant ? 0x02 : 0xff);
    if (!variant) cb_byte(&r, 0x01);
    cb_byte(&r, 0);
    cb_byte(&r, 1);
    cr_nodes(&x, 0, 2, 0x1000, &r);
    mark = x.c.len - r.len + at;
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, "node size: bad varint");
    cb_free(&x.c);
    cb_free(&r);
  }
  /* a varint cut by the end of the payload */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  cb_byte(&r, 0x80);
  cb_byte(&r, 0x80);
  cb_byte(&r, 0x80);
  cb_byte(&r, 0x80);
  cr_nodes(&x, 0, 2, 0x1000, &r);
  mark = x.c.len - r.len + 4;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "node gap: bad varint");
  cb_free(&x.c);
  cb_free(&r);
  /* flags byte missing */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 1, 1); /* 5 bytes */
  cb_varint(&r, 0);
  cb_varint(&r, 0x20);
  cb_varint(&r, 0);
  cr_nodes(&x, 0, 2, 0x1000, &r);
  mark = x.c.len;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "node flags missing");
  cb_free(&x.c);
  cb_free(&r);
  /* count larger than the payload allows, and zero */
  cr_begin(&x);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  node_row(&r, 0, 0x20, 0, 1, 0, 0);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 8);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 3);
  cb_uint(&x.c, 0x1000);
  mark = x.c.len;
  cb_bytes(&x.c, r.buf, r.len);
  x.k.v[K_NODES] = 3;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "count 3 does not fit 8 payload bytes");
  cb_free(&x.c);
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 8);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0x1000);
  mark = x.c.len;
  cb_bytes(&x.c, r.buf, r.len);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "count 0 does not fit");
  cb_free(&x.c);
  /* more rows than the count: trailing bytes */
  cr_begin(&x);
  cr_nodes(&x, 0, 1, 0x1000, &r);
  mark = x.c.len - 4;
  x.k.v[K_NODES] = 1;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "trailing bytes in nodes chunk");
  cb_free(&x.c);
  cb_free(&r);
  /* a payload above the 256 KiB chunk limit */
  cr_begin(&x);
  for (int i = 0; i < 65537; i++) node_row(&r, 0, 1, 0, 1, 0, 0);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 8);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 65537);
  cb_uint(&x.c, 0x1000);
  mark = x.c.len;
  cb_bytes(&x.c, r.buf, r.len);
  x.k.v[K_NODES] = 65537;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_ELIMIT, mark, "exceeds 262144");
  cb_free(&x.c);
  cb_free(&r);
}

static void test_edges(void) {
  struct craft x;
  struct cb r = {0}, nodes = {0};
  size_t mark;
  for (int i = 0; i < 4; i++) node_row(&nodes, 0, 0x40, 0, 1, 0, 0);
  struct {
    uint64_t first, count;
    uint64_t rows[12]; /* sd, n, then (delta, code, field, tdelta); byte deltas */
    int nrows;
    size_t err_row; /* byte index into the payload */
    const char *msg;
  } bad[] = {
      {0, 1, {1, 1, 0, 0, 0, 0}, 1, 2, "first edge group must start at the chunk's source"},
      {0, 1, {0, 0, 0, 0, 0, 0}, 1, 2, "edge group size 0 out of range"},
      {0, 1, {0, 2, 0, 0, 0, 0}, 1, 2, "edge group size 2 out of range"},
      {0, 1, {0, 1, 0, 0, 0, 9}, 1, 2, ""}, /* target 9: checked at the end */
      {0, 1, {0, 1, 0, 0, 0, -1}, 1, 2, "edge target out of range"},
      {0, 1, {0, 1, 0, 5, 0, 1}, 1, 2, "edge field id out of range"},
      {0, 1, {0, 1, 0x100000000ull, 0, 0, 1}, 1, 2, "edge offset beyond 4 GiB"},
      {0, 2, {0, 2, 8, 0, 0, 1, 0, 0, 0, 1}, 2, 4, "edge offsets must increase"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_begin(&x);
    cr_class(&x, 1, "C");
    cr_nodes(&x, 0, 4, 0x1000, &nodes);
    grp(&r, bad[i].rows[0], bad[i].rows[1], 0);
    for (int k = 0; k < bad[i].nrows; k++) {
      const uint64_t *q = &bad[i].rows[2 + 4 * k];
      erow(&r, q[0], (unsigned)q[1], q[2], (int64_t)q[3], 0);
    }
    cr_edges(&x, bad[i].first, bad[i].count, &r);
    mark = x.c.len - r.len + bad[i].err_row;
    cr_end(&x);
    if (bad[i].msg[0])
      EXPECT_ERR(&x.c, HG_EFORMAT, mark, bad[i].msg);
    else
      EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "edge 0 refers to a node beyond 4");
    cb_free(&x.c);
    cb_free(&r);
  }
  /* a continuation group (same source, delta from the last offset) is fine;
   * a new chunk for the same source restarts with an absolute offset and
   * must still increase; a chunk whose source goes back is out of order */
  for (int v = 0; v < 3; v++) {
    cr_begin(&x);
    cr_nodes(&x, 0, 4, 0x1000, &nodes);
    grp(&r, 0, 1, 1);
    erow(&r, 16, 0, 0, 1, 1);
    grp(&r, 0, 1, 0); /* continuation group: delta from 16 */
    erow(&r, 8, 0, 0, 1, 0); /* 24 */
    cr_edges(&x, 2, 2, &r);
    cb_free(&r);
    grp(&r, 0, 1, 0);
    erow(&r, v == 0 ? 33 : 24, 0, 0, 0, 0);
    cr_edges(&x, v == 2 ? 1 : 2, 1, &r);
    mark = x.c.len - r.len + 2;
    cr_end(&x);
    if (v == 0) {
      struct hg_graph *g = load_ok(&x.c, __LINE__);
      CHECK(g && g->edge_count == 3 && g->edge_offset[1] == 24 && g->edge_offset[2] == 33 &&
            g->edge_start[2] == 0 && g->edge_start[3] == 3 && g->edge_target[1] == 3);
      hg_graph_free(g);
    } else {
      EXPECT_ERR(&x.c, HG_EFORMAT, mark, "edges out of order");
    }
    cb_free(&x.c);
    cb_free(&r);
  }
  /* edge source beyond the nodes (found at the end) */
  cr_begin(&x);
  cr_nodes(&x, 0, 4, 0x1000, &nodes);
  grp(&r, 0, 1, 0);
  erow(&r, 0, 0, 0, -5, 0);
  cr_edges(&x, 7, 1, &r);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "edge 0 refers to a node beyond 4");
  cb_free(&x.c);
  cb_free(&r);
  /* count larger than the payload allows; trailing bytes */
  cr_begin(&x);
  cr_nodes(&x, 0, 4, 0x1000, &nodes);
  grp(&r, 0, 1, 0);
  erow(&r, 0, 0, 0, 1, 0);
  cb_array(&x.c, 4);
  cb_uint(&x.c, 9);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 3);
  mark = x.c.len;
  cb_bytes(&x.c, r.buf, r.len);
  x.k.v[K_EDGES] = 3;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "count 3 does not fit 4 payload bytes");
  cb_free(&x.c);
  cb_free(&r);
  cr_begin(&x);
  cr_nodes(&x, 0, 4, 0x1000, &nodes);
  grp(&r, 0, 1, 0);
  erow(&r, 0, 0, 0, 1, 0);
  cb_byte(&r, 0x77);
  cr_edges(&x, 0, 1, &r);
  mark = x.c.len - 1;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "trailing bytes in edges chunk");
  cb_free(&x.c);
  cb_free(&r);
  /* a group that runs out of payload */
  cr_begin(&x);
  cr_nodes(&x, 0, 4, 0x1000, &nodes);
  grp(&r, 0, 2, 0);
  erow(&r, 0, 0, 0, 1, 0);
  cb_byte(&r, 0x80);
  cr_edges(&x, 0, 2, &r);
  mark = x.c.len - 1;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "edge offset: bad varint");
  cb_free(&x.c);
  cb_free(&r);
  cb_free(&nodes);
}

static void test_roots(void) {
  struct craft x;
  struct cb r = {0};
  size_t mark;
  struct { unsigned kb; int64_t dt; const char *msg; } bad[] = {
      {5, 0, "root kind unknown"},
      {0x20, 0, "root kind unknown"},
      {0, -1, "root target out of range"},
      {0, 7, ""}, /* beyond the nodes: found at the end */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_begin(&x);
    node_row(&r, 0, 8, 0, 1, 0, 0);
    cr_nodes(&x, 0, 1, 0x10, &r);
    cb_free(&r);
    root_row(&r, 0, 0, 0, 0, 0);
    cb_byte(&r, (uint8_t)bad[i].kb);
    cb_varint(&r, 0);
    cb_varint(&r, cb_zz(bad[i].dt));
    cr_roots(&x, 2, &r);
    mark = x.c.len - 3;
    cr_end(&x);
    if (bad[i].msg[0])
      EXPECT_ERR(&x.c, HG_EFORMAT, mark, bad[i].msg);
    else
      EXPECT_ERR(&x.c, HG_EFORMAT, x.c.len, "root 1 refers to a node beyond 1");
    cb_free(&x.c);
    cb_free(&r);
  }
  /* trailing bytes; count beyond the payload */
  cr_begin(&x);
  node_row(&r, 0, 8, 0, 1, 0, 0);
  cr_nodes(&x, 0, 1, 0x10, &r);
  cb_free(&r);
  root_row(&r, 0, 0, 0, 0, 0);
  cb_byte(&r, 0);
  cr_roots(&x, 1, &r);
  mark = x.c.len - 1;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "trailing bytes in roots chunk");
  cb_free(&x.c);
  cr_begin(&x);
  cb_array(&x.c, 3);
  cb_uint(&x.c, 10);
  cb_uint(&x.c, 2);
  mark = x.c.len;
  cb_bytes(&x.c, r.buf, r.len);
  x.k.v[K_ROOTS] = 2;
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "count 2 does not fit 4 payload bytes");
  cb_free(&x.c);
  cb_free(&r);
}

/* Text must be valid UTF-8; records hold no indefinite-length items. */
static void test_text_and_items(void) {
  struct craft x;
  size_t mark;
  static const char *const bad_utf8[] = {"ab\xff", "ab\xc0\xaf", "ab\xed\xa0\x80", "ab\xe2\x82"};
  for (size_t i = 0; i < 4; i++) {
    cr_begin(&x);
    cb_array(&x.c, 5);
    cb_uint(&x.c, 6);
    cb_uint(&x.c, 1);
    mark = x.c.len + 1 + 2; /* head, "ab" */
    cb_text(&x.c, bad_utf8[i]);
    cb_uint(&x.c, 0);
    cb_uint(&x.c, 0);
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, "class name: invalid UTF-8");
    cb_free(&x.c);
  }
  /* bad UTF-8 in a metadata key and in an app value */
  cr_begin(&x);
  cb_array(&x.c, 2);
  cb_uint(&x.c, 1);
  cb_map(&x.c, 1);
  cb_text(&x.c, "app");
  cb_map(&x.c, 1);
  cb_text(&x.c, "k");
  mark = x.c.len + 1;
  cb_text(&x.c, "\x80");
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "app value: invalid UTF-8");
  cb_free(&x.c);
  /* an indefinite-length text string as a class name */
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 6);
  cb_uint(&x.c, 1);
  mark = x.c.len;
  cb_byte(&x.c, 0x7f);
  cb_text(&x.c, "ab");
  cb_break(&x.c);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "class name: expected a text string");
  cb_free(&x.c);
  /* an indefinite-length byte string as a chunk payload */
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 8);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 1);
  cb_uint(&x.c, 0);
  mark = x.c.len;
  cb_byte(&x.c, 0x5f);
  cb_bytes(&x.c, "\x00\x08\x00\x01", 4);
  cb_break(&x.c);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "nodes chunk: unexpected CBOR item");
  cb_free(&x.c);
  /* indefinite items inside an unknown record and as an extra field */
  for (int v = 0; v < 3; v++) {
    cr_begin(&x);
    cb_array(&x.c, v == 2 ? 6 : 2);
    cb_uint(&x.c, v == 2 ? 6 : 40);
    if (v == 2) {
      cb_uint(&x.c, 1);
      cb_text(&x.c, "C");
      cb_uint(&x.c, 0);
      cb_uint(&x.c, 0);
    }
    mark = x.c.len;
    cb_byte(&x.c, v == 0 ? 0x9f : v == 1 ? 0xbf : 0x5f);
    cb_break(&x.c);
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, "indefinite-length item inside a record");
    cb_free(&x.c);
  }
  /* wrong CBOR types for fields */
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 4);
  mark = x.c.len;
  cb_negint(&x.c, 4);
  cb_null(&x.c);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "thread id: unexpected CBOR item");
  cb_free(&x.c);
  /* a record that is not an array, an empty record, a non-integer type */
  for (int v = 0; v < 3; v++) {
    cr_begin(&x);
    mark = x.c.len;
    if (v == 0) cb_uint(&x.c, 3);
    if (v == 1) cb_array(&x.c, 0);
    if (v == 2) {
      cb_array(&x.c, 1);
      mark = x.c.len;
      cb_text(&x.c, "t");
    }
    cr_end(&x);
    EXPECT_ERR(&x.c, HG_EFORMAT, mark, v == 2 ? "record type" : "record is not a non-empty array");
    cb_free(&x.c);
  }
  /* a known record with too few fields */
  cr_begin(&x);
  mark = x.c.len;
  cb_array(&x.c, 3);
  cb_uint(&x.c, 6);
  cb_uint(&x.c, 1);
  cb_text(&x.c, "C");
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "record type 6 has 2 fields, needs 4");
  cb_free(&x.c);
  /* malformed CBOR: reserved additional information 28 */
  cr_begin(&x);
  mark = x.c.len;
  cb_byte(&x.c, 0x1c);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "malformed CBOR");
  cb_free(&x.c);
  /* an image id longer than 64 bytes */
  cr_begin(&x);
  uint8_t id[65] = {0};
  cb_array(&x.c, 6);
  cb_uint(&x.c, 3);
  cb_text(&x.c, "/lib");
  mark = x.c.len;
  cb_bytes(&x.c, id, sizeof id);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "image id longer than 64 bytes");
  cb_free(&x.c);
}

/* Length heads far beyond the file fail at once, with no big allocation. */
static void absurd_case(struct craft *x, int which, size_t *mark) {
  cr_begin(x);
  switch (which) {
    case 0: /* nodes payload claiming 2^40 bytes */
      cb_array(&x->c, 5);
      cb_uint(&x->c, 8);
      cb_uint(&x->c, 0);
      cb_uint(&x->c, 1);
      cb_uint(&x->c, 0);
      *mark = x->c.len;
      cb_need(&x->c, 9);
      x->c.len += cbor_encode_bytestring_start(1ull << 40, x->c.buf + x->c.len, 9);
      cb_raw(&x->c, "\x00\x08\x00\x01", 4);
      break;
    case 1: /* a text string claiming 2^40 bytes */
      cb_array(&x->c, 3);
      cb_uint(&x->c, 7);
      cb_uint(&x->c, 1);
      *mark = x->c.len;
      cb_need(&x->c, 9);
      x->c.len += cbor_encode_string_start(1ull << 40, x->c.buf + x->c.len, 9);
      break;
    case 2: /* a record claiming 2^60 fields */
      *mark = x->c.len;
      cb_array(&x->c, 1ull << 60);
      cb_uint(&x->c, 6);
      break;
    case 3: /* an array of 2^60 items inside an unknown record */
      cb_array(&x->c, 2);
      cb_uint(&x->c, 77);
      *mark = x->c.len;
      cb_array(&x->c, 1ull << 60);
      break;
    case 4: /* a metadata map of 2^62 pairs */
      cb_array(&x->c, 2);
      cb_uint(&x->c, 1);
      *mark = x->c.len;
      cb_map(&x->c, 1ull << 62);
      break;
    case 5: /* a map of 2^62 pairs inside an unknown record */
      cb_array(&x->c, 2);
      cb_uint(&x->c, 77);
      *mark = x->c.len;
      cb_map(&x->c, 1ull << 62);
      break;
    case 6: /* the app map of 2^62 pairs */
      cb_array(&x->c, 2);
      cb_uint(&x->c, 1);
      cb_map(&x->c, 1);
      cb_text(&x->c, "app");
      *mark = x->c.len;
      cb_map(&x->c, 1ull << 62);
      break;
    case 7: /* a trailer map of 2^62 pairs */
      cb_array(&x->c, 3);
      cb_uint(&x->c, 11);
      *mark = x->c.len;
      cb_map(&x->c, 1ull << 62);
      break;
  }
  cr_end(x);
}

static const struct { int code; const char *msg; } absurd_expect[] = {
    {HG_ETRUNCATED, "item extends past the end of the file"},
    {HG_ETRUNCATED, "item extends past the end of the file"},
    {HG_EFORMAT, "record length exceeds the file"},
    {HG_EFORMAT, "array length exceeds the file"},
    {HG_EFORMAT, "metadata map too long"},
    {HG_EFORMAT, "map length exceeds the file"},
    {HG_EFORMAT, "app map too long"},
    {HG_EFORMAT, "trailer map too long"},
};

static void test_absurd_lengths(void) {
  char path[512];
  fmt_path(path, sizeof path, "absurd.hgsnap");
  for (int which = 0; which < 8; which++) {
    struct craft x;
    size_t mark = 0;
    absurd_case(&x, which, &mark);
    EXPECT_ERR(&x.c, absurd_expect[which].code, mark, absurd_expect[which].msg);
    /* through the file reader, in a child with a 256 MiB address-space cap
     * (skipped under ASan, whose shadow memory needs far more) */
    REQUIRE(fmt_write(path, x.c.buf, x.c.len) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (!FMT_ASAN) {
        struct rlimit rl = {256u << 20, 256u << 20};
        setrlimit(RLIMIT_AS, &rl);
      }
      struct hg_load_error err;
      struct hg_graph *g = hg_graph_load(path, &err);
      _exit(!g && err.code == absurd_expect[which].code && err.offset == mark ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) fprintf(stderr, "absurd case %d via file failed\n", which);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    cb_free(&x.c);
  }
  unlink(path);
  if (FMT_ASAN) SKIP("the reader ran without the 256 MiB address-space cap (ASan)");
}

/* Forward compatibility: unknown record types, unknown metadata keys and
 * extra fields at the end of known records are skipped. */
static void test_forward_compat(void) {
  struct craft x;
  cr_begin(&x);
  /* unknown record types holding every kind of definite item */
  cb_array(&x.c, 9);
  cb_uint(&x.c, 16); /* 12-15: optional stack records (docs/snapshot-format.md 2.9) */
  cb_negint(&x.c, 99);
  cb_bytes(&x.c, "\x01\x02", 2);
  cb_text(&x.c, "future");
  cb_array(&x.c, 2);
  cb_map(&x.c, 1);
  cb_text(&x.c, "k");
  cb_array(&x.c, 0);
  cb_tag(&x.c, 1);
  cb_uint(&x.c, 1700000000);
  cb_null(&x.c);
  cb_byte(&x.c, 0xf5);  /* true */
  cb_raw(&x.c, "\xfb\x3f\xf0\x00\x00\x00\x00\x00\x00", 9); /* 1.0 */
  cb_raw(&x.c, "\xf9\x3c\x00", 3); /* half 1.0 */
  cb_array(&x.c, 1);
  cb_uint(&x.c, 1000000);
  /* metadata with unknown keys of any type */
  cb_array(&x.c, 3);
  cb_uint(&x.c, 1);
  cb_map(&x.c, 4);
  cb_text(&x.c, "platform");
  cb_text(&x.c, "linux");
  cb_text(&x.c, "gpu");
  cb_map(&x.c, 1);
  cb_text(&x.c, "vendor");
  cb_text(&x.c, "x");
  cb_text(&x.c, "pid");
  cb_negint(&x.c, 0); /* -1 */
  cb_text(&x.c, "capture");
  cb_map(&x.c, 1);
  cb_text(&x.c, "pause_ns");
  cb_uint(&x.c, 5);
  cb_text(&x.c, "extra field");
  /* known records with extra trailing fields */
  cb_array(&x.c, 7);
  cb_uint(&x.c, 6);
  cb_uint(&x.c, 1);
  cb_text(&x.c, "Cls");
  cb_uint(&x.c, 1);
  cb_uint(&x.c, 8);
  cb_array(&x.c, 1);
  cb_uint(&x.c, 0);
  cb_text(&x.c, "more");
  x.k.v[K_CLASSES]++;
  struct cb r = {0};
  node_row(&r, 0, 0x10, 1, 1, 0, 0);
  cb_array(&x.c, 6);
  cb_uint(&x.c, 8);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 1);
  cb_uint(&x.c, 0x4000);
  cb_bytes(&x.c, r.buf, r.len);
  cb_uint(&x.c, 42);
  x.k.v[K_NODES]++;
  cb_free(&r);
  root_row(&r, HG_ROOT_OTHER, 0, 0, 0x99, 0);
  cb_array(&x.c, 4);
  cb_uint(&x.c, 10);
  cb_uint(&x.c, 1);
  cb_bytes(&x.c, r.buf, r.len);
  cb_null(&x.c);
  x.k.v[K_ROOTS]++;
  cb_free(&r);
  cr_end(&x);
  struct hg_graph *g = load_ok(&x.c, __LINE__);
  REQUIRE(g);
  CHECK(fmt_streq(g->meta.platform, "linux"));
  CHECK(g->meta.pid == -1);
  CHECK(g->meta.capture_count == 1 && g->meta.capture[0].value == 5);
  CHECK(g->class_count == 1 && g->classes[0].kind == HG_CLASS_OBJC && g->classes[0].instance_size == 8);
  CHECK(g->node_count == 1 && g->node_addr[0] == 0x4000 && g->node_class[0] == 1);
  CHECK(g->root_count == 1 && g->roots[0].addr == 0x99 && g->roots[0].kind == HG_ROOT_OTHER);
  hg_graph_free(g);
  fmt_save_mem(x.c.buf, x.c.len, "compat-forward-compat.hgsnap");
  cb_free(&x.c);
}

/* Metadata value types. */
static void test_meta_types(void) {
  struct { const char *key; int kind; const char *msg; } bad[] = {
      {"platform", 0, "platform: expected a text string"},
      {"pointer_size", 1, "pointer_size: unexpected CBOR item"},
      {"page_size", 2, "page_size: value 4294967295 too large"},
      {"pid", 1, "pid: expected an integer"},
      {"time_ns", 3, "time_ns: unexpected CBOR item"},
      {"capture", 0, "capture: unexpected CBOR item"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct craft x;
    cr_begin(&x);
    cb_array(&x.c, 2);
    cb_uint(&x.c, 1);
    cb_map(&x.c, 1);
    cb_text(&x.c, bad[i].key);
    size_t mark = x.c.len;
    if (bad[i].kind == 0) cb_uint(&x.c, 1);
    if (bad[i].kind == 1) cb_text(&x.c, "8");
    if (bad[i].kind == 2) cb_uint(&x.c, UINT32_MAX);
    if (bad[i].kind == 3) cb_negint(&x.c, 1);
    cr_end(&x);
    EXPECT_ERR(&x.c, bad[i].kind == 2 ? HG_ELIMIT : HG_EFORMAT, mark, bad[i].msg);
    cb_free(&x.c);
  }
}

/* Small records: region and thread ranges. */
static void test_small_records(void) {
  struct craft x;
  cr_begin(&x);
  cb_array(&x.c, 10);
  cb_uint(&x.c, 2);
  cb_uint(&x.c, UINT64_MAX - 1);
  size_t mark = x.c.len;
  cb_uint(&x.c, 4);
  for (int i = 0; i < 7; i++) cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "region wraps around");
  cb_free(&x.c);
  cr_begin(&x);
  cb_array(&x.c, 10);
  cb_uint(&x.c, 2);
  cb_uint(&x.c, 0);
  cb_uint(&x.c, 4);
  mark = x.c.len;
  cb_uint(&x.c, 16);
  for (int i = 0; i < 6; i++) cb_uint(&x.c, 0);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "region prot: unknown bits");
  cb_free(&x.c);
  cr_begin(&x);
  cb_array(&x.c, 5);
  cb_uint(&x.c, 4);
  cb_uint(&x.c, 1);
  cb_null(&x.c);
  cb_uint(&x.c, 0x2000);
  mark = x.c.len;
  cb_uint(&x.c, 0x1000);
  cr_end(&x);
  EXPECT_ERR(&x.c, HG_EFORMAT, mark, "thread stack range reversed");
  cb_free(&x.c);
}

int main(void) {
  char gp[512];
  fmt_src(gp, sizeof gp, "tests/golden/v1-small.hgsnap");
  golden = fmt_read(gp, &golden_len);
  if (!golden) fprintf(stderr, "cannot read %s\n", gp);
  RUN(test_truncation_every_offset);
  RUN(test_bit_flips);
  RUN(test_crafted_valid);
  RUN(test_header);
  RUN(test_trailer);
  RUN(test_checksum);
  RUN(test_ids);
  RUN(test_nodes);
  RUN(test_edges);
  RUN(test_roots);
  RUN(test_text_and_items);
  RUN(test_absurd_lengths);
  RUN(test_forward_compat);
  RUN(test_meta_types);
  RUN(test_small_records);
  free(golden);
  fmt_cleanup();
  return hg_test_done();
}
