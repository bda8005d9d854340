/*
 * dominators.c — dominator tree and retained sizes (iterative, SEMI-NCA fallback).
 *
 * Owns hg_dominators_compute, hg_class_retained, hg_dominators_top and the
 * reusable core _hg_dom_core (leaks.c runs it on the leaked subgraph). The
 * dominator tree is over a virtual super-root (preorder number 0) whose
 * children are the entry nodes; only retaining edges count (the core walks
 * a compact retaining-edge CSR, never edge_kind or the reverse CSR).
 * Everything is iterative: the DFS stack is implicit (parent chain plus one
 * cursor per preorder number) and eval is path halving without a stack, so
 * a 10-million-node chain costs memory, never C stack.
 *
 * Algorithm: one DFS numbers the reachable nodes in preorder; then the
 * iterative Cooper-Harvey-Kennedy scheme (see iterate()) runs in preorder
 * space, which on heap graphs (shallow dominator trees) settles in a few
 * cheap, prefetchable passes. If it has not settled after MAX_PASSES, the
 * same tree is computed by SEMI-NCA (Georgiadis; as used by LeakCanary and
 * LLVM): semidominators by the Lengauer-Tarjan "simple" eval/link (path
 * halving), then each idom is the nearest common ancestor of its DFS parent
 * and semidominator — O(m log n) whatever the graph.
 *
 * Speed is memory latency: the DFS keeps each node's number, edge range
 * and first target in one 16-byte record (one miss per level while it
 * descends) and writes the retaining edges renumbered in preorder as it
 * goes; after it everything works in preorder space (predecessor lists
 * indexed by preorder number, built from that CSR by a cache-blocked
 * two-pass bucket sort), and big work arrays ask for huge pages.
 * hg_dominators_compute leaves the renumbered CSR on the graph as the DFS
 * view (analysis.h, struct _hg_view), so leaks, cycles and reachability
 * reuse it. Working memory at peak ~ 8 uint32 per node plus 4 uint32 per
 * retaining edge (the CSR copy and the renumbered one, then (target,
 * source) pairs and the predecessor lists), plus 2 uint32 per node for
 * SEMI-NCA when it runs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

int hg_edge_kind_retains(uint32_t kind) { return kind < 256 && _hg_retains((uint8_t)kind); }

/* ---- Step 1: iterative DFS from the super-root ---- */

/* A DFS is a chain of dependent cache misses: target -> its number and
 * edge range -> its edges -> their targets' numbers ... Two hops per level
 * would be two full memory latencies per node. So each node's number, edge
 * range and first target sit together in one 16-byte record: when a node is
 * entered, its first target (the usual way down) is known at once and that
 * target's record is requested together with the node's edges — one
 * latency per level while the DFS descends through first edges. */
struct dn {
  uint32_t pre;         /* preorder number, HG_NONE until reached */
  uint32_t start, end;  /* edges in c                             */
  uint32_t first;       /* target of edge start (if any)          */
};

static inline void enter(const struct dn *nd, const uint32_t *tg, uint32_t t) {
  if (nd[t].start < nd[t].end) {
    __builtin_prefetch(&nd[nd[t].first]);
    __builtin_prefetch(&tg[nd[t].start]);
  }
}

/* Numbers reached nodes 1..cnt in preorder (nd[node].pre, order[num-1]) and
 * records parent[num]. The DFS stack is implicit: the open vertices are the
 * parent chain of the current one and cur[num] is each one's next edge.
 * It also writes the renumbered CSR p of the reached nodes (slot num - 1,
 * edges in c's order, targets as 0-based numbers): a node's slot range is
 * fixed when it is entered (entries come in number order, so the ranges are
 * a running sum) and each edge is written there when the DFS looks at it —
 * near the ranges just written, so no separate gather pass over c.
 * Returns cnt. */
