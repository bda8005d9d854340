/*
 * graph_priv.h — internals of struct hg_graph shared inside graph/: the
 * string arena that owns every text the reader copies, and the analyses'
 * cache (derived data computed once, freed with the graph). Not public.
 */
#ifndef HG_GRAPH_PRIV_H
#define HG_GRAPH_PRIV_H

#include <stddef.h>

#include "heapgraph.h"

struct hg_arena_block;
struct _hg_view;

struct hg_graph_priv {
  struct hg_arena_block *blocks;
  /* Analyses' cache (graph/analysis.h: struct _hg_view): the retaining
   * edges in dominator-DFS preorder and root reachability, set by
   * hg_dominators_compute, freed by hg_graph_drop_cache / hg_graph_free. */
  struct _hg_view *view;
  /* hg_paths_to_roots' multi-source BFS from the roots (it does not depend
   * on the node asked about): parent edge and distance of every node, kept
   * so later calls only walk back; the counts guard against a changed graph.
   * Freed with the view. */
  uint32_t *bfs_parent, *bfs_dist;
  uint32_t bfs_nodes, bfs_edges, bfs_roots;
};

/* A zeroed graph with its priv attached, or NULL. */
struct hg_graph *_hg_graph_alloc(void);
void *_hg_arena_alloc(struct hg_graph_priv *pv, size_t n);
char *_hg_arena_strndup(struct hg_graph_priv *pv, const char *s, size_t n);
/* Frees every block (the priv struct itself stays). */
void _hg_arena_free(struct hg_graph_priv *pv);

#endif
