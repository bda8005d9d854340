/*
 * test_format_util.h — helpers shared by the snapshot-format tests
 * (test_format_roundtrip.c, test_format_malformed.c, test_format_write_errors.c):
 * temporary directories, file I/O, the deterministic golden snapshot
 * (tests/golden/v1-small.hgsnap) and its expected contents, a tiny raw CBOR
 * encoder (libcbor's cbor_encode_* + XXH64) for hand-crafted files, and a
 * field-by-field graph comparison.
 *
 * Good snapshots the tests produce are copied to $BUILD/test-snapshots/ so
 * tests/format/check_cbor2.py can decode them independently afterwards.
 */
#ifndef HG_TEST_FORMAT_UTIL_H
#define HG_TEST_FORMAT_UTIL_H

#include <cbor.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "heapgraph.h"
#include "hg_test.h"

/* ------------------------------------------------------------ files */

static char fmt_tmp_root[256];

/* A fresh private directory under $TMPDIR (or /tmp), removed by fmt_cleanup. */
static const char *fmt_tmpdir(void) {
  if (!fmt_tmp_root[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(fmt_tmp_root, sizeof fmt_tmp_root, "%s/hgfmt.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fmt_tmp_root)) {
      perror("mkdtemp");
      exit(2);
    }
  }
  return fmt_tmp_root;
}

static __attribute__((unused)) void fmt_path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", fmt_tmpdir(), name);
}

/* Number of directory entries (besides . and ..) in dir. */
static __attribute__((unused)) int fmt_dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* Entries whose name contains ".tmp." (the writer's temporaries). */
static __attribute__((unused)) int fmt_tmp_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

static __attribute__((unused)) void fmt_cleanup(void) {
  if (!fmt_tmp_root[0]) return;
  DIR *d = opendir(fmt_tmp_root);
  if (d) {
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", fmt_tmp_root, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(fmt_tmp_root);
}

static __attribute__((unused)) int fmt_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static uint8_t *fmt_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) *len = (size_t)n;
  return buf;
}

static __attribute__((unused)) int fmt_write(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t k = fwrite(data, 1, len, f);
  return (fclose(f) == 0 && k == len) ? 0 : -1;
}

/* Copies a good snapshot to $BUILD/test-snapshots/NAME for the cbor2 check. */
static __attribute__((unused)) void fmt_save(const char *path, const char *name) {
  const char *b = getenv("BUILD");
  char dir[512], dst[700];
  snprintf(dir, sizeof dir, "%s/test-snapshots", b && *b ? b : "build");
  mkdir(dir, 0755);
  snprintf(dst, sizeof dst, "%s/%s", dir, name);
  size_t len;
  uint8_t *data = fmt_read(path, &len);
  if (data) fmt_write(dst, data, len);
  free(data);
}

static __attribute__((unused)) void fmt_save_mem(const void *data, size_t len, const char *name) {
  const char *b = getenv("BUILD");
  char dir[512], dst[700];
  snprintf(dir, sizeof dir, "%s/test-snapshots", b && *b ? b : "build");
  mkdir(dir, 0755);
  snprintf(dst, sizeof dst, "%s/%s", dir, name);
  fmt_write(dst, data, len);
}

/* Path of a file in the source tree (tests run from the repository root;
 * $HG_SRCDIR overrides). */
static __attribute__((unused)) void fmt_src(char *out, size_t n, const char *rel) {
  const char *s = getenv("HG_SRCDIR");
  snprintf(out, n, "%s/%s", s && *s ? s : ".", rel);
}

/* ------------------------------------------------------ golden snapshot */
/*
 * The golden file: every record type, both metadata records (merged by the
 * reader), a fixed time_ns, and node/edge/root rows covering every encoding
 * branch (heap switches, gaps, byte and word offsets, named kinds, negative
 * target deltas, roots with and without owners). Written with the raw
 * streaming writer so its bytes depend only on the format.
 */
#define GOLDEN_TIME_NS 1700000000123456789ull
static const uint8_t golden_build_id[20] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
                                            0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0xff};

struct golden_node { uint64_t addr, size; uint32_t cls, flags, heap; };
struct golden_edge { uint32_t src; uint64_t off; uint32_t dst, kind, field; };

