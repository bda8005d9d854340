/*
 * test_fleet.c — fleet analysis units (graph/fleet*.c): the summary's CBOR
 * form (round trip, the 64 KiB bound, a hostile reader: every truncation,
 * every bit flip, a hand-made catalogue of bad inputs), summaries of built
 * graphs (every string hostile: huge, control characters; no nodes or one;
 * the root a path starts from when several roots hold a block), the
 * statistics (Mann-Whitney, percentiles, version order), and issues over
 * synthetic summaries: new / regressed / fixed / ongoing, the minimum
 * sample size, the holder-explains rule, ranking, the class growth and the
 * merged tree. The end-to-end test on real captures is tests/fleet/.
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "graph/fleet.h"
#include "graph/fleet_stats.h"
#include "hg_test.h"

/* ---- synthetic summaries ---- */

struct synth {
  struct hg_fleet_summary s;
  struct hg_fleet_sig sigs[8];
  struct hg_fleet_class classes[4];
  const char *steps[8][6];
  char dev[16], name[32];
};

static void synth_init(struct synth *x, const char *version, int device, int session) {
  memset(x, 0, sizeof *x);
  x->s.format = HG_FLEET_SUMMARY_FORMAT;
  x->s.app = "app";
  x->s.app_version = version;
  snprintf(x->dev, sizeof x->dev, "dev%d", device);
  snprintf(x->name, sizeof x->name, "%s-%d-%d.hgsnap", version, device, session);
  x->s.device_id = x->dev;
  x->s.snapshot = x->name;
  x->s.sigs = x->sigs;
  x->s.classes = x->classes;
}

/* Adds a retention signature with path steps (NULL-terminated). */
static void synth_ret(struct synth *x, uint64_t bytes, ...) {
  uint32_t i = x->s.sig_count++, n = 0;
  va_list ap;
  va_start(ap, bytes);
  for (const char *s; (s = va_arg(ap, const char *));) x->steps[i][n++] = s;
  va_end(ap);
  x->sigs[i] = (struct hg_fleet_sig){_hg_fleet_hash(HG_FLEET_RETENTION, HG_FLEET_ALGO, x->steps[i], n),
                                     bytes, 1, HG_FLEET_RETENTION, HG_FLEET_ALGO, n, x->steps[i]};
}

static void synth_class(struct synth *x, const char *name, uint64_t bytes) {
  x->classes[x->s.class_count++] = (struct hg_fleet_class){name, 1, bytes, bytes};
}

/* ---- codec ---- */

static int round_trip(const struct hg_fleet_summary *s, struct hg_fleet_summary **out, size_t *len) {
  uint8_t *buf;
  int rc = hg_fleet_summary_encode(s, &buf, len);
  if (rc) return rc;
  struct hg_load_error err;
  rc = hg_fleet_summary_decode(buf, *len, out, &err);
  free(buf);
  return rc;
}

static void test_codec_round_trip(void) {
  struct synth x;
  synth_init(&x, "8.2", 3, 1);
  x.s.time_ns = 1700000000123456789ull;
  x.s.checksum = 0xfedcba9876543210ull;
  x.s.footprint = 123 << 20;
  synth_ret(&x, 1 << 20, "global:app", "App", "Cache", NULL);
  synth_ret(&x, 5000, "stack", "(unclassified)", NULL);
  synth_class(&x, "App", 64);
  synth_class(&x, "(unclassified)", 9999);
  struct hg_fleet_summary *d = NULL;
  size_t len;
  REQUIRE(round_trip(&x.s, &d, &len) == 0);
  CHECK(len < 1024);
  CHECK(!strcmp(d->app_version, "8.2") && !strcmp(d->device_id, "dev3") && !strcmp(d->snapshot, x.name));
  CHECK_EQ_U(d->time_ns, x.s.time_ns);
  CHECK_EQ_U(d->checksum, x.s.checksum);
  CHECK_EQ_U(d->footprint, x.s.footprint);
  CHECK(d->build == NULL && d->session_id == NULL);
  REQUIRE(d->sig_count == 2 && d->class_count == 2);
  for (uint32_t i = 0; i < 2; i++) {
    CHECK_EQ_U(d->sigs[i].hash, x.sigs[i].hash);
    CHECK_EQ_U(d->sigs[i].bytes, x.sigs[i].bytes);
    CHECK_EQ_U(d->sigs[i].algo, HG_FLEET_ALGO);
    CHECK_EQ_U(d->sigs[i].step_count, x.sigs[i].step_count);
    for (uint32_t j = 0; j < d->sigs[i].step_count; j++) CHECK(!strcmp(d->sigs[i].steps[j], x.sigs[i].steps[j]));
  }
  CHECK(!strcmp(d->classes[1].name, "(unclassified)") && d->classes[1].bytes == 9999);
  hg_fleet_summary_free(d);
}

