/*
 * bench_objc.m — `make bench` figures for the Objective-C classifier: the
 * cost of classifying a heap of 100 k Objective-C objects (GNU runtime,
 * gobjc), as the capture time with the ObjC classifier against the same
 * capture without it (classifier list swapped through the test hook
 * _hg_classifiers_override), printed as a ratio. Goal: <= 1.10.
 *
 * Usage: bench_objc [dir] [objects]   (suspend mode; HG_BENCH_PROCS
 * processes, default 5, each with its own address-space layout, each
 * running the three configurations 21 times, alternating so that drift
 * hits them alike). Environment: HG_BENCH_HELPERS=n (hg_options.helpers),
 * HG_BENCH_MODE=fork (fork mode instead of suspend),
 * HG_BENCH_CONFIG=without|classes|with (runs that configuration alone in
 * this process, e.g. under a profiler).
 */
#include <objc/Object.h>
#include <objc/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/classify/classify.h"
#include "capture/classify/objc.h"
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

/* per configuration (without, classes only, with) and phase */
enum { WITHOUT, CLASSES, WITH, NCFG };
enum { TOTAL, WALK, SCAN, WRITE, REST, NPH };
enum { RUNS = 21 };    /* the pipelined scan swings with scheduling: many pairs */
enum { MAXPROCS = 16 };

/* What one process measured: every run's phases, and what the last
 * capture (with the classifier) found. */
struct result {
  uint64_t t[NCFG][NPH][RUNS];
  uint64_t nodes, objc_nodes, edges, named;
};

/* Builds the object graph (chains of nodes, leaves with payload boxes),
 * then captures it RUNS times per configuration (only `only`, when set),
 * alternating; 0 or 1. */
static int measure(const char *dir, unsigned n, const char *only, struct result *res) {
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
  nodes_only.edge_identify = NULL; /* classes only: edges stay untyped */
  nodes_only.edge_map = NULL;
  nodes_only.edge_of = NULL;
  static const struct hg_classifier *const classes_only[] = {&nodes_only, NULL};
  const struct hg_classifier *const *cfg[NCFG] = {without, classes_only, with};
  struct hg_capture_stats st;
  int k0 = 0, k1 = NCFG;
  if (only) {
    k0 = !strcmp(only, "without") ? WITHOUT : !strcmp(only, "classes") ? CLASSES : WITH;
    k1 = k0 + 1;
  }
  memset(res, 0, sizeof *res);
  for (int r = -1; r < RUNS; r++) { /* r = -1: warm-up; configurations alternate */
    for (int k = k0; k < k1; k++) {
      _hg_classifiers_override = cfg[k];
      if (capture_once(path, &st)) {
        fprintf(stderr, "bench_objc: capture failed\n");
        return 1;
      }
      if (r < 0) continue;
      res->t[k][TOTAL][r] = st.total_ns;
      res->t[k][WALK][r] = st.walk_ns;
      res->t[k][SCAN][r] = st.scan_ns;
      res->t[k][WRITE][r] = st.write_ns;
      uint64_t parts = st.walk_ns + st.scan_ns + st.write_ns;
      res->t[k][REST][r] = st.total_ns > parts ? st.total_ns - parts : 0;
    }
  }
  _hg_classifiers_override = NULL;
  struct hg_graph *g = hg_graph_load(path, NULL);
  for (uint32_t i = 0; g && i < g->node_count; i++)
    if (g->node_class[i] && g->classes[g->node_class[i] - 1].kind == HG_CLASS_OBJC) res->objc_nodes++;
  res->nodes = g ? g->node_count : 0;
  res->edges = g ? g->edge_count : 0;
  res->named = g ? g->named_count : 0;
  hg_graph_free(g);
  unlink(path);
  for (unsigned i = 0; i < n; i++) object_dispose(all[i]);
  free(all);
  return 0;
}

/* Runs the measurement in a fresh process (exec of this program, so with
 * its own address-space layout) and reads its result; 0 or 1. */
