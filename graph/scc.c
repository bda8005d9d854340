/*
 * scc.c — strongly connected components over retaining edges, and the
 * retain-cycle report built on them (hg_cycles_find).
 *
 * The SCC core is Pearce's space-efficient variant of Tarjan's algorithm
 * ("A space-efficient algorithm for finding strongly connected components",
 * 2016), made iterative: one uint32 per node (rindex, which ends up as the
 * component id) plus one bit, an explicit DFS stack of (node, edge cursor)
 * and Tarjan's component stack, both on the heap. Never recurses. It walks
 * a CSR (the graph's own, skipping non-retaining kinds; the cached DFS
 * view, where nodes are entered nearly in order and prefetched ahead; or
 * leaks.c's compact one) and prefetches each new node's targets.
 * hg_cycles_find takes root reachability (for "leaked") from the view, or
 * computes it on a second thread meanwhile; it only reads the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

#define SEQ_AHEAD 16 /* nodes of prefetch distance on a DFS view      */

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

int _hg_scc(const struct _hg_csr *cs, const uint8_t *kind, int seq, uint32_t *comp,
            uint32_t *count) {
  uint32_t n = cs->n;
  const uint32_t *start = cs->start, *tg = cs->target;
  uint32_t *rindex = comp;
  uint64_t *is_root = _hg_bits_new(n);
  struct stacks st = {0};
  int rc = HG_ENOMEM;
  if (!is_root) return rc;
  memset(rindex, 0, (size_t)n * sizeof *rindex);
  uint32_t index = 1, c = n - 1;
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
          if (seq) {
            /* DFS view: the next nodes entered are most likely w + 1, w + 2
             * ...: ask for their targets' indices well ahead. */
            uint32_t a = w + SEQ_AHEAD < n ? w + SEQ_AHEAD : n - 1;
            for (uint32_t k = start[a], i = 0; k < start[a + 1] && i < 8; k++, i++)
              __builtin_prefetch(&rindex[tg[k]]);
          } else {
            /* overlap the next cache misses of this DFS chain */
            for (uint32_t k = start[w], i = 0; k < start[w + 1] && i < 8; k++, i++) {
              __builtin_prefetch(&rindex[tg[k]]);
              __builtin_prefetch(&start[tg[k]]);
            }
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
 * (cached DFS view or the graph's own CSR) found them. */
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
 * With a cached DFS view it is a copy of the view's bitmap. */
struct reach_job {
  const struct hg_graph *g;
  uint64_t *reach;
};

static void *reach_thread(void *arg) {
  struct reach_job *j = arg;
  j->reach = _hg_reachable(j->g, 0);
  return NULL;
}

/* Component ids per node (comp, n entries). With the cached DFS view the
 * SCC runs in its numbering (nodes entered nearly in order, prefetched
 * ahead) and the ids are scattered back to nodes; otherwise on the graph's
 * own CSR, filtering kinds on the fly (no copy to build). */
static int components(const struct hg_graph *g, uint32_t *comp, uint32_t *ncomp) {
  const struct _hg_view *vw = _hg_view_get(g);
  uint32_t n = g->node_count;
  if (!vw) {
    struct _hg_csr cs = {n, g->edge_start, g->edge_target};
    return _hg_scc(&cs, g->edge_kind, 0, comp, ncomp);
  }
  uint32_t *cx = _hg_malloc_big(((size_t)n + 1) * sizeof *cx);
  if (!cx) return HG_ENOMEM;
  int rc = _hg_scc(&vw->c, NULL, 1, cx, ncomp);
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