/* A summary far over the bound: the encoder drops census rows, then the
 * smallest signatures, and says how many. */
static void test_codec_bound(void) {
  enum { NS = 3000, NC = 3000 };
  struct hg_fleet_summary s = {.format = HG_FLEET_SUMMARY_FORMAT};
  struct hg_fleet_sig *sigs = calloc(NS, sizeof *sigs);
  struct hg_fleet_class *cls = calloc(NC, sizeof *cls);
  char (*names)[200] = calloc(NS, sizeof *names);
  const char **steps = calloc(NS * 3, sizeof *steps);
  REQUIRE(sigs && cls && names && steps);
  for (int i = 0; i < NS; i++) {
    snprintf(names[i], sizeof names[i], "SomeVeryLongClassName_%0150d", i);
    steps[3 * i] = "global:app";
    steps[3 * i + 1] = "App";
    steps[3 * i + 2] = names[i];
    sigs[i] = (struct hg_fleet_sig){_hg_fleet_hash(0, 1, steps + 3 * i, 3), (uint64_t)(i + 1) * 1000, 1, 0, 1, 3, steps + 3 * i};
    cls[i] = (struct hg_fleet_class){names[i], 1, (uint64_t)i, (uint64_t)i};
  }
  s.sigs = sigs;
  s.sig_count = NS;
  s.classes = cls;
  s.class_count = NC;
  struct hg_fleet_summary *d = NULL;
  size_t len;
  REQUIRE(round_trip(&s, &d, &len) == 0);
  CHECK(len <= HG_FLEET_SUMMARY_MAX);
  CHECK(d->sig_count > 0 && d->sig_count < NS);
  CHECK_EQ_U(d->dropped, (NS - d->sig_count) + (NC - d->class_count));
  /* the biggest signatures are the ones kept */
  uint64_t min_kept = UINT64_MAX;
  for (uint32_t i = 0; i < d->sig_count; i++) min_kept = d->sigs[i].bytes < min_kept ? d->sigs[i].bytes : min_kept;
  CHECK(min_kept == (uint64_t)(NS - d->sig_count + 1) * 1000);
  hg_fleet_summary_free(d);
  free(sigs);
  free(cls);
  free(names);
  free(steps);
}

static uint8_t *valid_blob(size_t *len) {
  struct synth x;
  synth_init(&x, "1.0", 1, 1);
  synth_ret(&x, 777, "global:a", "A", NULL);
  synth_class(&x, "A", 5);
  uint8_t *buf = NULL;
  hg_fleet_summary_encode(&x.s, &buf, len);
  return buf;
}

