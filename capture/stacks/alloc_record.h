/*
 * alloc_record.h — the allocation-stack recorder (portable; no platform calls
 * but mmap). Owns two tables in its own mmap'd memory, never the app's malloc:
 *
 *   stack table   frames (return addresses) -> stack id, deduplicated by an
 *                 open-addressing index; per stack the live count (16.16
 *                 fixed point, so sampled estimates add up exactly) and bytes
 *   live map      block address -> stack id, 2 shards per CPU (4 to 64), each
 *                 with its own spinlock and table (fewer, bigger tables get
 *                 transparent huge pages: fewer TLB misses),
 *                 one 8-byte slot per block ((addr >> 4) << 21 | stack id),
 *                 linear probing, growing by half at 3/4 load (so 10.7 to
 *                 16 bytes per live block); with hg_rec_config.sizes (the
 *                 Darwin hook) each slot also has a 4-byte size, in a
 *                 second array of the same table indexed like the slots
 *                 (12-byte slots: 16 to 24 bytes per live block), so a
 *                 capture can list blocks of a heap it cannot walk without
 *                 asking the allocator (alloc_heap.c, zone_recorded.c)
 *
 * Everything is bounded by a byte budget; when a table cannot grow within it,
 * recording stops (status "budget-exhausted", dropped blocks counted) and the
 * app runs on. Lookups used by a capture (fork child or frozen process) take
 * no lock and never block.
 */
#ifndef HG_ALLOC_RECORD_H
#define HG_ALLOC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define HG_REC_MAX_FRAMES 64u      /* hard cap on frames per stack           */
#define HG_REC_SHARDS 64u          /* at most; in use: r->shards_used     */
#define HG_REC_STACK_ID_BITS 21u   /* stack ids 1 .. 2^21-1                  */
#define HG_REC_FX 65536u           /* fixed point of per-stack counts        */
#define HG_REC_FILTER_BITS 15u     /* sampled mode's counting filter: 2^15
                                      saturating uint8 buckets (32 KiB)      */

/* A stack's identity: read by every allocation (interning), written once. */
struct hg_rec_stack {
  uint64_t hash;
  uint32_t nframes;
  uint32_t pad;
  uintptr_t frames[];
};

/* A stack's live figures: written by every add and remove, kept apart from
 * the identities so that the thread applying updates does not take the
 * cache lines the allocating threads read. */
struct hg_rec_count {
  uint64_t count_fx;       /* live blocks * HG_REC_FX (estimate when sampled) */
  uint64_t bytes;          /* live bytes (estimate when sampled)              */
};

struct hg_rec_shard {
  int lock;
  uint32_t pad;
  uint64_t *slots;         /* 0 = empty                                       */
  uint64_t cap;             /* slots                                          */
  uint64_t used;
  char line_pad[32];
};

struct hg_rq;

struct hg_rec {
  uint32_t max_frames;
  uint32_t status;         /* 0 ok, 1 budget exhausted, 2 stopped (hg_stacks_stop) */
  uint64_t budget;         /* bytes of tracking memory allowed                */
  uint64_t sample_bytes;   /* 0: every block; else mean bytes between samples */
  uint64_t mem;            /* tracking bytes in use (atomic)                  */
  uint64_t dropped;        /* blocks not recorded (atomic)                    */
  uint32_t shard_bits;     /* shards in use: 1 << shard_bits (from the CPU
                              count: 2 per CPU, 4 to 64)                      */
  uint32_t sizes;          /* 1: a size per block (_hg_rec_size_code)       */
  /* stack table */
  int stack_lock;
  uint32_t stack_count;    /* ids 1..stack_count are valid (atomic, release)  */
  uint32_t stack_cap;      /* max ids                                         */
  uint32_t index_mask;
  uint32_t *index;         /* open addressing: stack ids, 0 empty             */
  uint64_t *offsets;       /* id -> byte offset of its record in the arena    */
  struct hg_rec_count *counts; /* id -> live figures                          */
  uint8_t *arena;
  uint64_t arena_used, arena_cap;
  size_t fixed_bytes;      /* the mappings above                              */
  uint8_t *filter;         /* sampled mode: live blocks per address-hash
                              bucket (a counting filter: 0 = certainly not
                              recorded; 255 sticks)                          */
  /* written on every add and remove: off the lines above, which every
   * allocation reads */
  _Alignas(64) uint64_t live; /* blocks in the live map (atomic)            */
  _Alignas(64) struct hg_rec_shard shards[HG_REC_SHARDS];
  struct hg_rq *queue;     /* full tracking on Linux: live-map updates go
                              through this queue (alloc_queue.h), else NULL  */
};