static const struct golden_node golden_nodes[] = {
    {0x10000, 32, 1, HG_NODE_MALLOC, 1},
    {0x10020, 48, 2, HG_NODE_MALLOC, 1},
    {0x10100, 16, 0, HG_NODE_MALLOC, 1},
    {0x20000, 4096, 0, HG_NODE_MALLOC | HG_NODE_MMAPPED, 2},
    {0x21000, 24, 3, HG_NODE_MALLOC, 0},
    {0x7f0000000000ull, 0x200000, 0, HG_NODE_REGION, 0},
};
static const struct golden_edge golden_edges[] = {
    {0, 0, 1, HG_EDGE_STRONG, 1},        /* named: "next"                */
    {0, 8, 2, HG_EDGE_CONSERVATIVE, 0},
    {0, 20, 1, HG_EDGE_INTERIOR, 0},     /* byte offset, not a multiple of 8 */
    {0, 24, 5, HG_EDGE_WEAK, 2},         /* named weak: "owner"          */
    {1, 0, 0, HG_EDGE_CONSERVATIVE, 0},  /* negative target delta        */
    {1, 16, 4, HG_EDGE_UNOWNED, 1},      /* named unowned                */
    {1, 40, 3, HG_EDGE_UNOWNED, 0},
    {3, 4088, 0, HG_EDGE_STRONG, 0},     /* skips source 2; delta -3     */
    {5, 0x1000, 4, HG_EDGE_WEAK, 0},
    {5, 0x1003, 5, HG_EDGE_CONSERVATIVE, 0}, /* self edge               */
};
static const struct hg_root golden_roots[] = {
    {HG_ROOT_STACK, 0, 0x7ffd0000f000ull, 4},
    {HG_ROOT_REGISTER, HG_NO_OWNER, 7, 0},
    {HG_ROOT_GLOBAL, 1, 0x555500001000ull, 2},
    {HG_ROOT_TLS, 1, 0x7f00000a0000ull, 3},
    {HG_ROOT_OTHER, HG_NO_OWNER, 0x10, 1},   /* address goes down: negative zigzag */
};
#define GOLDEN_NODES (sizeof golden_nodes / sizeof golden_nodes[0])
#define GOLDEN_EDGES (sizeof golden_edges / sizeof golden_edges[0])
#define GOLDEN_ROOTS (sizeof golden_roots / sizeof golden_roots[0])

static const struct hg_kv golden_app1[] = {{"build", "1.2.3"}, {"user", "t\xc3\xa9st \xe2\x9c\x93"}};
static const struct hg_num golden_cap1[] = {{"pause_ns", 1500}, {"walk_ns", 0}};
static const struct hg_kv golden_app2[] = {{"build", "1.2.4"}};
static const struct hg_num golden_cap2[] = {{"pause_ns", 1600}, {"write_ns", 99}};

