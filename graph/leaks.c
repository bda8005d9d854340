/*
 * leaks.c — leak folding (hg_leaks_find, _hg_leaks_find_from).
 *
 * A leak is a block no root reaches through retaining edges. Leaked blocks
 * are folded like libmemunreachable's LeakFolding: strongly connected groups
 * of leaked blocks with no retaining edge from another leaked group are the
 * root leaks; for each we report what it holds (everything reachable from
 * it, bounded work) and what it owns (its dominator subtree in the leaked
 * graph, linear time). Whole-region nodes are treated as roots, never leaks.
 * Iterative throughout. After one reachability pass over the whole graph
 * (only from region nodes when hg_dominators_compute left its view on
 * the graph: root reachability is cached there; or, for the fleet summary,
 * when its retention search found it: _hg_leaks_find_from), everything
 * works on the leaked subgraph renumbered densely (a compact
 * CSR in local numbers, same node and edge order as the graph), so the
 * SCC, dominator and BFS passes cost in proportion to the leak, not the
 * heap; working memory is a few uint32 arrays per leaked block.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

/* ---- The leaked subgraph ---- */

/* Leaked blocks renumbered 0..nl-1 in index (= address) order, with their
 * retaining edges to other leaked blocks as a compact CSR in local numbers.
 * Everything below works on it, so its arrays are sized by the leak, not by
 * the whole graph, and iterate in the same order as the graph would. */
struct sub {
  struct _hg_csr c;
  uint32_t *node; /* local -> graph node index */
  uint32_t *deg;  /* local -> out-degree in the whole graph (any kind) */
  uint64_t *size; /* local -> block size */
};

static void sub_free(struct sub *s) {
  _hg_csr_free(&s->c);
  free(s->node);
  free(s->deg);
  free(s->size);
  s->node = s->deg = NULL;
  s->size = NULL;
}

static int sub_build(const struct hg_graph *g, const uint64_t *leaked, uint32_t nl, struct sub *s) {
  uint32_t n = g->node_count, words = n / 64 + 1;
  memset(s, 0, sizeof *s);
  uint32_t *rank = malloc((size_t)words * sizeof *rank); /* local ids before each word */
  s->node = _hg_malloc_big(((size_t)nl + 1) * sizeof *s->node);
  s->c.start = _hg_malloc_big(((size_t)nl + 1) * sizeof *s->c.start);
  s->deg = _hg_malloc_big(((size_t)nl + 1) * sizeof *s->deg);
  s->size = _hg_malloc_big(((size_t)nl + 1) * sizeof *s->size);
  if (!rank || !s->node || !s->c.start || !s->deg || !s->size) goto nomem;
  s->c.n = nl;
  uint32_t k = 0;
  for (uint32_t i = 0; i < words; i++) {
    rank[i] = k;
    for (uint64_t b = leaked[i]; b; b &= b - 1) s->node[k++] = i * 64 + (uint32_t)__builtin_ctzll(b);
  }
  const uint32_t *es = g->edge_start, *et = g->edge_target;
  const uint8_t *ek = g->edge_kind;
  uint32_t m = 0;
  for (uint32_t x = 0; x < nl; x++) { /* node[] ascends: sequential reads */
    uint32_t v = s->node[x];
    s->deg[x] = es[v + 1] - es[v];
    s->size[x] = g->node_size[v];
    for (uint32_t e = es[v]; e < es[v + 1]; e++) m += (uint32_t)(_hg_retains(ek[e]) && _hg_bit(leaked, et[e]));
  }
  if (!(s->c.target = _hg_malloc_big(((size_t)m + 1) * sizeof *s->c.target))) goto nomem;
  m = 0;
  for (uint32_t x = 0; x < nl; x++) {
    uint32_t v = s->node[x];
    s->c.start[x] = m;
    for (uint32_t e = es[v]; e < es[v + 1]; e++) {
      uint32_t t = et[e];
      if (!_hg_retains(ek[e]) || !_hg_bit(leaked, t)) continue;
      uint64_t below = leaked[t >> 6] & (((uint64_t)1 << (t & 63)) - 1);
      s->c.target[m++] = rank[t >> 6] + (uint32_t)__builtin_popcountll(below);
    }
  }
  s->c.start[nl] = m;
  free(rank);
  return 0;
nomem:
  free(rank);
  sub_free(s);
  return HG_ENOMEM;
}

/* ---- Folding ---- */

/* Root groups: fills leaks[] (node as a local id, group_count, group_bytes)
 * for every component of the leaked subgraph with no retaining edge from
 * another leaked component. Returns the number of root leaks, or -1 on
 * ENOMEM. */
