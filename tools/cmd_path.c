/*
 * cmd_path.c — `heapgraph path FILE ADDR [-n N] [--json]`: shortest
 * retaining paths from the roots to a node (never through weak or unowned
 * references), with field names and offsets, like `leaks -traceTree`.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Shortest paths from a root to the node at ADDR (0x…, #INDEX or DevTools\n"
    "  @ID) through strong, conservative and interior references: up to N\n"
    "  (default 1), one per distinct retainer, shortest first. Exit 1 if no\n"
    "  root reaches it.\n";

static void root_text(const struct hg_graph *g, const struct hg_root *r) {
  printf("root %s", hg_root_kind_name(r->kind));
  if (r->kind == HG_ROOT_REGISTER)
    printf(" #%" PRIu64, r->addr);
  else
    printf(" at 0x%" PRIx64, r->addr);
  if (r->owner != HG_NO_OWNER) {
    if ((r->kind == HG_ROOT_GLOBAL) && r->owner < g->image_count && g->images[r->owner].path)
      printf(" in %s", cli_text(g->images[r->owner].path));
    else if (r->kind != HG_ROOT_GLOBAL && r->owner < g->thread_count)
      printf(" thread %" PRIu64, g->threads[r->owner].tid);
  }
}

int cmd_path(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "path", "FILE ADDR", "paths shown (default 1)", about, NULL, argc, argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = s.a.limit < 1 ? 1 : (uint32_t)s.a.limit, node = s.node;
  struct hg_paths *p = NULL;
  st = 1;
  int rc = hg_paths_to_roots(g, node, k, &p);
  if (rc == HG_ENOTFOUND) {
    if (s.a.json) {
      ajson_paths(stdout, g, names, NULL);
      printf("\n");
    } else {
      printf("0x%" PRIx64 ": no root reaches it (a leak; see heapgraph leaks)\n", g->node_addr[node]);
    }
    goto out;
  }
  if (rc) {
    fprintf(stderr, "heapgraph path: %s\n", hg_error_string(rc));
    goto out;
  }
  if (s.a.json) {
    ajson_paths(stdout, g, names, p);
    printf("\n");
    st = 0;
    goto out;
  }
  for (uint32_t i = 0; i < p->count; i++) {
    const struct hg_path *pa = &p->paths[i];
    const struct hg_root *r = pa->root < g->root_count ? &g->roots[pa->root] : NULL;
    printf("%sPATH %" PRIu32 " (%" PRIu32 " reference%s):\n  ", i ? "\n" : "", i + 1, pa->length,
           pa->length == 1 ? "" : "s");
    if (r) root_text(g, r);
    printf("\n");
    for (uint32_t j = 0; j <= pa->length; j++) {
      printf("  ");
      if (j) {
        uint32_t e = pa->edges[j - 1];
        const char *f = hg_graph_edge_field(g, e);
        printf("%*s-> %s%s+0x%" PRIx32 " [%s] ", (int)(j > 20 ? 20 : j), "", f ? cli_text(f) : "",
               f ? " " : "", g->edge_offset[e], hg_edge_kind_name(g->edge_kind[e]));
      }
      acli_node_text(stdout, g, names, pa->nodes[j]);
      printf("\n");
    }
  }
  st = 0;
out:
  hg_paths_free(p);
  acli_close(&s);
  return st;
}