static uint32_t dfs(struct dn *nd, uint32_t n, const uint32_t *tg, const uint32_t *entries,
                    uint32_t entry_count, uint32_t *order, uint32_t *parent, uint32_t *cur,
                    struct _hg_csr *p) {
  uint32_t cnt = 0, *ps = p->start, *pt = p->target;
  ps[0] = 0;
  for (uint32_t i = 0; i < entry_count; i++) {
    uint32_t r = entries[i];
    if (r >= n || nd[r].pre != HG_NONE) continue;
    nd[r].pre = ++cnt;
    order[cnt - 1] = r;
    parent[cnt] = 0;
    cur[cnt] = nd[r].start;
    ps[cnt] = ps[cnt - 1] + (nd[r].end - nd[r].start);
    enter(nd, tg, r);
    uint32_t w = cnt;
    while (w) {
      const struct dn *v = &nd[order[w - 1]];
      uint32_t e = cur[w], end = v->end, next = 0;
      uint32_t *out = pt + ps[w - 1] - v->start; /* out[e]: edge e's slot */
      for (; e < end; e++) {
        uint32_t t = e == v->start ? v->first : tg[e], q = nd[t].pre;
        if (q == HG_NONE) {
          q = nd[t].pre = ++cnt;
          order[q - 1] = t;
          parent[q] = w;
          cur[q] = nd[t].start;
          ps[q] = ps[q - 1] + (nd[t].end - nd[t].start);
          next = q;
          enter(nd, tg, t);
        }
        out[e] = q - 1;
        if (next) break;
      }
      if (next) {
        cur[w] = e + 1;
        w = next;
      } else {
        w = parent[w];
      }
    }
  }
  return cnt;
}

/* The rest of the renumbering: the unreached nodes get the numbers after
 * cnt in index order (order[cnt..n-1]) and their edges follow in p, so p
 * covers the whole graph (the view). pre[] stays HG_NONE for them; num[]
 * (scratch, n entries) gets every node's 0-based number. */
static void renumber_rest(const struct _hg_csr *c, uint32_t cnt, const uint32_t *pre,
                          uint32_t *num, uint32_t *order, struct _hg_csr *p) {
  uint32_t n = c->n, k = cnt;
  for (uint32_t v = 0; v < n; v++) {
    num[v] = pre[v] != HG_NONE ? pre[v] - 1 : k;
    if (pre[v] == HG_NONE) order[k++] = v;
  }
  uint32_t at = p->start[cnt];
  for (uint32_t x = cnt; x < n; x++) {
    uint32_t v = order[x];
    p->start[x] = at;
    for (uint32_t e = c->start[v], end = c->start[v + 1]; e < end; e++)
      p->target[at++] = num[c->target[e]];
  }
  p->start[n] = at;
}

/* Predecessor lists by preorder number, built cache-consciously from the
 * renumbered CSR p (sources in order): the (target, source) number pairs of
 * the reached nodes' edges are first partitioned by target into blocks of
 * 4096 numbers (sequential appends to one stream per block), then each block
 * is counting-sorted while its counters sit in cache. pstart (cnt + 2
 * entries, zeroed) gets the lists: the in-edges of w are
 * preds[pstart[w - 1] .. pstart[w]), with pstart[0] = 0; *preds_out is the
 * array (16 spare zeroed slots at the end for prefetching). 0 or HG_ENOMEM. */
#define BLOCK_SHIFT 12

struct pair {
  uint32_t to, from;
};

