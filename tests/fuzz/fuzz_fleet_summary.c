/*
 * fuzz_fleet_summary.c — libFuzzer target for the fleet summary reader
 * (graph/fleet_codec.c): any byte string goes through
 * hg_fleet_summary_decode(). A summary it accepts must survive everything
 * a server does with one: encode again and decode to the same counts, its
 * JSON, a set of summaries with issues, class growth and the merged tree.
 * Must never crash, hang or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "graph/fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(void *ctx, const void *p, size_t n) {
  (void)ctx;
  (void)p;
  (void)n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct hg_fleet_summary *s = NULL, *t = NULL;
  struct hg_load_error err;
  if (hg_fleet_summary_decode(data, size, &s, &err)) return 0;
  uint8_t *buf = NULL;
  size_t len = 0;
  if (!hg_fleet_summary_encode(s, &buf, &len)) {
    if (hg_fleet_summary_decode(buf, len, &t, &err)) abort(); /* what we write, we read */
    if (t->sig_count > s->sig_count || t->class_count > s->class_count) abort();
    hg_fleet_summary_free(t);
    free(buf);
  }
  hg_fleet_summary_json(s, discard, NULL);
  struct hg_fleet *f = hg_fleet_new();
  if (f && !hg_fleet_add(f, s) && !hg_fleet_add(f, s)) {
    struct hg_fleet_issues *r = NULL;
    if (!hg_fleet_issues(f, NULL, &r))
      for (uint32_t i = 0; i < r->count; i++) hg_fleet_issue_json(r, i, discard, NULL);
    hg_fleet_issues_free(r);
    struct hg_fleet_growth *g = NULL;
    if (!hg_fleet_class_growth(f, NULL, NULL, &g)) hg_fleet_growth_json(g, 100, discard, NULL);
    hg_fleet_growth_free(g);
    struct hg_fleet_tree *tr = NULL;
    if (!hg_fleet_tree(f, NULL, &tr)) hg_fleet_tree_json(tr, discard, NULL);
    hg_fleet_tree_free(tr);
  }
  hg_fleet_free(f);
  hg_fleet_summary_free(s);
  return 0;
}