static int measure_in_child(char **argv, struct result *res) {
  int fd[2];
  if (pipe(fd)) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(fd[0]);
    char buf[16];
    snprintf(buf, sizeof buf, "%d", fd[1]);
    setenv("HG_BENCH_CHILD", buf, 1);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(fd[1]);
  size_t got = 0;
  while (got < sizeof *res) {
    ssize_t k = read(fd[0], (char *)res + got, sizeof *res - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == sizeof *res && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build";
  unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 100000u;
  static struct result res[MAXPROCS];
  /* a child of the run below: measure, hand the result over, done */
  const char *child = getenv("HG_BENCH_CHILD");
  if (child) {
    if (measure(dir, n, NULL, &res[0])) return 1;
    int fd = atoi(child);
    const char *p = (const char *)&res[0];
    for (size_t put = 0; put < sizeof res[0];) {
      ssize_t k = write(fd, p + put, sizeof res[0] - put);
      if (k <= 0) return 1;
      put += (size_t)k;
    }
    return 0;
  }
  /* HG_BENCH_CONFIG=without|classes|with: that one alone (for profilers) */
  const char *only = getenv("HG_BENCH_CONFIG");
  if (only) {
    if (measure(dir, n, only, &res[0])) return 1;
    int k = !strcmp(only, "without") ? WITHOUT : !strcmp(only, "classes") ? CLASSES : WITH;
    qsort(res[0].t[k][TOTAL], RUNS, 8, cmp_u64);
    printf("bench_objc: %s only: capture median %.2f ms\n", only, (double)res[0].t[k][TOTAL][RUNS / 2] / 1e6);
    return 0;
  }
  /* Several processes: the address-space layout (ASLR) alone moves one
   * configuration's scan by up to 15 % on this VM, the same way for all
   * of a process's runs, so one process's figure is one layout's. */
  int procs = getenv("HG_BENCH_PROCS") ? atoi(getenv("HG_BENCH_PROCS")) : 5;
  if (procs < 1) procs = 1;
  if (procs > MAXPROCS) procs = MAXPROCS;
  for (int q = 0; q < procs; q++)
    if (measure_in_child(argv, &res[q])) {
      fprintf(stderr, "bench_objc: measuring process %d failed\n", q);
      return 1;
    }
  /* each run's with/without pair ran back to back: the median of the pairs'
   * ratios cancels the machine's drift (a shared VM swings 2x in seconds)
   * better than the ratio of the two medians */
  static double pair[MAXPROCS * RUNS], pair_cls[MAXPROCS * RUNS], v[MAXPROCS * RUNS];
  double proc_med[MAXPROCS];
  int np = 0;
  for (int q = 0; q < procs; q++) {
    for (int r = 0; r < RUNS; r++) {
      v[r] = (double)res[q].t[WITH][TOTAL][r] / (double)res[q].t[WITHOUT][TOTAL][r];
      pair[np] = v[r];
      pair_cls[np++] = (double)res[q].t[CLASSES][TOTAL][r] / (double)res[q].t[WITHOUT][TOTAL][r];
    }
    proc_med[q] = median_of(v, RUNS);
  }
  qsort(pair, (size_t)np, sizeof *pair, cmp_double);
  double med[NCFG][NPH];
  for (int k = 0; k < NCFG; k++)
    for (int ph = 0; ph < NPH; ph++) {
      for (int q = 0; q < procs; q++)
        for (int r = 0; r < RUNS; r++) v[q * RUNS + r] = (double)res[q].t[k][ph][r] / 1e6;
      med[k][ph] = median_of(v, np);
    }
  static const char *const phase_name[NPH] = {"total", "walk", "scan", "write", "prepare+rest"};
  const struct result *last = &res[procs - 1];
  printf("bench_objc: %u ObjC objects allocated; snapshot: %llu nodes, %llu classified objc, "
         "%llu edges, %llu named ivar edges\n",
         n, (unsigned long long)last->nodes, (unsigned long long)last->objc_nodes,
         (unsigned long long)last->edges, (unsigned long long)last->named);
  printf("bench_objc: %d processes x %d runs (%s), medians (ms)  without  classes  with\n", procs,
         RUNS, fork_mode() ? "fork" : "suspend");
  for (int ph = 0; ph < NPH; ph++)
    printf("bench_objc:   %-18s %8.2f %8.2f %8.2f\n", phase_name[ph], med[WITHOUT][ph],
           med[CLASSES][ph], med[WITH][ph]);
  printf("bench_objc: ratio of medians %.3f; classification cost %.1f ns per object; classes only "
         "(no typed edges): median pair ratio %.3f\n", med[WITH][TOTAL] / med[WITHOUT][TOTAL],
         (med[WITH][TOTAL] - med[WITHOUT][TOTAL]) * 1e6 /
             (double)(last->objc_nodes ? last->objc_nodes : 1),
         median_of(pair_cls, np));
  printf("bench_objc: per process, median pair ratio:");
  for (int q = 0; q < procs; q++) printf(" %.3f", proc_med[q]);
  printf("\n");
  printf("bench_objc: with / without, median of %d back-to-back pairs: ratio %.3f "
         "(quartiles %.3f .. %.3f; goal <= 1.10)\n", np, pair[np / 2], pair[np / 4],
         pair[np - 1 - np / 4]);
  return 0;
}
