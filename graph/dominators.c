/*
 * dominators.c — dominator tree and retained sizes (iterative, SEMI-NCA fallback).
 *
 * Owns hg_dominators_compute, hg_class_retained, hg_dominators_top and the
 * reusable core _hg_dom_core (leaks.c runs it on the leaked subgraph). The
 * dominator tree is over a virtual super-root (number 0) whose children
 * are the entry nodes; only retaining edges count (the core walks the
 * graph's own CSR testing a bitmap of retaining edges as it goes, or
 * leaks.c's compact CSR; never the reverse CSR, never a copy).
 * Everything is iterative: the fallback's DFS stack is an explicit heap
 * array (one 20-byte frame per open node) and eval is path halving without
 * a stack, so a 10-million-node chain costs memory, never C stack.
 *
 * Algorithm: one BFS numbers the reachable nodes (bfs()) and lays out
 * their retaining edges renumbered in that order; then the iterative
 * Cooper-Harvey-Kennedy scheme (see iterate()) runs in that numbering,
 * pushed along those out-edges, which on heap graphs (shallow dominator
 * trees) settles in a few sequential, prefetchable passes. If it has not
 * settled after MAX_PASSES, the same tree is computed by SEMI-NCA
 * (Georgiadis; as used by LeakCanary and LLVM) on a DFS numbering of that
 * CSR (semi_nca()): predecessor lists, semidominators by the
 * Lengauer-Tarjan "simple" eval/link (path halving), then each idom is the
 * nearest common ancestor of its DFS parent and semidominator, mapped back
 * to the BFS numbering — O(m log n) whatever the graph.
 *
 * Speed is memory latency: the BFS requests the edges of the nodes its
 * queue holds ahead, tests "visited" in a bitmap, and writes the edges of
 * the renumbered CSR as it goes (node indices, turned into numbers by a
 * prefetched pass on two threads); meanwhile the second core faults in the
 * arrays the next steps write (pop_run). Big work arrays ask for huge
 * pages. While the idoms are computed, the second core fills the view's
 * numbering and reachability (side_run); then it turns the idoms into node
 * indices while this core sums retained sizes in node space. Every
 * two-thread step writes disjoint memory, so results never depend on the
 * thread count (tests/unit/test_dom_paths.c runs both ways).
 * hg_dominators_compute leaves the renumbered CSR on the graph as the view
 * (analysis.h, struct _hg_view), so leaks, cycles and reachability reuse
 * it. Working memory at peak ~ 5 uint32 per node (order, num/doms, the
 * CSR's start, idom, the view's numbering) plus 1 uint32 per retaining
 * edge (the renumbered CSR); no per-edge buffer besides it unless SEMI-NCA
 * runs (then a second renumbered CSR, 3 uint32 per edge and 6 per node
 * more).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

int hg_edge_kind_retains(uint32_t kind) { return kind < 256 && _hg_retains((uint8_t)kind); }

/* ---- Two threads ---- */

/* Runs fn(a) on a helper thread and fn(b) on this one (both on this one if
 * no thread can be started, or if `two` is 0). The jobs write disjoint
 * memory, so the result never depends on the thread count. */
static void both(void *(*fn)(void *), void *a, void *b, int two) {
  struct _hg_job j;
  _hg_job_start(&j, fn, a, two);
  fn(b);
  _hg_job_wait(&j);
}

/* Work big enough for a second thread (a thread start costs ~50 us); the
 * unit tests move it to run both paths on the same graphs. */
uint32_t _hg_dom_par_min = (uint32_t)1 << 16;
#define PAR_MIN _hg_dom_par_min

/* ---- Step 1: numbering (BFS; the fallback's DFS) ---- */

/* The edges the core walks: a CSR over node indices and, when kind is
 * non-NULL, each edge's kind (only retaining edges count; the graph's own
 * arrays are walked, no copy). */
struct edges {
  uint32_t n;
  const uint32_t *start, *target;
  const uint8_t *kind; /* NULL: every edge retains */
};

/* Retaining edges as a bitmap over the graph's edges (1 bit an edge, 1/8
 * of edge_kind: mostly in cache where edge_kind would be one more miss per
 * node), and how many of [lo, hi) are set. */
static uint64_t *retaining_bits(const struct edges *g, size_t *count) {
  uint32_t m = g->start[g->n];
  size_t k = 0;
  uint64_t *b = _hg_bits_new(m);
  if (b)
    for (uint32_t e = 0; e < m; e++)
      if (_hg_retains(g->kind[e])) _hg_bit_set(b, e), k++;
  *count = k;
  return b;
}

/* A DFS is a chain of dependent cache misses: target -> its number and
 * edge range -> its edges -> their targets' numbers ... So the DFS proper
 * does as little per edge as it can: the visited test is a bitmap (1 bit a
 * node: it stays in the core's own cache, and most edges lead to visited
 * nodes), and each edge is recorded in the renumbered CSR as its target's
 * node index, turned into numbers afterwards by a prefetched pass on two
 * threads (renumber()). A node's first retaining target and that one's
 * first target sit together in one 8-byte record: when a node is entered
 * its first target (the usual way down) is known at once and the records
 * two levels down are requested together with the node's edges, so while
 * the DFS descends through first edges a level costs about half a memory
 * latency. The stack is explicit and keeps, per open node, the target of
 * its next edge, so when the DFS returns up a chain the next frames'
 * targets are requested ahead instead of being found by dependent misses
 * (parent -> node -> edges -> target). */
