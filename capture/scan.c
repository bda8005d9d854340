/*
 * scan.c — the conservative scan: in one pass over the blocks, classifies
 * each block once, writes it as a node and then its edges (each
 * pointer-aligned word of a live block that points into a live block);
 * then every root (words of registers, stacks, TLS and
 * image data that point into a live block).
 *
 * Runs while the heap is frozen (or in the forked child): never calls
 * malloc; reads only memory inside validated regions/segments.
 */
#include <string.h>

#include "capture/classify.h"
#include "capture/internal.h"

static uint32_t classify_node(struct hg_cap *c, uint64_t addr, uint64_t size) {
  if (!c->nclassifiers) return 0;
  uint64_t words[HG_CLASSIFY_WORDS];
  uint32_t n = (uint32_t)(size / 8 < HG_CLASSIFY_WORDS ? size / 8 : HG_CLASSIFY_WORDS);
  for (uint32_t k = 0; k < n; k++) words[k] = ((const volatile uint64_t *)(uintptr_t)addr)[k];
  for (uint32_t i = 0; i < c->nclassifiers; i++) {
    const struct hg_classifier *k = c->classifiers[i];
    if (!k->classify) continue;
    struct hg_classify_reg reg = {c, c->classifier_state[i]};
    uint32_t id = k->classify(&reg, addr, size, words, n);
    if (id) return id;
  }
  return 0;
}

static uint32_t edge_kind(struct hg_cap *c, uint32_t cls, uint64_t off, uint32_t *field) {
  *field = 0;
  for (uint32_t i = 0; i < c->nclassifiers; i++) {
    const struct hg_classifier *k = c->classifiers[i];
    if (!k->edge) continue;
    struct hg_classify_reg reg = {c, c->classifier_state[i]};
    uint32_t kind = k->edge(&reg, cls, off, field);
    if (kind >= HG_EDGE_STRONG && kind < HG_EDGE_KIND_COUNT) return kind;
    *field = 0;
  }
  return HG_EDGE_CONSERVATIVE;
}

/* Candidate words are resolved in batches: first the granule slots of the
 * whole batch are prefetched, then the nodes they name, then each word is
 * resolved. Independent cache misses overlap instead of queueing. */
#define BATCH 64

struct cand {
  uint64_t v;
  uint32_t src, off, cls; /* cls: the source block's class */
  const struct hg_segment *seg;
  const uint32_t *slot;
};

static const struct hg_segment *seg_of(const struct hg_cap *c, uint64_t v) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t lo = 0, hi = _hg_vec_len(&c->segments);
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (segs[mid].base <= v) lo = mid; else hi = mid;
  }
  const struct hg_segment *s = &segs[lo];
  return (v >= s->base && v < s->end) ? s : NULL;
}

static int flush_batch(struct hg_cap *c, struct cand *b, size_t n) {
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  const uint32_t *index = (const uint32_t *)c->index.base;
  for (size_t k = 0; k < n; k++) {
    b[k].seg = seg_of(c, b[k].v);
    b[k].slot = NULL;
    if (b[k].seg && b[k].seg->granules) {
      b[k].slot = &index[b[k].seg->index_off + ((b[k].v - b[k].seg->base) >> b[k].seg->shift)];
      __builtin_prefetch(b[k].slot);
    }
  }
  for (size_t k = 0; k < n; k++)
    if (b[k].slot) __builtin_prefetch(&nd[*b[k].slot]);
  for (size_t k = 0; k < n; k++) {
    const struct hg_segment *s = b[k].seg;
    if (!s) continue;
    uint32_t i = b[k].slot ? *b[k].slot : s->first, last = s->first + s->count, t = UINT32_MAX;
    uint64_t rel = (b[k].v - s->base) >> 3;
    for (; i < last; i++) {
      if (rel < nd[i].off) break;
      if (rel < (uint64_t)nd[i].off + nd[i].size) {
        t = i;
        break;
      }
    }
    if (t == UINT32_MAX) continue;
    uint32_t kind = HG_EDGE_CONSERVATIVE, field = 0;
    if (b[k].cls) kind = edge_kind(c, b[k].cls, b[k].off, &field);
    if (kind == HG_EDGE_CONSERVATIVE && b[k].v != _hg_node_addr(c, s, t)) kind = HG_EDGE_INTERIOR;
    int rc = hg_writer_edge(c->w, b[k].src, b[k].off, t, kind, field);
    if (rc) return rc;
    c->edges++;
  }
  return 0;
}

/* One pass over the blocks: each is classified once, written as a node,
 * then its words are scanned for edges (the writer keeps node and edge
 * chunks apart; an edge may name a node written later). */