/* Writes the golden snapshot; 0 or the writer's error. */
static __attribute__((unused)) int golden_write(const char *path) {
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  if (rc) {
    hg_writer_close(w);
    return rc;
  }
  struct hg_meta m = {0};
  m.platform = "linux";
  m.os_version = "6.1.0-golden";
  m.arch = "x86_64";
  m.pointer_size = 8;
  m.page_size = 4096;
  m.pid = 4242;
  m.process = "golden";
  m.time_ns = GOLDEN_TIME_NS;
  m.trigger = "manual";
  m.allocator = "glibc-ptmalloc2";
  m.heap_status = "ok";
  m.app_count = 2;
  m.app = golden_app1;
  m.capture_count = 2;
  m.capture = golden_cap1;
  rc = rc ? rc : hg_writer_meta(w, &m);
  struct hg_image im1 = {"/usr/lib/libgolden.so.1", golden_build_id, 20, 0x555500000000ull, 0x555500000000ull, 0x4000};
  struct hg_image im2 = {"/usr/bin/golden", NULL, 0, 0x400000, 0, 0x2000};
  rc = rc ? rc : hg_writer_image(w, &im1);
  rc = rc ? rc : hg_writer_image(w, &im2);
  struct hg_region r1 = {0x555500000000ull, 0x4000, HG_PROT_READ | HG_PROT_EXEC, 0, "/usr/lib/libgolden.so.1", 0x3000, 0, 0, 0};
  struct hg_region r2 = {0x10000, 0x21000, HG_PROT_READ | HG_PROT_WRITE, 7, NULL, 0x21000, 0x20000, 0x1000, HG_NO_OWNER};
  struct hg_region r3 = {0x7f0000000000ull, 0x200000, HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED, 0, "[anon]", 0, 0, 0, 1};
  rc = rc ? rc : hg_writer_region(w, &r1);
  rc = rc ? rc : hg_writer_region(w, &r2);
  rc = rc ? rc : hg_writer_region(w, &r3);
  struct hg_thread t1 = {101, "main", 0x7ffd00000000ull, 0x7ffd00010000ull};
  struct hg_thread t2 = {102, NULL, 0x7f0000100000ull, 0x7f0000100000ull};
  rc = rc ? rc : hg_writer_thread(w, &t1);
  rc = rc ? rc : hg_writer_thread(w, &t2);
  uint32_t id;
  rc = rc ? rc : hg_writer_heap(w, "main arena", &id);
  rc = rc ? rc : hg_writer_heap(w, "mmap", &id);
  struct hg_class c1 = {"User", HG_CLASS_OTHER, 32};
  struct hg_class c2 = {"NSString", HG_CLASS_OBJC, 48};
  struct hg_class c3 = {"_ZN6golden3FooE", HG_CLASS_CXX, 0};
  rc = rc ? rc : hg_writer_class(w, &c1, &id);
  rc = rc ? rc : hg_writer_class(w, &c2, &id);
  rc = rc ? rc : hg_writer_class(w, &c3, &id);
  rc = rc ? rc : hg_writer_string(w, "next", &id);
  rc = rc ? rc : hg_writer_string(w, "owner", &id);
  for (size_t i = 0; i < GOLDEN_NODES && !rc; i++) {
    const struct golden_node *n = &golden_nodes[i];
    rc = hg_writer_node(w, n->addr, n->size, n->cls, n->flags, n->heap);
  }
  for (size_t i = 0; i < GOLDEN_EDGES && !rc; i++) {
    const struct golden_edge *e = &golden_edges[i];
    rc = hg_writer_edge(w, e->src, e->off, e->dst, e->kind, e->field);
  }
  for (size_t i = 0; i < GOLDEN_ROOTS && !rc; i++) rc = hg_writer_root(w, &golden_roots[i]);
  struct hg_meta m2 = {0};
  m2.app_count = 1;
  m2.app = golden_app2;
  m2.capture_count = 2;
  m2.capture = golden_cap2;
  rc = rc ? rc : hg_writer_meta(w, &m2);
  rc = rc ? rc : hg_writer_finish(w);
  hg_writer_close(w);
  return rc;
}

static __attribute__((unused)) int fmt_streq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

