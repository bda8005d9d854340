/*
 * scc.c — strongly connected components over retaining edges, and the
 * retain-cycle report built on them (hg_cycles_find).
 *
 * The SCC core is Pearce's space-efficient variant of Tarjan's algorithm
 * ("A space-efficient algorithm for finding strongly connected components",
 * 2016), made iterative: one uint32 per node (rindex, which ends up as the
 * component id) plus one bit, an explicit DFS stack of (node, edge cursor)
 * and Tarjan's component stack, both on the heap. Never recurses. It walks
 * a CSR (the graph's own, skipping non-retaining kinds; the dominators'
 * cached view; or leaks.c's compact one) and prefetches each new node's
 * targets. On a compact CSR the giant component is found first, by bulk
 * reachability passes (giant()), and the DFS does the rest.
 * hg_cycles_find takes root reachability (for "leaked") from the view, or
 * computes it on a second thread meanwhile; it only reads the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"


struct frame {
  uint32_t node, edge;
};

struct stacks {
  struct frame *f;
  size_t fn, fcap;
  uint32_t *s;
  size_t sn, scap;
};

static int grow(void **p, size_t *cap, size_t elem) {
  size_t nc = *cap ? *cap * 2 : 4096;
  void *q = realloc(*p, nc * elem);
  if (!q) return HG_ENOMEM;
  *p = q;
  *cap = nc;
  return 0;
}

/* ---- The giant component first ---- */

/*
 * Heap graphs often have one component holding most nodes (parent
 * pointers, doubly linked lists, caches pointing back at their owners).
 * A DFS through it is a chain of dependent cache misses, unless the
 * numbering follows that DFS. So, as in Slota, Rajamanickam and
 * Madduri's "Multistep" method (2014), the component of a pivot is found
 * first by two reachability passes that read memory in bulk: forward, a
 * breadth-first search from the pivot (its queue says which nodes are
 * read next, so their edges are requested ahead); backward, sweeps in
 * number order, then in reverse, over the forward set, marking a node that
 * has an edge to a marked one, until a sweep marks nothing (every node of
 * a path to the pivot is in the forward set, so the sweeps need no reverse
 * edges). The component is the marked set; its nodes get a finished
 * component's rindex, so the DFS below skips them and leaves them alone.
 * Tried from up to GIANT_TRIES pivots (the first unassigned node from the
 * middle of the numbering on); a component found is always kept (it is exact),
 * and the DFS does the rest. Gives up on a pivot whose backward sweeps do
 * not settle in GIANT_SWEEPS (then nothing is assigned for it). Only for
 * graphs of at least _hg_scc_giant_min nodes (the unit tests lower it).
 */
uint32_t _hg_scc_giant_min = (uint32_t)1 << 16;
#define GIANT_TRIES 2
#define GIANT_SWEEPS 64
#define GIANT_AHEAD 16

static uint32_t forward(const struct _hg_csr *cs, const uint64_t *done, uint32_t pivot,
                        uint64_t *fw, uint32_t *queue) {
  const uint32_t *start = cs->start, *tg = cs->target;
  uint32_t cnt = 1;
  queue[0] = pivot;
  _hg_bit_set(fw, pivot);
  for (uint32_t i = 0; i < cnt; i++) {
    if (i + 2 * GIANT_AHEAD < cnt) __builtin_prefetch(&start[queue[i + 2 * GIANT_AHEAD]]);
    if (i + GIANT_AHEAD < cnt) __builtin_prefetch(&tg[start[queue[i + GIANT_AHEAD]]]);
    uint32_t v = queue[i];
    for (uint32_t e = start[v], end = start[v + 1]; e < end; e++) {
      uint32_t t = tg[e];
      if (_hg_bit(fw, t) || _hg_bit(done, t)) continue;
      _hg_bit_set(fw, t);
      queue[cnt++] = t;
    }
  }
  return cnt;
}

/* One backward sweep over the forward set, ascending or descending;
 * returns how many nodes it marked. */
static uint32_t sweep(const struct _hg_csr *cs, const uint64_t *fw, uint64_t *bw, int up) {
  const uint32_t *start = cs->start, *tg = cs->target;
  uint32_t n = cs->n, marked = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t v = up ? k : n - 1 - k;
    if (!_hg_bit(fw, v) || _hg_bit(bw, v)) continue;
    for (uint32_t e = start[v], end = start[v + 1]; e < end; e++)
      if (_hg_bit(bw, tg[e])) {
        _hg_bit_set(bw, v);
        marked++;
        break;
      }
  }
  return marked;
}

/* Assigns the giant component(s) found (done: their nodes); *c counts down
 * as in _hg_scc. 0 or HG_ENOMEM. */