struct dn {
  uint32_t first;  /* target of the first edge (none: the node) */
  uint32_t ff;     /* first's first                              */
};

struct frame {
  uint32_t w;     /* preorder number                            */
  uint32_t e;     /* next edge                                  */
  uint32_t end;   /* edge range end                             */
  uint32_t next;  /* target of edge e (when e < end)            */
  uint32_t slot;  /* next slot in the renumbered CSR            */
};

/* Numbers reached nodes 1..cnt in preorder (order[num-1]; seen marks them)
 * and records parent[num]; stk has room for cnt + 1 frames (only as deep
 * as the DFS goes is touched). It also lays out the renumbered CSR p of
 * the reached nodes (slot num - 1, edges in the graph's order; the DFS
 * runs only on a CSR of retaining edges, semi_nca()'s copy):
 * a node's slot range is fixed when it is entered (entries come in number
 * order, so the ranges are a running sum) and each edge's target node is
 * written there when the DFS looks at it — near the ranges just written,
 * so no separate gather pass. Returns cnt. */
static uint32_t dfs(const struct edges *g, const struct dn *nd, const uint32_t *entries,
                    uint32_t entry_count, uint64_t *seen, uint32_t *order, uint32_t *parent,
                    struct frame *stk, struct _hg_csr *p) {
  uint32_t n = g->n, cnt = 0, *ps = p->start, *pt = p->target;
  const uint32_t *es = g->start, *tg = g->target;
  ps[0] = 0;
  for (uint32_t i = 0; i < entry_count; i++) {
    uint32_t t = entries[i];
    if (t >= n || _hg_bit(seen, t)) continue;
    uint32_t from = 0;
    size_t sp = 0;
    for (;;) {
      /* Enter t (unvisited) as a child of `from`. */
      uint32_t q = ++cnt, s0 = es[t], s1 = es[t + 1], k = s1 - s0;
      const struct dn *x = &nd[t];
      _hg_bit_set(seen, t);
      order[q - 1] = t;
      parent[q] = from;
      if (s0 < s1) {
        __builtin_prefetch(&nd[x->first]);
        __builtin_prefetch(&es[x->first]);
        __builtin_prefetch(&nd[x->ff]);
        __builtin_prefetch(&es[x->ff]);
        __builtin_prefetch(&tg[s0]);
      }
      ps[q] = ps[q - 1] + k;
      stk[sp++] = (struct frame){q, s0, s1, s0 < s1 ? x->first : 0, ps[q - 1]};
      /* Find the next unvisited target from the top frame, popping
       * finished ones. */
      for (;;) {
        struct frame *f = &stk[sp - 1];
        uint32_t e = f->e, end = f->end, u = f->next, slot = f->slot;
        while (e < end) {
          pt[slot++] = u;
          if (!_hg_bit(seen, u)) break;
          if (++e < end) u = tg[e];
        }
        if (e < end) { /* descend into u through edge e */
          f->e = e + 1;
          f->slot = slot;
          if (e + 1 < end) {
            f->next = tg[e + 1];
            __builtin_prefetch(&nd[f->next]);
            __builtin_prefetch(&es[f->next]);
          }
          from = f->w;
          t = u;
          break;
        }
        if (--sp == 0) break;
        /* Returning: the frame below will look at its next target soon. */
        if (sp >= 2 && stk[sp - 2].e < stk[sp - 2].end) {
          __builtin_prefetch(&nd[stk[sp - 2].next]);
          __builtin_prefetch(&es[stk[sp - 2].next]);
        }
      }
      if (sp == 0) break;
    }
  }
  return cnt;
}

/* Numbers the nodes reached from the entries in breadth-first order
 * (order[num-1]; seen marks them) and lays out the renumbered CSR p of the
 * reached nodes like dfs() does (slot num - 1, retaining edges in the
 * graph's order, each edge's target written as a node index). Unlike a DFS,
 * the nodes whose edges are read next are known far ahead: they are the
 * queue, order[] itself. So their edge ranges are requested DIST_START
 * nodes ahead, their edges (and retaining bits) DIST_EDGES ahead and, once
 * those have arrived, their targets' seen words DIST_SEEN ahead (the seen
 * lookup was two thirds of the BFS's samples at 100M nodes, a 12.5 MB
 * bitmap), and a node costs about a bandwidth-bound share of its cache
 * misses instead of a chain of them. A BFS order serves the iteration
 * below as well as a preorder: every node's BFS parent comes before it, so
 * every tentative idom has a smaller number. Returns cnt. */
#define DIST_START 48
#define DIST_EDGES 16
#define DIST_SEEN 8

/* Where each BFS level ends (numbers 1..end[0] are the entries, then
 * end[0]+1..end[1], ...); failed: out of memory. */
struct levels {
  uint32_t *end;
  uint32_t n, cap;
  int failed;
};