struct hg_rec_config {
  uint32_t max_frames;     /* default 32                                      */
  uint64_t budget;         /* default 256 MiB                                 */
  uint64_t sample_bytes;   /* 0 = full tracking                               */
  uint32_t sizes;          /* 1: keep each block's size (the usable size the
                              hook passes to _hg_rec_add); a remove then
                              takes the block's size from the map          */
};

/* Maps the tables. 0 or HG_ENOMEM / HG_EINVAL. */
int _hg_rec_init(struct hg_rec *r, const struct hg_rec_config *cfg);
/* Unmaps everything (tests; the preloaded recorder lives forever). */
void _hg_rec_destroy(struct hg_rec *r);

/* Stack id of these frames (interned on first sight), 0 when the budget is
 * exhausted. Thread-safe; the common case (known stack) takes no lock. */
uint32_t _hg_rec_intern(struct hg_rec *r, const uintptr_t *frames, uint32_t n);

/* The stack hash folds the frames from the outermost in:
 *   h = HG_REC_HASH_SEED; for i = n-1 down to 0: h = _hg_rec_hash_step(h, f[i])
 * so an unwinder that remembers its last walk (unwind_cache.h) keeps the
 * state of an unchanged outer part and folds only the new inner frames.
 * _hg_rec_intern_hashed is _hg_rec_intern given that state (n <= max_frames;
 * a longer n is cut and hashed again). */
#define HG_REC_HASH_SEED 0x9e3779b97f4a7c15ull
static inline uint64_t _hg_rec_hash_step(uint64_t h, uintptr_t f) {
  h = (h ^ (uint64_t)f) * 0xff51afd7ed558ccdull; /* one multiply and rotate per frame */
  return (h << 29) | (h >> 35);
}
uint32_t _hg_rec_intern_hashed(struct hg_rec *r, const uintptr_t *frames, uint32_t n, uint64_t state);
/* Stack record of id (1..count), or NULL. Lock-free. */
const struct hg_rec_stack *_hg_rec_stack(const struct hg_rec *r, uint32_t id);
/* Live figures of stack id (1..count), or NULL. Lock-free (atomic loads). */
const struct hg_rec_count *_hg_rec_count(const struct hg_rec *r, uint32_t id);
static inline uint32_t _hg_rec_stack_count(const struct hg_rec *r) {
  return __atomic_load_n(&r->stack_count, __ATOMIC_ACQUIRE);
}

/* A block's size as the live map keeps it (r->sizes): bytes / 8 in 32 bits,
 * saturated (a node's size has the same unit and width, capture/internal.h
 * struct hg_cnode); 0 for 0. What the map counts for a block is
 * _hg_rec_size_decode(_hg_rec_size_code(size)), at add and at remove alike. */
#define HG_REC_SIZE_MAX ((uint64_t)UINT32_MAX << 3)
static inline uint32_t _hg_rec_size_code(uint64_t size) {
  return size >= HG_REC_SIZE_MAX ? UINT32_MAX : (uint32_t)(size >> 3);
}
static inline uint64_t _hg_rec_size_decode(uint32_t code) { return (uint64_t)code << 3; }
/* Bytes of one live-map slot: 8, or 12 with sizes. */
static inline uint64_t _hg_rec_slot_bytes(const struct hg_rec *r) { return r->sizes ? 12 : 8; }