static void test_codec_hostile(void) {
  size_t len;
  uint8_t *buf = valid_blob(&len);
  REQUIRE(buf);
  struct hg_fleet_summary *d;
  struct hg_load_error err;
  /* every truncation is an error with an offset inside the input */
  for (size_t n = 0; n < len; n++) {
    d = NULL;
    int rc = hg_fleet_summary_decode(buf, n, &d, &err);
    CHECK(rc != 0 && d == NULL && err.offset <= n);
  }
  /* every bit flip: an error or a summary that is still sound */
  uint8_t *m = malloc(len);
  REQUIRE(m);
  for (size_t i = 0; i < len * 8; i++) {
    memcpy(m, buf, len);
    m[i / 8] ^= (uint8_t)(1u << (i % 8));
    d = NULL;
    if (!hg_fleet_summary_decode(m, len, &d, &err)) {
      for (uint32_t k = 0; k < d->sig_count; k++) {
        CHECK(d->sigs[k].kind < HG_FLEET_KIND_COUNT);
        for (uint32_t j = 0; j < d->sigs[k].step_count; j++) CHECK(d->sigs[k].steps[j] != NULL);
      }
      hg_fleet_summary_free(d);
    } else {
      CHECK(err.message[0] && err.offset <= len);
    }
  }
  free(m);
  /* hand-made bad inputs */
  static const struct { const char *hex; int code; } bad[] = {
      {"", HG_ETRUNCATED},
      {"9f", HG_EFORMAT},                                   /* indefinite array */
      {"83", HG_ELIMIT},                                    /* 3 fields claimed, no bytes */
      {"83000000", HG_EFORMAT},                             /* fewer than 7 fields */
      {"9a7fffffff", HG_ELIMIT},                            /* 2^31 elements claimed */
      {"87716865617067726170682d73756d6d617279", HG_ETRUNCATED},
      {"8761610000000000", HG_EVERSION},                    /* wrong magic */
      {"87716865617067726170682d73756d6d61727902", HG_EVERSION}, /* format 2 */
      {"87716865617067726170682d73756d6d61727901a16361707001", HG_EFORMAT}, /* app: a number */
      {"87716865617067726170682d73756d6d61727901a0816261ff", HG_EFORMAT},    /* invalid UTF-8 */
      {"87716865617067726170682d73756d6d61727901a0816200ff", HG_EFORMAT},    /* NUL in text */
      {"87716865617067726170682d73756d6d61727901a08161618184050101018000", HG_EFORMAT}, /* sid 5 of 1 */
      {"87716865617067726170682d73756d6d61727901a080808186040101010180", HG_EFORMAT}, /* kind 4 */
      {"87716865617067726170682d73756d6d61727901a0808080" "00" "00", HG_EFORMAT}, /* trailing byte */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint8_t b[64];
    size_t n = strlen(bad[i].hex) / 2;
    for (size_t k = 0; k < n; k++) sscanf(bad[i].hex + 2 * k, "%2hhx", &b[k]);
    d = NULL;
    int rc = hg_fleet_summary_decode(b, n, &d, &err);
    if (rc != bad[i].code) fprintf(stderr, "bad[%zu]: rc %d (%s at %llu)\n", i, rc, err.message, (unsigned long long)err.offset);
    CHECK(rc == bad[i].code && d == NULL);
  }
  /* over the bound */
  uint8_t *big = calloc(HG_FLEET_SUMMARY_MAX + 1, 1);
  CHECK(hg_fleet_summary_decode(big, HG_FLEET_SUMMARY_MAX + 1, &d, &err) == HG_ELIMIT);
  free(big);
  free(buf);
}

/* ---- summaries of built graphs ---- */

/* b written to a temporary file (freed) and loaded back: the graph, or
 * NULL with the builder's message on stderr. */
static struct hg_graph *built(struct hg_builder *b) {
  char path[] = "/tmp/hg_fleet_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    hg_builder_free(b);
    return NULL;
  }
  close(fd);
  int rc = hg_builder_write(b, path, NULL);
  if (rc) fprintf(stderr, "builder: %s\n", hg_builder_message(b));
  hg_builder_free(b);
  struct hg_load_error err;
  struct hg_graph *g = rc ? NULL : hg_graph_load(path, &err);
  unlink(path);
  return g;
}

