/*
 * bench_objc.m — `make bench` figures for the Objective-C classifier: the
 * cost of classifying a heap of 100 k Objective-C objects (GNU runtime,
 * gobjc), as the capture time with the ObjC classifier against the same
 * capture without it (classifier list swapped through the test hook
 * _hg_classifiers_override), printed as a ratio. Goal: <= 1.10.
 *
 * Usage: bench_objc [dir] [objects]   (suspend mode, median of 21 runs each,
 * runs alternate so drift hits both sides alike).
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

static int capture_once(const char *path, struct hg_capture_stats *st) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = HG_MODE_SUSPEND;
  if (getenv("HG_BENCH_HELPERS")) o.helpers = (uint32_t)atoi(getenv("HG_BENCH_HELPERS"));
  o.stats = st;
  return hg_capture(path, &o);
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
  static const struct hg_classifier *const classes_only[] = {&nodes_only, NULL};
  uint64_t t_with[RUNS], t_without[RUNS], s_with[RUNS], s_without[RUNS], t_cls[RUNS];
  struct hg_capture_stats st;
  for (int r = -1; r < RUNS; r++) { /* r = -1: warm-up */
    _hg_classifiers_override = without;
    if (capture_once(path, &st)) { fprintf(stderr, "bench_objc: capture failed\n"); return 1; }
    if (r >= 0) { t_without[r] = st.total_ns; s_without[r] = st.scan_ns + st.write_ns; }
    _hg_classifiers_override = classes_only;
    if (capture_once(path, &st)) { fprintf(stderr, "bench_objc: capture failed\n"); return 1; }
    if (r >= 0) t_cls[r] = st.total_ns;
    _hg_classifiers_override = with;
    if (capture_once(path, &st)) { fprintf(stderr, "bench_objc: capture failed\n"); return 1; }
    if (r >= 0) { t_with[r] = st.total_ns; s_with[r] = st.scan_ns + st.write_ns; }
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
  qsort(t_with, RUNS, 8, cmp_u64);
  qsort(t_without, RUNS, 8, cmp_u64);
  qsort(s_with, RUNS, 8, cmp_u64);
  qsort(t_cls, RUNS, 8, cmp_u64);
  qsort(s_without, RUNS, 8, cmp_u64);
  printf("bench_objc: fastest runs: with %.1f ms, without %.1f ms, ratio %.3f\n",
         (double)t_with[0] / 1e6, (double)t_without[0] / 1e6,
         (double)t_with[0] / (double)t_without[0]);
  double w = (double)t_with[RUNS / 2] / 1e6, wo = (double)t_without[RUNS / 2] / 1e6;
  double sw = (double)s_with[RUNS / 2] / 1e6, swo = (double)s_without[RUNS / 2] / 1e6;
  printf("bench_objc: %u ObjC objects allocated; snapshot: %llu nodes, %llu classified objc, "
         "%llu edges, %llu named ivar edges\n",
         n, (unsigned long long)nodes, (unsigned long long)objc_nodes, (unsigned long long)edges,
         (unsigned long long)named);
  printf("bench_objc: capture (suspend, median of %d): with objc classifier %.1f ms, without "
         "%.1f ms, ratio %.3f (goal <= 1.10)\n", RUNS, w, wo, w / wo);
  printf("bench_objc: scan+write part: with %.1f ms, without %.1f ms, ratio %.3f; "
         "classification cost %.1f ns per object\n", sw, swo, sw / swo,
         (w - wo) * 1e6 / (double)(objc_nodes ? objc_nodes : 1));
  double c = (double)t_cls[RUNS / 2] / 1e6;
  printf("bench_objc: classes only (no typed edges): %.1f ms, ratio %.3f\n", c, c / wo);
  for (unsigned i = 0; i < n; i++) object_dispose(all[i]);
  free(all);
  return 0;
}
