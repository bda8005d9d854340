/*
 * scan.h — what the two node scans share (scan_nodes.c: one thread,
 * scan_pipe.c: a helper thread resolving ahead of the capturing thread):
 * the block walker with its read-ahead, identify() over the classifiers,
 * the candidate words of a block and their batch resolution.
 *
 * Everything here may run on the helper thread: no libc, no malloc, reads
 * only blocks the heap walk validated. Internal to the scan files.
 */
#ifndef HG_CAPTURE_SCAN_H
#define HG_CAPTURE_SCAN_H

#include "capture/classify/classify.h"
#include "capture/names.h"
#include "capture/platform.h"
#include "capture/ptrindex.h"

/* Candidate words are resolved in batches: first the index memory of the
 * whole batch is prefetched, then (only for words that are not known to be
 * a block's first byte) the candidate nodes, then each word is resolved.
 * Independent cache misses overlap instead of queueing. */
#define HG_SCAN_BATCH 64
#define HG_SCAN_AHEAD 1024 /* bytes of block contents prefetched ahead */

struct hg_cand {
  uint64_t v;             /* the word                                      */
  uint32_t src, off;      /* its block and byte offset there               */
  uint32_t etok, which;   /* edge token, from classifier `which` (or 0)   */
  uint32_t nkind, nfield; /* its answer when already known (nkind >= HG_EDGE_STRONG;
                             one-thread scan), else 0 */
  int known;              /* see _hg_ix_candidate                          */
  const struct hg_segment *seg;
  const void *slot;
  uint32_t t;
};

/* Resolves b[0..n): afterwards b[k].t is the target node or UINT32_MAX and
 * b[k].known is 2 when v is the target's first byte (scan_nodes.c). */
void _hg_scan_resolve(const struct hg_cap *c, struct hg_cand *b, size_t n);

/* The pipelined scan (scan_pipe.c): 1 when it ran (its result in *rc), 0
 * when no helper thread or no room for its tables: the caller scans alone. */
int _hg_scan_piped(struct hg_cap *c, int *rc);

/* Nodes [from, to) and their edges on the calling thread alone
 * (scan_nodes.c): the one-thread scan, and the chunks the capturing
 * thread takes in the pipelined one. row_written: node `from`'s row is
 * already written, and so are its edges before byte from_off. */
int _hg_scan_range_alone(struct hg_cap *c, uint32_t from, uint32_t to, int row_written,
                         uint32_t from_off);

/* ---- a block's first words and its identify() token ---- */

/* Copies a block's first words (up to HG_CLASSIFY_WORDS) for the
 * classifiers; returns how many. */
HG_NO_ASAN static inline uint32_t _hg_block_words(uint64_t addr, uint64_t size,
                                                  uint64_t words[HG_CLASSIFY_WORDS]) {
  const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)addr;
  if (size >= 8 * HG_CLASSIFY_WORDS) { /* the common case, without a loop */
    _Static_assert(HG_CLASSIFY_WORDS == 4, "_hg_block_words copies 4 words");
    words[0] = w[0];
    words[1] = w[1];
    words[2] = w[2];
    words[3] = w[3];
    return HG_CLASSIFY_WORDS;
  }
  uint32_t n = (uint32_t)(size / 8);
  for (uint32_t k = 0; k < n; k++) words[k] = w[k];
  return n;
}

/* The helper's half of classification (classify.h), on `lane` (0: the
 * capturing thread, 1: the helper): the first classifier with a non-zero
 * token wins; *which is its index. 0 without one. */
HG_NO_ASAN static inline __attribute__((always_inline)) uint32_t _hg_identify_block(
    const struct hg_cap *c, uint32_t lane, uint64_t addr, uint64_t size, uint32_t *which) {
  uint64_t words[HG_CLASSIFY_WORDS];
  uint32_t n = _hg_block_words(addr, size, words);
  for (uint32_t i = 0; i < c->nclassifiers; i++) {
    uint32_t token = c->classifiers[i]->identify(c->classifier_state[i], c, lane, addr, size, words, n);
    if (token) {
      *which = i;
      return token;
    }
  }
  return 0;
}

/* ---- the block walker ---- */

/* Prefetches block contents ahead of a forward walk through a segment:
 * blocks are visited in address order, so the reads stream instead of
 * stalling behind the random index lookups. */
struct hg_ahead {
  uint64_t next, stop;
};

static inline void _hg_ahead_init(const struct hg_cap *c, const struct hg_segment *s,
                                  struct hg_ahead *h) {
  h->next = s->base;
  h->stop = s->count ? _hg_node_addr(c, s, s->first + s->count - 1) +
                           _hg_node_size(c, s->first + s->count - 1)
                     : s->base;
}

static inline void _hg_ahead_to(struct hg_ahead *h, uint64_t a, uint64_t want) {
  if (h->next < a) h->next = a & ~(uint64_t)63;
  for (; h->next < want && h->next < h->stop; h->next += 64)
    __builtin_prefetch((const void *)(uintptr_t)h->next);
}

/* Walks the blocks in address order, segment by segment, prefetching their
 * contents ahead. After each _hg_blocks_next(): the block's node index,
 * address and size in node, addr, size; its segment in s. */
struct hg_blocks {
  const struct hg_cap *c;
  const struct hg_segment *s;
  size_t k, nseg;
  uint32_t i, end, stop; /* stop: the node the walk ends before          */
  struct hg_ahead h;
  uint32_t node;
  uint64_t addr, size;
};