static int64_t root_groups(const struct sub *sb, struct hg_leak **out) {
  uint32_t n = sb->c.n, ncomp = 0;
  const uint32_t *start = sb->c.start, *tg = sb->c.target;
  uint32_t *comp = _hg_malloc_big(((size_t)n + 1) * sizeof *comp);
  uint32_t *slot = NULL;
  uint64_t *has_in = NULL;
  struct hg_leak *leaks = NULL;
  int64_t count = -1;
  if (!comp || _hg_scc(&sb->c, NULL, comp, &ncomp)) goto out;
  if (!(has_in = _hg_bits_new(n)) || !(slot = _hg_malloc_big(((size_t)n + 1) * sizeof *slot))) goto out;
  for (uint32_t v = 0; v < n; v++)
    for (uint32_t e = start[v]; e < start[v + 1]; e++)
      if (comp[tg[e]] != comp[v]) _hg_bit_set(has_in, comp[tg[e]]);
  uint32_t nroot = 0;
  memset(slot, 0xff, (size_t)n * sizeof *slot);
  for (uint32_t v = 0; v < n; v++) /* first member seen = lowest address */
    if (!_hg_bit(has_in, comp[v]) && slot[comp[v]] == HG_NONE) slot[comp[v]] = nroot++;
  leaks = calloc((size_t)nroot + 1, sizeof *leaks);
  if (!leaks) goto out;
  for (uint32_t v = 0; v < n; v++) {
    if (slot[comp[v]] == HG_NONE) continue;
    struct hg_leak *l = &leaks[slot[comp[v]]];
    if (!l->group_count) l->node = v;
    l->group_count++;
    l->group_bytes += sb->size[v];
  }
  *out = leaks;
  leaks = NULL;
  count = nroot;
out:
  free(comp);
  free(slot);
  free(has_in);
  free(leaks);
  return count;
}

/* owned_*: dominator subtrees of the root groups' first blocks in the
 * leaked subgraph (each leaked block belongs to at most one root leak). */
static int owned_sizes(const struct sub *sb, struct hg_leak *leaks,
                       uint32_t nleaks) {
  uint32_t n = sb->c.n, reached = 0;
  size_t sz = (size_t)n + 1;
  int rc = HG_ENOMEM;
  uint32_t *entries = malloc(((size_t)nleaks + 1) * sizeof *entries);
  uint32_t *idom = _hg_malloc_big(sz * sizeof *idom), *order = _hg_malloc_big(sz * sizeof *order);
  uint32_t *pre = _hg_malloc_big(sz * sizeof *pre), *cnt = NULL;
  uint64_t *bytes = NULL;
  if (!entries || !idom || !order || !pre) goto out;
  for (uint32_t i = 0; i < nleaks; i++) entries[i] = leaks[i].node;
  if ((rc = _hg_dom_core(&sb->c, entries, nleaks, order, idom, pre, &reached, NULL))) goto out;
  rc = HG_ENOMEM;
  if (!(cnt = _hg_calloc_big(sz, sizeof *cnt)) || !(bytes = _hg_malloc_big(sz * sizeof *bytes))) goto out;
  /* Number space; reverse order finishes each node before its idom. */
  for (uint32_t w = 1; w <= reached; w++) {
    cnt[w] = 1;
    bytes[w] = sb->size[order[w - 1]];
  }
  for (uint32_t w = reached; w >= 1; w--) {
    cnt[idom[w]] += cnt[w];
    bytes[idom[w]] += bytes[w];
  }
  for (uint32_t i = 0; i < nleaks; i++) {
    uint32_t w = pre[leaks[i].node];
    leaks[i].owned_count = cnt[w];
    leaks[i].owned_bytes = bytes[w];
  }
  rc = 0;
out:
  free(entries);
  free(idom);
  free(order);
  free(pre);
  free(cnt);
  free(bytes);
  return rc;
}

/* count/bytes: BFS from each root leak over the leaked subgraph, with a
 * per-node stamp instead of clearing a visited set. Stops exact counting
 * when the work budget runs out; work is one step per block plus one per
 * out-edge of it in the whole graph (retaining or not), checked between
 * blocks. Returns 1 if all exact, 0 if not, <0 err.
 * The BFS runs until the budget is spent, so its cost is the budget times
 * the cost of a step: what a step reads of a block (edge range, degree,
 * size, stamp) sits in one 24-byte record, and the queue says which blocks
 * come next, so their records, edges and targets' records are prefetched. */
struct held {
  uint32_t start, end; /* edges in sb->c                       */
  uint32_t deg;        /* out-degree in the whole graph         */
  uint32_t stamp;      /* last BFS (root leak + 1) that saw it  */
  uint64_t size;
};