static int build_preds(const struct _hg_csr *p, uint32_t cnt, uint32_t *pstart,
                       uint32_t **preds_out) {
  uint32_t nb = (cnt >> BLOCK_SHIFT) + 1;
  uint32_t *bstart = calloc((size_t)nb + 1, sizeof *bstart);
  uint32_t *bpos = malloc(((size_t)nb + 1) * sizeof *bpos);
  struct pair *pairs = NULL;
  uint32_t *preds = NULL;
  if (!bstart || !bpos) goto nomem;
  const uint32_t *tg = p->target;
  uint32_t total = p->start[cnt]; /* edges of numbers 1..cnt (slots 0..cnt-1) */
  for (uint32_t k = 0; k < total; k++) bstart[((tg[k] + 1) >> BLOCK_SHIFT) + 1]++;
  for (uint32_t b = 0; b < nb; b++) bstart[b + 1] += bstart[b];
  if (!(pairs = _hg_malloc_big(((size_t)total + 1) * sizeof *pairs))) goto nomem;
  memcpy(bpos, bstart, ((size_t)nb + 1) * sizeof *bpos);
  for (uint32_t x = 0; x < cnt; x++)
    for (uint32_t k = p->start[x], end = p->start[x + 1]; k < end; k++)
      pairs[bpos[(tg[k] + 1) >> BLOCK_SHIFT]++] = (struct pair){tg[k] + 1, x + 1};
  if (!(preds = _hg_calloc_big((size_t)total + 17, sizeof *preds))) goto nomem;
  for (uint32_t k = 0; k < total; k++) pstart[pairs[k].to + 1]++;
  for (uint32_t w = 1; w <= cnt + 1; w++) pstart[w] += pstart[w - 1];
  for (uint32_t k = 0; k < total; k++) preds[pstart[pairs[k].to]++] = pairs[k].from;
  free(pairs);
  free(bstart);
  free(bpos);
  *preds_out = preds;
  return 0;
nomem:
  free(bstart);
  free(bpos);
  free(pairs);
  return HG_ENOMEM;
}

/* ---- Step 2 (fallback): SEMI-NCA semidominators ---- */

/* anc (forest ancestor) and label (smallest semi on the compressed path)
 * side by side: eval touches both, so one cache line instead of two. */
struct al {
  uint32_t anc, label;
};

/* eval: the smallest semi on the forest path from processed vertex v up to
 * its top (the last processed vertex; processed = numbered > w), by path
 * halving: each step makes a vertex skip its ancestor, folding the
 * ancestor's label into its own, so label[x] always covers the tree path
 * from x up to (excluding) anc[x]. One pass, no stack. */
static uint32_t eval(uint32_t v, uint32_t w, struct al *al) {
  uint32_t x = v, res = UINT32_MAX;
  for (;;) {
    uint32_t a = al[x].anc, lx = al[x].label;
    if (a <= w) return lx < res ? lx : res;
    uint32_t aa = al[a].anc, la = al[a].label;
    if (la < lx) lx = la;
    if (aa <= w) return lx < res ? lx : res;
    al[x].label = lx;
    al[x].anc = aa;
    if (lx < res) res = lx;
    x = aa;
  }
}

static void semidominators(const uint64_t *is_entry, uint32_t cnt, const uint32_t *parent,
                           const uint32_t *pstart, const uint32_t *preds, uint32_t *semi,
                           struct al *al) {
  for (uint32_t w = cnt; w >= 1; w--) {
    uint32_t best = parent[w];
    if (_hg_bit(is_entry, w)) {
      best = 0;
    } else {
      for (uint32_t k = pstart[w - 1], end = pstart[w]; k < end; k++) {
        uint32_t pv = preds[k];
        __builtin_prefetch(&al[preds[k + 16]]); /* preds has 16 spare slots */
        uint32_t cand = pv > w ? eval(pv, w, al) : pv;
        if (cand < best) best = cand;
      }
    }
    semi[w] = best;
    al[w].label = best;
    al[w].anc = parent[w];
  }
}

/* ---- Step 2 (usual case): iterate to the fixed point ---- */

/*
 * Cooper-Harvey-Kennedy ("A Simple, Fast Dominance Algorithm") in preorder
 * space: idom(w) = the nearest common ancestor, in the tree built so far,
 * of w's predecessors, repeated until nothing changes. Valid in preorder
 * because every tentative idom has a smaller number than its node, so the
 * two-finger walk moves the bigger number up. Heap graphs have shallow
 * dominator trees (most blocks hang off the super-root), so the walks are
 * short, predecessors can be prefetched, and a node whose idom reached the
 * super-root is final (values only move towards the root) and is skipped
 * in later passes. The synthetic 10M bench settles in 3 passes; a graph
 * that needs more than MAX_PASSES, or more than ~4 walk steps per edge in a
 * pass (a deep tree), falls back to SEMI-NCA, so this stays O(m + n).
 * doms[w] gets the preorder number of w's idom (0 = super-root). Returns 1
 * if settled.
 */
#define MAX_PASSES 8

