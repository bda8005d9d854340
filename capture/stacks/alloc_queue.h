/*
 * alloc_queue.h — the live-map update queue of the allocation-stack recorder
 * (portable; no platform calls but mmap).
 *
 * In full tracking, every malloc and free would otherwise update the live
 * map (alloc_record.h) on the allocating thread, and each update is a cache
 * miss: the map is far bigger than any cache and the block freed is usually
 * not one touched lately. The queue takes those updates off the allocating
 * thread: producers append (add or remove, address, size, stack id) to one
 * ring in ticket order, and whoever drains it (the recorder's own thread, a
 * producer that finds the ring full, or a capture) applies the events in
 * that order, a batch at a time with the map slots of the whole batch
 * prefetched first, so the misses overlap instead of queueing up.
 *
 * Order is what makes this correct: a block's remove is queued before the
 * block goes back to the allocator (free, or realloc, which reserves its
 * ticket before calling the allocator and fills it after), and its next add
 * after the allocator handed it out again, so the events of one address are
 * applied in the order they happened, whatever thread made them.
 *
 * Events are taken a run of HG_RQ_RUN at a time and netted per address
 * first: whatever happened to an address within the run, the block there
 * before it is gone if the run removed it, and the last add's block is
 * there after. A free reused by the next allocation of its size (the
 * allocator's per-thread caches) is then one map update instead of two,
 * and a block allocated and freed within the run none.
 *
 * The ring is a bounded multi-producer queue of sequenced slots (each slot
 * says which ticket it waits for and when it is published), 2^order slots of
 * 32 bytes. A producer never waits for the recorder's thread: when its slot
 * is still full it drains a batch itself. Draining holds one lock; a capture
 * only tries it (never waits): events it cannot apply stay queued.
 */
#ifndef HG_ALLOC_QUEUE_H
#define HG_ALLOC_QUEUE_H

#include <stdint.h>

#include "capture/stacks/alloc_record.h"

enum { HG_RQ_NOP = 0, HG_RQ_ADD = 1, HG_RQ_REMOVE = 2 };

struct hg_rq_slot {
  uint64_t seq;  /* ticket it waits for (free) or ticket + 1 (published)  */
  uint64_t addr; /* block address | op (addresses are 16-byte aligned)     */
  uint64_t size;
  uint64_t id;
};

#define HG_RQ_RUN 1024u /* events netted per address at a time (alloc_queue.c) */

struct hg_rq_net;

struct hg_rq {
  uint64_t head __attribute__((aligned(64))); /* next ticket (producers)    */
  uint64_t tail __attribute__((aligned(64))); /* next event to apply (lock) */
  int lock;                                   /* held while draining        */
  int pause;             /* a capture is coming: the recorder's thread stops
                            at the next batch and starts none (producers on
                            a full ring and _hg_rq_flush still drain)      */
  uint64_t mask;
  struct hg_rq_slot *slots;
  uint64_t self_drains;  /* batches drained by producers on a full ring     */
  /* the drain lock's: a run's events netted per address                    */
  struct hg_rq_net *net; /* address table, 2 * HG_RQ_RUN slots               */
  uint16_t *order;       /* its slots in use, in the order first seen        */
  uint16_t gen;          /* run number (a slot of another run is free)        */
};

/* Maps a ring of 2^order slots (its bytes are counted in r's budget).
 * 0 or HG_ENOMEM. */
int _hg_rq_init(struct hg_rq *q, struct hg_rec *r, unsigned order);

/* Takes the next ticket and waits until its slot is free (draining batches
 * itself when the ring is full). Fill it with _hg_rq_fill, always. */
uint64_t _hg_rq_reserve(struct hg_rq *q, struct hg_rec *r);
/* Publishes ticket t's event (op HG_RQ_NOP fills a reservation that turned
 * out to have nothing to say). */
static inline void _hg_rq_fill(struct hg_rq *q, uint64_t t, unsigned op, uintptr_t addr, uint64_t size,
                               uint32_t id) {
  struct hg_rq_slot *s = &q->slots[t & q->mask];
  s->addr = (uint64_t)addr | op;
  s->size = size;
  s->id = id;
  __atomic_store_n(&s->seq, t + 1, __ATOMIC_RELEASE);
}
static inline void _hg_rq_push(struct hg_rq *q, struct hg_rec *r, unsigned op, uintptr_t addr, uint64_t size,
                               uint32_t id) {
  _hg_rq_fill(q, _hg_rq_reserve(q, r), op, addr, size, id);
}

/* The recorder's thread: applies up to max published events in order, if
 * the drain lock is free (never waits for it) and no capture asked for a
 * pause. Returns how many were applied. */
uint64_t _hg_rq_drain(struct hg_rq *q, struct hg_rec *r, uint64_t max);
/* The capture's drain, every other thread frozen: all published events,
 * pause or not; 0 when the lock is held (a thread frozen while draining). */
uint64_t _hg_rq_flush(struct hg_rq *q, struct hg_rec *r);
/* In a fork child, with the drain lock held (taken before the fork): applies
 * every published event and drops the reservations of threads that do not
 * exist in the child, so the ring never waits for them. */
void _hg_rq_after_fork_child(struct hg_rq *q, struct hg_rec *r);
/* Events reserved but not applied yet. */
static inline uint64_t _hg_rq_pending(const struct hg_rq *q) {
  return __atomic_load_n(&q->head, __ATOMIC_ACQUIRE) - __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
}

#endif