/* Checks every field of a loaded golden snapshot. */
static __attribute__((unused)) void golden_check(const struct hg_graph *g) {
  CHECK_EQ_U(g->format_version, 1);
  const struct hg_meta *m = &g->meta;
  CHECK(fmt_streq(m->platform, "linux"));
  CHECK(fmt_streq(m->os_version, "6.1.0-golden"));
  CHECK(fmt_streq(m->arch, "x86_64"));
  CHECK_EQ_U(m->pointer_size, 8);
  CHECK_EQ_U(m->page_size, 4096);
  CHECK_EQ_U(m->pid, 4242);
  CHECK(fmt_streq(m->process, "golden"));
  CHECK_EQ_U(m->time_ns, GOLDEN_TIME_NS);
  CHECK(fmt_streq(m->trigger, "manual"));
  CHECK(fmt_streq(m->allocator, "glibc-ptmalloc2"));
  CHECK(fmt_streq(m->heap_status, "ok"));
  /* merged: sorted by key, later records win */
  CHECK_EQ_U(m->app_count, 2);
  if (m->app_count == 2) {
    CHECK(fmt_streq(m->app[0].key, "build") && fmt_streq(m->app[0].value, "1.2.4"));
    CHECK(fmt_streq(m->app[1].key, "user") && fmt_streq(m->app[1].value, "t\xc3\xa9st \xe2\x9c\x93"));
  }
  CHECK_EQ_U(m->capture_count, 3);
  if (m->capture_count == 3) {
    CHECK(fmt_streq(m->capture[0].key, "pause_ns"));
    CHECK_EQ_U(m->capture[0].value, 1600);
    CHECK(fmt_streq(m->capture[1].key, "walk_ns"));
    CHECK_EQ_U(m->capture[1].value, 0);
    CHECK(fmt_streq(m->capture[2].key, "write_ns"));
    CHECK_EQ_U(m->capture[2].value, 99);
  }
  CHECK_EQ_U(g->image_count, 2);
  if (g->image_count == 2) {
    CHECK(fmt_streq(g->images[0].path, "/usr/lib/libgolden.so.1"));
    CHECK_EQ_U(g->images[0].id_len, 20);
    CHECK(g->images[0].id && memcmp(g->images[0].id, golden_build_id, 20) == 0);
    CHECK_EQ_U(g->images[0].load_addr, 0x555500000000ull);
    CHECK_EQ_U(g->images[0].slide, 0x555500000000ull);
    CHECK_EQ_U(g->images[0].size, 0x4000);
    CHECK(fmt_streq(g->images[1].path, "/usr/bin/golden"));
    CHECK_EQ_U(g->images[1].id_len, 0);
    CHECK_EQ_U(g->images[1].load_addr, 0x400000);
    CHECK_EQ_U(g->images[1].slide, 0);
    CHECK_EQ_U(g->images[1].size, 0x2000);
  }
  CHECK_EQ_U(g->region_count, 3);
  if (g->region_count == 3) {
    const struct hg_region *r = g->regions;
    CHECK_EQ_U(r[0].start, 0x555500000000ull);
    CHECK_EQ_U(r[0].size, 0x4000);
    CHECK_EQ_U(r[0].prot, HG_PROT_READ | HG_PROT_EXEC);
    CHECK_EQ_U(r[0].tag, 0);
    CHECK(fmt_streq(r[0].name, "/usr/lib/libgolden.so.1"));
    CHECK_EQ_U(r[0].resident, 0x3000);
    CHECK_EQ_U(r[0].image, 0);
    CHECK_EQ_U(r[1].start, 0x10000);
    CHECK_EQ_U(r[1].tag, 7);
    CHECK(r[1].name == NULL);
    CHECK_EQ_U(r[1].resident, 0x21000);
    CHECK_EQ_U(r[1].dirty, 0x20000);
    CHECK_EQ_U(r[1].swapped, 0x1000);
    CHECK_EQ_U(r[1].image, HG_NO_OWNER);
    CHECK_EQ_U(r[2].prot, HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED);
    CHECK(fmt_streq(r[2].name, "[anon]"));
    CHECK_EQ_U(r[2].image, 1);
  }
  CHECK_EQ_U(g->thread_count, 2);
  if (g->thread_count == 2) {
    CHECK_EQ_U(g->threads[0].tid, 101);
    CHECK(fmt_streq(g->threads[0].name, "main"));
    CHECK_EQ_U(g->threads[0].stack_lo, 0x7ffd00000000ull);
    CHECK_EQ_U(g->threads[0].stack_hi, 0x7ffd00010000ull);
    CHECK_EQ_U(g->threads[1].tid, 102);
    CHECK(g->threads[1].name == NULL);
  }
  CHECK_EQ_U(g->heap_count, 2);
  if (g->heap_count == 2) CHECK(fmt_streq(g->heaps[0], "main arena") && fmt_streq(g->heaps[1], "mmap"));
  CHECK_EQ_U(g->class_count, 3);
  if (g->class_count == 3) {
    CHECK(fmt_streq(g->classes[0].name, "User"));
    CHECK_EQ_U(g->classes[0].kind, HG_CLASS_OTHER);
    CHECK_EQ_U(g->classes[0].instance_size, 32);
    CHECK(fmt_streq(g->classes[1].name, "NSString"));
    CHECK_EQ_U(g->classes[1].kind, HG_CLASS_OBJC);
    CHECK_EQ_U(g->classes[1].instance_size, 48);
    CHECK(fmt_streq(g->classes[2].name, "_ZN6golden3FooE"));
    CHECK_EQ_U(g->classes[2].kind, HG_CLASS_CXX);
  }
  CHECK_EQ_U(g->string_count, 2);
  if (g->string_count == 2) CHECK(fmt_streq(g->strings[0], "next") && fmt_streq(g->strings[1], "owner"));
  CHECK_EQ_U(g->node_count, GOLDEN_NODES);
  if (g->node_count == GOLDEN_NODES)
    for (uint32_t i = 0; i < GOLDEN_NODES; i++) {
      CHECK_EQ_U(g->node_addr[i], golden_nodes[i].addr);
      CHECK_EQ_U(g->node_size[i], golden_nodes[i].size);
      CHECK_EQ_U(g->node_class[i], golden_nodes[i].cls);
      CHECK_EQ_U(g->node_flags[i], golden_nodes[i].flags);
      CHECK_EQ_U(g->node_heap[i], golden_nodes[i].heap);
    }
  CHECK_EQ_U(g->edge_count, GOLDEN_EDGES);
  if (g->edge_count == GOLDEN_EDGES && g->node_count == GOLDEN_NODES) {
    for (uint32_t e = 0; e < GOLDEN_EDGES; e++) {
      const struct golden_edge *x = &golden_edges[e];
      CHECK(g->edge_start[x->src] <= e && e < g->edge_start[x->src + 1]);
      CHECK_EQ_U(g->edge_target[e], x->dst);
      CHECK_EQ_U(g->edge_offset[e], x->off);
      CHECK_EQ_U(g->edge_kind[e], x->kind);
      const char *f = hg_graph_edge_field(g, e);
      CHECK(fmt_streq(f, x->field ? g->strings[x->field - 1] : NULL));
    }
    CHECK_EQ_U(g->edge_start[GOLDEN_NODES], GOLDEN_EDGES);
    CHECK_EQ_U(g->named_count, 3);
  }
  CHECK_EQ_U(g->root_count, GOLDEN_ROOTS);
  if (g->root_count == GOLDEN_ROOTS)
    for (uint32_t i = 0; i < GOLDEN_ROOTS; i++) {
      CHECK_EQ_U(g->roots[i].kind, golden_roots[i].kind);
      CHECK_EQ_U(g->roots[i].owner, golden_roots[i].owner);
      CHECK_EQ_U(g->roots[i].addr, golden_roots[i].addr);
      CHECK_EQ_U(g->roots[i].target, golden_roots[i].target);
    }
  CHECK(g->checksum_ok);
}

