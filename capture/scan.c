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
#include "capture/platform.h"
#include "capture/ptrindex.h"

/* Copies a block's first words (up to HG_CLASSIFY_WORDS) for the
 * classifiers; returns how many. */
HG_NO_ASAN static inline uint32_t block_words(uint64_t addr, uint64_t size,
                                              uint64_t words[HG_CLASSIFY_WORDS]) {
  const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)addr;
  if (size >= 8 * HG_CLASSIFY_WORDS) { /* the common case, without a loop */
    _Static_assert(HG_CLASSIFY_WORDS == 4, "block_words copies 4 words");
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

/* The helper's half of classification (classify.h): the first classifier
 * with a non-zero token wins; *which is its index. */
HG_NO_ASAN static inline __attribute__((always_inline)) uint32_t identify_node(
    const struct hg_cap *c, uint64_t addr, uint64_t size, uint32_t *which) {
  uint64_t words[HG_CLASSIFY_WORDS];
  uint32_t n = block_words(addr, size, words);
  for (uint32_t i = 0; i < c->nclassifiers; i++) {
    uint32_t token = c->classifiers[i]->identify(c->classifier_state[i], c, addr, size, words, n);
    if (token) {
      *which = i;
      return token;
    }
  }
  return 0;
}

/* A classifier that names edges (classify.h: edge_identify and edge_of). */
static int names_edges(const struct hg_classifier *k) {
  return k->edge_identify && k->edge_of;
}

/* How the words of one block get their edge tokens: the block's classifier
 * (when it names edges) and its edge map or, without one,
 * edge_identify() word by word; and what the first words' edges resolved
 * to, once known. */
#define NAMER_WORDS 16 /* words whose answers a namer keeps */
struct namer {
  const struct hg_classifier *k;
  void *state;
  uint32_t token, which, words, final; /* final: the map will not change   */
  const uint32_t *map;
  uint64_t res[NAMER_WORDS]; /* word w's answer: field << 32 | kind << 1 | 1; 0: not yet */
};

/* The namers of recent classes, by token (capturing thread). A namer is
 * kept once its map is there (a class's map may appear at its first
 * instance's class_of()). */
#define NAMERS 64
static struct namer namers[NAMERS];

__attribute__((noinline)) static struct namer *namer_new(const struct hg_cap *c, uint32_t which,
                                                         uint32_t token) {
  struct namer *nm = &namers[token & (NAMERS - 1)];
  const struct hg_classifier *k = c->classifiers[which];
  if (!names_edges(k)) return NULL;
  *nm = (struct namer){.k = k, .state = c->classifier_state[which], .token = token, .which = which};
  if (k->edge_map) nm->map = k->edge_map(nm->state, c, token, &nm->words);
  nm->final = nm->map || !k->edge_map;
  return nm;
}

/* The namer of a block with token `token` from classifier `which`, or NULL
 * when that classifier does not name edges. */
static inline struct namer *namer_of(const struct hg_cap *c, uint32_t which, uint32_t token) {
  struct namer *nm = &namers[token & (NAMERS - 1)];
  if (nm->final && nm->token == token && nm->which == which) return nm;
  return namer_new(c, which, token);
}

static inline uint32_t edge_token(const struct hg_cap *c, const struct namer *nm, uint32_t off) {
  if (nm->map) return off / 8 < nm->words ? nm->map[off / 8] : 0;
  return nm->k->edge_identify(nm->state, c, nm->token, off);
}

/* What class_of() and edge_of() answered, by token (capturing thread; a
 * token always means the same answer, classify.h): most blocks and edges
 * repeat a few classes and fields, and this spares a call each. Keys are
 * (classifier + 1) << 32 | token, so 0 is no key. */
#define MEMO 256
static struct memo {
  struct { uint64_t key; uint32_t cls; } cls[MEMO];
  struct { uint64_t key; uint32_t kind, field; } edge[MEMO];
} memo; /* one capture at a time (capture lock) */

static inline uint64_t memo_key(uint32_t which, uint32_t token) {
  return (uint64_t)(which + 1) << 32 | token;
}

static uint32_t class_of_call(struct hg_cap *c, uint32_t which, uint32_t token) {
  struct hg_classify_reg reg = {c, c->classifier_state[which]};
  uint32_t cls = c->classifiers[which]->class_of(&reg, token);
  if (cls) { /* a failed registration is not remembered */
    memo.cls[token & (MEMO - 1)].key = memo_key(which, token);
    memo.cls[token & (MEMO - 1)].cls = cls;
  }
  return cls;
}

static inline uint32_t class_of(struct hg_cap *c, uint32_t which, uint32_t token) {
  uint32_t h = token & (MEMO - 1);
  if (memo.cls[h].key == memo_key(which, token)) return memo.cls[h].cls;
  return class_of_call(c, which, token);
}

static uint32_t edge_of_call(struct hg_cap *c, uint32_t which, uint32_t etok, uint32_t *field) {
  struct hg_classify_reg reg = {c, c->classifier_state[which]};
  *field = 0;
  uint32_t kind = c->classifiers[which]->edge_of(&reg, etok, field);
  if (kind < HG_EDGE_STRONG || kind >= HG_EDGE_KIND_COUNT) {
    *field = 0;
    return HG_EDGE_CONSERVATIVE;
  }
  if (*field) {
    memo.edge[etok & (MEMO - 1)].key = memo_key(which, etok);
    memo.edge[etok & (MEMO - 1)].kind = kind;
    memo.edge[etok & (MEMO - 1)].field = *field;
  }
  return kind;
}

/* The kind and field of a named edge (edge token etok of classifier
 * `which`), or HG_EDGE_CONSERVATIVE. */
static inline uint32_t edge_of(struct hg_cap *c, uint32_t which, uint32_t etok, uint32_t *field) {
  uint32_t h = etok & (MEMO - 1);
  if (memo.edge[h].key == memo_key(which, etok)) {
    *field = memo.edge[h].field;
    return memo.edge[h].kind;
  }
  return edge_of_call(c, which, etok, field);
}

/* The kind and field of the edge at byte off of a block that nm names:
 * edge_of() of its edge token (HG_EDGE_CONSERVATIVE without one), kept in
 * the namer for its first words once final (when edge_of() would keep it). */
static inline uint32_t named_kind(struct hg_cap *c, struct namer *nm, uint32_t off,
                                  uint32_t *field) {
  uint32_t w = off / 8;
  if (w < NAMER_WORDS && nm->res[w]) {
    *field = (uint32_t)(nm->res[w] >> 32);
    return (uint32_t)nm->res[w] >> 1;
  }
  uint32_t etok = edge_token(c, nm, off), kind = HG_EDGE_CONSERVATIVE;
  *field = 0;
  if (etok) kind = edge_of(c, nm->which, etok, field);
  if (w < NAMER_WORDS && nm->final && (!etok || *field))
    nm->res[w] = (uint64_t)*field << 32 | kind << 1 | 1;
  return kind;
}

/* The namer of the edges of a block of class cls (0: none) whose
 * identify() token from classifier `which` is `token`, or NULL when they
 * stay unnamed (no class, or a classifier that does not name edges). */
static inline struct namer *naming_of(const struct hg_cap *c, uint32_t cls, uint32_t which,
                                      uint32_t token) {
  return cls && token ? namer_of(c, which, token) : NULL;
}

/* Candidate words are resolved in batches: first the index memory of the
 * whole batch is prefetched, then (only for words that are not known to be
 * a block's first byte) the candidate nodes, then each word is resolved.
 * Independent cache misses overlap instead of queueing. */
#define BATCH 64
#define SCAN_AHEAD 1024 /* bytes of block contents prefetched ahead */

struct cand {
  uint64_t v;             /* the word                                      */
  uint32_t src, off;
  uint32_t etok, which;   /* edge token, from classifier `which` (or 0)   */
  uint32_t nkind, nfield; /* its answer when already known (nkind >= HG_EDGE_STRONG;
                             one-thread scan), else 0 */
  int known;              /* see _hg_ix_candidate                          */
  const struct hg_segment *seg;
  const void *slot;
  uint32_t t;
};

/* Resolves b[0..n): afterwards b[k].t is the target node or UINT32_MAX and
 * b[k].known is 2 when v is the target's first byte. */
HG_NO_ASAN static void resolve_batch(const struct hg_cap *c, struct cand *b, size_t n) {
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

/* The kind (and field) of a resolved edge: from its edge token (etok of
 * classifier `which`, 0 = none) when it has one; conservative when that
 * does not name it, interior when it does not point at the target's first
 * byte. */
static inline uint32_t resolved_kind(struct hg_cap *c, uint32_t which, uint32_t etok,
                                     int at_start, uint32_t *field) {
  uint32_t kind = HG_EDGE_CONSERVATIVE;
  *field = 0;
  if (etok) kind = edge_of(c, which, etok, field);
  if (kind == HG_EDGE_CONSERVATIVE && !at_start) kind = HG_EDGE_INTERIOR;
  return kind;
}

static int flush_batch(struct hg_cap *c, struct cand *b, size_t n) {
  resolve_batch(c, b, n);
  for (size_t k = 0; k < n; k++) {
    if (b[k].t == UINT32_MAX) continue;
    uint32_t field = b[k].nfield, kind = b[k].nkind;
    if (!kind)
      kind = resolved_kind(c, b[k].which, b[k].etok, b[k].known == 2, &field);
    int rc = hg_writer_edge(c->w, b[k].src, b[k].off, b[k].t, kind, field);
    if (rc) return rc;
    c->edges++;
  }
  return 0;
}

/* Prefetches block contents ahead of a forward walk through a segment:
 * blocks are visited in address order, so the reads stream instead of
 * stalling behind the random index lookups. */
struct ahead {
  uint64_t next, stop;
};

static void ahead_init(const struct hg_cap *c, const struct hg_segment *s, struct ahead *h) {
  h->next = s->base;
  h->stop = s->count ? _hg_node_addr(c, s, s->first + s->count - 1) +
                           _hg_node_size(c, s->first + s->count - 1)
                     : s->base;
}

static inline void ahead_to(struct ahead *h, uint64_t a, uint64_t want) {
  if (h->next < a) h->next = a & ~(uint64_t)63;
  for (; h->next < want && h->next < h->stop; h->next += 64)
    __builtin_prefetch((const void *)(uintptr_t)h->next);
}

/* Walks the blocks in address order, segment by segment, prefetching their
 * contents ahead; b->s is the current block's segment. */
struct blocks {
  const struct hg_cap *c;
  const struct hg_segment *s;
  size_t k, nseg;
  uint32_t i, end;
  struct ahead h;
};

static void blocks_init(struct blocks *b, const struct hg_cap *c) {
  *b = (struct blocks){.c = c, .nseg = _hg_vec_len(&c->segments)}; /* no libc: the helper runs this */
}

static inline int blocks_next(struct blocks *b, uint32_t *i, uint64_t *a, uint64_t *z) {
  while (b->i == b->end) {
    if (b->k == b->nseg) return 0;
    b->s = _hg_vec_at(&b->c->segments, b->k++);
    b->i = b->s->first;
    b->end = b->s->first + b->s->count;
    ahead_init(b->c, b->s, &b->h);
  }
  *i = b->i++;
  *a = _hg_node_addr(b->c, b->s, *i);
  *z = _hg_node_size(b->c, *i);
  ahead_to(&b->h, *a, *a + *z + SCAN_AHEAD);
  return 1;
}

/* One-thread scan, a candidate word of a block that nm names: its answer
 * when the namer or the edge_of() memo already knows it (kept in the namer
 * then), else its edge token for flush_batch() to ask edge_of() about —
 * only for words that turn out to be edges, as a field name is registered
 * on first use. */
static inline void name_word(const struct hg_cap *c, struct namer *nm, struct cand *b) {
  uint32_t w = b->off / 8;
  if (w < NAMER_WORDS && nm->res[w]) {
    b->nkind = (uint32_t)nm->res[w] >> 1;
    b->nfield = (uint32_t)(nm->res[w] >> 32);
    return;
  }
  uint32_t etok = edge_token(c, nm, b->off);
  int keep = w < NAMER_WORDS && nm->final;
  if (!etok) {
    if (keep) nm->res[w] = HG_EDGE_CONSERVATIVE << 1 | 1;
    return;
  }
  uint32_t h = etok & (MEMO - 1);
  if (keep && memo.edge[h].key == memo_key(nm->which, etok)) { /* answered before */
    b->nkind = memo.edge[h].kind;
    b->nfield = memo.edge[h].field;
    nm->res[w] = (uint64_t)b->nfield << 32 | b->nkind << 1 | 1;
    return;
  }
  b->etok = etok;
  b->which = nm->which;
}

/* Adds block i's words that fall inside the heap span to the batch as
 * candidates (with their edge tokens when nm names them), handing the
 * batch to flush() whenever it is full. 0, or what flush() returned. */
typedef int (*flush_fn)(void *ctx, struct cand *b, size_t n, uint32_t node);

HG_NO_ASAN static inline int add_words(const struct hg_cap *c, uint32_t i, uint64_t a, uint64_t z,
                                       struct namer *nm, struct cand *batch,
                                       size_t *n, flush_fn flush, void *ctx) {
  const uint64_t lo = c->heap_lo, hi = c->heap_hi;
  const uint64_t *w = (const uint64_t *)(uintptr_t)a;
  uint64_t nw = z / 8;
  if (nw > UINT32_MAX / 8) nw = UINT32_MAX / 8; /* offsets are 32-bit */
  for (uint64_t wi = 0; wi < nw; wi++) {
    uint64_t v = w[wi];
    if (v < lo || v >= hi) continue;
    struct cand *b = &batch[(*n)++];
    b->v = v;
    b->src = i;
    b->off = (uint32_t)(wi * 8);
    b->etok = b->which = b->nkind = b->nfield = 0;
    if (nm) name_word(c, nm, b);
    if (*n == BATCH) {
      int rc = flush(ctx, batch, *n, i);
      *n = 0;
      if (rc) return rc;
    }
  }
  return 0;
}

static int alone_flush(void *ctx, struct cand *b, size_t n, uint32_t node) {
  (void)node;
  return flush_batch(ctx, b, n);
}

/* Single-threaded pass over the blocks: each is classified once, written
 * as a node, then its words are scanned for edges (the writer keeps node
 * and edge chunks apart; an edge may name a node written later). */
HG_NO_ASAN static int scan_nodes_alone(struct hg_cap *c) {
  struct cand batch[BATCH];
  size_t n = 0;
  struct blocks b;
  uint32_t i;
  uint64_t a, z;
  blocks_init(&b, c);
  while (blocks_next(&b, &i, &a, &z)) {
    uint32_t which = 0, token = identify_node(c, a, z, &which); /* as the helper would */
    uint32_t cls = token ? class_of(c, which, token) : 0;
    int rc = hg_writer_node(c->w, a, z, cls, b.s->flags, b.s->heap_id);
    if (rc) return rc;
    if ((rc = add_words(c, i, a, z, naming_of(c, cls, which, token), batch, &n, alone_flush, c)))
      return rc;
  }
  return n ? flush_batch(c, batch, n) : 0;
}

/* ---- pipelined pass: the helper thread reads every word, identifies each
 * block (when there are classifiers) and resolves the edges; the
 * capturing thread registers the classes, names the edges, and writes the
 * nodes and the edges in order. They meet in two fixed-size tables from
 * scratch: a ring of resolved edges and a ring of identify() tokens, one
 * slot per node. The helper runs only code that calls nothing but
 * _hg_plat_wait/_hg_plat_wake (platform.h). */

#ifndef HG_SCAN_RING
#define HG_SCAN_RING (1u << 16)
#endif
#define RING HG_SCAN_RING /* ring entries in flight (12 bytes each)       */
#define TOKS (RING / 4)   /* token slots (8 bytes each): nodes the helper
                             may be ahead of the capturing thread         */
#define SPINS 64        /* polls before giving the core away            */
#define YIELDS 2000     /* sched_yield()s (~1 ms when a core is shared) before sleeping */
#define LAG 4096u       /* nodes the helper gets ahead before a waiting capturing
                           thread resumes (or a quarter of the ring)    */

/* A ring entry: an edge of node src at byte offset off (| AT_START when it
 * points at the target's first byte) to node val. */
struct redge {
  uint32_t src, off, val;
};
#define AT_START 2u

/* A token slot: what identify() gave node i, in slot i % TOKS (token 0:
 * none). Written before any of the node's edges is published. */
struct tok {
  uint32_t token, which;
};

static struct pipeline {
  /* written by the helper, read by the capturing thread */
  _Alignas(64) volatile uint32_t head; /* edges published                   */
  volatile uint32_t done_nodes; /* nodes below this have all edges published
                                   (and their token slots written)          */
  volatile uint32_t seq;        /* bumped at each publication                */
  volatile uint32_t helper_sleeps;
  /* the helper's own */
  _Alignas(64) uint32_t whead;  /* write position                            */
  uint32_t tail_seen, ntail_seen; /* last tail / ntail read                  */
  uint32_t woke_at, woke_done;  /* whead, done when it last woke the other   */
  /* written by the capturing thread */
  _Alignas(64) volatile uint32_t tail; /* edges consumed                    */
  volatile uint32_t ntail;      /* nodes whose token slot has been read      */
  volatile uint32_t mseq;       /* bumped at each publication of tail/ntail  */
  volatile uint32_t main_sleeps, stop;
  /* read-only while running */
  _Alignas(64) struct hg_cap *c;
  struct redge *ring;
  struct tok *toks;             /* the helper identifies (classifiers), or NULL */
} pl; /* one capture at a time (capture lock) */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("pause");
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* Helper side: makes the edges written so far (and node progress)
 * visible, then wakes the capturing thread if it sleeps. */
static void publish(struct pipeline *p, uint32_t done, int force) {
  __atomic_store_n(&p->head, p->whead, __ATOMIC_RELEASE);
  __atomic_store_n(&p->done_nodes, done, __ATOMIC_RELEASE);
  __atomic_store_n(&p->seq, p->seq + 1, __ATOMIC_SEQ_CST);
  /* a sleeping capturing thread is woken for a good amount of work only:
   * on a shared core every wake-up is a context switch */
  if (__atomic_load_n(&p->main_sleeps, __ATOMIC_SEQ_CST) &&
      (force || p->whead - p->woke_at >= RING / 4 || done - p->woke_done >= LAG)) {
    p->woke_at = p->whead;
    p->woke_done = done;
    _hg_plat_wake(&p->seq);
  }
}

/* One step of waiting: a few polls, then giving the core away (the other
 * thread may be waiting for it); returns 1 when it is time to sleep. */
static int backoff(uint32_t spin) {
  if (spin < SPINS) {
    cpu_relax();
    return 0;
  }
  if (spin < SPINS + YIELDS) {
    _hg_plat_yield();
    return 0;
  }
  return 1;
}

/* Helper side: publishes what it has (nodes below `done` are complete),
 * then waits until the capturing thread has made room — in the ring
 * (ring), or for node `node`'s token slot (node != UINT32_MAX) — with a
 * quarter to spare; 0 when asked to stop. */
static int wait_room(struct pipeline *p, uint32_t done, int ring, uint32_t node) {
  publish(p, done, 1); /* the capturing thread may be waiting for these */
  for (uint32_t spin = 0;; spin++) {
    if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return 0;
    uint32_t mseq = __atomic_load_n(&p->mseq, __ATOMIC_SEQ_CST);
    p->tail_seen = __atomic_load_n(&p->tail, __ATOMIC_SEQ_CST);
    p->ntail_seen = __atomic_load_n(&p->ntail, __ATOMIC_SEQ_CST);
    if ((!ring || p->whead - p->tail_seen <= RING - RING / 4) &&
        (node == UINT32_MAX || node - p->ntail_seen <= TOKS - TOKS / 4))
      return 1;
    if (!backoff(spin)) continue;
    __atomic_store_n(&p->helper_sleeps, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->mseq, __ATOMIC_SEQ_CST) == mseq && !p->stop)
      _hg_plat_wait(&p->mseq, mseq);
    __atomic_store_n(&p->helper_sleeps, 0, __ATOMIC_SEQ_CST);
    spin = 0;
  }
}

/* Resolves a batch and appends its edges; 0 when asked to stop. `done`:
 * nodes before it are complete once the batch is in. */
static int emit_batch(struct pipeline *p, struct cand *b, size_t n, uint32_t done) {
  if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return 0; /* the capturing thread failed */
  resolve_batch(p->c, b, n);
  for (size_t k = 0; k < n; k++) {
    if (b[k].t == UINT32_MAX) continue;
    if (p->whead - p->tail_seen >= RING) {
      p->tail_seen = __atomic_load_n(&p->tail, __ATOMIC_ACQUIRE);
      if (p->whead - p->tail_seen >= RING && !wait_room(p, b[k].src, 1, UINT32_MAX)) return 0;
    }
    struct redge *e = &p->ring[p->whead % RING];
    e->src = b[k].src;
    e->off = b[k].off | (b[k].known == 2 ? AT_START : 0);
    e->val = b[k].t;
    p->whead++;
  }
  publish(p, done, 0);
  return 1;
}

static int emit_flush(void *ctx, struct cand *b, size_t n, uint32_t node) {
  return emit_batch(ctx, b, n, node) ? 0 : 1; /* nodes before `node` are complete */
}

HG_NO_ASAN static void resolver(void *arg) {
  struct pipeline *p = arg;
  const struct hg_cap *c = p->c;
  struct cand batch[BATCH];
  size_t n = 0;
  struct blocks b;
  uint32_t i;
  uint64_t a, z;
  blocks_init(&b, c);
  while (blocks_next(&b, &i, &a, &z)) {
    if (p->toks) { /* node i's token, in its slot before any of its edges is out */
      if (i - p->ntail_seen >= TOKS) {
        p->ntail_seen = __atomic_load_n(&p->ntail, __ATOMIC_ACQUIRE);
        if (i - p->ntail_seen >= TOKS) { /* the slot is still to be read */
          if (n && !emit_batch(p, batch, n, i)) return;
          n = 0;
          if (!wait_room(p, i, 0, i)) return;
        }
      }
      uint32_t which = 0, token = identify_node(c, a, z, &which);
      p->toks[i % TOKS] = (struct tok){token, which};
    }
    if (add_words(c, i, a, z, NULL, batch, &n, emit_flush, p)) return; /* stopped */
  }
  if (n && !emit_batch(p, batch, n, batch[n - 1].src)) return;
  publish(p, _hg_node_count(c), 1);
}

/* Capturing thread: makes consumed ring space (edges below tail) and read
 * token slots (nodes below ntail) visible to the helper. */
static void consumed(struct pipeline *p, uint32_t tail, uint32_t ntail) {
  __atomic_store_n(&p->tail, tail, __ATOMIC_SEQ_CST);
  __atomic_store_n(&p->ntail, ntail, __ATOMIC_SEQ_CST);
  __atomic_store_n(&p->mseq, p->mseq + 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->helper_sleeps, __ATOMIC_SEQ_CST)) _hg_plat_wake(&p->mseq);
}

