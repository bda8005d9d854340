/*
 * retaining.c — the retaining-edge view of a graph that the analyses walk:
 * a compact CSR holding only conservative/interior/strong edges (built by
 * one sequential pass, so the hot loops of dominators and SCC never look at
 * edge_kind), the cached view (struct _hg_view, kept on the graph's
 * priv), and reachability from the roots.
 *
 * Owns _hg_csr_retaining, _hg_csr_free, the _hg_view cache
 * (_hg_view_get/put/free, hg_graph_drop_cache) and _hg_reachable(_par,
 * _from).
 * Never modifies the graph's arrays (the cache lives in g->priv).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "graph/graph_priv.h"

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

/* ---- The cached view ---- */

void _hg_view_free(struct _hg_view *v) {
  if (!v) return;
  _hg_csr_free(&v->c);
  free(v->node);
  free(v->reach);
  free(v);
}

const struct _hg_view *_hg_view_get(const struct hg_graph *g) {
  const struct hg_graph_priv *pv = g ? g->priv : NULL;
  const struct _hg_view *v = pv ? pv->view : NULL;
  if (!v || v->c.n != g->node_count || v->edge_count != g->edge_count ||
      v->root_count != g->root_count)
    return NULL;
  return v;
}

void _hg_view_put(struct hg_graph *g, struct _hg_view *v) {
  if (!g->priv && !(g->priv = calloc(1, sizeof(struct hg_graph_priv)))) {
    _hg_view_free(v); /* graphs made without the loader have no priv yet */
    return;
  }
  struct hg_graph_priv *pv = g->priv;
  _hg_view_free(pv->view);
  v->edge_count = g->edge_count;
  v->root_count = g->root_count;
  pv->view = v;
}

void hg_graph_drop_cache(struct hg_graph *g) {
  struct hg_graph_priv *pv = g ? g->priv : NULL;
  if (!pv) return;
  _hg_view_free(pv->view);
  pv->view = NULL;
  free(pv->bfs_parent);
  free(pv->bfs_dist);
  pv->bfs_parent = pv->bfs_dist = NULL;
}

static int region_only(const struct hg_graph *g, uint32_t v) {
  return (g->node_flags[v] & HG_NODE_REGION) && !(g->node_flags[v] & HG_NODE_MALLOC);
}

/* ---- Reachability: level-synchronous BFS, big levels on two threads ---- */

#define PAR_MIN 65536 /* frontier size worth a second thread            */
#define BLOCK 4096    /* queue slots a thread reserves at a time        */

struct bfs {
  const struct hg_graph *g;
  uint64_t *seen;
  uint32_t *queue;
  size_t tail; /* next free queue slot; atomic while two threads run */
};

struct part {
  struct bfs *b;
  size_t lo, hi; /* frontier slice to expand                         */
  size_t blk;    /* slots reserved at a time: 1 alone, BLOCK shared  */
};

/* Expands queue[lo, hi) into new queue slots. Bits are claimed with an
 * atomic or, so a node is queued once even with two threads; a thread's
 * unused reserved slots are filled with HG_NONE (skipped when expanded). */
static void *expand(void *arg) {
  struct part *pt = arg;
  struct bfs *b = pt->b;
  const uint32_t *es = b->g->edge_start, *et = b->g->edge_target;
  const uint8_t *ek = b->g->edge_kind;
  uint32_t *q = b->queue;
  size_t at = 0, end = 0;
  for (size_t i = pt->lo; i < pt->hi; i++) {
    /* The queue says which nodes come next: fetch their edge ranges ahead. */
    if (i + 16 < pt->hi && q[i + 16] != HG_NONE) __builtin_prefetch(&es[q[i + 16]]);
    if (i + 8 < pt->hi && q[i + 8] != HG_NONE) {
      uint32_t u = q[i + 8];
      __builtin_prefetch(&et[es[u]]);
      __builtin_prefetch(&ek[es[u]]);
    }
    uint32_t v = q[i];
    if (v == HG_NONE) continue;
    for (uint32_t e = es[v], e_end = es[v + 1]; e < e_end; e++) {
      uint32_t t = et[e];
      if (!_hg_retains(ek[e])) continue;
      uint64_t bit = (uint64_t)1 << (t & 63), *word = &b->seen[t >> 6];
      if (__atomic_load_n(word, __ATOMIC_RELAXED) & bit) continue;
      if (__atomic_fetch_or(word, bit, __ATOMIC_RELAXED) & bit) continue;
      if (at == end) {
        at = __atomic_fetch_add(&b->tail, pt->blk, __ATOMIC_RELAXED);
        end = at + pt->blk;
      }
      q[at++] = t;
    }
  }
  while (at < end) q[at++] = HG_NONE;
  return NULL;
}

/* Bitmap of nodes reachable from the roots (and region-only nodes when
 * asked). threads: 1, or 2 to expand big BFS levels on two threads. */
static uint64_t *reachable(const struct hg_graph *g, uint64_t *seen, int regions_are_roots,
                           int threads) {
  uint32_t n = g->node_count;
  /* Parallel levels waste < 2 x BLOCK slots each and have >= PAR_MIN -
   * 2 x BLOCK real nodes, so n + n / 4 + 2 x BLOCK slots always suffice. */
  size_t cap = (size_t)n + n / 4 + 2 * BLOCK + 1;
  const struct _hg_view *vw = seen ? NULL : _hg_view_get(g);
  struct bfs b = {g, seen ? seen : _hg_bits_new(n), _hg_malloc_big(cap * sizeof *b.queue), 0};
  if (!b.seen || !b.queue) {
    free(b.seen);
    free(b.queue);
    return NULL;
  }
  if (vw) {
    /* Root reachability is cached (a closed set): only regions are new. */
    memcpy(b.seen, vw->reach, ((size_t)n / 64 + 1) * sizeof *b.seen);
  } else { /* from the roots outside the closed set `seen` (empty or given) */
    for (uint32_t i = 0; i < g->root_count; i++) {
      uint32_t t = g->roots[i].target;
      if (t < n && !_hg_bit(b.seen, t)) {
        _hg_bit_set(b.seen, t);
        b.queue[b.tail++] = t;
      }
    }
  }
  if (regions_are_roots)
    for (uint32_t v = 0; v < n; v++)
      if (region_only(g, v) && !_hg_bit(b.seen, v)) {
        _hg_bit_set(b.seen, v);
        b.queue[b.tail++] = v;
      }
  size_t lo = 0;
  while (lo < b.tail) {
    size_t hi = b.tail, mid = lo + (hi - lo) / 2;
    if (threads > 1 && hi - lo >= PAR_MIN) {
      struct part p1 = {&b, lo, mid, BLOCK}, p2 = {&b, mid, hi, BLOCK};
      struct _hg_job j;
      _hg_job_start(&j, expand, &p1, 1); /* alone: p1, then p2, as before */
      expand(&p2);
      _hg_job_wait(&j);
    } else {
      struct part p = {&b, lo, hi, 1};
      expand(&p);
    }
    lo = hi;
  }
  free(b.queue);
  return b.seen;
}

uint64_t *_hg_reachable(const struct hg_graph *g, int regions_are_roots) {
  return reachable(g, NULL, regions_are_roots, 1);
}

uint64_t *_hg_reachable_par(const struct hg_graph *g, int regions_are_roots) {
  return reachable(g, NULL, regions_are_roots, 2);
}

uint64_t *_hg_reachable_from(const struct hg_graph *g, uint64_t *seen, int regions_are_roots) {
  return reachable(g, seen, regions_are_roots, 1);
}