static int iterate(const uint64_t *is_entry, uint32_t cnt, const uint32_t *parent,
                   const uint32_t *pstart, const uint32_t *preds, uint32_t *doms) {
  doms[0] = 0;
  for (uint32_t w = 1; w <= cnt; w++) doms[w] = HG_NONE;
  /* Walk steps per pass: deep trees make the walks long; then give up. */
  uint64_t budget = 4 * ((uint64_t)pstart[cnt] + cnt) + ((uint64_t)1 << 20);
  for (int pass = 0; pass < MAX_PASSES; pass++) {
    int changed = 0;
    uint64_t steps = 0;
    for (uint32_t w = 1; w <= cnt; w++) {
      if (doms[w] == 0) continue;
      uint32_t nd = parent[w]; /* a predecessor, numbered (and set) before w */
      if (_hg_bit(is_entry, w)) {
        nd = 0;
      } else {
        for (uint32_t k = pstart[w - 1], end = pstart[w]; k < end && nd; k++) {
          uint32_t a = preds[k], b = nd;
          __builtin_prefetch(&doms[preds[k + 16]]); /* preds has 16 spare slots */
          if (a == nd || doms[a] == HG_NONE) continue; /* not reached yet this pass */
          while (a != b) {
            while (a > b) a = doms[a], steps++;
            while (b > a) b = doms[b], steps++;
          }
          nd = a;
          if (steps > budget) return 0;
        }
      }
      if (doms[w] != nd) {
        doms[w] = nd;
        changed = 1;
      }
    }
    if (!changed) return 1;
  }
  return 0;
}

/* ---- Driver ---- */

int _hg_dom_core(struct _hg_csr *c, const uint32_t *entries, uint32_t entry_count,
                 uint32_t *order, uint32_t *idom, uint32_t *pre_out, uint32_t *reached,
                 struct _hg_view *view) {
  uint32_t n = c->n, cnt = 0;
  size_t m = (size_t)n + 1;
  int rc = HG_ENOMEM;
  uint32_t *parent = idom; /* becomes idom in place */
  uint32_t *pre = pre_out ? pre_out : _hg_malloc_big(m * sizeof *pre);
  uint32_t *cur = _hg_malloc_big(m * sizeof *cur); /* DFS cursors, then doms or semi */
  uint32_t *pstart = _hg_calloc_big(m + 1, sizeof *pstart);
  uint32_t *preds = NULL;
  uint64_t *is_entry = _hg_bits_new(n + 1);
  struct al *al = NULL;
  struct _hg_csr p = {0};
  struct dn *nd = NULL;
  if (!pre || !cur || !pstart || !is_entry) goto out;
  uint32_t me = c->start[n];
  p.n = n;
  p.start = _hg_malloc_big(m * sizeof *p.start);
  p.target = _hg_malloc_big(((size_t)me + 1) * sizeof *p.target);
  if (!p.start || !p.target || !(nd = _hg_malloc_big(m * sizeof *nd))) goto out;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t s0 = c->start[v], s1 = c->start[v + 1];
    nd[v] = (struct dn){HG_NONE, s0, s1, s0 < s1 ? c->target[s0] : 0};
  }
  cnt = dfs(nd, n, c->target, entries, entry_count, order, parent, cur, &p);
  for (uint32_t v = 0; v < n; v++) pre[v] = nd[v].pre;
  free(nd);
  nd = NULL;
  for (uint32_t i = 0; i < entry_count; i++)
    if (entries[i] < n && pre[entries[i]] != HG_NONE) _hg_bit_set(is_entry, pre[entries[i]]);
  renumber_rest(c, cnt, pre, cur, order, &p); /* cur is free scratch here */
  _hg_csr_free(c);
  if (build_preds(&p, cnt, pstart, &preds)) goto out;
  if (view) {
    view->c = p;
    view->reached = cnt;
    memset(&p, 0, sizeof p);
  } else {
    _hg_csr_free(&p);
  }
  if (!pre_out) {
    free(pre);
    pre = NULL;
  }
  if (iterate(is_entry, cnt, parent, pstart, preds, cur)) {
    memcpy(parent + 1, cur + 1, (size_t)cnt * sizeof *parent);
  } else {
    /* Not settled after MAX_PASSES: SEMI-NCA, O(m log n) whatever the
     * graph (same tree: dominators are unique). */
    if (!(al = _hg_malloc_big(m * sizeof *al))) goto out;
    semidominators(is_entry, cnt, parent, pstart, preds, cur, al);
    /* NCA: idom(w) = the first ancestor of parent(w) numbered <= semi(w).
     * parent[] becomes idom[] in place: smaller numbers are already final. */
    const uint32_t *semi = cur;
    for (uint32_t w = 1; w <= cnt; w++) {
      uint32_t d = parent[w];
      while (d > semi[w]) d = parent[d];
      parent[w] = d;
    }
  }
  idom[0] = 0;
  *reached = cnt;
  rc = 0;