static int giant(const struct _hg_csr *cs, uint32_t *rindex, uint32_t *c) {
  uint32_t n = cs->n, left = n;
  uint64_t *fw = _hg_bits_new(n), *bw = _hg_bits_new(n), *done = _hg_bits_new(n);
  uint32_t *queue = _hg_malloc_big(((size_t)n + 1) * sizeof *queue);
  int rc = HG_ENOMEM;
  if (!fw || !bw || !done || !queue) goto out;
  for (int t = 0; t < GIANT_TRIES; t++) {
    uint32_t pivot = n / 2;
    while (pivot < n && rindex[pivot]) pivot++;
    if (pivot >= n || cs->start[pivot] == cs->start[pivot + 1]) break;
    uint32_t fc = forward(cs, done, pivot, fw, queue), k = 1;
    _hg_bit_set(bw, pivot);
    int settled = 0;
    for (int s = 0; s < GIANT_SWEEPS && !settled; s++) {
      uint32_t got = sweep(cs, fw, bw, s & 1);
      k += got;
      settled = !got;
    }
    if (settled) {
      for (uint32_t i = 0; i < fc; i++)
        if (_hg_bit(bw, queue[i])) {
          rindex[queue[i]] = *c;
          _hg_bit_set(done, queue[i]);
        }
      (*c)--;
      left -= k;
    }
    for (uint32_t i = 0; i < fc; i++) { /* clear only what this try set */
      fw[queue[i] >> 6] = 0;
      bw[queue[i] >> 6] = 0;
    }
    if (!settled || k >= left / 4) break;
  }
  rc = 0;
out:
  free(fw);
  free(bw);
  free(done);
  free(queue);
  return rc;
}

int _hg_scc(const struct _hg_csr *cs, const uint8_t *kind, uint32_t *comp, uint32_t *count) {
  uint32_t n = cs->n;
  const uint32_t *start = cs->start, *tg = cs->target;
  uint32_t *rindex = comp;
  uint64_t *is_root = _hg_bits_new(n);
  struct stacks st = {0};
  int rc = HG_ENOMEM;
  if (!is_root) return rc;
  memset(rindex, 0, (size_t)n * sizeof *rindex);
  uint32_t index = 1, c = n - 1;
  if (!kind && n >= _hg_scc_giant_min && n > 1 && giant(cs, rindex, &c)) goto out;
  for (uint32_t s0 = 0; s0 < n; s0++) {
    if (rindex[s0] != 0) continue;
    if (st.fn == st.fcap && grow((void **)&st.f, &st.fcap, sizeof *st.f)) goto out;
    rindex[s0] = index++;
    _hg_bit_set(is_root, s0);
    st.f[st.fn++] = (struct frame){s0, start[s0]};
    while (st.fn) {
      struct frame *fr = &st.f[st.fn - 1];
      uint32_t v = fr->node, e = fr->edge, end = start[v + 1], rv = rindex[v];
      int descended = 0;
      /* Scan v's remaining edges; lowering rindex[v] is Pearce's "root"
       * test. A fresh target is entered, and its edge looked at again when
       * the DFS comes back (then the target has its final rindex). */
      for (; e < end; e++) {
        if (kind && !_hg_retains(kind[e])) continue;
        uint32_t w = tg[e], rw = rindex[w];
        if (rw == 0) {
          fr->edge = e;
          rindex[v] = rv;
          if (st.fn == st.fcap && grow((void **)&st.f, &st.fcap, sizeof *st.f)) goto out;
          rindex[w] = index++;
          _hg_bit_set(is_root, w);
          st.f[st.fn++] = (struct frame){w, start[w]};
          /* overlap the next cache misses of this DFS chain */
          for (uint32_t k = start[w], i = 0; k < start[w + 1] && i < 8; k++, i++) {
            __builtin_prefetch(&rindex[tg[k]]);
            __builtin_prefetch(&start[tg[k]]);
          }
          descended = 1;
          break;
        }
        if (rw < rv) {
          rv = rw;
          is_root[v >> 6] &= ~((uint64_t)1 << (v & 63));
        }
      }
      if (descended) continue;
      rindex[v] = rv;
      st.fn--;
      if (_hg_bit(is_root, v)) {
        index--;
        while (st.sn && rv <= rindex[st.s[st.sn - 1]]) {
          rindex[st.s[--st.sn]] = c;
          index--;
        }
        rindex[v] = c--;
      } else {
        if (st.sn == st.scap && grow((void **)&st.s, &st.scap, sizeof *st.s)) goto out;
        st.s[st.sn++] = v;
      }
    }
  }
  *count = (n - 1) - c;
  rc = 0;
out:
  free(is_root);
  free(st.f);
  free(st.s);
  return rc;
}

/* ---- Retain cycles ---- */

/* Biggest bytes first, then most members, then lowest first member (the
 * lowest address: members are in address order): independent of how the
 * components were numbered, so the report is the same whichever SCC path
 * (cached view or the graph's own CSR) found them. */
struct keyed {
  struct hg_cycle c;
  uint32_t low; /* lowest member node */
};

static int by_bytes_desc(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->c.bytes != y->c.bytes) return x->c.bytes > y->c.bytes ? -1 : 1;
  if (x->c.count != y->c.count) return x->c.count > y->c.count ? -1 : 1;
  return x->low < y->low ? -1 : x->low > y->low;
}