static inline void _hg_blocks_init(struct hg_blocks *b, const struct hg_cap *c) {
  *b = (struct hg_blocks){.c = c, .nseg = _hg_vec_len(&c->segments), .stop = UINT32_MAX}; /* no libc: the helper runs this */
}

/* The same walk over nodes [from, to) only (a chunk of the scan). */
static inline void _hg_blocks_range(struct hg_blocks *b, const struct hg_cap *c, uint32_t from,
                                    uint32_t to) {
  _hg_blocks_init(b, c);
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t lo = 0, hi = b->nseg; /* the segment holding node `from`: the last with first <= from */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (segs[mid].first <= from) lo = mid; else hi = mid;
  }
  b->stop = to;
  if (lo == b->nseg || from >= to) return;
  b->k = lo + 1;
  b->s = &segs[lo];
  b->i = from;
  b->end = b->s->first + b->s->count;
  _hg_ahead_init(c, b->s, &b->h);
}

static inline int _hg_blocks_next(struct hg_blocks *b) {
  if (b->i == b->stop) return 0;
  while (b->i == b->end) {
    if (b->k == b->nseg) return 0;
    b->s = _hg_vec_at(&b->c->segments, b->k++);
    b->i = b->s->first;
    b->end = b->s->first + b->s->count;
    _hg_ahead_init(b->c, b->s, &b->h);
  }
  b->node = b->i++;
  b->addr = _hg_node_addr(b->c, b->s, b->node);
  b->size = _hg_node_size(b->c, b->node);
  _hg_ahead_to(&b->h, b->addr, b->addr + b->size + HG_SCAN_AHEAD);
  return 1;
}

/* ---- candidate words ---- */

/* One-thread scan, a candidate word of a block that nm names: its answer
 * when the namer or the edge_of() memo already knows it (kept in the namer
 * then), else its edge token for the flush to ask edge_of() about — only
 * for words that turn out to be edges, as a field name is registered on
 * first use. */
static inline void _hg_name_word(const struct hg_cap *c, struct hg_namer *nm, struct hg_cand *b) {
  uint32_t w = b->off / 8;
  if (_hg_namer_take(nm, w, &b->nkind, &b->nfield)) return;
  uint32_t etok = _hg_namer_token(c, nm, b->off);
  int keep = _hg_namer_keeps(nm, w);
  if (!etok) {
    if (keep) _hg_namer_keep(nm, w, HG_EDGE_CONSERVATIVE, 0);
    return;
  }
  const struct hg_names *m = &c->scan.names;
  uint32_t h = etok & (HG_MEMO - 1);
  if (keep && m->edge[h].key == _hg_memo_key(nm->which, etok)) { /* answered before */
    b->nkind = m->edge[h].kind;
    b->nfield = m->edge[h].field;
    _hg_namer_keep(nm, w, b->nkind, b->nfield);
    return;
  }
  b->etok = etok;
  b->which = nm->which;
}

/* Hands a full batch on; 0, or non-zero to stop the walk. `node`: the
 * block whose words are being added (nodes before it are complete). */
typedef int (*hg_flush_fn)(void *ctx, struct hg_cand *b, size_t n, uint32_t node);

/* Adds block i's words from word w0 on that fall inside the heap span to the batch as
 * candidates (with their edge tokens when nm names them), handing the
 * batch to flush() whenever it is full. 0, or what flush() returned. */
HG_NO_ASAN static inline int _hg_add_words_from(const struct hg_cap *c, uint32_t i, uint64_t a,
                                                uint64_t z, uint64_t w0, struct hg_namer *nm,
                                                struct hg_cand *batch, size_t *n,
                                                hg_flush_fn flush, void *ctx) {
  const uint64_t lo = c->heap_lo, hi = c->heap_hi;
  const uint64_t *w = (const uint64_t *)(uintptr_t)a;
  uint64_t nw = z / 8;
  if (nw > UINT32_MAX / 8) nw = UINT32_MAX / 8; /* offsets are 32-bit */
  for (uint64_t wi = w0; wi < nw; wi++) {
    uint64_t v = w[wi];
    if (v < lo || v >= hi) continue;
    struct hg_cand *b = &batch[(*n)++];
    b->v = v;
    b->src = i;
    b->off = (uint32_t)(wi * 8);
    b->etok = b->which = b->nkind = b->nfield = 0;
    if (nm) _hg_name_word(c, nm, b);
    if (*n == HG_SCAN_BATCH) {
      int rc = flush(ctx, batch, *n, i);
      *n = 0;
      if (rc) return rc;
    }
  }
  return 0;
}

/* The same from the block's first word. */
HG_NO_ASAN static inline int _hg_add_words(const struct hg_cap *c, uint32_t i, uint64_t a,
                                           uint64_t z, struct hg_namer *nm, struct hg_cand *batch,
                                           size_t *n, hg_flush_fn flush, void *ctx) {
  return _hg_add_words_from(c, i, a, z, 0, nm, batch, n, flush, ctx);
}

/* The kind (and field) of a resolved edge: from its edge token (etok of
 * classifier `which`, 0 = none) when it has one; conservative when that
 * does not name it, interior when it does not point at the target's first
 * byte. */
static inline uint32_t _hg_resolved_kind(struct hg_cap *c, uint32_t which, uint32_t etok,
                                         int at_start, uint32_t *field) {
  uint32_t kind = HG_EDGE_CONSERVATIVE;
  *field = 0;
  if (etok) kind = _hg_edge_of(c, which, etok, field);
  if (kind == HG_EDGE_CONSERVATIVE && !at_start) kind = HG_EDGE_INTERIOR;
  return kind;
}

#endif