/* A block of `size` bytes at addr allocated from stack id, counted with the
 * weight for `size` (_hg_rec_weight; with r->sizes, size rounded down to 8
 * and saturated as stored). Returns 0, or -1 when it was dropped. */
int _hg_rec_add(struct hg_rec *r, uintptr_t addr, uint64_t size, uint32_t id);
/* The block at addr is gone (size: what _hg_rec_add was given, recomputed by
 * the caller, e.g. the usable size; ignored with r->sizes, where the map
 * has it). Unknown addresses are ignored. Returns the stack id it had, or 0. */
uint32_t _hg_rec_remove(struct hg_rec *r, uintptr_t addr, uint64_t size);
/* The same for the one thread that applies the update queue's events
 * (alloc_queue.h), holding its drain lock: every live-map update goes
 * through the queue then, so no shard lock is taken and the figures change
 * without locked instructions. Set: the block at addr is now one of `size`
 * bytes from stack id; an entry already there loses old_size bytes from
 * its stack. */
int _hg_rec_set_single(struct hg_rec *r, uintptr_t addr, uint64_t size, uint32_t id, uint64_t old_size);
uint32_t _hg_rec_remove_single(struct hg_rec *r, uintptr_t addr, uint64_t size);
/* Starts loading addr's live-map slot into the cache (a hint: overlaps the
 * miss with the caller's unwinding or size lookup). */
void _hg_rec_prefetch(const struct hg_rec *r, uintptr_t addr);
/* The live map's hash of a block address (a 64-bit finalizer of addr / 16):
 * its top bits choose the shard and the filter bucket. */
static inline uint64_t _hg_rec_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
/* A block address's live-map key (addresses are 16-byte aligned), its
 * hash, and the sampled filter's bucket of that hash. */
static inline uint64_t _hg_rec_key(uintptr_t addr) { return (uint64_t)addr >> 4; }
static inline uint8_t *_hg_rec_bucket(const struct hg_rec *r, uint64_t h) {
  return &r->filter[h >> (64 - HG_REC_FILTER_BITS)];
}
/* 0 when addr is certainly not in the live map (lock-free; lets a sampled
 * recorder skip the shard lock on almost every free). Inline: a sampled
 * recorder's every free asks. */
static inline int _hg_rec_maybe(const struct hg_rec *r, uintptr_t addr) {
  return __atomic_load_n(_hg_rec_bucket(r, _hg_rec_mix(_hg_rec_key(addr))), __ATOMIC_RELAXED) != 0;
}
/* Stack id recorded for addr, 0 if none. No lock: safe in a frozen process or
 * a fork child (a map being resized is read through its published table). */
uint32_t _hg_rec_lookup(const struct hg_rec *r, uintptr_t addr);

/* Calls fn for every block of the live map (any order) until it returns
 * non-zero (returned): its address, stack id and size (0 without r->sizes).
 * No lock: for a frozen process or a fork child. */
typedef int (*hg_rec_each_fn)(void *ctx, uintptr_t addr, uint32_t id, uint64_t size);
int _hg_rec_each(const struct hg_rec *r, hg_rec_each_fn fn, void *ctx);

/* Weight of a sampled block of `size` bytes: with mean sampling interval T the
 * block was recorded with probability p = 1 - exp(-size / T); it stands for
 * 1/p blocks and size/p bytes (the unbiased Horvitz-Thompson estimate).
 * count_fx is in HG_REC_FX units. T == 0 gives exactly (HG_REC_FX, size). */
void _hg_rec_weight(uint64_t T, uint64_t size, uint64_t *count_fx, uint64_t *bytes);
/* Bytes to the next sample: exponentially distributed with mean T (so each
 * byte is a sampling point with probability 1/T, independently: the
 * p = 1 - exp(-size/T) above holds), from the caller's xorshift state *rng
 * (per thread; 0 is first seeded from the state's own address, so threads
 * differ). At least 1. No libm. */
int64_t _hg_rec_gap(uint64_t *rng, uint64_t T);

