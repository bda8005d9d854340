/*
 * cmd_dominators.c — `heapgraph dominators FILE ADDR [-n N] [--json]`: the
 * node's dominator chain up to the roots and the nodes it dominates
 * directly (its children in the dominator tree), biggest retained first.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  ADDR is an address inside a node (0x…) or #INDEX. Prints the chain of\n"
    "  immediate dominators from the node up to the roots (each would free the\n"
    "  node if it went away) and the N (default 20) nodes it dominates directly.\n";

static const struct hg_dominators *sort_d;
static int by_retained(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (sort_d->retained[x] != sort_d->retained[y]) return sort_d->retained[x] > sort_d->retained[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

int cmd_dominators(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "dominators", "FILE ADDR", "dominated nodes shown (default 20)", about, NULL,
                     argc, argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = acli_limit(&s.a, 20), node = s.node;
  struct hg_dominators *d = NULL;
  uint32_t *kids = NULL, nk = 0;
  st = 1;
  int rc = hg_dominators_compute(g, &d);
  if (rc) {
    fprintf(stderr, "heapgraph dominators: %s\n", hg_error_string(rc));
    goto out;
  }
  for (uint32_t v = 0; v < g->node_count; v++) nk += d->idom[v] == node;
  kids = malloc(((size_t)nk + 1) * sizeof *kids);
  if (!kids) goto out;
  nk = 0;
  for (uint32_t v = 0; v < g->node_count; v++)
    if (d->idom[v] == node) kids[nk++] = v;
  sort_d = d;
  qsort(kids, nk, sizeof *kids, by_retained);
  int reachable = d->idom[node] != HG_NONE;
  if (s.a.json) {
    ajson_dominators(stdout, g, names, d, node, kids, nk, 0, k);
    printf("\n");
  } else {
    acli_node_text(stdout, g, names, node);
    if (!reachable) {
      printf(": not reachable from any root (see heapgraph leaks)\n");
    } else {
      printf(" retains %" PRIu64 " B\ndominator chain:\n", d->retained[node]);
      for (uint32_t v = d->idom[node]; v < g->node_count; v = d->idom[v]) {
        printf("  ");
        acli_node_text(stdout, g, names, v);
        printf(" retains %" PRIu64 " B\n", d->retained[v]);
      }
      printf("  (roots)\n");
    }
    printf("dominates %" PRIu32 " node%s directly:\n", nk, nk == 1 ? "" : "s");
    for (uint32_t i = 0; i < nk && i < k; i++) {
      printf("  %12" PRIu64 " retained  ", d->retained[kids[i]]);
      acli_node_text(stdout, g, names, kids[i]);
      printf("\n");
    }
    if (nk > k) printf("  … %" PRIu32 " more (-n)\n", nk - k);
  }
  st = 0;
out:
  free(kids);
  hg_dominators_free(d);
  acli_close(&s);
  return st;
}