static void test_summary_hostile_strings(void) {
  static char huge[20000];
  memset(huge, 'A', sizeof huge - 1);
  struct hg_builder *b = hg_builder_new();
  REQUIRE(b);
  struct hg_kv app[] = {{"app_version", huge}, {"device_id", "dev\x01\x1b]0;x"}, {"footprint", "99999999999999999999999"}};
  struct hg_meta m = {.platform = "linux", .trigger = "t\n", .app = app, .app_count = 3};
  hg_builder_meta(b, &m);
  uint32_t big = hg_builder_class(b, huge, HG_CLASS_CXX, 0);
  uint32_t ctl = hg_builder_class(b, "\x1b[2J\xc3\xa9", HG_CLASS_OTHER, 0);
  struct hg_image im = {.path = huge, .load_addr = 0x400000, .size = 0x1000};
  hg_builder_image(b, &im);
  /* a holder of 100 KiB under the huge class, held by a global */
  hg_builder_node(b, 0x10000, 64, big, HG_NODE_MALLOC, 0);
  hg_builder_node(b, 0x20000, 100 << 10, ctl, HG_NODE_MALLOC, 0);
  hg_builder_edge(b, 0x10000, 8, 0x20000, HG_EDGE_STRONG, huge);
  hg_builder_root(b, HG_ROOT_GLOBAL, 0, 0x401000, 0x10000);
  /* a leaked cycle */
  hg_builder_node(b, 0x40000, 32, big, HG_NODE_MALLOC, 0);
  hg_builder_node(b, 0x50000, 32, ctl, HG_NODE_MALLOC, 0);
  hg_builder_edge(b, 0x40000, 0, 0x50000, HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, 0x50000, 0, 0x40000, HG_EDGE_CONSERVATIVE, NULL);
  struct hg_graph *g = built(b);
  REQUIRE(g);
  struct hg_fleet_summary *s = NULL;
  REQUIRE(hg_fleet_summarize(g, NULL, &s) == 0);
  CHECK(strlen(s->app_version) <= HG_FLEET_MAX_TEXT);
  CHECK(s->footprint == UINT64_MAX); /* strtoull saturates: a number, never a crash */
  int ret = 0, leak = 0;
  for (uint32_t i = 0; i < s->sig_count; i++) {
    const struct hg_fleet_sig *g2 = &s->sigs[i];
    for (uint32_t j = 0; j < g2->step_count; j++) CHECK(strlen(g2->steps[j]) <= HG_FLEET_MAX_TEXT + 8);
    if (g2->kind == HG_FLEET_RETENTION && g2->bytes == (100 << 10) + 64) ret++;
    if (g2->kind == HG_FLEET_LEAK) leak += g2->step_count == 3 && !strcmp(g2->steps[0], "cycle");
  }
  CHECK(ret == 1 && leak == 1);
  struct hg_fleet_summary *d = NULL;
  size_t len;
  CHECK(round_trip(s, &d, &len) == 0 && len <= HG_FLEET_SUMMARY_MAX);
  hg_fleet_summary_free(d);
  hg_fleet_summary_free(s);
  hg_graph_free(g);
}

/* A snapshot without nodes (a process with an empty heap, or an upload of
 * nothing) is summarised: no signatures, no leaked bytes. The summary's
 * search and leaks do not run then, and reading their result crashed
 * `heapgraph fleet` and the server's worker. Also one node and no root. */
static void test_summary_empty(void) {
  for (int nodes = 0; nodes < 2; nodes++) {
    struct hg_builder *b = hg_builder_new();
    REQUIRE(b);
    struct hg_meta m = {.platform = "linux", .trigger = "test"};
    hg_builder_meta(b, &m);
    if (nodes) hg_builder_node(b, 0x10000, 64, 0, HG_NODE_MALLOC, 0);
    struct hg_graph *g = built(b);
    REQUIRE(g);
    struct hg_fleet_summary *s = NULL;
    CHECK(hg_fleet_summarize(g, NULL, &s) == 0);
    if (s) {
      CHECK(s->nodes == (uint32_t)nodes && s->reachable_bytes == 0);
      CHECK(s->leaked_bytes == (uint64_t)(nodes ? 64 : 0));
      uint32_t leaks = 0;
      for (uint32_t i = 0; i < s->sig_count; i++) leaks += s->sigs[i].kind == HG_FLEET_LEAK;
      CHECK(leaks == (uint32_t)nodes);
      struct hg_fleet_summary *d = NULL;
      size_t len;
      CHECK(round_trip(s, &d, &len) == 0);
      hg_fleet_summary_free(d);
    }
    hg_fleet_summary_free(s);
    hg_graph_free(g);
  }
}

