/*
 * cmd_show.c — `heapgraph show FILE ADDR [-n N] [--json]`: one node — size,
 * class, flags, heap, containing region, roots pointing at it, and its
 * incoming and outgoing references.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_util.h"
#include "tools/symbolize.h"

static const char about[] =
    "  One node (ADDR: an address inside it, #INDEX or a DevTools @ID): size,\n"
    "  class, region, roots, and up to N (default 50) incoming and outgoing\n"
    "  references.\n";

static void edge_row(const struct hg_graph *g, char **names, uint32_t e, uint32_t other, int out) {
  const char *f = hg_graph_edge_field(g, e);
  printf("  %s+0x%-6" PRIx32 " %-12s %-16s ", out ? "" : "from ", g->edge_offset[e],
         hg_edge_kind_name(g->edge_kind[e]), f ? cli_text(f) : "");
  acli_node_text(stdout, g, names, other);
  printf("\n");
}

int cmd_show(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "show", "FILE ADDR", "references shown each way (default 50)", about, sym_cli_opts, argc,
                     argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = acli_limit(&s.a, 50), v = s.node;
  st = 1;
  int rc = hg_graph_build_reverse(g);
  if (rc) {
    fprintf(stderr, "heapgraph show: %s\n", hg_error_string(rc));
    goto out;
  }
  if (s.a.json) {
    acli_show_json(stdout, g, names, NULL, v, 0, k);
    printf("\n");
    st = 0;
    goto out;
  }
  const struct hg_region *r = acli_region_of(g, g->node_addr[v]);
  uint32_t c = g->node_class[v], heap = g->node_heap[v];
  const char *kind = c && c <= g->class_count ? hg_class_kind_name(g->classes[c - 1].kind) : NULL;
  const char *heapname = heap && heap <= g->heap_count ? g->heaps[heap - 1] : NULL;
  uint32_t nout = g->edge_start[v + 1] - g->edge_start[v], nin = g->in_start[v + 1] - g->in_start[v];
  acli_node_text(stdout, g, names, v);
  printf("\n  index %" PRIu32 ", flags%s%s%s", v, g->node_flags[v] & HG_NODE_MALLOC ? " malloc" : "",
         g->node_flags[v] & HG_NODE_REGION ? " region" : "",
         g->node_flags[v] & HG_NODE_MMAPPED ? " mmapped" : "");
  if (kind) printf(", class kind %s", cli_text(kind));
  if (heapname) printf(", heap %s", cli_text(heapname));
  if (r)
    printf("\n  in region 0x%" PRIx64 "-0x%" PRIx64 " %s", r->start, r->start + r->size,
           r->name ? cli_text(r->name) : "");
  printf("\n");
  sym_print_node_stack(stdout, NULL, g, v, 0);
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target == v)
      printf("  root: %s at 0x%" PRIx64 "\n", hg_root_kind_name(g->roots[i].kind), g->roots[i].addr);
  printf("outgoing (%" PRIu32 "):\n", nout);
  for (uint32_t e = g->edge_start[v], i = 0; e < g->edge_start[v + 1] && i < k; e++, i++)
    edge_row(g, names, e, g->edge_target[e], 1);
  if (nout > k) printf("  … %" PRIu32 " more (-n)\n", nout - k);
  printf("incoming (%" PRIu32 "):\n", nin);
  for (uint32_t j = g->in_start[v], i = 0; j < g->in_start[v + 1] && i < k; j++, i++)
    edge_row(g, names, g->in_edge[j], g->in_source[j], 0);
  if (nin > k) printf("  … %" PRIu32 " more (-n)\n", nin - k);
  st = 0;
out:
  acli_close(&s);
  return st;
}
