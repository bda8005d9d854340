/*
 * stacks.c — allocation stacks over a loaded snapshot: per stack id the
 * nodes, their bytes and the bytes they retain (dominator tree, a node
 * dominated by another node of the same stack not counted twice — the
 * class rule of hg_class_retained, applied with stack ids as the key).
 */
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

int hg_stack_totals(const struct hg_graph *g, const struct hg_dominators *d,
                    struct hg_stack_total **out) {
  if (!g || !out) return HG_EINVAL;
  *out = NULL;
  size_t n = (size_t)g->stack_count + 1;
  struct hg_stack_total *t = calloc(n, sizeof *t);
  uint64_t *ret = d ? calloc(n, sizeof *ret) : NULL;
  if (!t || (d && !ret)) {
    free(t);
    free(ret);
    return HG_ENOMEM;
  }
  if (g->node_stack)
    for (uint32_t v = 0; v < g->node_count; v++) {
      uint32_t s = g->node_stack[v] < n ? g->node_stack[v] : 0;
      t[s].nodes++;
      t[s].node_bytes += g->node_size[v];
    }
  if (d && g->node_stack) {
    struct hg_graph view = *g; /* the same graph, keyed by stack id */
    view.node_class = g->node_stack;
    view.class_count = g->stack_count;
    int rc = hg_class_retained(&view, d, NULL, NULL, ret);
    if (rc) {
      free(t);
      free(ret);
      return rc;
    }
    for (size_t i = 0; i < n; i++) t[i].retained = ret[i];
  }
  free(ret);
  *out = t;
  return 0;
}