/* The root step of a path names the root the search started from: the
 * first root of the first kind (globals, TLS, stacks, registers, other)
 * that targets the block, whatever the order of the roots in the file.
 * Block A is held by a stack word, then two globals (images b.so, a.so):
 * "global:b.so". Block B by a register word, then a TLS word: "tls". */
static void test_summary_root_steps(void) {
  struct hg_builder *b = hg_builder_new();
  REQUIRE(b);
  struct hg_meta m = {.platform = "linux", .trigger = "test"};
  hg_builder_meta(b, &m);
  struct hg_image a = {.path = "/lib/a.so", .load_addr = 0x400000, .size = 0x1000};
  struct hg_image bb = {.path = "/lib/b.so", .load_addr = 0x500000, .size = 0x1000};
  hg_builder_image(b, &a);
  hg_builder_image(b, &bb);
  struct hg_thread th = {.tid = 1, .name = "main", .stack_lo = 0x7e0000, .stack_hi = 0x800000};
  hg_builder_thread(b, &th);
  uint32_t ca = hg_builder_class(b, "A", HG_CLASS_CXX, 0), cb = hg_builder_class(b, "B", HG_CLASS_CXX, 0);
  hg_builder_node(b, 0x10000, 4096, ca, HG_NODE_MALLOC, 0);
  hg_builder_node(b, 0x20000, 8192, cb, HG_NODE_MALLOC, 0);
  hg_builder_root(b, HG_ROOT_STACK, 0, 0x7f0000, 0x10000);
  hg_builder_root(b, HG_ROOT_GLOBAL, 1, 0x500100, 0x10000);
  hg_builder_root(b, HG_ROOT_GLOBAL, 0, 0x400100, 0x10000);
  hg_builder_root(b, HG_ROOT_REGISTER, 0, 3, 0x20000);
  hg_builder_root(b, HG_ROOT_TLS, 0, 0x7e0000, 0x20000);
  struct hg_graph *g = built(b);
  REQUIRE(g);
  struct hg_fleet_summary *s = NULL;
  REQUIRE(hg_fleet_summarize(g, NULL, &s) == 0);
  int got_a = 0, got_b = 0;
  for (uint32_t i = 0; i < s->sig_count; i++) {
    const struct hg_fleet_sig *x = &s->sigs[i];
    if (x->kind != HG_FLEET_RETENTION || x->step_count != 2) continue;
    if (!strcmp(x->steps[1], "A")) got_a += !strcmp(x->steps[0], "global:b.so");
    if (!strcmp(x->steps[1], "B")) got_b += !strcmp(x->steps[0], "tls");
  }
  CHECK(got_a == 1);
  CHECK(got_b == 1);
  hg_fleet_summary_free(s);
  hg_graph_free(g);
}

/* ---- statistics ---- */

