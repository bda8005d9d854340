/*
 * scan_nodes.c — the conservative scan of the heap blocks: in one pass in
 * address order, each block is classified once (its classifier's halves,
 * classify.h), written as a node, then its edges (each pointer-aligned word
 * of the block that points into a live block), named when its classifier
 * names them (names.h). Owns batch resolution of candidate words and the
 * one-thread scan; _hg_scan_nodes() hands the work to the pipelined scan
 * (scan_pipe.c) when a helper thread is available. Same output either way.
 *
 * Runs while the heap is frozen (or in the forked child): never calls
 * malloc; reads only memory inside validated regions/segments.
 */
#include "capture/scan.h"

HG_NO_ASAN void _hg_scan_resolve(const struct hg_cap *c, struct hg_cand *b, size_t n) {
  const struct hg_cnode *nd = (const struct hg_cnode *)c->nodes.base;
  const struct hg_segment *last = NULL; /* most pointers share a segment */
  for (size_t k = 0; k < n; k++) {
    uint64_t v = b[k].v;
    if (!last || v < last->base || v >= last->end) {
      const struct hg_segment *sg = _hg_seg_of(c, v);
      if (sg) last = sg;
      b[k].seg = sg;
    } else {
      b[k].seg = last;
    }
    b[k].slot = b[k].seg ? _hg_ix_slot(c, b[k].seg, b[k].v) : NULL;
    if (b[k].slot) __builtin_prefetch(b[k].slot);
  }
  if (c->nonptr_mask) /* tagged pointers never resolve (one test a batch when there are none) */
    for (size_t k = 0; k < n; k++)
      if (b[k].v & c->nonptr_mask) b[k].seg = NULL;
  for (size_t k = 0; k < n; k++) {
    b[k].t = UINT32_MAX;
    b[k].known = 0;
    if (!b[k].seg) continue;
    b[k].t = _hg_ix_candidate(c, b[k].seg, b[k].v, b[k].slot, &b[k].known);
    if (b[k].t != UINT32_MAX && !b[k].known) __builtin_prefetch(&nd[b[k].t]);
  }
  for (size_t k = 0; k < n; k++) {
    const struct hg_segment *s = b[k].seg;
    uint32_t t = b[k].t;
    if (t == UINT32_MAX || b[k].known) continue;
    if (!_hg_ix_contains(c, s, t, b[k].v)) b[k].t = UINT32_MAX;
    else if (b[k].v == _hg_node_addr(c, s, t)) b[k].known = 2;
  }
}

/* Resolves a batch and writes its edges (one-thread scan). */
static int flush_batch(struct hg_cap *c, struct hg_cand *b, size_t n) {
  _hg_scan_resolve(c, b, n);
  for (size_t k = 0; k < n; k++) {
    if (b[k].t == UINT32_MAX) continue;
    uint32_t field = b[k].nfield, kind = b[k].nkind;
    if (!kind) kind = _hg_resolved_kind(c, b[k].which, b[k].etok, b[k].known == 2, &field);
    int rc = hg_writer_edge(c->w, b[k].src, b[k].off, b[k].t, kind, field);
    if (rc) return rc;
    c->edges++;
  }
  return 0;
}

static int alone_flush(void *ctx, struct hg_cand *b, size_t n, uint32_t node) {
  (void)node;
  return flush_batch(ctx, b, n);
}

/* Single-threaded pass over blocks [from, to): each is classified once,
 * written as a node, then its words are scanned for edges (the writer
 * keeps node and edge chunks apart; an edge may name a node written
 * later). */
HG_NO_ASAN int _hg_scan_range_alone(struct hg_cap *c, uint32_t from, uint32_t to, int row_written,
                                    uint32_t from_off) {
  struct hg_cand batch[HG_SCAN_BATCH];
  size_t n = 0;
  struct hg_blocks b;
  _hg_blocks_range(&b, c, from, to);
  while (_hg_blocks_next(&b)) {
    uint32_t which = 0; /* identified as the helper would */
    uint32_t token = _hg_identify_block(c, 0, b.addr, b.size, &which);
    uint32_t cls = token ? _hg_class_of(c, which, token) : 0;
    int resumed = row_written && b.node == from; /* written (and counted) by the pipeline */
    if (token && !resumed) _hg_count_block(c, which, token, b.addr, b.size);
    int rc = resumed ? 0 : hg_writer_node(c->w, b.addr, b.size, cls, b.s->flags, b.s->heap_id);
    if (rc) return rc;
    struct hg_namer *nm = _hg_namer_of(c, cls, which, token);
    uint64_t w0 = b.node == from ? from_off / 8 : 0;
    if ((rc = _hg_add_words_from(c, b.node, b.addr, b.size, w0, nm, batch, &n, alone_flush, c)))
      return rc;
  }
  return n ? flush_batch(c, batch, n) : 0;
}

/* Nodes and their edges: pipelined when a helper thread is available,
 * else on this thread alone. Same output either way. */
int _hg_scan_nodes(struct hg_cap *c) {
  if (_hg_node_count(c) == 0) return 0;
  _hg_names_reset(c);
  int rc;
  if (_hg_scan_piped(c, &rc)) return rc;
  return _hg_scan_range_alone(c, 0, _hg_node_count(c), 0, 0);
}
