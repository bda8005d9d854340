/*
 * fleet.h — internals of the fleet analysis (docs/fleet.md) shared by the
 * graph/fleet*.c files; the API (hg_fleet_*) is section 13 of heapgraph.h,
 * for the CLI (`heapgraph fleet`) and a backend server alike.
 *
 *   graph/fleet_summary.c  a snapshot's summary (metadata, class census,
 *                          retention / leak / site / large signatures)
 *   graph/fleet_codec.c    the summary's CBOR form and its hostile reader
 *   graph/fleet_set.c      a set of summaries: issues, statuses, ranking
 *   graph/fleet_views.c    class growth between versions, merged retention tree
 *   graph/fleet_json.c     the one JSON writer of each of those results
 *
 * Ownership: every result struct owns its memory and is freed by its *_free
 * (NULL allowed). A summary's strings live until hg_fleet_summary_free; the
 * strings of issues, growth and trees (paths, versions, snapshot names) are
 * the set's: the struct hg_fleet must outlive them.
 */
#ifndef HG_GRAPH_FLEET_H
#define HG_GRAPH_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph_priv.h"
#include "heapgraph.h"

/* ---- internal, shared by the fleet files ---- */

/* A result's storage: the reader's string arena (graph/graph_priv.h). */
struct _hg_arena {
  struct hg_graph_priv pv;  /* only its blocks are used                   */
};
void *_hg_fa_alloc(struct _hg_arena *a, size_t n);
char *_hg_fa_strndup(struct _hg_arena *a, const char *s, size_t n);
char *_hg_fa_strdup(struct _hg_arena *a, const char *s);
void _hg_fa_free(struct _hg_arena *a);
/* A result struct kept in its own arena: _hg_fa_result allocates it zeroed
 * (size bytes) in a, with room for the arena after it (NULL on ENOMEM, a
 * freed); _hg_fa_keep moves a there and returns it for the result's priv;
 * _hg_fa_release(priv) frees everything. */
void *_hg_fa_result(struct _hg_arena *a, size_t size);
void *_hg_fa_keep(struct _hg_arena *a, void *result, size_t size);
void _hg_fa_release(void *priv);
/* The signature hash of (kind, algo, steps). */
uint64_t _hg_fleet_hash(uint32_t kind, uint32_t algo, const char *const *steps, uint32_t n);
/* A title for a signature ("Cache held by global:app → App"). */
char *_hg_fleet_title(struct _hg_arena *a, uint32_t kind, const char *const *steps, uint32_t n);
/* Version order: digit runs compare as numbers. */
int _hg_fleet_vercmp(const char *a, const char *b);

#endif
