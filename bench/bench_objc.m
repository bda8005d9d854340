/*
 * bench_objc.m — `make bench` figures for the Objective-C classifier: the
 * cost of classifying a heap of 100 k Objective-C objects (GNU runtime,
 * gobjc), as the capture time with the ObjC classifier against the same
 * capture without it (classifier list swapped through the test hook
 * _hg_classifiers_override), printed as a ratio. Goal: <= 1.10.
 *
 * Usage: bench_objc [dir] [objects]   (suspend mode, median of 21 runs each,
 * runs alternate so drift hits both sides alike). Environment:
 * HG_BENCH_HELPERS=n (hg_options.helpers), HG_BENCH_MODE=fork (fork mode
 * instead of suspend), HG_BENCH_CONFIG=without|classes|with (runs that
 * configuration alone, e.g. under a profiler).
 */
#include <objc/Object.h>
#include <objc/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/classify.h"
#include "capture/objc.h"
#include "heapgraph.h"

@interface BNode : Object {
@public
  id next;
  id peer;
  long value;
}
@end
@implementation BNode
@end

@interface BLeaf : BNode {
@public
  id payload;
  id slots[2];
}
@end
@implementation BLeaf
@end

@interface BBox : Object {
@public
  double x, y;
}
@end
@implementation BBox
@end

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int fork_mode(void) { /* HG_BENCH_MODE=fork */
  const char *mode = getenv("HG_BENCH_MODE");
  return mode && !strcmp(mode, "fork");
}

