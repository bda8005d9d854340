/*
 * scan_pipe.c — the pipelined node scan: a helper thread reads every word,
 * identifies each block (when there are classifiers) and resolves the
 * edges; the capturing thread registers the classes, names the edges, and
 * writes the nodes and the edges in order — the same output as the
 * one-thread scan (scan_nodes.c). They meet in two fixed-size tables from
 * scratch: a ring of resolved edges and a ring of identify() tokens, one
 * slot per node, with the counters in c->scan.pipe (scan_state.h).
 *
 * The work is shared dynamically, in chunks of HG_SCAN_CHUNK nodes: the
 * helper takes the next chunk nobody has taken; the capturing thread, at
 * each chunk, takes it itself when the helper has not (and scans it alone,
 * scan_nodes.c), and when the helper's chunk has nothing ready for it, it
 * steals the rest of that chunk: one compare-and-swap on the helper's
 * progress word, which the helper publishes with a compare-and-swap too —
 * the one that fails tells it to drop what it has not published and go on
 * with the next free chunk. A helper stalled by a busy core therefore never
 * holds the capture back by more than a few polls.
 *
 * The helper runs only code that calls nothing but _hg_plat_wait/_wake/
 * _yield (platform.h): no libc, no malloc. Never calls malloc on either
 * thread. Compiled a second time with a 64-entry ring (HG_SCAN_RING, see
 * mk/capture.mk) so that tests reach the full-ring and wait paths.
 */
#include "capture/stacks/alloc_record.h"
#include "capture/atomic.h"
#include "capture/scan.h"

/* ---- sizes and the thresholds the two threads wait on ---- */

#ifndef HG_SCAN_RING
#define HG_SCAN_RING (1u << 16)
#endif
#define RING HG_SCAN_RING /* ring entries in flight (12 bytes each)       */
#define TOKS (RING / 4)   /* token slots (8 bytes each): nodes the helper
                             may be ahead of the capturing thread         */
#define SPINS 64          /* polls before giving the core away            */
#ifndef HG_SCAN_CHUNK
#define HG_SCAN_CHUNK (RING >= 4096 ? 4096u : 16u) /* nodes a thread takes at once */
#endif
#define CHUNK HG_SCAN_CHUNK
#ifndef HG_SCAN_STEAL
#define HG_SCAN_STEAL 1   /* 0 (a test build): the capturing thread never takes
                             a chunk, the helper does all (the plain pipeline) */
#endif
#define STEAL_SPINS 16    /* polls without news before the capturing thread steals */
#define STOLEN UINT32_MAX /* prog's node after a steal, until the helper re-publishes */
#define YIELDS 2000       /* sched_yield()s (~1 ms when a core is shared) before sleeping */
#define LAG 4096u         /* nodes the helper gets ahead before a waiting
                             capturing thread resumes                      */

/* The helper stops when the ring is full or the token slot of its next
 * node is still to be read (RING edges / TOKS nodes ahead of the capturing
 * thread) and goes on once it is at most *_RESUME ahead (wait_room). A
 * capturing thread out of work waits until the helper is RING_WANT edges
 * or NODES_WANT nodes ahead (or done; wait_work). It must never wait for
 * more than a stopped helper is ahead, or both wait for ever: */
#define RING_RESUME (RING - RING / 4)
#define TOKS_RESUME (TOKS - TOKS / 4)
#define RING_WANT (RING / 4)
#define NODES_WANT LAG                                           /* without token slots */
#define NODES_WANT_TOKS (LAG < TOKS_RESUME ? LAG : TOKS_RESUME) /* with them          */
_Static_assert(RING_WANT <= RING_RESUME && RING_RESUME < RING,
               "an idle capturing thread waits for no more edges than a stopped helper holds");
_Static_assert(NODES_WANT_TOKS <= TOKS_RESUME && TOKS_RESUME < TOKS,
               "an idle capturing thread waits for no more nodes than a stopped helper is ahead");
/* The capturing thread tells the helper what it consumed in steps of at
 * most this much (and whenever it waits). */
#define RING_STEP (RING / 8)
#define TOKS_STEP (TOKS / 8)

/* A ring entry: an edge of node src at byte offset off (| AT_START when it
 * points at the target's first byte) to node val. */
struct hg_redge {
  uint32_t src, off, val;
};
#define AT_START 2u

