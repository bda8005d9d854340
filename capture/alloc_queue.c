/*
 * alloc_queue.c — the live-map update queue (alloc_queue.h): the ring of
 * sequenced slots, reserving a ticket, and draining in batches with the
 * map slots prefetched. No malloc, no lock but the drain lock.
 */
#include "capture/alloc_queue.h"

#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "heapgraph.h"

#define BATCH 16u /* events whose map slots are prefetched together */

static uint64_t drain(struct hg_rq *q, struct hg_rec *r, uint64_t max, int pausable);

int _hg_rq_init(struct hg_rq *q, struct hg_rec *r, unsigned order) {
  memset(q, 0, sizeof *q);
  uint64_t n = 1ull << order, bytes = n * sizeof(struct hg_rq_slot);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return HG_ENOMEM;
  if (_hg_rec_reserve(r, bytes)) {
    munmap(p, bytes);
    return HG_ENOMEM;
  }
  q->slots = p;
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

static void apply(struct hg_rec *r, const struct hg_rq_slot *s) {
  uintptr_t addr = (uintptr_t)(s->addr & ~(uint64_t)15);
  switch (s->addr & 15) {
  case HG_RQ_ADD: _hg_rec_add(r, addr, s->size, (uint32_t)s->id); break;
  case HG_RQ_REMOVE: _hg_rec_remove(r, addr, s->size); break;
  default: break;
  }
}

/* Applies up to max events from the tail, the caller holding the lock. A
 * slot not published yet ends the run, or with orphans set (a fork child:
 * its owner does not exist there) counts as a no-op. */
static uint64_t drain_locked(struct hg_rq *q, struct hg_rec *r, uint64_t max, int orphans, int pausable) {
  uint64_t c = q->tail, done = 0, head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  while (done < max) {
    /* a capture waits for the lock: let it go within one batch */
    if (pausable && __atomic_load_n(&q->pause, __ATOMIC_ACQUIRE)) break;
    /* the published run from c, at most one batch */
    uint32_t k = 0;
    int nop[BATCH];
    while (k < BATCH && done + k < max) {
      const struct hg_rq_slot *s = &q->slots[(c + k) & q->mask];
      uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
      nop[k] = seq != c + k + 1;
      if (nop[k] && !(orphans && c + k < head)) break;
      if (!nop[k]) _hg_rec_prefetch(r, (uintptr_t)(s->addr & ~(uint64_t)15));
      k++;
    }
    if (!k) break;
    for (uint32_t i = 0; i < k; i++) {
      struct hg_rq_slot *s = &q->slots[(c + i) & q->mask];
      if (!nop[i]) apply(r, s);
      /* free for the ticket one lap later */
      __atomic_store_n(&s->seq, c + i + q->mask + 1, __ATOMIC_RELEASE);
    }
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
