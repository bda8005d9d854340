/*
 * alloc_queue.c — the live-map update queue (alloc_queue.h): the ring of
 * sequenced slots, reserving a ticket, and draining in batches with the
 * map slots prefetched. No malloc, no lock but the drain lock.
 */
#include "capture/stacks/alloc_queue.h"

#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "heapgraph.h"

#define BATCH 16u     /* net updates whose map slots are prefetched together */
#define RUN HG_RQ_RUN  /* events taken and netted per address at a time    */
#define NET (2 * RUN)  /* slots of the per-run address table (power of 2)   */

/* One address's events within a run, netted (alloc_queue.h). */
struct hg_rq_net {
  uint64_t addr;
  uint64_t before; /* first event a remove: its size (the block there before the run) */
  uint64_t size;   /* the last event's size and, for an add, stack id       */
  uint32_t id;
  uint16_t gen;    /* run the entry belongs to (stale otherwise)            */
  uint8_t first, last; /* ops of the first and the last event                */
};
_Static_assert((NET & (NET - 1)) == 0, "NET is a power of 2");
_Static_assert(RUN <= 65535, "run positions fit 16 bits");

static uint64_t drain(struct hg_rq *q, struct hg_rec *r, uint64_t max, int pausable);

int _hg_rq_init(struct hg_rq *q, struct hg_rec *r, unsigned order) {
  memset(q, 0, sizeof *q);
  uint64_t n = 1ull << order, ring = n * sizeof(struct hg_rq_slot);
  uint64_t bytes = ring + NET * sizeof(struct hg_rq_net) + RUN * sizeof(uint16_t);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return HG_ENOMEM;
  if (_hg_rec_reserve(r, bytes)) {
    munmap(p, bytes);
    return HG_ENOMEM;
  }
  _hg_rec_own_add(p, bytes);
  q->slots = p;
  q->net = (struct hg_rq_net *)((char *)p + ring);
  q->order = (uint16_t *)(q->net + NET);
  q->mask = n - 1;
  for (uint64_t i = 0; i < n; i++) q->slots[i].seq = i;
  return 0;
}

uint64_t _hg_rq_reserve(struct hg_rq *q, struct hg_rec *r) {
  uint64_t t = __atomic_fetch_add(&q->head, 1, __ATOMIC_RELAXED);
  struct hg_rq_slot *s = &q->slots[t & q->mask];
  while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != t) {
    /* the ring is full: help instead of waiting for the recorder's thread,
     * even during a capture's pause (the capturing thread's own allocations
     * may be the ones waiting; a thread caught draining is retried) */
    if (drain(q, r, q->mask + 1, 0)) __atomic_fetch_add(&q->self_drains, 1, __ATOMIC_RELAXED);
    else sched_yield(); /* another thread drains, or an earlier ticket is being filled */
  }
  return t;
}

/* Notes event s of the run gen in the address table (a new address goes to
 * q->order, in the order first seen). */
static inline void note(struct hg_rq *q, const struct hg_rq_slot *s, uint16_t gen, uint32_t *nn) {
  unsigned op = (unsigned)(s->addr & 15);
  if (op != HG_RQ_ADD && op != HG_RQ_REMOVE) return;
  uint64_t a = s->addr & ~(uint64_t)15;
  uint32_t h = (uint32_t)(((a >> 4) * 0x9e3779b97f4a7c15ull) >> 40) & (NET - 1);
  struct hg_rq_net *e;
  for (;; h = (h + 1) & (NET - 1)) { /* at most RUN of NET slots in use: ends */
    e = &q->net[h];
    if (e->gen != gen) {
      *e = (struct hg_rq_net){a, op == HG_RQ_REMOVE ? s->size : 0, 0, 0, gen, (uint8_t)op, 0};
      q->order[(*nn)++] = (uint16_t)h;
      break;
    }
    if (e->addr == a) break;
  }
  e->last = (uint8_t)op;
  e->size = s->size;
  e->id = (uint32_t)s->id;
}

/* The net effect of an address's events is that of its last one: the
 * block there before the run (if any) is gone, and after a last add the
 * new one is there. An add whose block is freed within the run never
 * reaches the map (a stale entry of a free we missed then waits for the
 * address's next event). */
static inline void apply(struct hg_rec *r, const struct hg_rq_net *e) {
  if (e->last == HG_RQ_ADD)
    _hg_rec_set_single(r, (uintptr_t)e->addr, e->size, e->id, e->first == HG_RQ_REMOVE ? e->before : e->size);
  else if (e->first == HG_RQ_REMOVE)
    _hg_rec_remove_single(r, (uintptr_t)e->addr, e->before);
}

/* Applies up to max events from the tail, the caller holding the lock, a
 * run at a time: the run's events netted per address, then the net updates
 * applied with their map slots prefetched a batch ahead. A slot not
 * published yet ends the run, or with orphans set (a fork child: its owner
 * does not exist there) counts as a no-op. */
static uint64_t drain_locked(struct hg_rq *q, struct hg_rec *r, uint64_t max, int orphans, int pausable) {
  uint64_t c = q->tail, done = 0, head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  while (done < max) {
    /* a capture waits for the lock: let it go within one run */
    if (pausable && __atomic_load_n(&q->pause, __ATOMIC_ACQUIRE)) break;
    uint16_t gen = ++q->gen;
    if (!gen) { /* wrapped: no entry may look current */
      for (uint32_t i = 0; i < NET; i++) q->net[i].gen = 0;
      gen = q->gen = 1;
    }
    uint32_t k = 0, nn = 0;
    while (k < RUN && done + k < max) {
      const struct hg_rq_slot *s = &q->slots[(c + k) & q->mask];
      if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == c + k + 1) note(q, s, gen, &nn);
      else if (!(orphans && c + k < head)) break;
      k++;
    }
    if (!k) break;
    for (uint32_t i = 0; i < nn; i++) { /* slots prefetched a batch or two ahead */
      if (i % BATCH == 0)
        for (uint32_t j = i ? i + BATCH : 0; j < i + 2 * BATCH && j < nn; j++)
          _hg_rec_prefetch(r, (uintptr_t)q->net[q->order[j]].addr);
      apply(r, &q->net[q->order[i]]);
    }
    for (uint32_t i = 0; i < k; i++) /* free for the ticket one lap later */
      __atomic_store_n(&q->slots[(c + i) & q->mask].seq, c + i + q->mask + 1, __ATOMIC_RELEASE);
    c += k;
    done += k;
    __atomic_store_n(&q->tail, c, __ATOMIC_RELEASE);
  }
  return done;
}

static uint64_t drain(struct hg_rq *q, struct hg_rec *r, uint64_t max, int pausable) {
  if (__atomic_exchange_n(&q->lock, 1, __ATOMIC_ACQUIRE)) return 0;
  uint64_t done = drain_locked(q, r, max, 0, pausable);
  __atomic_store_n(&q->lock, 0, __ATOMIC_RELEASE);
  return done;
}

uint64_t _hg_rq_drain(struct hg_rq *q, struct hg_rec *r, uint64_t max) {
  if (__atomic_load_n(&q->pause, __ATOMIC_ACQUIRE)) return 0;
  return drain(q, r, max, 1);
}

uint64_t _hg_rq_flush(struct hg_rq *q, struct hg_rec *r) { return drain(q, r, UINT64_MAX, 0); }

void _hg_rq_after_fork_child(struct hg_rq *q, struct hg_rec *r) {
  drain_locked(q, r, UINT64_MAX, 1, 0);
}