/* A token slot: what identify() gave node i, in slot i % TOKS (token 0:
 * none). Written before any of the node's edges is published. */
struct hg_tok {
  uint32_t token, which;
};

/* ---- waiting ---- */

/* One step of waiting: a few polls, then giving the core away (the other
 * thread may be waiting for it); returns 1 when it is time to sleep. */
static int backoff(uint32_t spin) {
  if (spin < SPINS) {
    _hg_cpu_relax();
    return 0;
  }
  if (spin < SPINS + YIELDS) {
    _hg_plat_yield();
    return 0;
  }
  return 1;
}

/* ---- the progress word ---- */

static inline uint64_t prog_pack(uint32_t head, uint32_t node) { return (uint64_t)head << 32 | node; }
static inline uint32_t prog_head(uint64_t v) { return (uint32_t)(v >> 32); }
static inline uint32_t prog_node(uint64_t v) { return (uint32_t)v; }

/* ---- the helper ---- */

/* Makes the edges written so far visible, and that nodes below `done` are
 * complete, then wakes the capturing thread if it sleeps. 0 when the capturing
 * thread stole the chunk: what was not published is dropped (the write
 * position goes back to the published edges). */
static inline int publish(struct hg_pipe *p, uint32_t done, int force) {
  uint32_t bound = p->whead;
  uint64_t want = prog_pack(bound, done), exp = p->pub;
  if (!__atomic_compare_exchange_n(&p->prog, &exp, want, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
    p->pub = exp; /* (published edges, STOLEN) */
    p->whead = prog_head(exp);
    return 0;
  }
  p->pub = want;
  _hg_atomic_store(&p->seq, p->seq + 1);
  /* a sleeping capturing thread is woken for a good amount of work only:
   * on a shared core every wake-up is a context switch */
  if (_hg_atomic_load(&p->main_sleeps) &&
      (force || bound - p->woke_at >= RING_WANT || done - p->woke_done >= NODES_WANT)) {
    p->woke_at = bound;
    p->woke_done = done;
    _hg_plat_wake(&p->seq);
  }
  return 1;
}

/* Publishes what it has (nodes below `done` are complete), then waits
 * until the capturing thread has made room — in the ring (ring), or for
 * node `node`'s token slot (node != UINT32_MAX) — down to the *_RESUME
 * marks; 0 when asked to stop or stolen from. */
static int wait_room(struct hg_pipe *p, uint32_t done, int ring, uint32_t node) {
  if (!publish(p, done, 1)) return 0; /* the capturing thread may be waiting for these */
  for (uint32_t spin = 0;; spin++) {
    if (_hg_atomic_load_acquire(&p->stop)) return 0;
    if (prog_node(__atomic_load_n(&p->prog, __ATOMIC_ACQUIRE)) == STOLEN) return publish(p, done, 0);
    uint32_t mseq = _hg_atomic_load(&p->mseq);
    p->tail_seen = _hg_atomic_load(&p->tail);
    p->ntail_seen = _hg_atomic_load(&p->ntail);
    if ((!ring || p->whead - p->tail_seen <= RING_RESUME) &&
        (node == UINT32_MAX || node - p->ntail_seen <= TOKS_RESUME))
      return 1;
    if (!backoff(spin)) continue;
    _hg_atomic_store(&p->helper_sleeps, 1);
    if (_hg_atomic_load(&p->mseq) == mseq && !p->stop) _hg_plat_wait(&p->mseq, mseq);
    _hg_atomic_store(&p->helper_sleeps, 0);
    spin = 0;
  }
}

/* Resolves a batch and appends its edges; 0 when asked to stop or stolen
 * from. `done`: nodes before it are complete once the batch is in. */
static int emit_batch(struct hg_pipe *p, struct hg_cand *b, size_t n, uint32_t done) {
  if (_hg_atomic_load_acquire(&p->stop)) return 0; /* the capturing thread failed */
  _hg_scan_resolve(p->c, b, n);
  for (size_t k = 0; k < n; k++) {
    if (b[k].t == UINT32_MAX) continue;
    if (p->whead - p->tail_seen >= RING) {
      p->tail_seen = _hg_atomic_load_acquire(&p->tail);
      if (p->whead - p->tail_seen >= RING && !wait_room(p, b[k].src, 1, UINT32_MAX)) return 0;
    }
    struct hg_redge *e = &p->ring[p->whead % RING];
    e->src = b[k].src;
    e->off = b[k].off | (b[k].known == 2 ? AT_START : 0);
    e->val = b[k].t;
    p->whead++;
  }
  return publish(p, done, 0);
}

static int emit_flush(void *ctx, struct hg_cand *b, size_t n, uint32_t node) {
  return emit_batch(ctx, b, n, node) ? 0 : 1; /* nodes before `node` are complete */
}

/* Nodes [from, to) into the ring; 0 when asked to stop or stolen from. */
HG_NO_ASAN static int helper_chunk(struct hg_pipe *p, uint32_t from, uint32_t to) {
  const struct hg_cap *c = p->c;
  struct hg_cand batch[HG_SCAN_BATCH];
  size_t n = 0;
  struct hg_blocks b;
  /* taken: also ends a steal's STOLEN mark (and wakes a capturing thread
   * that waits for that) */
  if (!publish(p, from, prog_node(p->pub) == STOLEN)) return 0;
  _hg_blocks_range(&b, c, from, to);
  while (_hg_blocks_next(&b)) {
    uint32_t i = b.node;
    if (p->toks) { /* node i's token, in its slot before any of its edges is out */
      if (i - p->ntail_seen >= TOKS) {
        p->ntail_seen = _hg_atomic_load_acquire(&p->ntail);
        if (i - p->ntail_seen >= TOKS) { /* the slot is still to be read */
          if (n && !emit_batch(p, batch, n, i)) return 0;
          n = 0;
          if (!wait_room(p, i, 0, i)) return 0;
        }
      }
      uint32_t which = 0, token = _hg_identify_block(c, 1, b.addr, b.size, &which);
      p->toks[i % TOKS] = (struct hg_tok){token, which};
    }
    if (_hg_add_words(c, i, b.addr, b.size, NULL, batch, &n, emit_flush, p)) return 0;
  }
  if (n) return emit_batch(p, batch, n, to);
  return publish(p, to, 1);
}

HG_NO_ASAN static void resolver(void *arg) {
  struct hg_pipe *p = arg;
  const uint32_t total = _hg_node_count(p->c);
  for (;;) {
    uint32_t k = __atomic_fetch_add(&p->next_chunk, 1, __ATOMIC_ACQ_REL);
    if (k >= (total + CHUNK - 1) / CHUNK) break;
    uint32_t from = k * CHUNK, to = total - from > CHUNK ? from + CHUNK : total;
    if (!helper_chunk(p, from, to) && _hg_atomic_load_acquire(&p->stop)) return;
    /* stolen from: on with the next free chunk */
  }
  publish(p, total, 1);
}

/* ---- the capturing thread ---- */

/* Makes consumed ring space (edges below tail) and read token slots (nodes
 * below ntail) visible to the helper. */
static inline void consumed(struct hg_pipe *p, uint32_t tail, uint32_t ntail) {
  _hg_atomic_store(&p->tail, tail);
  _hg_atomic_store(&p->ntail, ntail);
  _hg_atomic_store(&p->mseq, p->mseq + 1);
  if (_hg_atomic_load(&p->helper_sleeps)) _hg_plat_wake(&p->mseq);
}

/* Node i, once: its class from its token slot (the helper has written it:
 * an edge of node >= i or done > i has been seen; 0 without classifiers),
 * written to the snapshot; *nm: how its edges are named (NULL: not; nm
 * NULL for a node without edges: no naming either). */
static inline __attribute__((always_inline)) int write_node(struct hg_cap *c,
                                                           const struct hg_pipe *p,
                                                           const struct hg_segment *s, uint32_t i,
                                                           uint64_t a, uint64_t z,
                                                           struct hg_namer **nm) {
  uint32_t cls = 0, which = 0, token = 0;
  if (p->toks) {
    struct hg_tok t = p->toks[i % TOKS];
    if (t.token && t.which < c->nclassifiers) {
      which = t.which;
      token = t.token;
      cls = _hg_class_of(c, which, token);
      _hg_count_block(c, which, token, a, z);
    }
  }
  int rc = hg_writer_node(c->w, a, z, cls, s->flags, s->heap_id);
  if (nm) *nm = rc ? NULL : _hg_namer_of(c, cls, which, token);
  return rc;
}

/* The kind (and field) of an edge at byte off of a block nm names (NULL:
 * unnamed): _hg_resolved_kind()'s rule, with the namer's kept answers. */
static inline uint32_t piped_kind(struct hg_cap *c, struct hg_namer *nm, uint32_t off,
                                  int at_start, uint32_t *field) {
  uint32_t kind = HG_EDGE_CONSERVATIVE;
  *field = 0;
  if (nm) kind = _hg_named_kind(c, nm, off, field);
  if (kind == HG_EDGE_CONSERVATIVE && !at_start) kind = HG_EDGE_INTERIOR;
  return kind;
}

/* The capturing thread's position: ring edges consumed (tail), and how far
 * it has told the helper (told, ntold); prog as last read. */
struct reader {
  uint32_t tail, told, ntold;
  uint64_t seen;
};

/* Nothing ready for node i (of the helper's chunk ending at `to`): steals
 * the rest of the chunk when the helper has published nothing new for a
 * few polls (1: *stolen set), else waits a little for news (0). The moment
 * is also used for allocation-stack ids (a few µs). */
static int no_news(struct hg_cap *c, struct hg_pipe *p, struct reader *r, uint32_t i,
                   uint32_t *spin, int *stolen) {
  (void)i; /* nothing of node i is out: the helper has published nothing of its chunk from i on */
  int can_steal = HG_SCAN_STEAL && prog_node(r->seen) != STOLEN;
  if (can_steal && *spin >= STEAL_SPINS) {
    uint64_t exp = r->seen;
    if (__atomic_compare_exchange_n(&p->prog, &exp, prog_pack(prog_head(exp), STOLEN), 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      *stolen = 1;
      return 1;
    }
    r->seen = exp; /* news after all */
    return 0;
  }
  if (_hg_stacks_ahead(c, 256)) return 0;
  if (can_steal) {
    ++*spin;
    _hg_cpu_relax();
    return 0;
  }
  /* the helper is between a steal and its next chunk (or, built without
   * stealing, simply behind): give it the core, then sleep until it
   * publishes (a good amount of work, or its chunk's end) */
  if (!backoff((*spin)++)) return 0;
  uint32_t seq = _hg_atomic_load(&p->seq);
  _hg_atomic_store(&p->main_sleeps, 1);
  if (__atomic_load_n(&p->prog, __ATOMIC_ACQUIRE) == r->seen && _hg_atomic_load(&p->seq) == seq)
    _hg_plat_wait(&p->seq, seq);
  _hg_atomic_store(&p->main_sleeps, 0);
  *spin = STEAL_SPINS;
  return 0;
}

/* The helper's chunk [from, to): nodes and their edges as it publishes
 * them, or the rest of the chunk alone once stolen. */
static int read_chunk(struct hg_cap *c, struct hg_pipe *p, struct reader *r, uint32_t from,
                      uint32_t to) {
  const struct hg_segment *segs = (const struct hg_segment *)c->segments.base;
  size_t k = 0, nseg = _hg_vec_len(&c->segments);
  while (k + 1 < nseg && segs[k + 1].first <= from) k++;
  int rc = 0;
  uint32_t head = prog_head(r->seen), done = prog_node(r->seen);
  if (done == STOLEN) done = 0;
  for (uint32_t i = from; i < to && !rc; i++) {
    while (i >= segs[k].first + segs[k].count) k++;
    const struct hg_segment *s = &segs[k];
    uint64_t a = _hg_node_addr(c, s, i), z = _hg_node_size(c, i);
    struct hg_namer *nm = NULL;
    /* without token slots (no classifiers) the node is written at once,
     * else when its slot is known to be written */
    int written = !p->toks;
    uint32_t next_off = 0; /* the byte after node i's last edge read */
    if (written && (rc = write_node(c, p, s, i, a, z, &nm))) break;
    for (uint32_t spin = 0;;) { /* node i's edges, as the helper publishes them */
      for (; r->tail != head; r->tail++) {
        const struct hg_redge *e = &p->ring[r->tail % RING];
        if (e->src != i) break; /* a later node's */
        __builtin_prefetch(&p->ring[(r->tail + 64) % RING]); /* written on the other core */
        if (!written && (rc = write_node(c, p, s, i, a, z, &nm))) break;
        written = 1;
        uint32_t field, off = e->off & ~7u;
        uint32_t kind = piped_kind(c, nm, off, (e->off & AT_START) != 0, &field);
        if ((rc = hg_writer_edge(c->w, i, off, e->val, kind, field))) break;
        c->edges++;
        next_off = off + 8;
      }
      /* done when a later node's edge follows, or the helper is past i
       * (head is read with done, so it covers all of i's) */
      if (rc || r->tail != head || done > i) break;
      r->seen = __atomic_load_n(&p->prog, __ATOMIC_ACQUIRE);
      head = prog_head(r->seen);
      done = prog_node(r->seen) == STOLEN ? 0 : prog_node(r->seen);
      if (r->tail != head || done > i) continue;
      if (r->tail != r->told || r->ntold != i) { /* tell the helper where we are (it may wait for room) */
        consumed(p, r->tail, i);
        r->told = r->tail;
        r->ntold = i;
      }
      int stolen = 0;
      if (no_news(c, p, r, i, &spin, &stolen) && stolen) {
        /* the rest of the chunk is ours: node i from the word after its
         * last edge read (the helper's published batches covered every
         * word before it; a word after it that resolved to nothing just
         * resolves to nothing again) */
        p->steals++;
        rc = _hg_scan_range_alone(c, i, to, written, next_off);
        consumed(p, r->tail, to);
        r->told = r->tail;
        r->ntold = to;
        return rc;
      }
      head = prog_head(r->seen);
      done = prog_node(r->seen) == STOLEN ? 0 : prog_node(r->seen);
    }
    if (!rc && !written) rc = write_node(c, p, s, i, a, z, NULL); /* no edges */
    if (r->tail - r->told >= RING_STEP || i + 1 - r->ntold >= TOKS_STEP) { /* publish in steps */
      consumed(p, r->tail, i + 1);
      r->told = r->tail;
      r->ntold = i + 1;
    }
  }
  return rc;
}

static int scan_nodes_piped(struct hg_cap *c, struct hg_pipe *p) {
  const uint32_t total = _hg_node_count(c), nchunks = (total + CHUNK - 1) / CHUNK;
  struct reader r = {0};
  int rc = 0;
  for (uint32_t k = 0; k < nchunks && !rc; k++) {
    uint32_t from = k * CHUNK, to = total - from > CHUNK ? from + CHUNK : total;
    uint32_t exp = k;
    if (HG_SCAN_STEAL && __atomic_compare_exchange_n(&p->next_chunk, &exp, k + 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      p->own_chunks++; /* nobody had it: this thread scans it */
      rc = _hg_scan_range_alone(c, from, to, 0, 0);
      consumed(p, r.tail, to);
      r.told = r.tail;
      r.ntold = to;
      continue;
    }
    rc = read_chunk(c, p, &r, from, to); /* the helper's */
  }
  consumed(p, r.tail, total);
  return rc;
}

/* ---- set-up ---- */

int _hg_scan_piped(struct hg_cap *c, int *rc) {
  if (!_hg_plat_helper_available(c)) return 0; /* no ring needed */
  if (!c->ring.base && _hg_vec_init(&c->scratch, &c->ring, sizeof(struct hg_redge), RING)) return 0;
  if (!c->ring.used && !_hg_vec_push(&c->ring, RING)) return 0;
  int identify = c->nclassifiers != 0; /* token slots, when the helper identifies */
  if (identify && !c->toks.base && _hg_vec_init(&c->scratch, &c->toks, sizeof(struct hg_tok), TOKS))
    return 0;
  if (identify && !c->toks.used && !_hg_vec_push(&c->toks, TOKS)) return 0;
  struct hg_pipe *p = &c->scan.pipe;
  *p = (struct hg_pipe){0};
  p->c = c;
  p->ring = (struct hg_redge *)c->ring.base;
  p->toks = identify ? (struct hg_tok *)c->toks.base : NULL;
  if (_hg_plat_helper_start(c, resolver, p) != 0) return 0;
  c->helper_used = 1;
  *rc = scan_nodes_piped(c, p);
  /* stop the helper (on error it may still be running, or asleep waiting
   * for room): changing the word it sleeps on makes a wait that has not
   * started yet return at once */
  _hg_atomic_store(&p->stop, 1);
  _hg_atomic_store(&p->mseq, p->mseq + 1);
  _hg_plat_wake(&p->mseq);
  _hg_plat_helper_join(c);
#ifdef HG_SCAN_DEBUG
  fprintf(stderr, "scan: %u nodes, %u chunks taken by the capturing thread, %u steals\n",
          _hg_node_count(c), p->own_chunks, p->steals);
#endif
  return 1;
}