out:
  _hg_csr_free(c);
  _hg_csr_free(&p);
  free(nd);
  if (!pre_out) free(pre);
  free(cur);
  free(pstart);
  free(preds);
  free(al);
  free(is_entry);
  return rc;
}

/* Retained sizes are computed in preorder space (reverse preorder: every
 * node is final before its dominator gets it; ret[0], the super-root, ends
 * as the total), then scattered to node indices; idom likewise. */
struct idom_job {
  struct hg_dominators *d;
  const uint32_t *idw;
  uint32_t cnt;
};

static void *idom_to_nodes(void *arg) {
  struct idom_job *j = arg;
  struct hg_dominators *d = j->d;
  const uint32_t *order = d->order, *idw = j->idw;
  uint32_t n = d->node_count, cnt = j->cnt;
  for (uint32_t w = 1; w <= cnt; w++) {
    if (w + 32 <= cnt) {
      __builtin_prefetch(&d->idom[order[w + 31]], 1);
      __builtin_prefetch(&order[idw[w + 16] ? idw[w + 16] - 1 : 0]);
    }
    uint32_t p = idw[w];
    d->idom[order[w - 1]] = p ? order[p - 1] : HG_SUPER_ROOT;
  }
  for (uint32_t x = cnt; x < n; x++) d->idom[order[x]] = HG_NONE; /* unreached */
  d->idom[n] = HG_NONE;
  return NULL;
}

int hg_dominators_compute(struct hg_graph *g, struct hg_dominators **out) {
  if (!g || !out) return HG_EINVAL;
  *out = NULL;
  struct _hg_csr c;
  int rc = _hg_csr_retaining(g, &c);
  if (rc) return rc;
  struct hg_dominators *d = calloc(1, sizeof *d);
  uint32_t n = g->node_count;
  size_t m = (size_t)n + 1;
  uint32_t *entries = malloc(((size_t)g->root_count + 1) * sizeof *entries);
  uint32_t *idw = _hg_malloc_big(m * sizeof *idw);
  uint64_t *ret = NULL;
  struct _hg_view *view = NULL;
  if (!d || !entries || !idw) goto nomem;
  d->node_count = n;
  if (!(d->order = _hg_malloc_big(m * sizeof *d->order))) goto nomem;
  for (uint32_t i = 0; i < g->root_count; i++) entries[i] = g->roots[i].target;
  if (!(view = calloc(1, sizeof *view))) goto nomem;
  rc = _hg_dom_core(&c, entries, g->root_count, d->order, idw, NULL, &d->reachable_count, view);
  if (rc) goto fail;
  free(entries);
  entries = NULL;
  uint32_t cnt = d->reachable_count;
  /* The view for later analyses: numbering and root reachability. */
  view->node = _hg_malloc_big(m * sizeof *view->node);
  view->reach = _hg_bits_new(n);
  if (!view->node || !view->reach) goto nomem;
  memcpy(view->node, d->order, (size_t)n * sizeof *view->node);
  for (uint32_t w = 0; w < cnt; w++) _hg_bit_set(view->reach, d->order[w]);
  /* Retained sizes in preorder space (reverse preorder: every node is final
   * before its dominator gets it; ret[0], the super-root, ends as the total),
   * then scattered to node indices. */
  d->idom = _hg_malloc_big(m * sizeof *d->idom);
  d->retained = _hg_malloc_big(m * sizeof *d->retained);
  if (!(ret = _hg_malloc_big(m * sizeof *ret)) || !d->idom || !d->retained) goto nomem;
  /* idom to node indices on the second core while this one does sizes. */
  struct idom_job job = {d, idw, cnt};
  pthread_t th;
  int threaded = pthread_create(&th, NULL, idom_to_nodes, &job) == 0;
  ret[0] = 0;
  const uint32_t *order = d->order; /* order[cnt..n-1]: the unreached nodes */
  for (uint32_t w = 1; w <= cnt; w++) {
    if (w + 32 <= cnt) __builtin_prefetch(&g->node_size[order[w + 31]]);
    ret[w] = g->node_size[order[w - 1]];
  }
  for (uint32_t w = cnt; w >= 1; w--) ret[idw[w]] += ret[w];
  d->reachable_bytes = ret[0];
  for (uint32_t w = 1; w <= cnt; w++) {
    if (w + 32 <= cnt) __builtin_prefetch(&d->retained[order[w + 31]], 1);
    d->retained[order[w - 1]] = ret[w];
  }
  for (uint32_t x = cnt; x < n; x++) d->retained[order[x]] = 0;
  d->retained[n] = 0;
  if (threaded)
    pthread_join(th, NULL);
  else
    idom_to_nodes(&job);
  free(idw);
  free(ret);
  _hg_view_put(g, view);
  *out = d;
  return 0;
nomem:
  rc = HG_ENOMEM;
fail:
  _hg_view_free(view);
  _hg_csr_free(&c);
  free(entries);
  free(idw);
  free(ret);
  hg_dominators_free(d);
  return rc;
}

