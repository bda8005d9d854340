/*
 * bench_fleet.c — fleet analysis figures (`make bench-fleet`, with
 * bench/bench_fleet.sh):
 *   bench_fleet snapshot PATH NODES   writes an app-like synthetic snapshot
 *       (an App holding 64 managers, each a linked list of items that own a
 *       buffer, stray cross pointers, stack roots, leaked cycles) for the
 *       summary-vs-`heapgraph top` comparison the script times;
 *   bench_fleet compare PATH          the same comparison in process, CPU time
 *       (the machine may be shared: wall clock inflates both sides);
 *   bench_fleet issues N              N synthetic summaries (3 versions,
 *       5,000 devices, 48 retention + 2 leak signatures and 40 classes each,
 *       paths from a pool of 400): time to add them to a set, issues, class
 *       growth, the merged tree; peak RSS; and decode speed of the CBOR form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "graph/fleet.h"
#include "heapgraph.h"

/* CPU time of this process (the machine may be shared: wall clock with
 * FLEET_BENCH_WALL=1). */
static double now(void) {
  struct timespec t;
  clock_gettime(getenv("FLEET_BENCH_WALL") ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* ---- snapshot ---- */

#define ADDR(i) (0x100000000ull + (uint64_t)(i) * 64)

static int snapshot(const char *path, uint32_t n) {
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  if (rc) return rc;
  struct hg_kv app[] = {{"app_version", "1.0"}, {"device_id", "bench"}};
  struct hg_meta m = {.platform = "linux", .pointer_size = 8, .page_size = 4096, .trigger = "bench",
                      .app = app, .app_count = 2};
  rc = hg_writer_meta(w, &m);
  struct hg_image im = {.path = "/bench/app", .load_addr = 0x400000, .size = 0x100000};
  struct hg_thread th = {.tid = 1, .name = "main", .stack_lo = 0x7ff000000000ull, .stack_hi = 0x7ff000100000ull};
  if (!rc) rc = hg_writer_image(w, &im);
  if (!rc) rc = hg_writer_thread(w, &th);
  const char *names[] = {"App", "Manager0", "Manager1", "Manager2", "Manager3", "Manager4", "Manager5",
                         "Manager6", "Manager7", "Item0", "Item1", "Item2", "Item3", "Item4", "Item5",
                         "Item6", "Item7", "Leak"};
  for (size_t i = 0; !rc && i < sizeof names / sizeof *names; i++) {
    struct hg_class k = {names[i], HG_CLASS_CXX, 48};
    rc = hg_writer_class(w, &k, NULL);
  }
  /* 0: App; 1..64: managers; then per manager a run of (item, buffer)
   * pairs; the last 2 % leaked pairs pointing at each other. */
  uint32_t leak0 = n - n / 50, body = leak0 - 65, per = body / 64 / 2 * 2;
  for (uint32_t i = 0; !rc && i < n; i++) {
    uint32_t cls;
    if (i == 0) cls = 1;
    else if (i <= 64) cls = 2 + (i - 1) % 8;
    else if (i >= leak0) cls = 18;
    else cls = ((i - 65) % 2 == 0) ? 10 + ((i - 65) / per) % 8 : 0;
    rc = hg_writer_node(w, ADDR(i), cls ? 48 : 16 + 16 * (uint32_t)(next() % 3), cls, HG_NODE_MALLOC, 0);
  }
  for (uint32_t i = 0; !rc && i < n; i++) {
    if (i == 0) {
      for (uint32_t k = 1; k <= 64 && !rc; k++) rc = hg_writer_edge(w, 0, 8 * k, k, HG_EDGE_CONSERVATIVE, 0);
    } else if (i <= 64) {
      uint32_t first = 65 + (i - 1) * per;
      if (first < leak0) rc = hg_writer_edge(w, i, 8, first, HG_EDGE_CONSERVATIVE, 0);
    } else if (i < leak0 && (i - 65) % 2 == 0) {
      uint32_t list_end = 65 + ((i - 65) / per + 1) * per;
      rc = hg_writer_edge(w, i, 8, i + 1, HG_EDGE_CONSERVATIVE, 0); /* its buffer */
      if (!rc && i + 2 < list_end && i + 2 < leak0) rc = hg_writer_edge(w, i, 16, i + 2, HG_EDGE_CONSERVATIVE, 0);
      if (!rc && next() % 100 == 0) /* a stray word */
        rc = hg_writer_edge(w, i, 24, 65 + (uint32_t)(next() % body), HG_EDGE_CONSERVATIVE, 0);
    } else if (i >= leak0) {
      uint32_t mate = ((i - leak0) % 2 == 0) ? i + 1 : i - 1;
      if (mate < n) rc = hg_writer_edge(w, i, 8, mate, HG_EDGE_CONSERVATIVE, 0);
    }
  }
  struct hg_root r = {HG_ROOT_GLOBAL, 0, 0x401000, 0};
  if (!rc) rc = hg_writer_root(w, &r);
  for (int k = 0; k < 200 && !rc; k++) {
    struct hg_root s = {HG_ROOT_STACK, 0, 0x7ff000000100ull + 8 * (uint64_t)k, 65 + (uint32_t)(next() % body)};
    rc = hg_writer_root(w, &s);
  }
  if (!rc) rc = hg_writer_finish(w);
  if (rc) fprintf(stderr, "bench_fleet: %s\n", hg_writer_message(w));
  hg_writer_close(w);
  return rc;
}

/* ---- issues over N summaries ---- */

static long rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static int issues(uint32_t n) {
  enum { POOL = 400, SIGS = 48, CLASSES = 40, DEVICES = 5000 };
  static char cls[POOL][24], dev[DEVICES][16], name[32];
  static const char *paths[POOL][4];
  for (int i = 0; i < POOL; i++) {
    snprintf(cls[i], sizeof cls[i], "Class%03d", i);
    paths[i][0] = "global:app";
    paths[i][1] = "App";
    paths[i][2] = cls[i / 8];
    paths[i][3] = cls[i];
  }
  for (int i = 0; i < DEVICES; i++) snprintf(dev[i], sizeof dev[i], "device-%04d", i);
  const char *versions[] = {"1.0", "1.1", "2.0"};
  struct hg_fleet_sig sigs[SIGS + 2];
  struct hg_fleet_class classes[CLASSES];
  const char *leak_steps[2][3] = {{"cycle", "LeakA", "LeakB"}, {"single", "Buffer", "(unclassified)"}};
  struct hg_fleet *f = hg_fleet_new();
  if (!f) return 1;
  /* one encoded summary per 100 to measure decoding */
  uint8_t *blob = NULL;
  size_t blob_len = 0;
  double t0 = now();
  for (uint32_t s = 0; s < n; s++) {
    uint32_t v = s % 3, d = (uint32_t)(next() % DEVICES);
    snprintf(name, sizeof name, "snap-%07u.hgsnap", s);
    struct hg_fleet_summary sum = {.format = HG_FLEET_SUMMARY_FORMAT, .app = "app", .app_version = versions[v],
                                   .device_id = dev[d], .snapshot = name, .sigs = sigs, .classes = classes};
    uint32_t base = (uint32_t)(next() % (POOL - SIGS));
    for (uint32_t k = 0; k < SIGS; k++) {
      const char **p = paths[base + k];
      uint64_t bytes = (1u << 16) + next() % (1u << 20) + (v == 2 && base + k < 20 ? 1u << 20 : 0);
      sigs[k] = (struct hg_fleet_sig){_hg_fleet_hash(0, HG_FLEET_ALGO, p, 4), bytes, 1, 0, HG_FLEET_ALGO, 4, p};
    }
    for (uint32_t k = 0; k < 2; k++)
      sigs[SIGS + k] = (struct hg_fleet_sig){_hg_fleet_hash(1, HG_FLEET_ALGO, leak_steps[k], 3), 4096 + next() % 65536, 1,
                                             1, HG_FLEET_ALGO, 3, leak_steps[k]};
    sum.sig_count = SIGS + (v == 2 ? 2 : 1);
    for (uint32_t k = 0; k < CLASSES; k++)
      classes[k] = (struct hg_fleet_class){cls[(base + k) % POOL], 100, next() % (1u << 20), 0};
    sum.class_count = CLASSES;
    if (s == 0 && hg_fleet_summary_encode(&sum, &blob, &blob_len)) return 1;
    if (hg_fleet_add(f, &sum)) {
      fprintf(stderr, "bench_fleet: out of memory at summary %u\n", s);
      return 1;
    }
  }
  double t_add = now() - t0;
  t0 = now();
  struct hg_fleet_issues *r = NULL;
  int rc = hg_fleet_issues(f, NULL, &r);
  double t_iss = now() - t0;
  t0 = now();
  struct hg_fleet_growth *g = NULL;
  if (!rc) rc = hg_fleet_class_growth(f, NULL, NULL, &g);
  double t_grow = now() - t0;
  t0 = now();
  struct hg_fleet_tree *t = NULL;
  if (!rc) rc = hg_fleet_tree(f, NULL, &t);
  double t_tree = now() - t0;
  if (rc) {
    fprintf(stderr, "bench_fleet: %s\n", hg_error_string(rc));
    return 1;
  }
  uint32_t regressed = 0, nw = 0;
  for (uint32_t i = 0; i < r->count; i++) {
    regressed += r->issues[i].status == HG_FLEET_REGRESSED && r->issues[i].context_of < 0;
    nw += r->issues[i].status == HG_FLEET_NEW;
  }
  /* decoding: the same summary 10,000 times */
  t0 = now();
  for (int i = 0; i < 10000; i++) {
    struct hg_fleet_summary *d = NULL;
    struct hg_load_error err;
    if (hg_fleet_summary_decode(blob, blob_len, &d, &err)) return 1;
    hg_fleet_summary_free(d);
  }
  double t_dec = (now() - t0) / 10000;
  printf("fleet issues: %u summaries (%u signatures each), %u issues (%u new, %u regressed); "
         "add %.2f s, issues %.2f s (goal <= 2 s), class growth %.2f s, tree %.2f s; peak RSS %ld MB "
         "(goal <= 1024); summary %zu bytes, decode %.1f us each\n",
         n, SIGS + 1, r->count, nw, regressed, t_add, t_iss, t_grow, t_tree, rss_mb(), blob_len, t_dec * 1e6);
  hg_fleet_issues_free(r);
  hg_fleet_growth_free(g);
  hg_fleet_tree_free(t);
  hg_fleet_free(f);
  free(blob);
  return 0;
}

/* ---- summary vs top, in process ---- */

/* The library work of `heapgraph top` (load, dominators, class retained,
 * top nodes) against that of one uncached summary (load, summarise,
 * encode), best of 3 each, alternating. */
static int compare(const char *path) {
  double best_top = 1e30, best_sum = 1e30;
  size_t len = 0;
  for (int round = 0; round < 3; round++) {
    double t0 = now();
    struct hg_load_error err;
    struct hg_graph *g = hg_graph_load(path, &err);
    struct hg_dominators *d = NULL;
    if (!g || hg_dominators_compute(g, &d)) return 1;
    uint32_t nc = g->class_count + 1, top[20];
    uint64_t *cnt = calloc(nc, 8), *bytes = calloc(nc, 8), *ret = calloc(nc, 8);
    if (!cnt || !bytes || !ret || hg_class_retained(g, d, cnt, bytes, ret)) return 1;
    hg_dominators_top(d, 20, top);
    free(cnt);
    free(bytes);
    free(ret);
    hg_dominators_free(d);
    hg_graph_free(g);
    double t1 = now();
    g = hg_graph_load(path, &err);
    struct hg_fleet_summary *s = NULL;
    uint8_t *buf = NULL;
    if (!g || hg_fleet_summarize(g, NULL, &s) || hg_fleet_summary_encode(s, &buf, &len)) return 1;
    free(buf);
    hg_fleet_summary_free(s);
    hg_graph_free(g);
    double t2 = now();
    if (t1 - t0 < best_top) best_top = t1 - t0;
    if (t2 - t1 < best_sum) best_sum = t2 - t1;
  }
  printf("fleet summary in process (CPU time, best of 3): summary %.0f ms vs top's work %.0f ms: %.2fx "
         "(goal <= 1.2x); summary %zu bytes\n",
         best_sum * 1e3, best_top * 1e3, best_sum / best_top, len);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "compare")) return compare(argv[2]);
  if (argc == 4 && !strcmp(argv[1], "snapshot")) return snapshot(argv[2], (uint32_t)strtoul(argv[3], NULL, 10)) ? 1 : 0;
  if (argc == 3 && !strcmp(argv[1], "issues")) return issues((uint32_t)strtoul(argv[2], NULL, 10));
  fprintf(stderr, "usage: bench_fleet snapshot PATH NODES | compare PATH | issues N\n");
  return 2;
}