HG_NO_ASAN int _hg_scan_nodes(struct hg_cap *c) {
  size_t nseg = _hg_vec_len(&c->segments);
  const uint64_t lo = c->heap_lo, hi = c->heap_hi;
  int typed_edges = 0; /* some classifier names edges: keep each block's class */
  for (uint32_t i = 0; i < c->nclassifiers; i++) typed_edges |= c->classifiers[i]->edge != NULL;
  struct cand batch[BATCH];
  size_t n = 0;
  for (size_t k = 0; k < nseg; k++) {
    const struct hg_segment *s = _hg_vec_at(&c->segments, k);
    for (uint32_t i = s->first; i < s->first + s->count; i++) {
      uint64_t a = _hg_node_addr(c, s, i), z = _hg_node_size(c, i);
      uint32_t cls = classify_node(c, a, z);
      int rc = hg_writer_node(c->w, a, z, cls, s->flags, s->heap_id);
      if (rc) return rc;
      if (!typed_edges) cls = 0;
      const uint64_t *p = (const uint64_t *)(uintptr_t)a;
      uint64_t nw = z / 8;
      if (nw > UINT32_MAX / 8) nw = UINT32_MAX / 8; /* offsets are 32-bit */
      for (uint64_t wi = 0; wi < nw; wi++) {
        uint64_t v = p[wi];
        if (v < lo || v >= hi) continue;
        batch[n].v = v;
        batch[n].src = i;
        batch[n].off = (uint32_t)(wi * 8);
        batch[n].cls = cls;
        if (++n == BATCH) {
          if ((rc = flush_batch(c, batch, n))) return rc;
          n = 0;
        }
      }
    }
  }
  return n ? flush_batch(c, batch, n) : 0;
}

/* Scans [lo, hi) word by word; clipped to readable memory. */
HG_NO_ASAN static int scan_range(struct hg_cap *c, uint64_t lo, uint64_t hi, uint32_t kind,
                                 uint32_t owner) {
  lo = (lo + 7) & ~(uint64_t)7;
  hi &= ~(uint64_t)7;
  while (lo < hi) {
    int64_t ri = _hg_region_find(c, lo);
    if (ri < 0) { /* skip to the next region */
      const struct hg_cregion *r = (const struct hg_cregion *)c->regions.base;
      size_t n = _hg_vec_len(&c->regions), j = 0;
      while (j < n && r[j].end <= lo) j++;
      if (j == n || r[j].start >= hi) return 0;
      lo = r[j].start;
      continue;
    }
    const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
    uint64_t end = r->end < hi ? r->end : hi;
    if ((r->prot & HG_PROT_READ) && r->kind != HG_RK_OWN) {
      for (uint64_t a = lo; a < end; a += 8) {
        uint64_t v = *(const volatile uint64_t *)(uintptr_t)a;
        if (v < c->heap_lo || v >= c->heap_hi) continue;
        uint32_t t = _hg_index_lookup(c, v);
        if (t == UINT32_MAX) continue;
        struct hg_root root = {kind, owner, a, t};
        int rc = hg_writer_root(c->w, &root);
        if (rc) return rc;
        c->roots++;
      }
    }
    lo = end;
  }
  return 0;
}

/* Anonymous private writable memory that is neither heap, stack, image nor
 * ours (the loader's own allocations, custom pools …) holds roots too, as
 * for valgrind; allocator segments inside such a region are skipped. */
static int scan_anon(struct hg_cap *c) {
  const char *names = (const char *)c->strings.base;
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t nseg = _hg_vec_len(&c->segments), k = 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->kind != HG_RK_OTHER || r->rss == 0 || _hg_region_reservation(r) ||
        (r->prot & (HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED)) != (HG_PROT_READ | HG_PROT_WRITE))
      continue;
    if (r->name && strncmp(names + r->name, "[anon:", 6) != 0) continue;
    uint64_t a = r->start, run_end;
    while (k < nseg && segs[k].end <= a) k++;
    while (a < r->end && _hg_next_resident(&a, r->end, &run_end)) { /* resident runs only */
      for (size_t j = k; j < nseg && segs[j].base < run_end; j++) {
        if (segs[j].end <= a) continue;
        if (segs[j].base > a) {
          int rc = scan_range(c, a, segs[j].base, HG_ROOT_OTHER, HG_NO_OWNER);
          if (rc) return rc;
        }
        a = segs[j].end;
      }
      if (a < run_end) {
        int rc = scan_range(c, a, run_end, HG_ROOT_OTHER, HG_NO_OWNER);
        if (rc) return rc;
      }
      if (a < run_end) a = run_end;
    }
  }
  return 0;
}

int _hg_scan_roots(struct hg_cap *c) {
  int rc;
  size_t nt = _hg_vec_len(&c->threads);
  for (size_t i = 0; i < nt; i++) {
    const struct hg_cthread *t = _hg_vec_at(&c->threads, i);
    for (uint32_t r = 0; r < t->nregs && r < HG_MAX_REGS; r++) {
      uint32_t n = _hg_index_lookup(c, t->regs[r]);
      if (n == UINT32_MAX) continue;
      struct hg_root root = {HG_ROOT_REGISTER, (uint32_t)i, r, n};
      if ((rc = hg_writer_root(c->w, &root))) return rc;
      c->roots++;
    }
    if (t->stack_hi > t->stack_lo &&
        (rc = scan_range(c, t->stack_lo, t->stack_hi, HG_ROOT_STACK, (uint32_t)i)))
      return rc;
    if (t->tls_hi > t->tls_lo &&
        (rc = scan_range(c, t->tls_lo, t->tls_hi, HG_ROOT_TLS, (uint32_t)i)))
      return rc;
  }
  size_t nr = _hg_vec_len(&c->ranges);
  for (size_t i = 0; i < nr; i++) {
    const struct hg_crange *g = _hg_vec_at(&c->ranges, i);
    if ((rc = scan_range(c, g->lo, g->hi, g->kind, g->owner))) return rc;
  }
  return scan_anon(c);
}