/* Reachability from the roots, for the "leaked" flag: independent of the
 * SCC, so it runs on the second core meanwhile (or inline if no thread).
 * With a cached view it is a copy of the view's bitmap. */
struct reach_job {
  const struct hg_graph *g;
  uint64_t *reach;
};

static void *reach_thread(void *arg) {
  struct reach_job *j = arg;
  j->reach = _hg_reachable(j->g, 0);
  return NULL;
}

/* Component ids per node (comp, n entries). With the cached view the SCC
 * runs in its numbering (only retaining edges, so the giant-component step
 * applies) and the ids are scattered back to nodes; otherwise on the
 * graph's own CSR, filtering kinds on the fly (no copy to build). */
static int components(const struct hg_graph *g, uint32_t *comp, uint32_t *ncomp) {
  const struct _hg_view *vw = _hg_view_get(g);
  uint32_t n = g->node_count;
  if (!vw) {
    struct _hg_csr cs = {n, g->edge_start, g->edge_target};
    return _hg_scc(&cs, g->edge_kind, comp, ncomp);
  }
  uint32_t *cx = _hg_malloc_big(((size_t)n + 1) * sizeof *cx);
  if (!cx) return HG_ENOMEM;
  int rc = _hg_scc(&vw->c, NULL, cx, ncomp);
  if (!rc)
    for (uint32_t x = 0; x < n; x++) {
      if (x + 32 < n) __builtin_prefetch(&comp[vw->node[x + 32]], 1);
      comp[vw->node[x]] = cx[x];
    }
  free(cx);
  return rc;
}

int hg_cycles_find(struct hg_graph *g, uint32_t min_size, struct hg_cycles **out) {
  if (!g || !out) return HG_EINVAL;
  *out = NULL;
  if (min_size < 2) min_size = 2;
  uint32_t n = g->node_count, ncomp = 0, nmem = 0, ncyc = 0;
  struct hg_cycles *r = calloc(1, sizeof *r);
  uint32_t *comp = _hg_malloc_big(((size_t)n + 1) * sizeof *comp);
  uint32_t *size = NULL, *members = NULL;
  uint64_t *reach = NULL;
  struct keyed *ky = NULL;
  int rc = HG_ENOMEM;
  if (!r || !comp) goto fail;
  struct reach_job job = {g, NULL};
  struct _hg_job jt;
  _hg_job_start(&jt, reach_thread, &job, !_hg_view_get(g));
  rc = components(g, comp, &ncomp);
  _hg_job_wait(&jt);
  reach = job.reach;
  if (rc) goto fail;
  rc = HG_ENOMEM;
  size = _hg_calloc_big((size_t)n + 1, sizeof *size); /* by component id (< n) */
  if (!size) goto fail;
  for (uint32_t i = 0; i < n; i++) size[comp[i]]++;
  /* Counting sort of the members by component, address order inside. */
  for (uint32_t c = 0; c < n; c++) {
    if (size[c] >= min_size) {
      uint32_t k = size[c];
      size[c] = nmem;
      nmem += k;
      ncyc++;
    } else {
      size[c] = HG_NONE;
    }
  }
  members = _hg_malloc_big(((size_t)nmem + 1) * sizeof *members);
  if (!members) goto fail;
  for (uint32_t i = 0; i < n; i++)
    if (size[comp[i]] != HG_NONE) members[size[comp[i]]++] = i;
  ky = calloc((size_t)ncyc + 1, sizeof *ky);
  if (!ky || !reach) goto fail;
  ncyc = 0;
  for (uint32_t i = 0; i < nmem; i++) {
    uint32_t v = members[i];
    if (i == 0 || comp[v] != comp[members[i - 1]]) {
      ky[ncyc++] = (struct keyed){{.first = i, .leaked = !_hg_bit(reach, v)}, v};
    }
    struct hg_cycle *cy = &ky[ncyc - 1].c;
    cy->count++;
    cy->bytes += g->node_size[v];
  }
  qsort(ky, ncyc, sizeof *ky, by_bytes_desc);
  /* Lay the members out in report order. */
  r->members = _hg_malloc_big(((size_t)nmem + 1) * sizeof *r->members);
  r->cycles = calloc((size_t)ncyc + 1, sizeof *r->cycles);
  if (!r->members || !r->cycles) goto fail;
  for (uint32_t k = 0, at = 0; k < ncyc; k++) {
    r->cycles[k] = ky[k].c;
    r->cycles[k].first = at;
    memcpy(r->members + at, members + ky[k].c.first, (size_t)ky[k].c.count * sizeof *members);
    at += ky[k].c.count;
  }
  r->count = ncyc;
  free(comp);
  free(size);
  free(members);
  free(ky);
  free(reach);
  *out = r;
  return 0;
fail:
  free(comp);
  free(size);
  free(members);
  free(ky);
  free(reach);
  hg_cycles_free(r);
  return rc;
}

void hg_cycles_free(struct hg_cycles *c) {
  if (!c) return;
  free(c->cycles);
  free(c->members);
  free(c);
}