static void level_end(struct levels *lv, uint32_t at) {
  if (lv->n == lv->cap) {
    uint32_t nc = lv->cap ? 2 * lv->cap : 64;
    uint32_t *ne = realloc(lv->end, (size_t)nc * sizeof *ne);
    if (!ne) {
      lv->failed = 1;
      return;
    }
    lv->end = ne;
    lv->cap = nc;
  }
  lv->end[lv->n++] = at;
}

static uint32_t bfs(const struct edges *g, const uint64_t *rb, const uint32_t *entries,
                    uint32_t entry_count, uint64_t *seen, uint32_t *order, struct _hg_csr *p,
                    struct levels *lv) {
  uint32_t n = g->n, cnt = 0, slot = 0, *ps = p->start, *pt = p->target;
  const uint32_t *es = g->start, *tg = g->target;
  ps[0] = 0;
  for (uint32_t i = 0; i < entry_count; i++) {
    uint32_t t = entries[i];
    if (t >= n || _hg_bit(seen, t)) continue;
    _hg_bit_set(seen, t);
    order[cnt++] = t;
  }
  for (uint32_t i = 0; i < cnt; i++) {
    if (i == (lv->n ? lv->end[lv->n - 1] : 0)) level_end(lv, cnt);
    if (i + DIST_START < cnt) __builtin_prefetch(&es[order[i + DIST_START]]);
    if (i + DIST_EDGES < cnt) {
      uint32_t s = es[order[i + DIST_EDGES]];
      __builtin_prefetch(&tg[s]);
      if (rb) __builtin_prefetch(&rb[s >> 6]);
    }
    if (i + DIST_SEEN < cnt) { /* its edges arrived: request their seen words */
      uint32_t u = order[i + DIST_SEEN];
      for (uint32_t e = es[u], end = es[u + 1]; e < end; e++) __builtin_prefetch(&seen[tg[e] >> 6]);
    }
    uint32_t v = order[i];
    for (uint32_t e = es[v], end = es[v + 1]; e < end; e++) {
      if (rb && !_hg_bit(rb, e)) continue;
      uint32_t t = tg[e];
      pt[slot++] = t;
      /* Without a branch (a third of the targets are new: it would be
       * mispredicted): t is always written and counted only if new, so
       * order needs one spare slot. */
      uint64_t *sw = &seen[t >> 6], w = *sw, bit = (uint64_t)1 << (t & 63);
      order[cnt] = t;
      cnt += !(w & bit);
      *sw = w | bit;
    }
    ps[i + 1] = slot;
  }
  return cnt;
}

/* The rest of the renumbering: num[] (n entries) gets every node's 0-based
 * number, the unreached nodes (not in seen) taking the numbers after cnt
 * in index order (order[cnt..n-1]); the reached nodes' edges in p (node
 * indices, written by dfs) become numbers, on two threads; the unreached
 * nodes' retaining edges follow in p, so p covers the whole graph (the
 * view). */
struct conv {
  uint32_t *t;
  size_t lo, hi;
  const uint32_t *num;
};

static void *convert(void *arg) {
  struct conv *cv = arg;
  uint32_t *t = cv->t;
  const uint32_t *num = cv->num;
  for (size_t k = cv->lo; k < cv->hi; k++) {
    if (k + 32 < cv->hi) __builtin_prefetch(&num[t[k + 32]]);
    t[k] = num[t[k]];
  }
  return NULL;
}

static void renumber(const struct edges *g, uint32_t cnt, const uint64_t *seen, uint32_t *num,
                     uint32_t *order, struct _hg_csr *p) {
  uint32_t n = g->n, k = cnt;
  for (uint32_t q = 0; q < cnt; q++) {
    if (q + 32 < cnt) __builtin_prefetch(&num[order[q + 32]], 1);
    num[order[q]] = q;
  }
  for (uint32_t v = 0; v < n; v++)
    if (!_hg_bit(seen, v)) {
      num[v] = k;
      order[k++] = v;
    }
  uint32_t at = p->start[cnt];
  struct conv h[2] = {{p->target, 0, at / 2, num}, {p->target, at / 2, at, num}};
  both(convert, &h[1], &h[0], at >= PAR_MIN);
  const uint32_t *es = g->start, *tg = g->target;
  for (uint32_t x = cnt; x < n; x++) {
    uint32_t v = order[x];
    p->start[x] = at;
    for (uint32_t e = es[v], end = es[v + 1]; e < end; e++)
      if (!g->kind || _hg_retains(g->kind[e])) p->target[at++] = num[tg[e]];
  }
  p->start[n] = at;
}

/* Predecessor lists by preorder number, built cache-consciously from the
 * renumbered CSR p (sources in order): the (target, source) number pairs of
 * the reached nodes' edges are first partitioned by target into blocks of
 * 4096 numbers (sequential appends to one stream per block), then each block
 * is counting-sorted while its counters sit in cache. Each step is split
 * between two threads: counting and partitioning by source range (half 0
 * writes the front of every block, half 1 the back, so a block holds its
 * pairs in source order as one thread would write them), sorting by block
 * range. pstart (cnt + 2 entries) gets the lists: the in-edges of w are
 * preds[pstart[w - 1] .. pstart[w]), with pstart[0] = 0; *preds_out is the
 * array (16 spare zeroed slots at the end for prefetching). 0 or HG_ENOMEM. */
