/*
 * graph.c — the in-memory graph a snapshot loads into: ownership (arena and
 * arrays), the reverse CSR, and lookups (node by address, edge field names,
 * class names). Reading and validating files is reader.c's job.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_priv.h"
#include "heapgraph.h"

struct hg_arena_block {
  struct hg_arena_block *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK (64u * 1024u)

struct hg_graph *_hg_graph_alloc(void) {
  struct hg_graph *g = calloc(1, sizeof *g);
  struct hg_graph_priv *pv = calloc(1, sizeof *pv);
  if (!g || !pv) {
    free(g);
    free(pv);
    return NULL;
  }
  g->priv = pv;
  return g;
}

void *_hg_arena_alloc(struct hg_graph_priv *pv, size_t n) {
  n = (n + 15) & ~(size_t)15;
  struct hg_arena_block *b = pv->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    b->next = pv->blocks;
    pv->blocks = b;
  }
  void *p = b->data + b->used;
  b->used += n;
  return p;
}

char *_hg_arena_strndup(struct hg_graph_priv *pv, const char *s, size_t n) {
  char *d = _hg_arena_alloc(pv, n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

void _hg_arena_free(struct hg_graph_priv *pv) {
  struct hg_arena_block *b = pv->blocks;
  while (b) {
    struct hg_arena_block *n = b->next;
    free(b);
    b = n;
  }
  pv->blocks = NULL;
}

void hg_graph_free(struct hg_graph *g) {
  if (!g) return;
  hg_graph_drop_cache(g);
  if (g->priv) {
    _hg_arena_free(g->priv);
    free(g->priv);
  }
  free(g->regions);
  free(g->images);
  free(g->threads);
  free(g->heaps);
  free(g->classes);
  free(g->strings);
  free(g->node_addr);
  free(g->node_size);
  free(g->node_class);
  free(g->node_flags);
  free(g->node_heap);
  free(g->stacks);
  free(g->node_stack);
  free(g->large);
  free(g->edge_start);
  free(g->edge_target);
  free(g->edge_offset);
  free(g->edge_kind);
  free(g->named_edge);
  free(g->named_field);
  free(g->in_start);
  free(g->in_source);
  free(g->in_edge);
  free(g->roots);
  free((void *)g->meta.app);
  free((void *)g->meta.capture);
  free(g);
}

int hg_graph_build_reverse(struct hg_graph *g) {
  if (!g) return HG_EINVAL;
  if (g->in_start) return 0;
  uint32_t n = g->node_count, m = g->edge_count;
  uint32_t *start = calloc((size_t)n + 1, sizeof *start);
  uint32_t *src = malloc(((size_t)m + 1) * sizeof *src);
  uint32_t *eid = malloc(((size_t)m + 1) * sizeof *eid);
  if (!start || !src || !eid) {
    free(start);
    free(src);
    free(eid);
    return HG_ENOMEM;
  }
  for (uint32_t e = 0; e < m; e++) start[g->edge_target[e] + 1]++;
  for (uint32_t i = 0; i < n; i++) start[i + 1] += start[i];
  /* Fill using start[] as cursors, then shift back: sources come out in
   * increasing order because edges are visited by source. */
  for (uint32_t s = 0; s < n; s++)
    for (uint32_t e = g->edge_start[s]; e < g->edge_start[s + 1]; e++) {
      uint32_t t = g->edge_target[e];
      uint32_t at = start[t]++;
      src[at] = s;
      eid[at] = e;
    }
  for (uint32_t i = n; i > 0; i--) start[i] = start[i - 1];
  start[0] = 0;
  g->in_start = start;
  g->in_source = src;
  g->in_edge = eid;
  return 0;
}

int64_t hg_graph_find(const struct hg_graph *g, uint64_t addr) {
  if (!g || g->node_count == 0) return -1;
  uint32_t lo = 0, hi = g->node_count; /* first node with start > addr */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (g->node_addr[mid] <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return -1;
  uint32_t i = lo - 1;
  return addr - g->node_addr[i] < g->node_size[i] ? (int64_t)i : -1;
}

const char *hg_graph_edge_field(const struct hg_graph *g, uint32_t e) {
  if (!g || g->named_count == 0) return NULL;
  uint32_t lo = 0, hi = g->named_count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (g->named_edge[mid] < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < g->named_count && g->named_edge[lo] == e) {
    uint32_t f = g->named_field[lo];
    return f && f <= g->string_count ? g->strings[f - 1] : NULL;
  }
  return NULL;
}

const char *hg_graph_node_class_name(const struct hg_graph *g, uint32_t n) {
  if (!g || n >= g->node_count) return NULL;
  uint32_t c = g->node_class[n];
  return c && c <= g->class_count ? g->classes[c - 1].name : NULL;
}
