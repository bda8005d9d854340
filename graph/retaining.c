/*
 * retaining.c — the retaining-edge view of a graph that the analyses walk:
 * a compact CSR holding only conservative/interior/strong edges (built by
 * one sequential pass, so the hot loops of dominators and SCC never look at
 * edge_kind), and reachability from the roots.
 *
 * Owns _hg_csr_retaining, _hg_csr_free and _hg_reachable. Never modifies
 * the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

int _hg_csr_retaining(const struct hg_graph *g, struct _hg_csr *c) {
  uint32_t n = g->node_count, m = 0;
  memset(c, 0, sizeof *c);
  for (uint32_t e = 0; e < g->edge_count; e++) m += (uint32_t)_hg_retains(g->edge_kind[e]);
  c->start = _hg_malloc_big(((size_t)n + 1) * sizeof *c->start);
  c->target = _hg_malloc_big(((size_t)m + 1) * sizeof *c->target);
  if (!c->start || !c->target) {
    _hg_csr_free(c);
    return HG_ENOMEM;
  }
  c->n = n;
  uint32_t k = 0;
  const uint32_t *es = g->edge_start, *et = g->edge_target;
  const uint8_t *ek = g->edge_kind;
  for (uint32_t v = 0; v < n; v++) {
    c->start[v] = k;
    for (uint32_t e = es[v], end = es[v + 1]; e < end; e++) {
      c->target[k] = et[e]; /* written unconditionally, kept only if it retains */
      k += (uint32_t)_hg_retains(ek[e]);
    }
  }
  c->start[n] = k;
  return 0;
}

void _hg_csr_free(struct _hg_csr *c) {
  free(c->start);
  free(c->target);
  c->start = c->target = NULL;
}

static int region_only(const struct hg_graph *g, uint32_t v) {
  return (g->node_flags[v] & HG_NODE_REGION) && !(g->node_flags[v] & HG_NODE_MALLOC);
}

uint64_t *_hg_reachable(const struct hg_graph *g, int regions_are_roots) {
  uint32_t n = g->node_count;
  uint64_t *seen = _hg_bits_new(n);
  uint32_t *queue = _hg_malloc_big(((size_t)n + 1) * sizeof *queue);
  if (!seen || !queue) {
    free(seen);
    free(queue);
    return NULL;
  }
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < g->root_count; i++) {
    uint32_t t = g->roots[i].target;
    if (t < n && !_hg_bit(seen, t)) {
      _hg_bit_set(seen, t);
      queue[tail++] = t;
    }
  }
  if (regions_are_roots)
    for (uint32_t v = 0; v < n; v++)
      if (region_only(g, v) && !_hg_bit(seen, v)) {
        _hg_bit_set(seen, v);
        queue[tail++] = v;
      }
  const uint32_t *es = g->edge_start, *et = g->edge_target;
  const uint8_t *ek = g->edge_kind;
  while (head < tail) {
    /* The queue says which nodes come next: fetch their edge ranges ahead. */
    if (head + 16 < tail) __builtin_prefetch(&es[queue[head + 16]]);
    if (head + 8 < tail) {
      uint32_t u = queue[head + 8];
      __builtin_prefetch(&et[es[u]]);
      __builtin_prefetch(&ek[es[u]]);
    }
    uint32_t v = queue[head++];
    for (uint32_t e = es[v], end = es[v + 1]; e < end; e++) {
      uint32_t t = et[e];
      if (_hg_retains(ek[e]) && !_hg_bit(seen, t)) {
        _hg_bit_set(seen, t);
        queue[tail++] = t;
      }
    }
  }
  free(queue);
  return seen;
}