/* Capturing thread, out of work at node i (and having told the helper
 * so: ntail = i): waits until the helper is well ahead — a quarter of the
 * ring published past `tail`, LAG more nodes done (with token slots at most
 * TOKS - TOKS / 4: a helper waiting for slot room stops more than that
 * ahead of ntail, wait_room), or all of them — so that when
 * the two share a core (a busy machine, the app's own threads in fork mode)
 * each hand-off carries a lot of work instead of costing a time slice per
 * batch. */
static void wait_work(struct pipeline *p, uint32_t tail, uint32_t i, uint32_t total) {
  uint32_t lag = p->toks && TOKS - TOKS / 4 < LAG ? TOKS - TOKS / 4 : LAG;
  uint32_t want = total - i > lag ? i + lag : total;
  for (uint32_t spin = 0;; spin++) {
    uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->head, __ATOMIC_ACQUIRE) - tail >= RING / 4 ||
        __atomic_load_n(&p->done_nodes, __ATOMIC_ACQUIRE) >= want)
      return;
    if (!backoff(spin)) continue;
    __atomic_store_n(&p->main_sleeps, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->seq, __ATOMIC_SEQ_CST) == seq) _hg_plat_wait(&p->seq, seq);
    __atomic_store_n(&p->main_sleeps, 0, __ATOMIC_SEQ_CST);
  }
}

