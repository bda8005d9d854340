/*
 * cmd_diff.c — `heapgraph diff OLD NEW [-n N] [--json]`: per-class count and
 * byte deltas between two snapshots, biggest growth first (addresses do not
 * match across snapshots, so only aggregates are compared).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Per-class count and byte changes from OLD to NEW, biggest growth first\n"
    "  (N rows, default 30; classes matched by name and kind; \"new\" marks\n"
    "  classes absent from OLD).\n";

static void name_of(const struct hg_class_delta *c, int mangled, char **out) {
  *out = NULL;
  if (c->name && !mangled && c->kind == HG_CLASS_CXX) *out = cli_demangle_type(c->name);
}

int cmd_diff(int argc, char **argv) {
  struct acli a;
  int st = acli_parse(&a, "diff", "OLD NEW", "rows shown (default 30)", about, NULL, argc, argv);
  if (st >= 0) return st;
  uint32_t k = a.limit < 0 ? 30 : (uint32_t)a.limit;
  struct hg_graph *old = cli_load(argv[1], 0), *nw = old ? cli_load(argv[2], 0) : NULL;
  if (!old || !nw) {
    hg_graph_free(old);
    return 1;
  }
  struct hg_diff *d = NULL;
  int rc = hg_diff_classes(old, nw, &d);
  if (rc) {
    fprintf(stderr, "heapgraph diff: %s\n", hg_error_string(rc));
    hg_graph_free(old);
    hg_graph_free(nw);
    return 1;
  }
  int64_t dc = (int64_t)(d->new_count - d->old_count), db = (int64_t)(d->new_bytes - d->old_bytes);
  if (a.json) {
    ajson_diff(stdout, d, 0, k, a.mangled, 0);
    printf("\n");
  } else {
    printf("total: %+" PRId64 " blocks, %+" PRId64 " B (%" PRIu64 " -> %" PRIu64 " B)\n\n%14s %10s %14s %10s  %s\n",
           dc, db, d->old_bytes, d->new_bytes, "bytes", "count", "new bytes", "new count", "class");
    for (uint32_t i = 0; i < d->count && i < k; i++) {
      const struct hg_class_delta *c = &d->classes[i];
      char *dem;
      name_of(c, a.mangled, &dem);
      const char *name = dem ? dem : c->name;
      int64_t cb = (int64_t)(c->new_bytes - c->old_bytes), cc = (int64_t)(c->new_count - c->old_count);
      printf("%+14" PRId64 " %+10" PRId64 " %14" PRIu64 " %10" PRIu64 "  %s%s\n", cb, cc, c->new_bytes, c->new_count,
             name ? cli_text(name) : "(unclassified)", c->old_count ? "" : "  (new)");
      free(dem);
    }
    if (d->count > k) printf("… %" PRIu32 " more classes (-n)\n", d->count - k);
  }
  hg_diff_free(d);
  hg_graph_free(old);
  hg_graph_free(nw);
  return 0;
}
