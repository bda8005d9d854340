/*
 * cmd_top.c — `heapgraph top FILE [-n N] [--json] [--mangled]`: the nodes
 * and the classes that retain the most memory (dominator tree over the
 * roots; weak and unowned edges do not retain).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  The N (default 20) nodes and classes with the biggest retained size: the\n"
    "  bytes that would be freed if they went away (dominator tree from the\n"
    "  roots; weak and unowned references do not retain). A class's retained\n"
    "  size does not count a node twice when it sits under another of its class.\n";

struct crow {
  uint32_t id;
  uint64_t count, bytes, retained;
};

static int by_retained(const void *a, const void *b) {
  const struct crow *x = a, *y = b;
  if (x->retained != y->retained) return x->retained > y->retained ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

int cmd_top(int argc, char **argv) {
  struct acli_snap s;
  /* top shows no edge: their offsets and field names are not kept. */
  int st = acli_open_flags(&s, "top", "FILE", "nodes and classes shown (default 20)", about, NULL,
                           argc, argv, 1, HG_LOAD_NO_EDGE_OFFSETS | HG_LOAD_NO_EDGE_NAMES);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = acli_limit(&s.a, 20);
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  uint32_t nc = g->class_count + 1;
  uint32_t *top = malloc(((size_t)k + 1) * sizeof *top);
  struct crow *rows = calloc(nc, sizeof *rows);
  uint64_t *cnt = calloc(nc, 8), *bytes = calloc(nc, 8), *ret = calloc(nc, 8);
  if (!rc && (!top || !rows || !cnt || !bytes || !ret)) rc = HG_ENOMEM;
  if (!rc) rc = hg_class_retained(g, d, cnt, bytes, ret);
  if (rc) {
    fprintf(stderr, "heapgraph top: %s\n", hg_error_string(rc));
    st = 1;
    goto out;
  }
  uint32_t nt = hg_dominators_top(d, k, top), nrows = 0;
  for (uint32_t c = 0; c < nc; c++)
    if (cnt[c]) rows[nrows++] = (struct crow){c, cnt[c], bytes[c], ret[c]};
  qsort(rows, nrows, sizeof *rows, by_retained);
  if (nrows > k) nrows = k;
  uint64_t total = 0;
  for (uint32_t v = 0; v < g->node_count; v++) total += g->node_size[v];
  if (s.a.json) {
    if (ajson_top(stdout, g, names, d, top, nt, cnt, bytes, ret, k)) {
      fprintf(stderr, "heapgraph top: %s\n", hg_error_string(HG_ENOMEM));
      st = 1;
      goto out;
    }
    printf("\n");
  } else {
    char b1[32], b2[32];
    printf("reachable: %" PRIu32 " of %" PRIu32 " nodes, %s of %s\n\n", d->reachable_count,
           g->node_count, cli_bytes(d->reachable_bytes, b1, sizeof b1),
           cli_bytes(total, b2, sizeof b2));
    printf("%14s %12s  %-18s %s\n", "retained", "self", "address", "class");
    for (uint32_t i = 0; i < nt; i++) {
      uint32_t v = top[i];
      printf("%14" PRIu64 " %12" PRIu64 "  0x%-16" PRIx64 " %s\n", d->retained[v], g->node_size[v],
             g->node_addr[v], cli_text(acli_label(g, names, v)));
    }
    printf("\n%14s %10s %14s  %s\n", "retained", "count", "bytes", "class");
    for (uint32_t i = 0; i < nrows; i++)
      printf("%14" PRIu64 " %10" PRIu64 " %14" PRIu64 "  %s\n", rows[i].retained, rows[i].count,
             rows[i].bytes, rows[i].id ? cli_text(names[rows[i].id]) : "(unclassified)");
  }
  st = 0;
out:
  free(top);
  free(rows);
  free(cnt);
  free(bytes);
  free(ret);
  hg_dominators_free(d);
  acli_close(&s);
  return st;
}