/* ------------------------------------------------- raw CBOR encoder */

struct cb {
  uint8_t *buf;
  size_t len, cap;
};

static __attribute__((unused)) void cb_need(struct cb *c, size_t n) {
  if (c->len + n <= c->cap) return;
  size_t nc = c->cap ? c->cap : 256;
  while (nc < c->len + n) nc *= 2;
  c->buf = realloc(c->buf, nc);
  if (!c->buf) abort();
  c->cap = nc;
}
static __attribute__((unused)) void cb_raw(struct cb *c, const void *p, size_t n) {
  cb_need(c, n);
  if (n) memcpy(c->buf + c->len, p, n);
  c->len += n;
}
static __attribute__((unused)) void cb_byte(struct cb *c, uint8_t b) { cb_raw(c, &b, 1); }
static __attribute__((unused)) void cb_uint(struct cb *c, uint64_t v) {
  cb_need(c, 9);
  c->len += cbor_encode_uint(v, c->buf + c->len, 9);
}
static __attribute__((unused)) void cb_negint(struct cb *c, uint64_t n) {
  cb_need(c, 9);
  c->len += cbor_encode_negint(n, c->buf + c->len, 9);
}
static __attribute__((unused)) void cb_array(struct cb *c, size_t n) {
  cb_need(c, 9);
  c->len += cbor_encode_array_start(n, c->buf + c->len, 9);
}
static __attribute__((unused)) void cb_map(struct cb *c, size_t n) {
  cb_need(c, 9);
  c->len += cbor_encode_map_start(n, c->buf + c->len, 9);
}
static __attribute__((unused)) void cb_tag(struct cb *c, uint64_t t) {
  cb_need(c, 9);
  c->len += cbor_encode_tag(t, c->buf + c->len, 9);
}
static __attribute__((unused)) void cb_null(struct cb *c) {
  cb_need(c, 1);
  c->len += cbor_encode_null(c->buf + c->len, 1);
}
static __attribute__((unused)) void cb_break(struct cb *c) {
  cb_need(c, 1);
  c->len += cbor_encode_break(c->buf + c->len, 1);
}
static __attribute__((unused)) void cb_text_n(struct cb *c, const char *s, size_t n) {
  cb_need(c, 9);
  c->len += cbor_encode_string_start(n, c->buf + c->len, 9);
  cb_raw(c, s, n);
}
static __attribute__((unused)) void cb_text(struct cb *c, const char *s) { cb_text_n(c, s, strlen(s)); }
static __attribute__((unused)) void cb_bytes(struct cb *c, const void *p, size_t n) {
  cb_need(c, 9);
  c->len += cbor_encode_bytestring_start(n, c->buf + c->len, 9);
  cb_raw(c, p, n);
}
static __attribute__((unused)) void cb_varint(struct cb *c, uint64_t v) {
  while (v >= 0x80) {
    cb_byte(c, (uint8_t)(v | 0x80));
    v >>= 7;
  }
  cb_byte(c, (uint8_t)v);
}
static __attribute__((unused)) uint64_t cb_zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static __attribute__((unused)) void cb_free(struct cb *c) {
  free(c->buf);
  memset(c, 0, sizeof *c);
}

