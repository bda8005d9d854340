/*
 * scan.c — the root scan: after the nodes and their edges (scan_nodes.c),
 * every root — a register, or a word of a stack, TLS, image data or other
 * anonymous memory — that points into a live block, written with its kind
 * and owner (thread or image).
 *
 * Runs while the heap is frozen (or in the forked child): never calls
 * malloc; reads only memory inside validated regions.
 */
#include <string.h>

#include "capture/stacks/alloc_record.h"
#include "capture/platform.h"
#include "capture/ptrindex.h"

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

/* Narrows [lo, cut) / moves skip for a range [a, b) not to be scanned. */
static inline void exclude(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi, uint64_t *cut, uint64_t *skip) {
  if (b <= lo || a >= hi) return;
  if (a <= lo) {
    if (b > *skip) *skip = b;
  } else if (a < *cut) {
    *cut = a;
  }
}

/* Scans [lo, hi) for roots of the given kind, less the allocator's own
 * state (c->not_roots: glibc's malloc_state holds top, last_remainder and
 * bin heads, chunk addresses that fall in the last 8 bytes of the block
 * before each free chunk, and rooted a leaked block that happened to sit
 * before one; issue 26). In anonymous memory (other = 1) also less what a
 * root range covers (scanned under its own kind: an image's bss lies in an
 * anonymous mapping past the file's pages, and was once reported twice)
 * and less the allocation-stack recorder's tables (they hold block
 * addresses: each would be a root; alloc_record.h), should a region merge
 * them with the app's memory. */
static int scan_minus(struct hg_cap *c, uint64_t lo, uint64_t hi, uint32_t kind, uint32_t owner,
                      int other) {
  size_t nr = other ? _hg_vec_len(&c->ranges) : 0, nn = _hg_vec_len(&c->not_roots);
  while (lo < hi) {
    uint64_t cut = hi, skip = lo; /* scan [lo, cut), or jump to skip */
    for (size_t i = 0; i < nr; i++) {
      const struct hg_crange *g = _hg_vec_at(&c->ranges, i);
      exclude(g->lo, g->hi, lo, hi, &cut, &skip);
    }
    for (size_t i = 0; i < nn; i++) {
      const struct hg_crange *g = _hg_vec_at(&c->not_roots, i);
      exclude(g->lo, g->hi, lo, hi, &cut, &skip);
    }
    for (unsigned i = 0; other && i < HG_REC_OWN_MAX; i++) {
      uint64_t a, b;
      if (_hg_rec_own_get(i, &a, &b)) exclude(a, b, lo, hi, &cut, &skip);
    }
    if (skip > lo) {
      lo = skip;
      continue;
    }
    int rc = scan_range(c, lo, cut, kind, owner);
    if (rc) return rc;
    lo = cut;
  }
  return 0;
}

static int scan_other(struct hg_cap *c, uint64_t lo, uint64_t hi) {
  return scan_minus(c, lo, hi, HG_ROOT_OTHER, HG_NO_OWNER, 1);
}

/* [lo, hi) of a recorded segment (its nodes listed from the allocation
 * recorder, not walked: struct hg_segment) minus its nodes, as roots: the
 * memory between listed blocks may hold blocks no list has. */
static int scan_gaps(struct hg_cap *c, const struct hg_segment *s, uint64_t lo, uint64_t hi) {
  uint32_t b = s->first, e = s->first + s->count;
  while (b < e) { /* first node ending after lo */
    uint32_t m = b + (e - b) / 2;
    if (_hg_node_addr(c, s, m) + _hg_node_size(c, m) <= lo) b = m + 1;
    else e = m;
  }
  uint64_t p = lo;
  for (uint32_t i = b; i < s->first + s->count && p < hi; i++) {
    uint64_t na = _hg_node_addr(c, s, i), nz = na + _hg_node_size(c, i);
    if (na >= hi) break;
    if (na > p) {
      int rc = scan_other(c, p, na);
      if (rc) return rc;
    }
    if (nz > p) p = nz;
  }
  return p < hi ? scan_other(c, p, hi) : 0;
}

/* Anonymous private writable memory that is neither heap, stack, image nor
 * ours (the loader's own allocations, custom pools …) holds roots too, as
 * for valgrind; allocator segments inside such a region are skipped (a
 * recorded segment's nodes only), and so are root ranges (scan_other). */
static int scan_anon(struct hg_cap *c) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t nseg = _hg_vec_len(&c->segments), k = 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->kind != HG_RK_OTHER || _hg_region_untouched(r) || _hg_region_reservation(r) ||
        (r->prot & (HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED)) != (HG_PROT_READ | HG_PROT_WRITE))
      continue;
    if (!(r->flags & HG_RF_ANON)) continue;
    uint64_t a = r->start, run_end;
    while (k < nseg && segs[k].end <= a) k++;
    while (a < r->end && _hg_next_resident(&a, r->end, &run_end)) { /* resident runs only */
      for (size_t j = k; j < nseg && segs[j].base < run_end; j++) {
        if (segs[j].end <= a) continue;
        if (segs[j].base > a) {
          int rc = scan_other(c, a, segs[j].base);
          if (rc) return rc;
        }
        if (segs[j].recorded) {
          uint64_t lo = segs[j].base > a ? segs[j].base : a;
          uint64_t hi = segs[j].end < run_end ? segs[j].end : run_end;
          int rc = scan_gaps(c, &segs[j], lo, hi);
          if (rc) return rc;
          a = hi;
          continue;
        }
        a = segs[j].end;
      }
      if (a < run_end) {
        int rc = scan_other(c, a, run_end);
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
    if ((rc = scan_minus(c, g->lo, g->hi, g->kind, g->owner, 0))) return rc;
  }
  return scan_anon(c);
}