#define BLOCK_SHIFT 12
#define BLOCK_SIZE ((uint32_t)1 << BLOCK_SHIFT)

struct pair {
  uint32_t to, from;
};

struct preds_half {
  const struct _hg_csr *p;
  int step;             /* 0 count, 1 partition, 2 sort              */
  uint32_t xlo, xhi;    /* source slots (steps 0, 1)                 */
  uint32_t blo, bhi;    /* blocks (step 2)                           */
  uint32_t cnt;
  uint32_t *count;      /* per block (step 0), then cursors (step 1) */
  const uint32_t *bstart;
  struct pair *pairs;
  uint32_t *pstart, *preds;
};

static void *preds_step(void *arg) {
  struct preds_half *h = arg;
  const uint32_t *tg = h->p->target, *ps = h->p->start;
  if (h->step == 0) {
    for (uint32_t k = ps[h->xlo], end = ps[h->xhi]; k < end; k++)
      h->count[(tg[k] + 1) >> BLOCK_SHIFT]++;
  } else if (h->step == 1) {
    uint32_t *pos = h->count;
    struct pair *pairs = h->pairs;
    for (uint32_t x = h->xlo; x < h->xhi; x++)
      for (uint32_t k = ps[x], end = ps[x + 1]; k < end; k++)
        pairs[pos[(tg[k] + 1) >> BLOCK_SHIFT]++] = (struct pair){tg[k] + 1, x + 1};
  } else {
    uint32_t local[BLOCK_SIZE];
    for (uint32_t b = h->blo; b < h->bhi; b++) {
      uint32_t lo = b << BLOCK_SHIFT, hi = lo + BLOCK_SIZE;
      if (hi > h->cnt + 1) hi = h->cnt + 1;
      memset(local, 0, (hi - lo) * sizeof *local);
      const struct pair *pr = h->pairs + h->bstart[b], *pe = h->pairs + h->bstart[b + 1];
      for (const struct pair *q = pr; q < pe; q++) local[q->to - lo]++;
      uint32_t at = h->bstart[b]; /* pairs with a smaller target */
      for (uint32_t i = 0; i < hi - lo; i++) {
        uint32_t c = local[i];
        local[i] = at;
        at += c;
      }
      for (const struct pair *q = pr; q < pe; q++) h->preds[local[q->to - lo]++] = q->from;
      /* local[i] is now the end of (lo + i)'s list: pstart[lo + i]. */
      memcpy(h->pstart + lo, local, (hi - lo) * sizeof *local);
    }
  }
  return NULL;
}