/* The recorder's own mappings (its tables, the update queue's ring, the
 * large-allocation ring; not the interposer's memos, which hold no block
 * address): they hold block addresses, so a capture must not read them as
 * the app's memory (each would be a root). Registered when mapped, dropped
 * when unmapped; read
 * without a lock (a mapping being registered by a frozen thread may be
 * missed). _hg_rec_owns: [lo, hi) lies wholly in registered mappings. */
#define HG_REC_OWN_MAX (HG_REC_SHARDS + 8u) /* a table per shard (two while
                                                  one grows), the fixed tables,
                                                  the queue's ring, the large ring */
void _hg_rec_own_add(const void *p, size_t n);
void _hg_rec_own_remove(const void *p);
int _hg_rec_own_get(unsigned i, uint64_t *lo, uint64_t *hi);
int _hg_rec_owns(uint64_t lo, uint64_t hi);

/* Counts n more bytes of tracking memory; -1 (and status "budget
 * exhausted") when that would pass the budget. */
int _hg_rec_reserve(struct hg_rec *r, uint64_t n);

/* Figures: tracking bytes (tables + stack records), live blocks. */
static inline uint64_t _hg_rec_mem(const struct hg_rec *r) {
  return __atomic_load_n(&r->mem, __ATOMIC_RELAXED);
}

/* The recorder of this process (NULL until recording starts) and the name of
 * its unwinder, set by the interposer. */
extern struct hg_rec *_hg_rec_global;
extern const char *_hg_rec_unwinder;
/* The interposer's malloc when it is linked in, else NULL, and the malloc
 * it forwards to (the next in lookup order: glibc's, or another allocator's,
 * whose heap the glibc walker must not claim). */
extern void *_hg_hook_malloc;
extern void *_hg_hook_next_malloc;
/* The usable size of a block of the allocator the interposer forwards to
 * (its malloc_usable_size), NULL when it has none or there is no
 * interposer; the file name of that allocator's malloc ("" unknown). */
extern size_t (*_hg_hook_usable)(void *);
extern const char *_hg_hook_allocator;
/* Writes records 12-15 for the capture c (alloc_write.c); 0 when there is no
 * recorder. */
struct hg_cap;
int _hg_stacks_write(struct hg_cap *c);
/* Looks up the stack ids of up to n more nodes, in node order, for
 * _hg_stacks_write (the capture's idle moments: the scan's capturing thread
 * waiting for its helper). Returns how many; 0 when there is nothing to do. */
uint32_t _hg_stacks_ahead(struct hg_cap *c, uint32_t n);
/* The portable part of hg_stacks_start (alloc_write.c): once only
 * (HG_EBUSY), defaults when o is NULL, the recorder's tables and the
 * large-allocation monitor (its threshold then in _hg_large_threshold);
 * sizes: hg_rec_config.sizes (the platform's hook says whether the live map
 * keeps each block's size). The caller's re-entrancy guard must be set.
 * 0 or HG_E*. */
struct hg_stacks_options;
int _hg_stacks_setup(struct hg_rec *r, const struct hg_stacks_options *o, int sizes);
/* For a capture: _hg_stacks_pause(1) before the freeze makes the recorder's
 * thread stop draining the update queue within one batch (0 after the
 * capture). With every other thread frozen, _hg_stacks_busy says 1 while a
 * thread was caught draining or inside a live-map update (the capture thaws
 * and retries, as for a held allocator lock); _hg_stacks_flush then applies
 * every queued update (those of a thread frozen mid-push stay queued: their
 * count is returned, and the snapshot's capture metadata says it as
 * "stacks_unapplied" when it is not 0). */
void _hg_stacks_pause(int on);
/* hg_stacks_stop's portable part: *on (the hook's "record new allocations"
 * flag) 1 -> 0 and status "stopped" (HG_EINVAL when *on was 0); a restart's:
 * *on 0 -> 1 and status "ok" again (HG_EBUSY when *on was 1). */
int _hg_stacks_halt(struct hg_rec *r, int *on);
int _hg_stacks_resume(struct hg_rec *r, int *on);
int _hg_stacks_busy(void);
uint64_t _hg_stacks_flush(void);

#endif