/* Capturing thread: node i's class from its token slot (the helper has
 * written it: an edge of node >= i or done > i has been seen); 0 without
 * classifiers; *which, *token: the token's. */
static inline uint32_t piped_class(struct hg_cap *c, const struct pipeline *p, uint32_t i,
                                   uint32_t *which, uint32_t *token) {
  *which = *token = 0;
  if (!p->toks) return 0;
  struct tok t = p->toks[i % TOKS];
  if (!t.token || t.which >= c->nclassifiers) return 0;
  *which = t.which;
  *token = t.token;
  return class_of(c, t.which, t.token);
}

static int scan_nodes_piped(struct hg_cap *c, struct pipeline *p) {
  size_t nseg = _hg_vec_len(&c->segments);
  int rc = 0;
  uint32_t tail = 0, told = 0, ntold = 0, head = 0, done = 0; /* head, done: last read */
  const uint32_t total = _hg_node_count(c);
  for (size_t k = 0; k < nseg && !rc; k++) {
    const struct hg_segment *s = _hg_vec_at(&c->segments, k);
    uint32_t end = s->first + s->count;
    for (uint32_t i = s->first; i < end && !rc; i++) {
      uint64_t a = _hg_node_addr(c, s, i), z = _hg_node_size(c, i);
      uint32_t cls = 0, which, token;
      struct namer *nm = NULL; /* set once the node is written */
      int written = 0;
      if (!p->toks) { /* no classifiers: written at once */
        cls = piped_class(c, p, i, &which, &token);
        if ((rc = hg_writer_node(c->w, a, z, cls, s->flags, s->heap_id))) break;
        nm = naming_of(c, cls, which, token);
        written = 1;
      }
      for (;;) { /* node i's edges, as the helper publishes them */
        for (; tail != head; tail++) {
          const struct redge *e = &p->ring[tail % RING];
          if (e->src != i) break; /* a later node's */
          __builtin_prefetch(&p->ring[(tail + 64) % RING]); /* written on the other core */
          if (!written) {
            cls = piped_class(c, p, i, &which, &token);
            if ((rc = hg_writer_node(c->w, a, z, cls, s->flags, s->heap_id))) break;
            nm = naming_of(c, cls, which, token);
            written = 1;
          }
          uint32_t field, off = e->off & ~7u, kind;
          int at_start = (e->off & AT_START) != 0;
          if (nm) { /* resolved_kind()'s rule, the edge token's answer kept per word */
            kind = named_kind(c, nm, off, &field);
            if (kind == HG_EDGE_CONSERVATIVE && !at_start) kind = HG_EDGE_INTERIOR;
          } else {
            kind = resolved_kind(c, 0, 0, at_start, &field);
          }
          if ((rc = hg_writer_edge(c->w, i, off, e->val, kind, field))) break;
          c->edges++;
        }
        /* done when a later node's edge follows, or the helper is past i
         * (head is always read after done, so it covers all of i's) */
        if (rc || tail != head || done > i) break;
        done = __atomic_load_n(&p->done_nodes, __ATOMIC_ACQUIRE);
        head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
        if (tail != head || done > i) continue;
        consumed(p, tail, i);
        told = tail;
        ntold = i;
        wait_work(p, tail, i, total);
        done = __atomic_load_n(&p->done_nodes, __ATOMIC_ACQUIRE);
        head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
      }
      if (!rc && !written) { /* no edges: no naming either */
        cls = piped_class(c, p, i, &which, &token);
        rc = hg_writer_node(c->w, a, z, cls, s->flags, s->heap_id);
      }
      if (tail - told >= RING / 8 || i + 1 - ntold >= TOKS / 8) { /* publish in steps */
        consumed(p, tail, i + 1);
        told = tail;
        ntold = i + 1;
      }
    }
  }
  consumed(p, tail, total);
  return rc;
}