static void test_stats(void) {
  uint64_t a[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, b[] = {20, 21, 22, 23, 24, 25, 26, 27, 28, 29};
  CHECK(_hg_fleet_mann_whitney(b, 10, a, 10) < 0.001);   /* b clearly larger */
  CHECK(_hg_fleet_mann_whitney(a, 10, b, 10) > 0.99);
  CHECK(_hg_fleet_mann_whitney(a, 10, a, 10) > 0.4);     /* same: no evidence */
  uint64_t c[] = {5, 5, 5, 5, 5};
  CHECK(_hg_fleet_mann_whitney(c, 5, c, 5) == 1);        /* all tied: no variance */
  CHECK(_hg_fleet_mann_whitney(a, 0, b, 10) == 1);
  /* p of a one-sided test on n = 8 + 8 with complete separation: about 1e-4 */
  double p = _hg_fleet_mann_whitney(b, 8, a, 8);
  CHECK(p > 1e-5 && p < 1e-3);
  uint64_t s[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK_EQ_U(_hg_fleet_pct(s, 10, 50), 5);  /* (5 + 6) / 2 rounded down */
  CHECK_EQ_U(_hg_fleet_pct(s, 9, 50), 5);
  CHECK_EQ_U(_hg_fleet_pct(s, 10, 90), 9);
  CHECK_EQ_U(_hg_fleet_pct(s, 1, 90), 1);
  CHECK_EQ_U(_hg_fleet_pct(s, 0, 50), 0);
  CHECK(_hg_fleet_vercmp("8.10", "8.9") > 0 && _hg_fleet_vercmp("8.9", "8.10") < 0);
  CHECK(_hg_fleet_vercmp("1.0", "1.0") == 0 && _hg_fleet_vercmp("1.0", "1.0.1") < 0);
  CHECK(_hg_fleet_vercmp("2.0-beta", "2.0") > 0);
  /* the sort against a plain insertion sort, many sizes and tie patterns */
  static uint64_t v[5000], w[5000];
  uint64_t r = 12345;
  for (uint32_t n = 0; n < 5000; n = n * 3 / 2 + 1)
    for (int mod = 1; mod <= 1000000; mod *= 100) {
      for (uint32_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1;
        v[i] = w[i] = (r >> 33) % (uint64_t)mod;
      }
      _hg_fleet_sort(v, n);
      for (uint32_t i = 1; i < n; i++) {
        uint64_t x = w[i];
        uint32_t k = i;
        for (; k > 0 && w[k - 1] > x; k--) w[k] = w[k - 1];
        w[k] = x;
      }
      CHECK(!memcmp(v, w, n * sizeof *v));
    }
}

/* ---- issues ---- */

struct mbuf { char buf[8192]; size_t len; };
static int mem_write(void *ctx, const void *p, size_t n) {
  struct mbuf *m = ctx;
  if (m->len + n >= sizeof m->buf) return -1;
  memcpy(m->buf + m->len, p, n);
  m->len += n;
  m->buf[m->len] = 0;
  return 0;
}

static const struct hg_fleet_issue *find(const struct hg_fleet_issues *r, const char *last) {
  for (uint32_t i = 0; i < r->count; i++)
    if (r->issues[i].kind == HG_FLEET_RETENTION && !strcmp(r->issues[i].steps[r->issues[i].step_count - 1], last))
      return &r->issues[i];
  return NULL;
}

/* Two versions, 10 devices each. Baseline: App 2 MB holding Cache 1 MB and
 * Feed 1 MB, Old 300 KB. Version: Cache unchanged, Feed 2 MB (regressed),
 * New 500 KB (new), Old gone (fixed), App grows by exactly those. */
static struct hg_fleet *scenario(uint32_t devices, int feed_grows) {
  struct hg_fleet *f = hg_fleet_new();
  for (int v = 0; v < 2; v++)
    for (uint32_t d = 0; d < devices; d++) {
      struct synth x;
      synth_init(&x, v ? "2.0" : "1.0", (int)d, 0);
      uint64_t jitter = d * 1000, cache = 1000000 + jitter, feed = (v && feed_grows ? 2000000 : 1000000) + jitter;
      uint64_t nw = v ? 500000 + jitter : 0, old = v ? 0 : 300000 + jitter;
      synth_ret(&x, cache + feed + nw + old + 100, "global:app", "App", NULL);
      synth_ret(&x, cache, "global:app", "App", "Cache", NULL);
      synth_ret(&x, feed, "global:app", "App", "Feed", NULL);
      if (nw) synth_ret(&x, nw, "global:app", "App", "New", NULL);
      if (old) synth_ret(&x, old, "global:app", "App", "Old", NULL);
      synth_class(&x, "Cache", cache);
      synth_class(&x, "Feed", feed);
      if (nw) synth_class(&x, "New", nw);
      if (hg_fleet_add(f, &x.s)) return f;
    }
  return f;
}

static void test_issues(void) {
  struct hg_fleet *f = scenario(10, 1);
  REQUIRE(f);
  CHECK_EQ_U(hg_fleet_version_count(f), 2);
  CHECK(!strcmp(hg_fleet_version(f, 0), "1.0") && !strcmp(hg_fleet_version(f, 1), "2.0"));
  struct hg_fleet_issues *r = NULL;
  REQUIRE(hg_fleet_issues(f, NULL, &r) == 0);
  CHECK(!strcmp(r->version, "2.0") && !strcmp(r->baseline, "1.0"));
  CHECK_EQ_U(r->version_snapshots, 10);
  const struct hg_fleet_issue *cache = find(r, "Cache"), *feed = find(r, "Feed"), *nw = find(r, "New"),
                              *old = find(r, "Old"), *app = find(r, "App");
  REQUIRE(cache && feed && nw && old && app);
  CHECK_EQ_U(cache->status, HG_FLEET_ONGOING);
  CHECK_EQ_U(feed->status, HG_FLEET_REGRESSED);
  CHECK(feed->p_value < HG_FLEET_ALPHA);
  CHECK_EQ_U(nw->status, HG_FLEET_NEW);
  CHECK_EQ_U(old->status, HG_FLEET_FIXED);
  CHECK_EQ_U(nw->devices, 10);
  CHECK(nw->share == 1.0);
  CHECK_EQ_U(nw->bytes_median, 504500);
  CHECK_EQ_U(nw->bytes_max, 509000);
  CHECK_EQ_U(nw->exemplar_count, 3);
  CHECK(nw->exemplar_bytes[0] == 509000 && nw->exemplar_bytes[2] == 507000);
  CHECK(!strcmp(nw->exemplars[0], "2.0-9-0.hgsnap"));
  CHECK(nw->version_count == 1 && !strcmp(nw->first_version, "2.0"));
  CHECK(feed->version_count == 2 && !strcmp(feed->first_version, "1.0") && !strcmp(feed->last_version, "2.0"));
  /* App grew by Feed's growth + New - Old: explained, so context of Feed */
  CHECK_EQ_U(app->status, HG_FLEET_ONGOING);
  REQUIRE(app->context_of >= 0);
  CHECK(&r->issues[app->context_of] == feed);
  for (uint32_t i = 1; i < r->count; i++) CHECK(r->issues[i - 1].impact >= r->issues[i].impact);
  /* JSON writer: one object with the fields */
  struct mbuf mb = {0};
  CHECK(hg_fleet_issue_json(r, (uint32_t)(nw - r->issues), mem_write, &mb) == 0);
  CHECK(mb.len > 100 && mb.buf[0] == '{' && mb.buf[mb.len - 1] == '}');
  CHECK(strstr(mb.buf, "\"status\":\"new\"") && strstr(mb.buf, "\"bytes_median\":504500") &&
        strstr(mb.buf, "\"path\":[\"global:app\",\"App\",\"New\"]"));
  hg_fleet_issues_free(r);

  /* the baseline asked for; the floor leaves small issues out */
  struct hg_fleet_query q = {"2.0", "1.0", HG_FLEET_RETENTION, 1500000};
  REQUIRE(hg_fleet_issues(f, &q, &r) == 0);
  CHECK(find(r, "New") == NULL && find(r, "Feed") != NULL);
  hg_fleet_issues_free(r);
  q = (struct hg_fleet_query){"3.0", NULL, -1, 0};
  CHECK(hg_fleet_issues(f, &q, &r) == HG_ENOTFOUND);

  /* class growth and the merged tree */
  struct hg_fleet_growth *g = NULL;
  REQUIRE(hg_fleet_class_growth(f, NULL, NULL, &g) == 0);
  REQUIRE(g->count == 3);
  CHECK(!strcmp(g->rows[0].name, "Feed") && g->rows[0].delta == 1000000);
  CHECK(!strcmp(g->rows[1].name, "New") && g->rows[1].delta == 504500);
  CHECK(!strcmp(g->rows[2].name, "Cache") && g->rows[2].delta == 0);
  hg_fleet_growth_free(g);
  struct hg_fleet_tree *t = NULL;
  REQUIRE(hg_fleet_tree(f, "2.0", &t) == 0);
  CHECK_EQ_U(t->snapshots, 10);
  REQUIRE(t->count == 6); /* (roots) global:app App Cache Feed New */
  CHECK(!strcmp(t->nodes[1].name, "global:app") && t->nodes[1].snapshots == 10);
  const struct hg_fleet_tree_node *appn = &t->nodes[2];
  CHECK(!strcmp(appn->name, "App") && appn->child_count == 3);
  uint64_t kids = 0;
  for (uint32_t i = 0; i < appn->child_count; i++) kids += t->nodes[appn->first_child + i].total;
  CHECK(appn->total >= kids);
  CHECK(!strcmp(t->nodes[appn->first_child].name, "Feed")); /* biggest first */
  hg_fleet_tree_free(t);
  hg_fleet_free(f);
}

/* Too few snapshots per side: a doubling is not called a regression. */
static void test_min_samples(void) {
  struct hg_fleet *f = scenario(HG_FLEET_MIN_SAMPLES - 1, 1);
  struct hg_fleet_issues *r = NULL;
  REQUIRE(f && hg_fleet_issues(f, NULL, &r) == 0);
  const struct hg_fleet_issue *feed = find(r, "Feed");
  CHECK(feed && feed->status == HG_FLEET_ONGOING);
  CHECK(find(r, "New") && find(r, "New")->status == HG_FLEET_NEW); /* new needs no test */
  hg_fleet_issues_free(r);
  hg_fleet_free(f);
  /* nothing grows: no regression anywhere, with the full sample */
  f = scenario(12, 0);
  REQUIRE(f && hg_fleet_issues(f, NULL, &r) == 0);
  for (uint32_t i = 0; i < r->count; i++) CHECK(r->issues[i].status != HG_FLEET_REGRESSED);
  hg_fleet_issues_free(r);
  hg_fleet_free(f);
}

/* A summary naming one signature twice (decoded summaries are hostile
 * input): one occurrence per snapshot, its bytes summed — not two rows
 * (which overran the per-snapshot buffers of hg_fleet_issues). */
static void test_duplicate_rows(void) {
  struct hg_fleet *f = hg_fleet_new();
  REQUIRE(f);
  for (int d = 0; d < 3; d++) {
    struct synth x;
    synth_init(&x, "1.0", d, 0);
    synth_ret(&x, 1000, "global:app", "App", NULL);
    synth_ret(&x, 500, "global:app", "App", NULL);
    synth_ret(&x, 300, "global:app", "App", NULL);
    synth_class(&x, "App", 700);
    synth_class(&x, "App", 800);
    REQUIRE(hg_fleet_add(f, &x.s) == 0);
  }
  struct hg_fleet_issues *r = NULL;
  REQUIRE(hg_fleet_issues(f, NULL, &r) == 0);
  const struct hg_fleet_issue *app = find(r, "App");
  REQUIRE(app);
  CHECK_EQ_U(app->snapshots, 3);
  CHECK_EQ_U(app->bytes_median, 1800);
  hg_fleet_issues_free(r);
  struct hg_fleet_growth *g = NULL;
  REQUIRE(hg_fleet_class_growth(f, NULL, NULL, &g) == 0);
  hg_fleet_growth_free(g);
  hg_fleet_free(f);
}

int main(void) {
  RUN(test_codec_round_trip);
  RUN(test_codec_bound);
  RUN(test_codec_hostile);
  RUN(test_summary_hostile_strings);
  RUN(test_summary_empty);
  RUN(test_summary_root_steps);
  RUN(test_stats);
  RUN(test_issues);
  RUN(test_min_samples);
  RUN(test_duplicate_rows);
  return hg_test_done();
}
