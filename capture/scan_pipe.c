/*
 * scan_pipe.c — the pipelined node scan: a helper thread reads every word,
 * identifies each block (when there are classifiers) and resolves the
 * edges; the capturing thread registers the classes, names the edges, and
 * writes the nodes and the edges in order — the same output as the
 * one-thread scan (scan_nodes.c). They meet in two fixed-size tables from
 * scratch: a ring of resolved edges and a ring of identify() tokens, one
 * slot per node, with the counters in c->scan.pipe (scan_state.h).
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

/* ---- the helper ---- */

/* Makes the edges written so far (and node progress) visible, then wakes
 * the capturing thread if it sleeps. */
static inline void publish(struct hg_pipe *p, uint32_t done, int force) {
  _hg_atomic_store_release(&p->head, p->whead);
  _hg_atomic_store_release(&p->done_nodes, done);
  _hg_atomic_store(&p->seq, p->seq + 1);
  /* a sleeping capturing thread is woken for a good amount of work only:
   * on a shared core every wake-up is a context switch */
  if (_hg_atomic_load(&p->main_sleeps) &&
      (force || p->whead - p->woke_at >= RING_WANT || done - p->woke_done >= NODES_WANT)) {
    p->woke_at = p->whead;
    p->woke_done = done;
    _hg_plat_wake(&p->seq);
  }
}

/* Publishes what it has (nodes below `done` are complete), then waits
 * until the capturing thread has made room — in the ring (ring), or for
 * node `node`'s token slot (node != UINT32_MAX) — down to the *_RESUME
 * marks; 0 when asked to stop. */
static int wait_room(struct hg_pipe *p, uint32_t done, int ring, uint32_t node) {
  publish(p, done, 1); /* the capturing thread may be waiting for these */
  for (uint32_t spin = 0;; spin++) {
    if (_hg_atomic_load_acquire(&p->stop)) return 0;
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

/* Resolves a batch and appends its edges; 0 when asked to stop. `done`:
 * nodes before it are complete once the batch is in. */
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
  publish(p, done, 0);
  return 1;
}

static int emit_flush(void *ctx, struct hg_cand *b, size_t n, uint32_t node) {
  return emit_batch(ctx, b, n, node) ? 0 : 1; /* nodes before `node` are complete */
}

HG_NO_ASAN static void resolver(void *arg) {
  struct hg_pipe *p = arg;
  const struct hg_cap *c = p->c;
  struct hg_cand batch[HG_SCAN_BATCH];
  size_t n = 0;
  struct hg_blocks b;
  _hg_blocks_init(&b, c);
  while (_hg_blocks_next(&b)) {
    uint32_t i = b.node;
    if (p->toks) { /* node i's token, in its slot before any of its edges is out */
      if (i - p->ntail_seen >= TOKS) {
        p->ntail_seen = _hg_atomic_load_acquire(&p->ntail);
        if (i - p->ntail_seen >= TOKS) { /* the slot is still to be read */
          if (n && !emit_batch(p, batch, n, i)) return;
          n = 0;
          if (!wait_room(p, i, 0, i)) return;
        }
      }
      uint32_t which = 0, token = _hg_identify_block(c, b.addr, b.size, &which);
      p->toks[i % TOKS] = (struct hg_tok){token, which};
    }
    if (_hg_add_words(c, i, b.addr, b.size, NULL, batch, &n, emit_flush, p)) return; /* stopped */
  }
  if (n && !emit_batch(p, batch, n, batch[n - 1].src)) return;
  publish(p, _hg_node_count(c), 1);
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

/* Out of work at node i (and having told the helper so: ntail = i): waits
 * until the helper is well ahead — RING_WANT edges published past `tail`,
 * NODES_WANT(_TOKS) more nodes done, or all of them — so that when the
 * two share a core (a busy machine, the app's own threads in fork mode)
 * each hand-off carries a lot of work instead of costing a time slice per
 * batch. */
static void wait_work(struct hg_cap *c, struct hg_pipe *p, uint32_t tail, uint32_t i, uint32_t total) {
  uint32_t lag = p->toks ? NODES_WANT_TOKS : NODES_WANT;
  uint32_t want = total - i > lag ? i + lag : total;
  for (uint32_t spin = 0;; spin++) {
    uint32_t seq = _hg_atomic_load(&p->seq);
    if (_hg_atomic_load_acquire(&p->head) - tail >= RING_WANT ||
        _hg_atomic_load_acquire(&p->done_nodes) >= want)
      return;
    /* the moment is used: allocation-stack ids for later (a few µs) */
    if (_hg_stacks_ahead(c, 256)) {
      spin = 0;
      continue;
    }
    if (!backoff(spin)) continue;
    _hg_atomic_store(&p->main_sleeps, 1);
    if (_hg_atomic_load(&p->seq) == seq) _hg_plat_wait(&p->seq, seq);
    _hg_atomic_store(&p->main_sleeps, 0);
  }
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

static int scan_nodes_piped(struct hg_cap *c, struct hg_pipe *p) {
  size_t nseg = _hg_vec_len(&c->segments);
  int rc = 0;
  uint32_t tail = 0, told = 0, ntold = 0, head = 0, done = 0; /* head, done: last read */
  const uint32_t total = _hg_node_count(c);
  for (size_t k = 0; k < nseg && !rc; k++) {
    const struct hg_segment *s = _hg_vec_at(&c->segments, k);
    uint32_t end = s->first + s->count;
    for (uint32_t i = s->first; i < end && !rc; i++) {
      uint64_t a = _hg_node_addr(c, s, i), z = _hg_node_size(c, i);
      struct hg_namer *nm = NULL;
      /* without token slots (no classifiers) the node is written at once,
       * else when its slot is known to be written */
      int written = !p->toks;
      if (written && (rc = write_node(c, p, s, i, a, z, &nm))) break;
      for (;;) { /* node i's edges, as the helper publishes them */
        for (; tail != head; tail++) {
          const struct hg_redge *e = &p->ring[tail % RING];
          if (e->src != i) break; /* a later node's */
          __builtin_prefetch(&p->ring[(tail + 64) % RING]); /* written on the other core */
          if (!written && (rc = write_node(c, p, s, i, a, z, &nm))) break;
          written = 1;
          uint32_t field, off = e->off & ~7u;
          uint32_t kind = piped_kind(c, nm, off, (e->off & AT_START) != 0, &field);
          if ((rc = hg_writer_edge(c->w, i, off, e->val, kind, field))) break;
          c->edges++;
        }
        /* done when a later node's edge follows, or the helper is past i
         * (head is always read after done, so it covers all of i's) */
        if (rc || tail != head || done > i) break;
        done = _hg_atomic_load_acquire(&p->done_nodes);
        head = _hg_atomic_load_acquire(&p->head);
        if (tail != head || done > i) continue;
        consumed(p, tail, i);
        told = tail;
        ntold = i;
        wait_work(c, p, tail, i, total);
        done = _hg_atomic_load_acquire(&p->done_nodes);
        head = _hg_atomic_load_acquire(&p->head);
      }
      if (!rc && !written) rc = write_node(c, p, s, i, a, z, NULL); /* no edges */
      if (tail - told >= RING_STEP || i + 1 - ntold >= TOKS_STEP) { /* publish in steps */
        consumed(p, tail, i + 1);
        told = tail;
        ntold = i + 1;
      }
    }
  }
  consumed(p, tail, total);
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
  return 1;
}