/* Nodes and their edges: pipelined when a helper thread is available,
 * else on this thread alone. Same output either way. */
int _hg_scan_nodes(struct hg_cap *c) {
  if (_hg_node_count(c) == 0) return 0;
  memset(&memo, 0, sizeof memo);
  memset(namers, 0, sizeof namers);
  if (!_hg_plat_helper_available(c)) return scan_nodes_alone(c); /* no ring needed */
  if (!c->ring.base && _hg_vec_init(&c->scratch, &c->ring, sizeof(struct redge), RING))
    return scan_nodes_alone(c);
  if (!c->ring.used && !_hg_vec_push(&c->ring, RING)) return scan_nodes_alone(c);
  int identify = c->nclassifiers != 0; /* token slots, when the helper identifies */
  if (identify && !c->toks.base && _hg_vec_init(&c->scratch, &c->toks, sizeof(struct tok), TOKS))
    return scan_nodes_alone(c);
  if (identify && !c->toks.used && !_hg_vec_push(&c->toks, TOKS)) return scan_nodes_alone(c);
  struct pipeline *p = &pl;
  memset(p, 0, sizeof *p);
  p->c = c;
  p->ring = (struct redge *)c->ring.base;
  p->toks = identify ? (struct tok *)c->toks.base : NULL;
  if (_hg_plat_helper_start(c, resolver, p) != 0) return scan_nodes_alone(c);
  c->helper_used = 1;
  int rc = scan_nodes_piped(c, p);
  /* stop the helper (on error it may still be running, or asleep waiting
   * for room): changing the word it sleeps on makes a wait that has not
   * started yet return at once */
  __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&p->mseq, p->mseq + 1, __ATOMIC_SEQ_CST);
  _hg_plat_wake(&p->mseq);
  _hg_plat_helper_join(c);
  return rc;
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