static int held_sizes(const struct sub *sb, struct hg_leak *leaks,
                      uint32_t nleaks, uint64_t budget) {
  uint32_t n = sb->c.n;
  const uint32_t *tg = sb->c.target;
  struct held *h = _hg_malloc_big(((size_t)n + 1) * sizeof *h);
  uint32_t *queue = _hg_malloc_big(((size_t)n + 1) * sizeof *queue);
  if (!h || !queue) {
    free(h);
    free(queue);
    return HG_ENOMEM;
  }
  for (uint32_t x = 0; x < n; x++)
    h[x] = (struct held){sb->c.start[x], sb->c.start[x + 1], sb->deg[x], 0, sb->size[x]};
  uint64_t work = 0;
  int exact = 1;
  for (uint32_t i = 0; i < nleaks; i++) {
    struct hg_leak *l = &leaks[i];
    if (!exact) {
      l->count = l->owned_count;
      l->bytes = l->owned_bytes;
      continue;
    }
    size_t head = 0, tail = 0;
    uint64_t bytes = 0;
    h[l->node].stamp = i + 1;
    queue[tail++] = l->node;
    while (head < tail && work <= budget) {
      if (head + 4 < tail) { /* the targets' records of a block 4 ahead */
        const struct held *a = &h[queue[head + 4]];
        for (uint32_t e = a->start; e < a->end && e < a->start + 4; e++) __builtin_prefetch(&h[tg[e]]);
      }
      if (head + 8 < tail) __builtin_prefetch(&tg[h[queue[head + 8]].start]);
      if (head + 16 < tail) __builtin_prefetch(&h[queue[head + 16]]);
      const struct held *hx = &h[queue[head++]];
      bytes += hx->size;
      work += 1 + (uint64_t)hx->deg;
      for (uint32_t e = hx->start; e < hx->end; e++) {
        uint32_t t = tg[e];
        if (h[t].stamp != i + 1) {
          h[t].stamp = i + 1;
          queue[tail++] = t;
        }
      }
    }
    if (head < tail) {
      exact = 0;
      l->count = l->owned_count;
      l->bytes = l->owned_bytes;
    } else {
      l->count = (uint32_t)tail;
      l->bytes = bytes;
    }
  }
  free(h);
  free(queue);
  return exact;
}

static int by_bytes_desc(const void *a, const void *b) {
  const struct hg_leak *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* leaked: reachability from the roots and region nodes, taken (inverted
 * in place below). held: 0 = owned only (no BFS per root leak: count/bytes
 * are the owned ones, held_exact 0, as past the held budget). */
static int find(const struct hg_graph *g, uint64_t *leaked, int held, struct hg_leaks **out) {
  *out = NULL;
  struct hg_leaks *r = calloc(1, sizeof *r);
  struct sub sb = {0};
  int rc = HG_ENOMEM;
  if (!r || !leaked) goto fail;
  r->held_exact = 1;
  uint32_t n = g->node_count, words = n / 64 + 1;
  for (uint32_t i = 0; i < words; i++) {
    uint64_t live = i + 1 < words ? ~(uint64_t)0 : ((uint64_t)1 << (n & 63)) - 1;
    leaked[i] = ~leaked[i] & live;
    for (uint64_t b = leaked[i]; b; b &= b - 1) r->leaked_bytes += g->node_size[i * 64 + (uint32_t)__builtin_ctzll(b)];
    r->leaked_count += (uint32_t)__builtin_popcountll(leaked[i]);
  }
  if (r->leaked_count) {
    if ((rc = sub_build(g, leaked, r->leaked_count, &sb))) goto fail;
    free(leaked);
    leaked = NULL;
    rc = HG_ENOMEM;
    int64_t k = root_groups(&sb, &r->leaks);
    if (k < 0) goto fail;
    r->count = (uint32_t)k;
    if ((rc = owned_sizes(&sb, r->leaks, r->count))) goto fail;
    int ex = 0; /* owned only: the owned sizes stand in, as past the held budget */
    if (held) {
      uint64_t budget = 16 * ((uint64_t)r->leaked_count + sb.c.start[sb.c.n]) + ((uint64_t)1 << 24);
      ex = held_sizes(&sb, r->leaks, r->count, budget);
    } else {
      for (uint32_t i = 0; i < r->count; i++) {
        r->leaks[i].count = r->leaks[i].owned_count;
        r->leaks[i].bytes = r->leaks[i].owned_bytes;
      }
    }
    if (ex < 0) {
      rc = ex;
      goto fail;
    }
    r->held_exact = ex;
    for (uint32_t i = 0; i < r->count; i++) r->leaks[i].node = sb.node[r->leaks[i].node];
    qsort(r->leaks, r->count, sizeof *r->leaks, by_bytes_desc);
  }
  sub_free(&sb);
  free(leaked);
  *out = r;
  return 0;
fail:
  sub_free(&sb);
  free(leaked);
  hg_leaks_free(r);
  return rc;
}

int hg_leaks_find(struct hg_graph *g, struct hg_leaks **out) {
  if (!g || !out) return HG_EINVAL;
  return find(g, _hg_reachable_par(g, 1), 1, out);
}

int _hg_leaks_find_from(const struct hg_graph *g, uint64_t *reach, int held,
                        struct hg_leaks **out) {
  return find(g, _hg_reachable_from(g, reach, 1), held, out);
}

void hg_leaks_free(struct hg_leaks *l) {
  if (!l) return;
  free(l->leaks);
  free(l);
}
