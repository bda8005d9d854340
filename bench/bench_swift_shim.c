/*
 * bench_swift_shim.c — the C side of `make bench`'s Swift figure
 * (bench/bench_swift.swift makes 1 M Swift objects, then calls this): the
 * capture pause with the built-in classifier list (C++, ObjC, Swift), with
 * the Swift classifier minus its edge naming ("classes only"), and without
 * the Swift classifier, swapped through the test hook
 * _hg_classifiers_override, in rotating order, suspend mode. Prints the
 * medians and the median of the ratios to the "without" capture of the
 * same round. Goal: <= 1.10.
 *
 * For instruction counts (callgrind, independent of the machine's load):
 * HG_BENCH_SWIFT_ONLY=with|classes|without makes one capture of that
 * configuration and nothing else; HG_BENCH_SWIFT_HELPERS=0 keeps the
 * frozen part on one thread (a spinning helper would count too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/classify/classify.h"
#include "heapgraph.h"

extern const struct hg_classifier _hg_classifier_swift;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double capture_ms(const char *path, const struct hg_classifier *const *list,
                         struct hg_capture_stats *st) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = HG_MODE_SUSPEND;
  o.stats = st;
  const char *h = getenv("HG_BENCH_SWIFT_HELPERS");
  if (h && *h) o.helpers = (uint32_t)strtoul(h, NULL, 10);
  _hg_classifiers_override = list;
  int rc = hg_capture(path, &o);
  _hg_classifiers_override = NULL;
  if (rc) {
    fprintf(stderr, "bench-swift: hg_capture: %s\n", hg_error_string(rc));
    exit(1);
  }
  return (double)(st->pause_ns) / 1e6;
}

#define RUNS 15

static void report(const char *what, double *a, double *b, double *r) {
  qsort(a, RUNS, sizeof a[0], cmp_double);
  qsort(r, RUNS, sizeof r[0], cmp_double);
  printf("bench-swift: %s / without: pause median %.1f ms vs %.1f ms; median of pairs %.3f "
         "(quartiles %.3f-%.3f), of medians %.3f (goal <= 1.10)\n",
         what, a[RUNS / 2], b[RUNS / 2], r[RUNS / 2], r[RUNS / 4], r[3 * RUNS / 4],
         a[RUNS / 2] / b[RUNS / 2]);
}

int bench_swift_run(const char *path, long objects) {
  /* "classes": the Swift classifier without its edge naming */
  static struct hg_classifier classes;
  classes = _hg_classifier_swift;
  classes.edge_identify = NULL;
  classes.edge_map = NULL;
  classes.edge_of = NULL;
  /* "with" is the built-in list (classify.c); the other two are it with
   * the Swift classifier swapped for "classes" or left out */
  const struct hg_classifier *const *with = _hg_classifiers;
  const struct hg_classifier *cls[16], *without[16];
  size_t nc = 0, nw = 0;
  for (size_t i = 0; _hg_classifiers[i] && nc < 15; i++) {
    int sw = _hg_classifiers[i] == &_hg_classifier_swift;
    cls[nc++] = sw ? &classes : _hg_classifiers[i];
    if (!sw) without[nw++] = _hg_classifiers[i];
  }
  cls[nc] = without[nw] = NULL;
  double a[RUNS], c[RUNS], b[RUNS], ra[RUNS], rc[RUNS];
  struct hg_capture_stats st;
  uint64_t nodes = 0;
  const char *only = getenv("HG_BENCH_SWIFT_ONLY");
  if (only && *only) {
    const struct hg_classifier *const *list = !strcmp(only, "with")      ? with
                                              : !strcmp(only, "classes") ? cls
                                                                         : without;
    double ms = capture_ms(path, list, &st);
    printf("bench-swift: one capture, %s: %.1f ms, %llu nodes, %llu edges\n", only, ms,
           (unsigned long long)st.nodes, (unsigned long long)st.edges);
    return 0;
  }
  capture_ms(path, with, &st); /* warm up: page in all */
  capture_ms(path, cls, &st);
  capture_ms(path, without, &st);
  for (int i = 0; i < RUNS; i++) {
    /* rotate the order so that drift hits all alike */
    for (int k = 0; k < 3; k++) {
      switch ((i + k) % 3) {
      case 0: a[i] = capture_ms(path, with, &st); break;
      case 1: c[i] = capture_ms(path, cls, &st); break;
      default: b[i] = capture_ms(path, without, &st); break;
      }
    }
    nodes = st.nodes;
    ra[i] = a[i] / b[i];
    rc[i] = c[i] / b[i];
  }
  qsort(b, RUNS, sizeof b[0], cmp_double);
  printf("bench-swift: %ld Swift objects, %llu nodes, suspend mode, %d rounds\n", objects,
         (unsigned long long)nodes, RUNS);
  report("classes only (no edge naming)", c, b, rc);
  report("with the Swift classifier", a, b, ra);
  return 0;
}