/* Scans [lo, hi) for roots of kind OTHER, less what a root range covers
 * (scanned under its own kind: an image's bss lies in an anonymous
 * mapping past the file's pages, and was once reported twice). */
static int scan_other(struct hg_cap *c, uint64_t lo, uint64_t hi) {
  size_t nr = _hg_vec_len(&c->ranges);
  while (lo < hi) {
    uint64_t cut = hi, skip = lo; /* scan [lo, cut), or jump to skip */
    for (size_t i = 0; i < nr; i++) {
      const struct hg_crange *g = _hg_vec_at(&c->ranges, i);
      if (g->hi <= lo || g->lo >= hi) continue;
      if (g->lo <= lo) {
        if (g->hi > skip) skip = g->hi;
      } else if (g->lo < cut) {
        cut = g->lo;
      }
    }
    if (skip > lo) {
      lo = skip;
      continue;
    }
    int rc = scan_range(c, lo, cut, HG_ROOT_OTHER, HG_NO_OWNER);
    if (rc) return rc;
    lo = cut;
  }
  return 0;
}

/* Anonymous private writable memory that is neither heap, stack, image nor
 * ours (the loader's own allocations, custom pools …) holds roots too, as
 * for valgrind; allocator segments inside such a region are skipped, and
 * so are root ranges (scan_other). */
static int scan_anon(struct hg_cap *c) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t nseg = _hg_vec_len(&c->segments), k = 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->kind != HG_RK_OTHER || r->rss == 0 || _hg_region_reservation(r) ||
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
    if ((rc = scan_range(c, g->lo, g->hi, g->kind, g->owner))) return rc;
  }
  return scan_anon(c);
}
