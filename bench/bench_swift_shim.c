/*
 * bench_swift_shim.c — the C side of `make bench`'s Swift figure
 * (bench/bench_swift.swift makes 1 M Swift objects, then calls this): the
 * capture time with the built-in classifier list (C++, ObjC, Swift)
 * against the same list without the Swift classifier, swapped through the
 * test hook _hg_classifiers_override, alternating, in suspend mode. Prints
 * the medians of each and the median of the back-to-back pair ratios.
 * Goal: <= 1.10.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/classify/classify.h"
#include "heapgraph.h"

extern const struct hg_classifier _hg_classifier_cxx, _hg_classifier_objc, _hg_classifier_swift;

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

int bench_swift_run(const char *path, long objects) {
  static const struct hg_classifier *const with[] = {&_hg_classifier_cxx, &_hg_classifier_objc,
                                                     &_hg_classifier_swift, NULL};
  static const struct hg_classifier *const without[] = {&_hg_classifier_cxx, &_hg_classifier_objc,
                                                        NULL};
  double a[RUNS], b[RUNS], r[RUNS];
  struct hg_capture_stats st;
  uint64_t nodes = 0;
  capture_ms(path, with, &st); /* warm up: page in both */
  capture_ms(path, without, &st);
  for (int i = 0; i < RUNS; i++) {
    /* alternate the order so that drift hits both alike */
    if (i & 1) {
      b[i] = capture_ms(path, without, &st);
      a[i] = capture_ms(path, with, &st);
    } else {
      a[i] = capture_ms(path, with, &st);
      b[i] = capture_ms(path, without, &st);
    }
    nodes = st.nodes;
    r[i] = a[i] / b[i];
  }
  qsort(a, RUNS, sizeof a[0], cmp_double);
  qsort(b, RUNS, sizeof b[0], cmp_double);
  qsort(r, RUNS, sizeof r[0], cmp_double);
  printf("bench-swift: %ld Swift objects, %llu nodes, suspend mode, %d pairs\n", objects,
         (unsigned long long)nodes, RUNS);
  printf("bench-swift: capture pause median: with the Swift classifier %.1f ms, without %.1f ms\n",
         a[RUNS / 2], b[RUNS / 2]);
  printf("bench-swift: with / without: median of pairs %.3f (quartiles %.3f-%.3f), of medians "
         "%.3f (goal <= 1.10)\n",
         r[RUNS / 2], r[RUNS / 4], r[3 * RUNS / 4], a[RUNS / 2] / b[RUNS / 2]);
  return 0;
}
