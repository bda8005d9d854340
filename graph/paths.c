/*
 * paths.c — shortest retaining paths from the roots to a node
 * (hg_paths_to_roots), like `leaks -traceTree` or MAT's "path to GC roots".
 *
 * One multi-source BFS from every root target over retaining edges records
 * each node's BFS parent edge and distance; the answer is then read back
 * through the node's retainers (one path per distinct retainer, shortest
 * first). Iterative, O(nodes + edges) time, three uint32 arrays of memory;
 * the BFS (parent, distance) stays cached on the graph, so later calls cost
 * only the node's in-degree and its paths' lengths.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "graph/graph_priv.h"

/* Source node of edge e: the last n with edge_start[n] <= e. */
static uint32_t edge_source(const struct hg_graph *g, uint32_t e) {
  uint32_t lo = 0, hi = g->node_count; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (g->edge_start[mid] <= e)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

struct cand {
  uint32_t source, edge, dist;
};

static int by_dist(const void *a, const void *b) {
  const struct cand *x = a, *y = b;
  if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
  return x->source < y->source ? -1 : x->source > y->source;
}

static uint32_t root_of(const struct hg_graph *g, uint32_t target, uint32_t skip) {
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target == target && skip-- == 0) return i;
  return HG_NONE;
}

/* Builds the path ending with edge `last` (HG_NONE: `node` is a root target
 * reached through root index `root`). Returns 0, 1 if the path would pass
 * through `node` twice, or HG_ENOMEM. */
static int build(const struct hg_graph *g, const uint32_t *parent, const uint32_t *dist,
                 uint32_t node, uint32_t src, uint32_t last, uint32_t root, struct hg_path *p) {
  uint32_t len = last == HG_NONE ? 0 : dist[src] + 1;
  p->length = len;
  p->nodes = malloc(((size_t)len + 1) * sizeof *p->nodes);
  p->edges = malloc(((size_t)len + 1) * sizeof *p->edges);
  if (!p->nodes || !p->edges) return HG_ENOMEM;
  p->nodes[len] = node;
  if (len) {
    p->edges[len - 1] = last;
    uint32_t v = src;
    for (uint32_t i = len; i-- > 0;) {
      if (v == node) return 1;
      p->nodes[i] = v;
      if (i) {
        p->edges[i - 1] = parent[v];
        v = edge_source(g, parent[v]);
      }
    }
    root = root_of(g, p->nodes[0], 0);
  }
  p->root = root;
  return 0;
}

/* The BFS from every root target over retaining edges: parent edge
 * (HG_SUPER_ROOT for root targets, HG_NONE if unreached) and distance of
 * every node. Cached on the graph (graph_priv.h) after the first call. */
static int bfs(struct hg_graph *g, uint32_t **parent_out, uint32_t **dist_out) {
  struct hg_graph_priv *pv = g->priv;
  if (pv && pv->bfs_parent && pv->bfs_nodes == g->node_count && pv->bfs_edges == g->edge_count &&
      pv->bfs_roots == g->root_count) {
    *parent_out = pv->bfs_parent;
    *dist_out = pv->bfs_dist;
    return 0;
  }
  uint32_t n = g->node_count;
  uint32_t *parent = malloc(((size_t)n + 1) * sizeof *parent);
  uint32_t *dist = malloc(((size_t)n + 1) * sizeof *dist);
  uint32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
  if (!parent || !dist || !queue || (!pv && !(pv = g->priv = calloc(1, sizeof *pv)))) {
    free(parent);
    free(dist);
    free(queue);
    return HG_ENOMEM;
  }
  memset(parent, 0xff, ((size_t)n + 1) * sizeof *parent);
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < g->root_count; i++) {
    uint32_t t = g->roots[i].target;
    if (t < n && parent[t] == HG_NONE) {
      parent[t] = HG_SUPER_ROOT;
      dist[t] = 0;
      queue[tail++] = t;
    }
  }
  while (head < tail) {
    uint32_t v = queue[head++];
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++) {
      uint32_t t = g->edge_target[e];
      if (_hg_retains(g->edge_kind[e]) && parent[t] == HG_NONE) {
        parent[t] = e;
        dist[t] = dist[v] + 1;
        queue[tail++] = t;
      }
    }
  }
  free(queue);
  free(pv->bfs_parent);
  free(pv->bfs_dist);
  pv->bfs_parent = *parent_out = parent;
  pv->bfs_dist = *dist_out = dist;
  pv->bfs_nodes = g->node_count;
  pv->bfs_edges = g->edge_count;
  pv->bfs_roots = g->root_count;
  return 0;
}

int hg_paths_to_roots(struct hg_graph *g, uint32_t node, uint32_t max_paths,
                      struct hg_paths **out) {
  if (!g || !out) return HG_EINVAL;
  *out = NULL;
  if (node >= g->node_count) return HG_EINVAL;
  if (!max_paths) max_paths = 1;
  int rc = hg_graph_build_reverse(g);
  if (rc) return rc;
  uint32_t *parent = NULL, *dist = NULL;
  struct cand *cands = NULL;
  struct hg_paths *r = calloc(1, sizeof *r);
  rc = r ? bfs(g, &parent, &dist) : HG_ENOMEM;
  if (rc) goto fail;
  rc = HG_ENOMEM;
  if (parent[node] == HG_NONE) {
    rc = HG_ENOTFOUND;
    goto fail;
  }
  /* Candidates: roots pointing straight at node, then one per retainer. */
  uint32_t in = g->in_start[node + 1] - g->in_start[node], nc = 0;
  cands = malloc(((size_t)in + g->root_count + 1) * sizeof *cands);
  r->paths = calloc(max_paths, sizeof *r->paths);
  if (!cands || !r->paths) goto fail;
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target == node) cands[nc++] = (struct cand){HG_NONE, HG_NONE, 0};
  uint32_t direct = nc;
  for (uint32_t k = g->in_start[node]; k < g->in_start[node + 1]; k++) {
    uint32_t e = g->in_edge[k], s = g->in_source[k];
    if (!_hg_retains(g->edge_kind[e]) || parent[s] == HG_NONE || s == node) continue;
    cands[nc++] = (struct cand){s, e, dist[s] + 1};
  }
  qsort(cands + direct, nc - direct, sizeof *cands, by_dist);
  uint32_t roots_used = 0;
  for (uint32_t i = 0; i < nc && r->count < max_paths; i++) {
    if (i > direct && cands[i].source == cands[i - 1].source) continue; /* same retainer */
    struct hg_path *p = &r->paths[r->count];
    uint32_t root = cands[i].edge == HG_NONE ? root_of(g, node, roots_used++) : HG_NONE;
    int b = build(g, parent, dist, node, cands[i].source, cands[i].edge, root, p);
    if (b < 0) goto fail;
    if (b == 1) {
      free(p->nodes);
      free(p->edges);
      memset(p, 0, sizeof *p);
      continue;
    }
    r->count++;
  }
  free(cands);
  *out = r;
  return 0;
fail:
  free(cands);
  if (r && r->paths) r->count = max_paths; /* free every slot */
  hg_paths_free(r);
  return rc;
}

void hg_paths_free(struct hg_paths *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->count; i++) {
    free(p->paths[i].nodes);
    free(p->paths[i].edges);
  }
  free(p->paths);
  free(p);
}
