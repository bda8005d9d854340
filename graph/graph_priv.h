/*
 * graph_priv.h — internals of struct hg_graph shared inside graph/: the
 * string arena that owns every text the reader copies. Not public.
 */
#ifndef HG_GRAPH_PRIV_H
#define HG_GRAPH_PRIV_H

#include <stddef.h>

#include "heapgraph.h"

struct hg_arena_block;

struct hg_graph_priv {
  struct hg_arena_block *blocks;
};

/* A zeroed graph with its priv attached, or NULL. */
struct hg_graph *_hg_graph_alloc(void);
void *_hg_arena_alloc(struct hg_graph_priv *pv, size_t n);
char *_hg_arena_strndup(struct hg_graph_priv *pv, const char *s, size_t n);
/* Frees every block (the priv struct itself stays). */
void _hg_arena_free(struct hg_graph_priv *pv);

#endif