/* The first index in [lo, hi] with at[i] >= want (at non-decreasing). */
static uint32_t split_at(const uint32_t *at, uint32_t lo, uint32_t hi, uint32_t want) {
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (at[mid] < want)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int build_preds(const struct _hg_csr *p, uint32_t cnt, uint32_t *pstart,
                       uint32_t **preds_out) {
  uint32_t nb = ((cnt + 1) >> BLOCK_SHIFT) + 1; /* targets 1..cnt */
  uint32_t total = p->start[cnt]; /* edges of numbers 1..cnt (slots 0..cnt-1) */
  int two = total >= PAR_MIN;
  uint32_t *count = calloc(2 * ((size_t)nb + 1), sizeof *count);
  uint32_t *bstart = malloc(((size_t)nb + 1) * sizeof *bstart);
  struct pair *pairs = NULL;
  uint32_t *preds = NULL;
  if (!count || !bstart) goto nomem;
  if (!(pairs = _hg_malloc_big(((size_t)total + 1) * sizeof *pairs))) goto nomem;
  if (!(preds = _hg_malloc_big(((size_t)total + 17) * sizeof *preds))) goto nomem;
  memset(preds + total, 0, 17 * sizeof *preds);
  uint32_t xmid = split_at(p->start, 0, cnt, total / 2);
  struct preds_half h[2] = {{p, 0, 0, xmid, 0, 0, cnt, count, bstart, pairs, pstart, preds},
                            {p, 0, xmid, cnt, 0, 0, cnt, count + nb + 1, bstart, pairs, pstart,
                             preds}};
  both(preds_step, &h[1], &h[0], two);
  uint32_t at = 0;
  for (uint32_t b = 0; b < nb; b++) {
    uint32_t c0 = h[0].count[b], c1 = h[1].count[b];
    bstart[b] = at;
    h[0].count[b] = at;
    h[1].count[b] = at + c0;
    at += c0 + c1;
  }
  bstart[nb] = at;
  h[0].step = h[1].step = 1;
  both(preds_step, &h[1], &h[0], two);
  uint32_t bmid = split_at(bstart, 0, nb, total / 2);
  h[0].step = h[1].step = 2;
  h[0].blo = 0;
  h[0].bhi = h[1].blo = bmid;
  h[1].bhi = nb;
  both(preds_step, &h[1], &h[0], two);
  pstart[0] = 0; /* the super-root: no in-edges (block 0 wrote it too) */
  pstart[cnt + 1] = total;
  free(pairs);
  free(count);
  free(bstart);
  *preds_out = preds;
  return 0;
nomem:
  free(count);
  free(bstart);
  free(pairs);
  free(preds);
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
 * space, pushed along the out-edges: doms[w] holds w's tentative idom, and
 * every edge v -> w moves it to the nearest common ancestor, in the tree
 * built so far, of doms[w] and v; passes over the sources in preorder are
 * repeated until one changes nothing. In dominator-set terms each step is
 * Dom(w) &= {v} + Dom(v), so the values never drop below the true
 * dominators, and a pass without a change is a fixed point: the
 * dominators (the greatest fixed point). So it needs only the renumbered
 * CSR, read sequentially — no predecessor lists. Valid in preorder because
 * every tentative idom has a smaller number than its node (w's first push
 * in the first pass comes from a node numbered before it: its DFS parent at
 * the latest), so the two-finger walk moves the bigger number up. Heap
 * graphs have shallow dominator trees (most blocks hang off the super-root),
 * so the walks are short, the targets' values are prefetched, and a node
 * whose idom reached the super-root is final (values only move towards the
 * root): a bitmap (fin) skips it without touching doms. The synthetic 10M
 * bench settles in 3 passes; a graph that needs more than MAX_PASSES, or
 * more than ~4 walk steps per edge in a pass (a deep tree), falls back to
 * SEMI-NCA, so this stays O(m + n). doms[w] gets the preorder number of
 * w's idom (0 = super-root). Returns 1 if settled, 0 otherwise, -1 on
 * ENOMEM.
 */
int _hg_dom_max_passes = 8;
#define MAX_PASSES _hg_dom_max_passes

/* One thread's share of a pass: the pushes of sources lo+1..hi. doms and
 * fin are shared with the other half (relaxed atomics: plain moves on the
 * machines we run on), each half counts its own changes and walk steps. */
struct push_half {
  const uint32_t *ps, *pt;
  uint32_t total, lo, hi;
  uint32_t *doms;
  uint64_t *fin;
  uint64_t steps, budget;
  int changed;
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static void *push_range(void *arg) {
  struct push_half *h = arg;
  const uint32_t *ps = h->ps, *pt = h->pt;
  uint32_t total = h->total, *doms = h->doms;
  uint64_t *fin = h->fin, steps = h->steps;
  for (uint32_t v = h->lo + 1; v <= h->hi && steps <= h->budget; v++) {
    /* v's edges: slot v - 1; targets are numbers - 1. A settled target's
     * value is not even requested: its bit is, twice as far ahead. */
    for (uint32_t k = ps[v - 1], end = ps[v]; k < end; k++) {
      uint32_t w = pt[k] + 1;
      if (k + 32 < total) __builtin_prefetch(&fin[(pt[k + 32] + 1) >> 6]);
      if (k + 16 < total && !((LD(fin[(pt[k + 16] + 1) >> 6]) >> ((pt[k + 16] + 1) & 63)) & 1))
        __builtin_prefetch(&doms[pt[k + 16] + 1]);
      /* The walk's first step up from the target is a second dependent
       * miss (half the pass's time at 100M): its value, requested above,
       * has arrived 8 edges later, so request the value it points at. */
      if (k + 8 < total) {
        uint32_t w8 = pt[k + 8] + 1;
        if (!((LD(fin[w8 >> 6]) >> (w8 & 63)) & 1)) {
          uint32_t b8 = LD(doms[w8]);
          if (b8 != HG_NONE) __builtin_prefetch(&doms[b8]);
        }
      }
      if ((LD(fin[w >> 6]) >> (w & 63)) & 1) continue;
      uint32_t b = LD(doms[w]), a = v, b0 = b;
      if (b == HG_NONE) { /* first push: from before w (see iterate) */
        ST(doms[w], v);
        h->changed = 1;
        continue;
      }
      while (a != b) {
        while (a > b) a = LD(doms[a]), steps++;
        while (b > a) b = LD(doms[b]), steps++;
      }
      if (a != b0) {
        ST(doms[w], a);
        h->changed = 1;
        if (!a) __atomic_fetch_or(&fin[w >> 6], (uint64_t)1 << (w & 63), __ATOMIC_RELAXED);
      }
    }
  }
  h->steps = steps;
  return NULL;
}

/* The passes run level by level of the BFS (levels: the numbers where
 * each level ends), a level of at least PAR_MIN sources split between two
 * threads. Within a level every source already has its value (its BFS
 * parent is in the level before, finished), so both halves see only set
 * values, and a push's target in the next level is always numbered above
 * its source. Two halves may push into one target at once and one push be
 * lost; a half that changed anything makes the pass count as changed, so
 * another pass redoes it, and only a pass without any change ends the
 * iteration: then no thread wrote, and the values are a fixed point. Every
 * value ever stored (a predecessor, or the meeting point of two chains of
 * stored values) is dominated by every strict dominator of its node, so
 * chains read at different moments still hold every dominator, and the
 * fixed point is the dominator tree whichever way the pushes interleaved. */
static int iterate(const uint64_t *is_entry, uint32_t cnt, const struct _hg_csr *p,
                   const struct levels *lv, uint32_t *doms) {
  const uint32_t *ps = p->start, *pt = p->target;
  uint32_t total = ps[cnt];
  uint64_t *fin = _hg_bits_new(cnt + 1);
  if (!fin) return -1;
  doms[0] = 0;
  _hg_bit_set(fin, 0);
  for (uint32_t w = 1; w <= cnt; w++) {
    doms[w] = HG_NONE;
    if (_hg_bit(is_entry, w)) {
      doms[w] = 0;
      _hg_bit_set(fin, w);
    }
  }
  /* Walk steps per pass: deep trees make the walks long; then give up. */
  uint64_t budget = 4 * ((uint64_t)total + cnt) + ((uint64_t)1 << 20);
  int settled = 0, over = 0;
  for (int pass = 0; pass < MAX_PASSES && !settled && !over; pass++) {
    int changed = 0;
    uint64_t steps = 0;
    for (uint32_t k = 0, lo = 0; k < lv->n && !over; lo = lv->end[k++]) {
      uint32_t hi = lv->end[k], two = hi - lo >= PAR_MIN && hi - lo >= 2;
      uint32_t mid = two ? lo + (hi - lo) / 2 : hi;
      struct push_half h[2] = {{ps, pt, total, lo, mid, doms, fin, 0, budget - steps, 0},
                               {ps, pt, total, mid, hi, doms, fin, 0, budget - steps, 0}};
      both(push_range, &h[1], &h[0], two);
      changed |= h[0].changed | h[1].changed;
      steps += h[0].steps + h[1].steps;
      over = steps > budget;
    }
    settled = !changed && !over;
  }
  free(fin);
  return settled;
}

/* ---- Driver ---- */

/* Work hg_dominators_compute hands to the second core while this one
 * computes the idoms: it needs only the numbering (order), final once the
 * DFS and renumber are done. */
struct side_job {
  const struct hg_graph *g;
  const uint32_t *order;
  uint32_t cnt;
  struct _hg_view *view; /* node, reach: filled here */
};

static void *side_run(void *arg) {
  struct side_job *j = arg;
  const uint32_t *order = j->order;
  uint32_t n = j->g->node_count, cnt = j->cnt;
  memcpy(j->view->node, order, (size_t)n * sizeof *order);
  for (uint32_t w = 0; w < cnt; w++) _hg_bit_set(j->view->reach, order[w]);
  return NULL;
}

/* The DFS numbering of the fallback: numbers the nodes reached from the
 * entries in preorder (order, parent) and turns p into the renumbered CSR
 * over the whole graph (num: each node's number). 0 or HG_ENOMEM. */
static int dfs_number(const struct edges *g, const uint32_t *entries,
                      uint32_t entry_count, uint32_t *order, uint32_t *parent, uint32_t *num,
                      struct _hg_csr *p, uint32_t *reached) {
  uint32_t n = g->n;
  const uint32_t *es = g->start, *tg = g->target;
  size_t m = (size_t)n + 1;
  struct dn *nd = _hg_malloc_big(m * sizeof *nd);
  struct frame *stk = _hg_malloc_big(m * sizeof *stk);
  uint64_t *seen = _hg_bits_new(n);
  int rc = HG_ENOMEM;
  if (!nd || !stk || !seen) goto out;
  for (uint32_t v = 0; v < n; v++) nd[v].first = es[v] < es[v + 1] ? tg[es[v]] : v;
  for (uint32_t v = 0; v < n; v++) {
    if (v + 16 < n) __builtin_prefetch(&nd[nd[v + 16].first]);
    nd[v].ff = nd[nd[v].first].first;
  }
  *reached = dfs(g, nd, entries, entry_count, seen, order, parent, stk, p);
  free(stk);
  stk = NULL;
  free(nd);
  nd = NULL;
  renumber(g, *reached, seen, num, order, p);
  rc = 0;
out:
  free(nd);
  free(stk);
  free(seen);
  return rc;
}

/* Fallback when the iteration does not settle: the idoms of p's reached
 * numbers 1..cnt (entries: is_entry) by SEMI-NCA, which needs a DFS tree.
 * So p is numbered again in DFS preorder (its own copy), SEMI-NCA runs
 * there, and each idom is mapped back to p's numbering into doms[1..cnt].
 * The caller's numbering, and so the view, stays the one of the usual
 * path: results never depend on which path ran. 0 or HG_ENOMEM. */
static int semi_nca(const struct _hg_csr *p, uint32_t cnt, const uint64_t *is_entry,
                    uint32_t *doms) {
  uint32_t n = p->n, k = 0, cnt2 = 0;
  size_t m = (size_t)n + 1;
  struct edges pe = {n, p->start, p->target, NULL};
  struct _hg_csr q = {0};
  uint32_t *ent = _hg_malloc_big(m * sizeof *ent), *order = _hg_malloc_big(m * sizeof *order);
  uint32_t *parent = _hg_malloc_big(m * sizeof *parent), *num = _hg_malloc_big(m * sizeof *num);
  uint32_t *pstart = NULL, *preds = NULL, *semi = NULL;
  uint64_t *is_entry2 = _hg_bits_new(n + 1);
  struct al *al = NULL;
  int rc = HG_ENOMEM;
  q.n = n;
  q.start = _hg_malloc_big(m * sizeof *q.start);
  q.target = _hg_malloc_big(((size_t)p->start[n] + 1) * sizeof *q.target);
  if (!ent || !order || !parent || !num || !is_entry2 || !q.start || !q.target) goto out;
  for (uint32_t w = 1; w <= cnt; w++)
    if (_hg_bit(is_entry, w)) ent[k++] = w - 1;
  if (dfs_number(&pe, ent, k, order, parent, num, &q, &cnt2)) goto out;
  for (uint32_t i = 0; i < k; i++) _hg_bit_set(is_entry2, num[ent[i]] + 1);
  if (!(pstart = _hg_malloc_big((m + 1) * sizeof *pstart))) goto out;
  if (build_preds(&q, cnt2, pstart, &preds)) goto out;
  if (!(al = _hg_malloc_big(m * sizeof *al)) || !(semi = _hg_malloc_big(m * sizeof *semi))) goto out;
  semidominators(is_entry2, cnt2, parent, pstart, preds, semi, al);
  /* NCA: idom(w) = the first ancestor of parent(w) numbered <= semi(w).
   * parent[] becomes idom[] in place: smaller numbers are already final. */
  for (uint32_t w = 1; w <= cnt2; w++) {
    uint32_t d = parent[w];
    while (d > semi[w]) d = parent[d];
    parent[w] = d;
  }
  for (uint32_t w = 1; w <= cnt2; w++)
    doms[order[w - 1] + 1] = parent[w] ? order[parent[w] - 1] + 1 : 0;
  rc = 0;
out:
  _hg_csr_free(&q);
  free(ent);
  free(order);
  free(parent);
  free(num);
  free(pstart);
  free(preds);
  free(semi);
  free(al);
  free(is_entry2);
  return rc;
}

/* Faults in, on the second core, the arrays the steps after the BFS will
 * write (their first touch costs more than the BFS's own work on some
 * machines: _hg_populate), 32 MiB at a time until done or told to stop. */
#define POP_RANGES 6
#define POP_MIN ((size_t)1 << 22) /* edges; below, the BFS is too short to gain */
#define POP_STEP ((size_t)32 << 20)

struct pop_job {
  void *p[POP_RANGES];
  size_t n[POP_RANGES];
  int stop;
};

static void *pop_run(void *arg) {
  struct pop_job *j = arg;
  for (int i = 0; i < POP_RANGES; i++)
    for (size_t at = 0; j->p[i] && at < j->n[i]; at += POP_STEP) {
      if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED)) return NULL;
      _hg_populate((char *)j->p[i] + at, j->n[i] - at < POP_STEP ? j->n[i] - at : POP_STEP);
    }
  return NULL;
}

static int dom_core(const struct edges *g, const uint32_t *entries, uint32_t entry_count,
                    uint32_t *order, uint32_t *idom, uint32_t *pre, uint32_t *reached,
                    struct _hg_view *view, struct side_job *side) {
  uint32_t n = g->n, cnt = 0;
  struct _hg_job side_job = {0};
  size_t m = (size_t)n + 1, me = g->start[n];
  int rc = HG_ENOMEM;
  uint32_t *cur = _hg_malloc_big(m * sizeof *cur); /* num[], then doms */
  uint64_t *is_entry = _hg_bits_new(n + 1);
  struct _hg_csr p = {0};
  uint64_t *seen = _hg_bits_new(n);
  uint64_t *rb = g->kind ? retaining_bits(g, &me) : NULL; /* NULL: every edge retains */
  struct levels lv = {0};
  if (!cur || !is_entry || !seen || (g->kind && !rb)) goto out;
  p.n = n;
  p.start = _hg_malloc_big(m * sizeof *p.start);
  p.target = _hg_malloc_big((me + 1) * sizeof *p.target);
  if (!p.start || !p.target) goto out;
  /* In the order they will be written: the BFS's outputs first. */
  struct pop_job pop = {{p.target, p.start, order, cur, idom, side ? side->view->node : NULL},
                        {(me + 1) * sizeof *p.target, m * sizeof *p.start, n * sizeof *order,
                         m * sizeof *cur, m * sizeof *idom, m * sizeof *order},
                        me < POP_MIN};
  struct _hg_job pop_job; /* inline without a thread: it costs what the faults would */
  _hg_job_start(&pop_job, pop_run, &pop, me >= POP_MIN);
  cnt = bfs(g, rb, entries, entry_count, seen, order, &p, &lv);
  __atomic_store_n(&pop.stop, 1, __ATOMIC_RELAXED);
  _hg_job_wait(&pop_job);
  free(rb);
  rb = NULL;
  renumber(g, cnt, seen, cur, order, &p); /* cur: num[] here */
  for (uint32_t i = 0; i < entry_count; i++)
    if (entries[i] < n && _hg_bit(seen, entries[i])) _hg_bit_set(is_entry, cur[entries[i]] + 1);
  if (pre)
    for (uint32_t v = 0; v < n; v++) pre[v] = _hg_bit(seen, v) ? cur[v] + 1 : HG_NONE;
  free(seen);
  seen = NULL;
  if (side) {
    side->cnt = cnt;
    _hg_job_start(&side_job, side_run, side, 1);
  }
  int settled = lv.failed ? -1 : iterate(is_entry, cnt, &p, &lv, cur);
  if (settled < 0) goto out;
  if (settled)
    memcpy(idom + 1, cur + 1, (size_t)cnt * sizeof *idom);
  else if (semi_nca(&p, cnt, is_entry, idom)) /* O(m log n) whatever the graph */
    goto out;
  if (view) {
    view->c = p;
    view->reached = cnt;
    memset(&p, 0, sizeof p);
  }
  idom[0] = 0;
  *reached = cnt;
  rc = 0;
out:
  _hg_job_wait(&side_job);
  _hg_csr_free(&p);
  free(lv.end);
  free(rb);
  free(cur);
  free(is_entry);
  free(seen);
  return rc;
}

int _hg_dom_core(const struct _hg_csr *c, const uint32_t *entries, uint32_t entry_count,
                 uint32_t *order, uint32_t *idom, uint32_t *pre, uint32_t *reached,
                 struct _hg_view *view) {
  struct edges e = {c->n, c->start, c->target, NULL};
  return dom_core(&e, entries, entry_count, order, idom, pre, reached, view, NULL);
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
  /* The graph's own edges, the non-retaining ones skipped as they come. */
  struct edges c = {g->node_count, g->edge_start, g->edge_target, g->edge_kind};
  int rc;
  struct hg_dominators *d = calloc(1, sizeof *d);
  uint32_t n = g->node_count;
  size_t m = (size_t)n + 1;
  uint32_t *entries = malloc(((size_t)g->root_count + 1) * sizeof *entries);
  uint32_t *idw = _hg_malloc_big(m * sizeof *idw);
  struct _hg_view *view = NULL;
  if (!d || !entries || !idw) goto nomem;
  d->node_count = n;
  if (!(d->order = _hg_malloc_big(m * sizeof *d->order))) goto nomem;
  for (uint32_t i = 0; i < g->root_count; i++) entries[i] = g->roots[i].target;
  if (!(view = calloc(1, sizeof *view))) goto nomem;
  /* Filled on the second core while the idoms are computed: the view's
   * numbering and root reachability. */
  view->node = _hg_malloc_big(m * sizeof *view->node);
  view->reach = _hg_bits_new(n);
  if (!view->node || !view->reach) goto nomem;
  struct side_job side = {g, d->order, 0, view};
  rc = dom_core(&c, entries, g->root_count, d->order, idw, NULL, &d->reachable_count, view, &side);
  if (rc) goto fail;
  free(entries);
  entries = NULL;
  uint32_t cnt = d->reachable_count;
  d->idom = _hg_malloc_big(m * sizeof *d->idom);
  d->retained = _hg_malloc_big(m * sizeof *d->retained);
  if (!d->idom || !d->retained) goto nomem;
  /* idom to node indices on the second core while this one does sizes. */
  struct idom_job job = {d, idw, cnt};
  struct _hg_job jt;
  _hg_job_start(&jt, idom_to_nodes, &job, 1);
  /* Retained sizes in node space, no preorder-space copy: every reached
   * node starts with its own size (a sequential pass), then in reverse
   * preorder (every node is final before its dominator gets it) each one
   * adds its total to its dominator's, the super-root's being the total. */
  const uint32_t *order = d->order;
  const uint64_t *size = g->node_size;
  uint64_t *r = d->retained, total = 0;
  for (uint32_t v = 0; v < n; v++) r[v] = _hg_bit(view->reach, v) ? size[v] : 0;
  r[n] = 0;
  for (uint32_t w = cnt; w >= 1; w--) {
    /* Three random reads a node, all requested ahead: order[] of the
     * dominator 32 nodes ahead, then (arrived by now) its total 16 ahead. */
    if (w > 32) {
      __builtin_prefetch(&r[order[w - 17]]);
      uint32_t pa = idw[w - 32], pb = idw[w - 16];
      __builtin_prefetch(&order[pa ? pa - 1 : 0]);
      __builtin_prefetch(&r[order[pb ? pb - 1 : 0]], 1);
    }
    uint32_t v = order[w - 1], pw = idw[w];
    if (pw)
      r[order[pw - 1]] += r[v];
    else
      total += r[v];
  }
  d->reachable_bytes = total;
  _hg_job_wait(&jt);
  free(idw);
  _hg_view_put(g, view);
  *out = d;
  return 0;
nomem:
  rc = HG_ENOMEM;
fail:
  _hg_view_free(view);
  free(entries);
  free(idw);
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
  /* The reached nodes in index order (sequential reads; the ranking is a
   * total order, so the order they come in does not change the result). */
  for (uint32_t v = 0; v < d->node_count; v++) {
    if (d->idom[v] == HG_NONE) continue;
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