/* tag 55799, indefinite array, ["heapgraph-snapshot", version] */
static __attribute__((unused)) void cb_prefix(struct cb *c, uint64_t version) {
  cb_tag(c, 55799);
  cb_need(c, 1);
  c->len += cbor_encode_indef_array_start(c->buf + c->len, 1);
  cb_array(c, 2);
  cb_text(c, "heapgraph-snapshot");
  cb_uint(c, version);
}

/* Trailer counts in file order: regions images threads heaps classes strings nodes edges roots. */
struct cb_counts { uint64_t v[9]; };
static const char *const cb_count_keys[9] = {"regions", "images",  "threads", "heaps", "classes",
                                             "strings", "nodes",   "edges",   "roots"};

/* Appends the trailer (with a correct xxh64 of everything so far) and the break. */
static __attribute__((unused)) void cb_trailer(struct cb *c, const struct cb_counts *k) {
  uint64_t h = XXH64(c->buf, c->len, 0);
  cb_array(c, 3);
  cb_uint(c, 11);
  cb_map(c, 9);
  for (int i = 0; i < 9; i++) {
    cb_text(c, cb_count_keys[i]);
    cb_uint(c, k->v[i]);
  }
  cb_uint(c, h);
  cb_break(c);
}

/* ------------------------------------------------ graph comparison */