void hg_dominators_free(struct hg_dominators *d) {
  if (!d) return;
  free(d->idom);
  free(d->retained);
  free(d->order);
  free(d);
}

/* ---- Per-class retained sizes ---- */

/* Usual case: heap dominator trees are shallow, so for each reachable node
 * (in node order: sequential reads) walk up its dominators looking for its
 * class; it counts if none has it. Gives up (returns 0) on a node deeper
 * than WALK_MAX, leaving the linear tree walk below to do the job. */
#define WALK_MAX 64

static int walk_up(const struct hg_graph *g, const struct hg_dominators *d, uint32_t nc,
                   uint64_t *retained) {
  uint32_t n = g->node_count < d->node_count ? g->node_count : d->node_count;
  const uint32_t *idom = d->idom, *cls = g->node_class;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t u = idom[v];
    if (u == HG_NONE) continue;
    uint32_t c = cls[v] < nc ? cls[v] : 0, steps = 0;
    for (; u < n; u = idom[u]) {
      if ((cls[u] < nc ? cls[u] : 0) == c) break;
      if (++steps > WALK_MAX) return 0;
    }
    if (u >= n) retained[c] += d->retained[v];
  }
  return 1;
}

/* Otherwise: walks the dominator tree (children CSR built from idom, iterative DFS)
 * keeping, per class, how many nodes of that class are on the current path:
 * a node adds its retained size to its class only when it is the first. */