static int capture_once(const char *path, struct hg_capture_stats *st) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = fork_mode() ? HG_MODE_FORK : HG_MODE_SUSPEND;
  if (getenv("HG_BENCH_HELPERS")) o.helpers = (uint32_t)atoi(getenv("HG_BENCH_HELPERS"));
  o.stats = st;
  return hg_capture(path, &o);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build";
  unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 100000u;
  enum { RUNS = 21 }; /* the pipelined scan swings with scheduling: many pairs */
  /* the object graph: chains of nodes, leaves with payload boxes */
  Class cn = objc_getClass("BNode"), cl = objc_getClass("BLeaf"), cb = objc_getClass("BBox");
  id *all = malloc(n * sizeof(id));
  if (!all) return 1;
  for (unsigned i = 0; i < n; i++) {
    unsigned k = i % 4;
    all[i] = class_createInstance(k == 3 ? cb : k == 2 ? cl : cn, 0);
  }
  for (unsigned i = 0; i < n; i++) {
    if (i % 4 == 3) continue;
    BNode *x = all[i];
    x->next = all[(i + 1) % n];
    x->peer = all[(i * 7919u + 13) % n];
    if (i % 4 == 2) {
      BLeaf *l = all[i];
      l->payload = all[(i + 1) % n];
      l->slots[0] = all[(i + 5) % n];
    }
  }
  char path[512];
  snprintf(path, sizeof path, "%s/bench_objc_%d.hgsnap", dir, (int)getpid());
  static const struct hg_classifier *const with[] = {&_hg_classifier_objc, NULL};
  static const struct hg_classifier *const without[] = {NULL};
  static struct hg_classifier nodes_only;
  nodes_only = _hg_classifier_objc;
  nodes_only.edge = NULL; /* classes only: edges stay untyped */
  nodes_only.edge_identify = NULL;
  nodes_only.edge_map = NULL;
  nodes_only.edge_of = NULL;
  static const struct hg_classifier *const classes_only[] = {&nodes_only, NULL};
  /* per configuration (without, classes only, with) and phase */
  enum { WITHOUT, CLASSES, WITH, NCFG };
  enum { TOTAL, WALK, SCAN, WRITE, REST, NPH };
  static const char *const phase_name[NPH] = {"total", "walk", "scan", "write", "prepare+rest"};
  const struct hg_classifier *const *cfg[NCFG] = {without, classes_only, with};
  static uint64_t t[NCFG][NPH][RUNS];
  struct hg_capture_stats st;
  /* HG_BENCH_CONFIG=without|classes|with: that one alone (for profilers) */
  const char *only = getenv("HG_BENCH_CONFIG");
  int k0 = 0, k1 = NCFG;
  if (only) {
    k0 = !strcmp(only, "without") ? WITHOUT : !strcmp(only, "classes") ? CLASSES : WITH;
    k1 = k0 + 1;
  }
  for (int r = -1; r < RUNS; r++) { /* r = -1: warm-up; configurations alternate */
    for (int k = k0; k < k1; k++) {
      _hg_classifiers_override = cfg[k];
      if (capture_once(path, &st)) { fprintf(stderr, "bench_objc: capture failed\n"); return 1; }
      if (r < 0) continue;
      t[k][TOTAL][r] = st.total_ns;
      t[k][WALK][r] = st.walk_ns;
      t[k][SCAN][r] = st.scan_ns;
      t[k][WRITE][r] = st.write_ns;
      uint64_t parts = st.walk_ns + st.scan_ns + st.write_ns;
      t[k][REST][r] = st.total_ns > parts ? st.total_ns - parts : 0;
    }
  }
  _hg_classifiers_override = NULL;
  /* what the last capture (with the classifier) found */
  struct hg_graph *g = hg_graph_load(path, NULL);
  uint64_t objc_nodes = 0, named = g ? g->named_count : 0;
  for (uint32_t i = 0; g && i < g->node_count; i++)
    if (g->node_class[i] && g->classes[g->node_class[i] - 1].kind == HG_CLASS_OBJC) objc_nodes++;
  uint64_t nodes = g ? g->node_count : 0, edges = g ? g->edge_count : 0;
  hg_graph_free(g);
  unlink(path);
  if (only) {
    qsort(t[k0][TOTAL], RUNS, 8, cmp_u64);
    printf("bench_objc: %s only: capture median %.2f ms\n", only, (double)t[k0][TOTAL][RUNS / 2] / 1e6);
    return 0;
  }
  /* each run's with/without pair ran back to back: the median of the pairs'
   * ratios cancels the machine's drift (a shared VM swings 2x in seconds)
   * better than the ratio of the two medians */
  double pair[RUNS], pair_cls[RUNS];
  for (int r = 0; r < RUNS; r++) {
    pair[r] = (double)t[WITH][TOTAL][r] / (double)t[WITHOUT][TOTAL][r];
    pair_cls[r] = (double)t[CLASSES][TOTAL][r] / (double)t[WITHOUT][TOTAL][r];
  }
  qsort(pair, RUNS, sizeof *pair, cmp_double);
  qsort(pair_cls, RUNS, sizeof *pair_cls, cmp_double);
  double med[NCFG][NPH];
  for (int k = 0; k < NCFG; k++)
    for (int ph = 0; ph < NPH; ph++) {
      qsort(t[k][ph], RUNS, 8, cmp_u64);
      med[k][ph] = (double)t[k][ph][RUNS / 2] / 1e6;
    }
  printf("bench_objc: fastest runs: with %.1f ms, without %.1f ms, ratio %.3f\n",
         (double)t[WITH][TOTAL][0] / 1e6, (double)t[WITHOUT][TOTAL][0] / 1e6,
         (double)t[WITH][TOTAL][0] / (double)t[WITHOUT][TOTAL][0]);
  printf("bench_objc: %u ObjC objects allocated; snapshot: %llu nodes, %llu classified objc, "
         "%llu edges, %llu named ivar edges\n",
         n, (unsigned long long)nodes, (unsigned long long)objc_nodes, (unsigned long long)edges,
         (unsigned long long)named);
  printf("bench_objc: median of %d (ms)     without  classes  with\n", RUNS);
  for (int ph = 0; ph < NPH; ph++)
    printf("bench_objc:   %-18s %8.2f %8.2f %8.2f\n", phase_name[ph], med[WITHOUT][ph],
           med[CLASSES][ph], med[WITH][ph]);
  printf("bench_objc: capture (%s, median of %d): with objc classifier %.1f ms, without "
         "%.1f ms, ratio of medians %.3f\n", fork_mode() ? "fork" : "suspend",
         RUNS, med[WITH][TOTAL], med[WITHOUT][TOTAL],
         med[WITH][TOTAL] / med[WITHOUT][TOTAL]);
  printf("bench_objc: classification cost %.1f ns per object; classes only (no typed edges): "
         "median pair ratio %.3f\n", (med[WITH][TOTAL] - med[WITHOUT][TOTAL]) * 1e6 /
         (double)(objc_nodes ? objc_nodes : 1), pair_cls[RUNS / 2]);
  printf("bench_objc: with / without, median of %d back-to-back pairs: ratio %.3f "
         "(quartiles %.3f .. %.3f; goal <= 1.10)\n", RUNS, pair[RUNS / 2], pair[RUNS / 4],
         pair[RUNS - 1 - RUNS / 4]);
  for (unsigned i = 0; i < n; i++) object_dispose(all[i]);
  free(all);
  return 0;
}