static __attribute__((unused)) int fmt_graphs_equal(const struct hg_graph *a, const struct hg_graph *b) {
  int ok = 1;
#define EQ(x) \
  do { if (!(x)) { fprintf(stderr, "graphs differ: %s\n", #x); ok = 0; } } while (0)
  EQ(a->format_version == b->format_version);
  EQ(fmt_streq(a->meta.platform, b->meta.platform));
  EQ(fmt_streq(a->meta.os_version, b->meta.os_version));
  EQ(fmt_streq(a->meta.arch, b->meta.arch));
  EQ(fmt_streq(a->meta.process, b->meta.process));
  EQ(fmt_streq(a->meta.trigger, b->meta.trigger));
  EQ(fmt_streq(a->meta.allocator, b->meta.allocator));
  EQ(fmt_streq(a->meta.heap_status, b->meta.heap_status));
  EQ(a->meta.pointer_size == b->meta.pointer_size && a->meta.page_size == b->meta.page_size);
  EQ(a->meta.pid == b->meta.pid && a->meta.time_ns == b->meta.time_ns);
  EQ(a->meta.app_count == b->meta.app_count && a->meta.capture_count == b->meta.capture_count);
  if (!ok) return 0;
  for (size_t i = 0; i < a->meta.app_count; i++)
    EQ(fmt_streq(a->meta.app[i].key, b->meta.app[i].key) && fmt_streq(a->meta.app[i].value, b->meta.app[i].value));
  for (size_t i = 0; i < a->meta.capture_count; i++)
    EQ(fmt_streq(a->meta.capture[i].key, b->meta.capture[i].key) && a->meta.capture[i].value == b->meta.capture[i].value);
  EQ(a->region_count == b->region_count && a->image_count == b->image_count);
  EQ(a->thread_count == b->thread_count && a->heap_count == b->heap_count);
  EQ(a->class_count == b->class_count && a->string_count == b->string_count);
  EQ(a->node_count == b->node_count && a->edge_count == b->edge_count);
  EQ(a->named_count == b->named_count && a->root_count == b->root_count);
  if (!ok) return 0;
  for (uint32_t i = 0; i < a->region_count; i++) {
    const struct hg_region *x = &a->regions[i], *y = &b->regions[i];
    EQ(x->start == y->start && x->size == y->size && x->prot == y->prot && x->tag == y->tag &&
       fmt_streq(x->name, y->name) && x->resident == y->resident && x->dirty == y->dirty &&
       x->swapped == y->swapped && x->image == y->image);
  }
  for (uint32_t i = 0; i < a->image_count; i++) {
    const struct hg_image *x = &a->images[i], *y = &b->images[i];
    EQ(fmt_streq(x->path, y->path) && x->id_len == y->id_len && x->load_addr == y->load_addr &&
       x->slide == y->slide && x->size == y->size);
    EQ(x->id_len == 0 || memcmp(x->id, y->id, x->id_len) == 0);
  }
  for (uint32_t i = 0; i < a->thread_count; i++) {
    const struct hg_thread *x = &a->threads[i], *y = &b->threads[i];
    EQ(x->tid == y->tid && fmt_streq(x->name, y->name) && x->stack_lo == y->stack_lo && x->stack_hi == y->stack_hi);
  }
  for (uint32_t i = 0; i < a->heap_count; i++) EQ(fmt_streq(a->heaps[i], b->heaps[i]));
  for (uint32_t i = 0; i < a->string_count; i++) EQ(fmt_streq(a->strings[i], b->strings[i]));
  for (uint32_t i = 0; i < a->class_count; i++)
    EQ(fmt_streq(a->classes[i].name, b->classes[i].name) && a->classes[i].kind == b->classes[i].kind &&
       a->classes[i].instance_size == b->classes[i].instance_size);
  if (!ok) return 0;
  size_t n = a->node_count, m = a->edge_count;
  EQ(!memcmp(a->node_addr, b->node_addr, n * sizeof *a->node_addr));
  EQ(!memcmp(a->node_size, b->node_size, n * sizeof *a->node_size));
  EQ(!memcmp(a->node_class, b->node_class, n * sizeof *a->node_class));
  EQ(!memcmp(a->node_flags, b->node_flags, n * sizeof *a->node_flags));
  EQ(!memcmp(a->node_heap, b->node_heap, n * sizeof *a->node_heap));
  EQ(!memcmp(a->edge_start, b->edge_start, (n + 1) * sizeof *a->edge_start));
  EQ(!memcmp(a->edge_target, b->edge_target, m * sizeof *a->edge_target));
  EQ(!memcmp(a->edge_offset, b->edge_offset, m * sizeof *a->edge_offset));
  EQ(!memcmp(a->edge_kind, b->edge_kind, m * sizeof *a->edge_kind));
  EQ(!memcmp(a->named_edge, b->named_edge, a->named_count * sizeof *a->named_edge));
  EQ(!memcmp(a->named_field, b->named_field, a->named_count * sizeof *a->named_field));
  for (uint32_t i = 0; i < a->root_count; i++)
    EQ(a->roots[i].kind == b->roots[i].kind && a->roots[i].owner == b->roots[i].owner &&
       a->roots[i].addr == b->roots[i].addr && a->roots[i].target == b->roots[i].target);
#undef EQ
  return ok;
}

#endif