int hg_class_retained(const struct hg_graph *g, const struct hg_dominators *d, uint64_t *counts,
                      uint64_t *bytes, uint64_t *retained) {
  if (!g || !d) return HG_EINVAL;
  uint32_t n = g->node_count, nc = g->class_count + 1;
  if (counts) memset(counts, 0, nc * sizeof *counts);
  if (bytes) memset(bytes, 0, nc * sizeof *bytes);
  uint32_t nn = n < d->node_count ? n : d->node_count;
  if (counts || bytes)
    for (uint32_t v = 0; v < nn; v++) { /* node order: sequential reads */
      if (d->idom[v] == HG_NONE) continue;
      uint32_t c = g->node_class[v] < nc ? g->node_class[v] : 0;
      if (counts) counts[c]++;
      if (bytes) bytes[c] += g->node_size[v];
    }
  if (!retained) return 0;
  memset(retained, 0, nc * sizeof *retained);
  if (walk_up(g, d, nc, retained)) return 0;
  memset(retained, 0, nc * sizeof *retained);
  /* first[] indexed by node + 1 (slot 0 = super-root); kids[] = children. */
  uint32_t *first = _hg_calloc_big((size_t)n + 2, sizeof *first);
  uint32_t *kids = _hg_malloc_big(((size_t)d->reachable_count + 1) * sizeof *kids);
  uint32_t *active = calloc(nc, sizeof *active);
  uint32_t *stk = _hg_malloc_big(((size_t)d->reachable_count + 1) * sizeof *stk);
  uint32_t *cur = _hg_malloc_big(((size_t)d->reachable_count + 1) * sizeof *cur);
  int rc = HG_ENOMEM;
  if (!first || !kids || !active || !stk || !cur) goto out;
  for (uint32_t i = 0; i < d->reachable_count; i++) {
    uint32_t p = d->idom[d->order[i]];
    first[(p == HG_SUPER_ROOT ? 0 : (size_t)p + 1) + 1]++;
  }
  for (size_t i = 1; i < (size_t)n + 2; i++) first[i] += first[i - 1];
  for (uint32_t i = 0; i < d->reachable_count; i++) { /* stable: preorder */
    uint32_t v = d->order[i], p = d->idom[v];
    size_t slot = p == HG_SUPER_ROOT ? 0 : (size_t)p + 1;
    kids[first[slot]++] = v;
  }
  for (size_t i = (size_t)n + 1; i > 0; i--) first[i] = first[i - 1];
  first[0] = 0;
  /* DFS: stk holds nodes (slot numbers - 1), cur the next child position. */
  size_t sp = 0;
  for (uint32_t k = first[0]; k < first[1]; k++) {
    uint32_t r = kids[k];
    uint32_t c = g->node_class[r] < nc ? g->node_class[r] : 0;
    if (!active[c]++) retained[c] += d->retained[r];
    stk[sp] = r;
    cur[sp++] = first[(size_t)r + 1];
    while (sp) {
      uint32_t v = stk[sp - 1];
      if (cur[sp - 1] < first[(size_t)v + 2]) {
        uint32_t w = kids[cur[sp - 1]++];
        uint32_t cw = g->node_class[w] < nc ? g->node_class[w] : 0;
        if (!active[cw]++) retained[cw] += d->retained[w];
        stk[sp] = w;
        cur[sp++] = first[(size_t)w + 1];
      } else {
        uint32_t cv = g->node_class[v] < nc ? g->node_class[v] : 0;
        active[cv]--;
        sp--;
      }
    }
  }
  rc = 0;
out:
  free(first);
  free(kids);
  free(active);
  free(stk);
  free(cur);
  return rc;
}

/* ---- Top retainers ---- */

/* 1 if node a ranks before node b (bigger retained, then lower index). */
static int ranks_before(const struct hg_dominators *d, uint32_t a, uint32_t b) {
  if (d->retained[a] != d->retained[b]) return d->retained[a] > d->retained[b];
  return a < b;
}

/* Min-heap of size k over "rank": heap[0] is the worst kept node. */
static void sift_down(const struct hg_dominators *d, uint32_t *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && ranks_before(d, h[w], h[l])) w = l;
    if (r < n && ranks_before(d, h[w], h[r])) w = r;
    if (w == i) return;
    uint32_t t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

uint32_t hg_dominators_top(const struct hg_dominators *d, uint32_t k, uint32_t *out) {
  if (!d || !out || !k) return 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->reachable_count; i++) {
    uint32_t v = d->order[i];
    if (n < k) {
      out[n++] = v;
      if (n == k) /* heapify */
        for (uint32_t j = n / 2; j-- > 0;) sift_down(d, out, n, j);
    } else if (ranks_before(d, v, out[0])) {
      out[0] = v;
      sift_down(d, out, n, 0);
    }
  }
  if (n < k)
    for (uint32_t j = n / 2; j-- > 0;) sift_down(d, out, n, j);
  /* Heap sort: repeatedly move the worst to the end. */
  for (uint32_t m = n; m > 1; m--) {
    uint32_t t = out[0];
    out[0] = out[m - 1];
    out[m - 1] = t;
    sift_down(d, out, m - 1, 0);
  }
  return n;
}
