/*
 * alloc_record.c — the allocation-stack recorder's tables (alloc_record.h):
 * stack interning, the sharded live-block map and the sampling weight.
 * Memory comes from mmap only; no function here calls malloc, so it can run
 * inside a malloc interposer.
 */
#include "capture/stacks/alloc_record.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapgraph.h"

#define MAP_INITIAL 1024u /* slots per shard at start (8 KiB)               */
#define FILTER_BITS HG_REC_FILTER_BITS

#define HUGE (2u << 20)

/* Anonymous memory; tables of 2 MiB or more start on a 2 MiB boundary so
 * that transparent huge pages cover all but their last partial 2 MiB: a
 * live-map lookup is then one cache miss, rarely also a TLB miss. */
static void *map(size_t n) {
  int big = n >= HUGE;
  size_t len = big ? n + HUGE : n;
  uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (big) {
    size_t head = (HUGE - ((uintptr_t)p & (HUGE - 1))) & (HUGE - 1);
    if (head) munmap(p, head);
    size_t used = (n + 4095) & ~(size_t)4095; /* what munmap of n unmaps later */
    munmap(p + head + used, len - head - used);
    p += head;
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);
#endif
  }
  _hg_rec_own_add(p, n);
  return p;
}

static void unmap(void *p, size_t n) {
  _hg_rec_own_remove(p);
  munmap(p, n);
}

/* A live-map table: mapped and written once per page now, so that its pages
 * are never the shared zero page. A lookup reading an untouched page would
 * map the zero page, and the first write there would then replace it, which
 * flushes the TLB of every CPU running one of the process's threads (an
 * inter-processor interrupt per page, paid by the app's threads too). */
static uint64_t *map_table(size_t n) {
  uint8_t *p = map(n);
  if (p)
    for (size_t off = 0; off < n; off += 4096) p[off] = 0;
  return (uint64_t *)p;
}

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

static void spin_lock(int *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(l, __ATOMIC_RELAXED)) CPU_RELAX();
}
static void spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* ---- the recorder's own mappings (alloc_record.h) ---- */

static struct {
  int lock;                          /* add / remove (rare)                */
  uint64_t lo[HG_REC_OWN_MAX], hi[HG_REC_OWN_MAX];
  uint32_t valid[HG_REC_OWN_MAX];    /* published after lo, hi             */
} own;

void _hg_rec_own_add(const void *p, size_t n) {
  spin_lock(&own.lock);
  for (unsigned i = 0; i < HG_REC_OWN_MAX; i++)
    if (!__atomic_load_n(&own.valid[i], __ATOMIC_RELAXED)) {
      own.lo[i] = (uint64_t)(uintptr_t)p;
      own.hi[i] = (uint64_t)(uintptr_t)p + ((n + 4095) & ~(size_t)4095);
      __atomic_store_n(&own.valid[i], 1, __ATOMIC_RELEASE);
      break;
    }
  spin_unlock(&own.lock);
}

void _hg_rec_own_remove(const void *p) {
  spin_lock(&own.lock);
  for (unsigned i = 0; i < HG_REC_OWN_MAX; i++)
    if (__atomic_load_n(&own.valid[i], __ATOMIC_RELAXED) && own.lo[i] == (uint64_t)(uintptr_t)p)
      __atomic_store_n(&own.valid[i], 0, __ATOMIC_RELEASE);
  spin_unlock(&own.lock);
}

int _hg_rec_own_get(unsigned i, uint64_t *lo, uint64_t *hi) {
  if (i >= HG_REC_OWN_MAX || !__atomic_load_n(&own.valid[i], __ATOMIC_ACQUIRE)) return 0;
  *lo = own.lo[i];
  *hi = own.hi[i];
  return *lo < *hi;
}

int _hg_rec_owns(uint64_t lo, uint64_t hi) {
  for (uint64_t cur = lo; cur < hi;) { /* covered by one mapping after another */
    uint64_t next = cur;
    for (unsigned i = 0; i < HG_REC_OWN_MAX; i++) {
      uint64_t a, b;
      if (_hg_rec_own_get(i, &a, &b) && a <= cur && cur < b) next = b;
    }
    if (next == cur) return 0;
    cur = next;
  }
  return lo < hi;
}

/* The final mix of a folded stack hash (alloc_record.h): never 0. */
static uint64_t hash_final(uint64_t h) { return _hg_rec_mix(h) | 1; }

static uint64_t hash_frames(const uintptr_t *f, uint32_t n) {
  uint64_t h = HG_REC_HASH_SEED;
  for (uint32_t i = n; i-- > 0;) h = _hg_rec_hash_step(h, f[i]);
  return hash_final(h);
}

int _hg_rec_reserve(struct hg_rec *r, uint64_t n) {
  uint64_t cur = __atomic_load_n(&r->mem, __ATOMIC_RELAXED);
  do {
    if (cur + n > r->budget) {
      __atomic_store_n(&r->status, 1u, __ATOMIC_RELAXED);
      return -1;
    }
  } while (!__atomic_compare_exchange_n(&r->mem, &cur, cur + n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return 0;
}

int _hg_rec_init(struct hg_rec *r, const struct hg_rec_config *cfg) {
  memset(r, 0, sizeof *r);
  r->max_frames = cfg && cfg->max_frames ? cfg->max_frames : 32;
  if (r->max_frames > HG_REC_MAX_FRAMES) r->max_frames = HG_REC_MAX_FRAMES;
  r->budget = cfg && cfg->budget ? cfg->budget : (256ull << 20);
  r->sample_bytes = cfg ? cfg->sample_bytes : 0;
  r->sizes = cfg && cfg->sizes;
  uint64_t cap = r->budget / 1024;
  if (cap < 1024) cap = 1024;
  if (cap > (1u << HG_REC_STACK_ID_BITS) - 1) cap = (1u << HG_REC_STACK_ID_BITS) - 1;
  r->stack_cap = (uint32_t)cap;
  uint32_t isz = 1;
  while (isz < 2 * cap) isz <<= 1;
  r->index_mask = isz - 1;
  r->arena_cap = cap * (sizeof(struct hg_rec_stack) + 16 * sizeof(uintptr_t));
  size_t index_b = (size_t)isz * 4, off_b = (size_t)(cap + 1) * 8, filt_b = (size_t)1 << FILTER_BITS;
  size_t cnt_b = (size_t)(cap + 1) * sizeof(struct hg_rec_count);
  r->fixed_bytes = index_b + off_b + filt_b + cnt_b + r->arena_cap;
  uint8_t *m = map(r->fixed_bytes);
  if (!m) return HG_ENOMEM;
  r->index = (uint32_t *)m;
  r->offsets = (uint64_t *)(m + index_b);
  r->filter = m + index_b + off_b;
  r->counts = (struct hg_rec_count *)(m + index_b + off_b + filt_b);
  r->arena = m + index_b + off_b + filt_b + cnt_b; /* counts: charged per stack */
  /* the index, offsets and filter count in full (hashing touches every page) */
  r->mem = index_b + off_b + filt_b;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  r->shard_bits = 2;
  while (r->shard_bits < 6 && (1l << r->shard_bits) < 2 * cpus) r->shard_bits++;
  uint64_t shard_b = MAP_INITIAL * _hg_rec_slot_bytes(r);
  for (unsigned i = 0; i < (1u << r->shard_bits); i++) {
    struct hg_rec_shard *s = &r->shards[i];
    if (_hg_rec_reserve(r, shard_b) || !(s->slots = map_table(shard_b))) {
      _hg_rec_destroy(r);
      return HG_ENOMEM;
    }
    s->cap = MAP_INITIAL;
  }
  return 0;
}

void _hg_rec_destroy(struct hg_rec *r) {
  for (unsigned i = 0; i < HG_REC_SHARDS; i++)
    if (r->shards[i].slots) unmap(r->shards[i].slots, r->shards[i].cap * _hg_rec_slot_bytes(r));
  if (r->index) unmap(r->index, r->fixed_bytes);
  memset(r, 0, sizeof *r);
}

/* ---- stack table ---- */

const struct hg_rec_stack *_hg_rec_stack(const struct hg_rec *r, uint32_t id) {
  if (id == 0 || id > _hg_rec_stack_count(r)) return NULL;
  return (const struct hg_rec_stack *)(r->arena + r->offsets[id]);
}

const struct hg_rec_count *_hg_rec_count(const struct hg_rec *r, uint32_t id) {
  if (id == 0 || id > _hg_rec_stack_count(r)) return NULL;
  return &r->counts[id];
}

static int same(const struct hg_rec_stack *s, uint64_t h, const uintptr_t *f, uint32_t n) {
  if (s->hash != h || s->nframes != n) return 0;
  for (uint32_t i = 0; i < n; i++) /* a dozen words: no call to memcmp */
    if (s->frames[i] != f[i]) return 0;
  return 1;
}

/* Interns frames f[0..n) whose final hash is h. */
static uint32_t intern(struct hg_rec *r, const uintptr_t *f, uint32_t n, uint64_t h) {
  uint32_t i = (uint32_t)h & r->index_mask;
  for (;;) { /* lock-free probe: ids are published after their record */
    uint32_t id = __atomic_load_n(&r->index[i], __ATOMIC_ACQUIRE);
    if (!id) break;
    if (same((const struct hg_rec_stack *)(r->arena + r->offsets[id]), h, f, n)) return id;
    i = (i + 1) & r->index_mask;
  }
  spin_lock(&r->stack_lock);
  uint32_t id = 0;
  for (;; i = (i + 1) & r->index_mask) { /* continue where the probe stopped */
    uint32_t cur = r->index[i];
    if (!cur) break;
    if (same((const struct hg_rec_stack *)(r->arena + r->offsets[cur]), h, f, n)) {
      id = cur;
      goto out;
    }
  }
  size_t need = sizeof(struct hg_rec_stack) + n * sizeof(uintptr_t);
  need = (need + 7) & ~(size_t)7;
  if (r->stack_count + 1 >= r->stack_cap || r->arena_used + need > r->arena_cap ||
      _hg_rec_reserve(r, need + sizeof(struct hg_rec_count)))
    goto out;
  struct hg_rec_stack *s = (struct hg_rec_stack *)(r->arena + r->arena_used);
  s->hash = h;
  s->nframes = n;
  memcpy(s->frames, f, n * sizeof *f);
  id = r->stack_count + 1;
  r->offsets[id] = r->arena_used;
  r->arena_used += need;
  __atomic_store_n(&r->stack_count, id, __ATOMIC_RELEASE);
  __atomic_store_n(&r->index[i], id, __ATOMIC_RELEASE);
out:
  spin_unlock(&r->stack_lock);
  return id;
}

uint32_t _hg_rec_intern(struct hg_rec *r, const uintptr_t *f, uint32_t n) {
  if (n > r->max_frames) n = r->max_frames;
  return intern(r, f, n, hash_frames(f, n));
}

uint32_t _hg_rec_intern_hashed(struct hg_rec *r, const uintptr_t *f, uint32_t n, uint64_t state) {
  if (n > r->max_frames) return _hg_rec_intern(r, f, n); /* the state folded frames that are cut */
  return intern(r, f, n, hash_final(state));
}

/* ---- weights ---- */

/* 1 - e^-x for 0 <= x < 64 without libm: e^-x = (e^-(x/2^k))^(2^k) with
 * x/2^k < 2^-8 summed as a Taylor series; 1 - e^-y kept separately so small
 * x lose no precision (relative error ~1e-13). */
static double one_minus_exp_neg(double x) {
  int k = 0;
  while (x > 0.00390625) {
    x *= 0.5;
    k++;
  }
  /* q = 1 - e^-x for the reduced x */
  double q = x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5))));
  /* 1 - e^-2y = q (2 - q) */
  while (k--) q = q * (2 - q);
  return q;
}

void _hg_rec_weight(uint64_t T, uint64_t size, uint64_t *count_fx, uint64_t *bytes) {
  if (T == 0 || size >= 64 * T) {
    *count_fx = HG_REC_FX;
    *bytes = size;
    return;
  }
  double p = one_minus_exp_neg((double)size / (double)T);
  if (p <= 0) p = 1.0 / (double)T;
  *count_fx = (uint64_t)((double)HG_REC_FX / p + 0.5);
  *bytes = (uint64_t)((double)size / p + 0.5);
}

int64_t _hg_rec_gap(uint64_t *rng, uint64_t T) {
  uint64_t x = *rng ? *rng : (uint64_t)(uintptr_t)rng * 0x9e3779b97f4a7c15ull | 1;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *rng = x;
  double u = (double)((x >> 11) + 1) * (1.0 / 9007199254740993.0); /* (0, 1] */
  /* -ln u without libm: ln u = 2 atanh((u-1)/(u+1)) after scaling to [0.5, 1) */
  int e = 0;
  while (u < 0.5) {
    u *= 2;
    e++;
  }
  double z = (u - 1) / (u + 1), z2 = z * z, t = z, s = 0;
  for (int k = 1; k < 40; k += 2) {
    s += t / k;
    t *= z2;
  }
  double ln = 2 * s - e * 0.6931471805599453;
  return (int64_t)(-ln * (double)T) + 1;
}

/* ---- live map ---- */

#define ADDR_SHIFT 4 /* _hg_rec_key's */
#define ADDR_BITS (64u - HG_REC_STACK_ID_BITS)
#define ID_MASK ((1ull << HG_REC_STACK_ID_BITS) - 1)

static inline uint64_t key_of(uintptr_t addr) { return _hg_rec_key(addr); }

static inline uint64_t ahash(uint64_t key) { return _hg_rec_mix(key); }
static inline uint8_t *bucket(const struct hg_rec *r, uint64_t h) { return _hg_rec_bucket(r, h); }

static struct hg_rec_shard *shard_of(const struct hg_rec *r, uint64_t h) {
  return (struct hg_rec_shard *)&r->shards[h >> (64 - r->shard_bits)];
}

/* The sizes of table t of cap slots (r->sizes): after its slots, same index. */
static inline uint32_t *sizes_of(const uint64_t *t, uint64_t cap) { return (uint32_t *)(uintptr_t)(t + cap); }

/* Home slot of a key hash in a table of cap slots (any cap: multiply-shift). */
static inline uint64_t home(uint64_t h, uint64_t cap) { return ((h & 0xffffffffu) * cap) >> 32; }
static inline uint64_t step(uint64_t i, uint64_t cap) { return i + 1 == cap ? 0 : i + 1; }
/* Slots from a forward to b in a ring of cap (a, b < cap): (b - a) mod cap
 * without a division (one is tens of cycles, and removes ran two a slot). */
static inline uint64_t cyc(uint64_t b, uint64_t a, uint64_t cap) { return b >= a ? b - a : b + cap - a; }

/* Grows s's table by half (load 3/4 -> 1/2: 10.7 to 16 bytes per block,
 * 16 to 24 with sizes); called with the shard lock held. */
static int grow(struct hg_rec *r, struct hg_rec_shard *s) {
  uint64_t sb = _hg_rec_slot_bytes(r), ncap = s->cap + s->cap / 2, nb = ncap * sb;
  if (_hg_rec_reserve(r, nb)) return -1;
  uint64_t *ns = map_table(nb);
  if (!ns) {
    __atomic_fetch_sub(&r->mem, nb, __ATOMIC_RELAXED);
    __atomic_store_n(&r->status, 1u, __ATOMIC_RELAXED);
    return -1;
  }
  uint32_t *osz = sizes_of(s->slots, s->cap), *nsz = sizes_of(ns, ncap);
  for (uint64_t i = 0; i < s->cap; i++) {
    uint64_t v = s->slots[i];
    if (!v) continue;
    uint64_t j = home(ahash(v >> HG_REC_STACK_ID_BITS), ncap);
    while (ns[j]) j = step(j, ncap);
    ns[j] = v;
    if (r->sizes) nsz[j] = osz[i];
  }
  uint64_t *old = s->slots, ob = s->cap * sb;
  /* publish the complete new table before the old one goes away */
  __atomic_store_n(&s->slots, ns, __ATOMIC_RELEASE);
  __atomic_store_n(&s->cap, ncap, __ATOMIC_RELEASE);
  unmap(old, ob);
  __atomic_fetch_sub(&r->mem, ob, __ATOMIC_RELAXED);
  return 0;
}

/* Adds (sign > 0) or takes away a block of `size` bytes in the figures of
 * stack id. One writer at a time (`single`: the update queue's drain lock)
 * needs no locked instruction: each would wait for every earlier miss of
 * the batch, which is what the queue's prefetching overlaps. */
static inline void add_fig(uint64_t *x, uint64_t v, int single) {
  if (single) __atomic_store_n(x, __atomic_load_n(x, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
  else __atomic_fetch_add(x, v, __ATOMIC_RELAXED);
}
static inline void count(struct hg_rec *r, uint32_t id, uint64_t size, int sign, int single) {
  struct hg_rec_count *s = &r->counts[id];
  uint64_t c = HG_REC_FX, b = size;
  if (r->sample_bytes) _hg_rec_weight(r->sample_bytes, size, &c, &b);
  if (sign < 0) c = -c, b = -b; /* unsigned wrap: the same as subtracting */
  add_fig(&s->count_fx, c, single);
  add_fig(&s->bytes, b, single);
}

/* old_size: the size to take away from the stack of an entry already at
 * addr (a block freed within the update queue's run, or a stale entry). */
static inline int add(struct hg_rec *r, uintptr_t addr, uint64_t size, uint32_t id, int single,
                      uint64_t old_size) {
  uint64_t key = key_of(addr);
  if (!id || id > _hg_rec_stack_count(r) || (addr & ((1u << ADDR_SHIFT) - 1)) ||
      (key >> ADDR_BITS)) {
    __atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
    return -1;
  }
  uint64_t h = ahash(key), v = (key << HG_REC_STACK_ID_BITS) | id;
  uint32_t code = _hg_rec_size_code(size);
  if (r->sizes) size = _hg_rec_size_decode(code); /* what a remove will count */
  struct hg_rec_shard *s = shard_of(r, h);
  if (!single) spin_lock(&s->lock);
  if ((s->used + 1) * 4 > s->cap * 3 && grow(r, s)) {
    if (!single) spin_unlock(&s->lock);
    __atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
    return -1;
  }
  uint64_t i = home(h, s->cap);
  for (;; i = step(i, s->cap)) {
    uint64_t cur = s->slots[i];
    if (!cur) break;
    if ((cur >> HG_REC_STACK_ID_BITS) == key) { /* replaced (or stale: a free we missed) */
      __atomic_store_n(&s->slots[i], v, __ATOMIC_RELAXED);
      if (r->sizes) {
        uint32_t *sz = sizes_of(s->slots, s->cap);
        old_size = _hg_rec_size_decode(sz[i]);
        __atomic_store_n(&sz[i], code, __ATOMIC_RELAXED);
      }
      count(r, (uint32_t)(cur & ID_MASK), old_size, -1, single);
      count(r, id, size, +1, single);
      if (!single) spin_unlock(&s->lock);
      return 0;
    }
  }
  if (r->sizes) __atomic_store_n(&sizes_of(s->slots, s->cap)[i], code, __ATOMIC_RELAXED);
  __atomic_store_n(&s->slots[i], v, __ATOMIC_RELAXED);
  s->used++;
  if (r->sample_bytes && *bucket(r, h) < 255) /* 255 sticks: "maybe" forever */
    __atomic_store_n(bucket(r, h), (uint8_t)(*bucket(r, h) + 1), __ATOMIC_RELAXED);
  /* the figures change with the map, under its lock: a capture that finds
   * no shard lock held sees them agree (_hg_stacks_busy) */
  add_fig(&r->live, 1, single);
  count(r, id, size, +1, single);
  if (!single) spin_unlock(&s->lock);
  return 0;
}

static inline uint32_t del(struct hg_rec *r, uintptr_t addr, uint64_t size, int single) {
  uint64_t key = key_of(addr);
  if ((addr & ((1u << ADDR_SHIFT) - 1)) || (key >> ADDR_BITS)) return 0;
  uint64_t h = ahash(key);
  struct hg_rec_shard *s = shard_of(r, h);
  if (!single) spin_lock(&s->lock);
  uint64_t *t = s->slots, m = s->cap, i = home(h, m), v;
  for (;; i = step(i, m)) {
    v = t[i];
    if (!v) {
      if (!single) spin_unlock(&s->lock);
      return 0;
    }
    if ((v >> HG_REC_STACK_ID_BITS) == key) break;
  }
  uint32_t *sz = r->sizes ? sizes_of(t, m) : NULL;
  if (sz) size = _hg_rec_size_decode(sz[i]); /* as _hg_rec_add counted it */
  /* backward-shift deletion keeps every probe chain unbroken */
  uint64_t j = i;
  for (;;) {
    j = step(j, m);
    uint64_t w = t[j];
    if (!w) break;
    uint64_t hw = home(ahash(w >> HG_REC_STACK_ID_BITS), m);
    /* w may move to i when its home is not in the cyclic range (i, j] */
    if (cyc(j, hw, m) >= cyc(j, i, m)) {
      if (sz) __atomic_store_n(&sz[i], sz[j], __ATOMIC_RELAXED);
      __atomic_store_n(&t[i], w, __ATOMIC_RELAXED);
      i = j;
    }
  }
  __atomic_store_n(&t[i], 0, __ATOMIC_RELAXED);
  s->used--;
  if (r->sample_bytes && *bucket(r, h) < 255)
    __atomic_store_n(bucket(r, h), (uint8_t)(*bucket(r, h) - 1), __ATOMIC_RELAXED);
  add_fig(&r->live, (uint64_t)-1, single);
  uint32_t id = (uint32_t)(v & ID_MASK);
  count(r, id, size, -1, single);
  if (!single) spin_unlock(&s->lock);
  return id;
}

/* a stale entry's size is not known: the new block's is taken away */
int _hg_rec_add(struct hg_rec *r, uintptr_t addr, uint64_t size, uint32_t id) { return add(r, addr, size, id, 0, size); }
uint32_t _hg_rec_remove(struct hg_rec *r, uintptr_t addr, uint64_t size) { return del(r, addr, size, 0); }
int _hg_rec_set_single(struct hg_rec *r, uintptr_t addr, uint64_t size, uint32_t id, uint64_t old_size) {
  return add(r, addr, size, id, 1, old_size);
}
uint32_t _hg_rec_remove_single(struct hg_rec *r, uintptr_t addr, uint64_t size) { return del(r, addr, size, 1); }

int _hg_rec_each(const struct hg_rec *r, hg_rec_each_fn fn, void *ctx) {
  for (uint32_t k = 0; k < (1u << r->shard_bits); k++) {
    const struct hg_rec_shard *s = &r->shards[k];
    uint64_t m = __atomic_load_n(&s->cap, __ATOMIC_ACQUIRE); /* size first: see _hg_rec_lookup */
    const uint64_t *t = __atomic_load_n(&s->slots, __ATOMIC_ACQUIRE);
    const uint32_t *sz = t && r->sizes ? sizes_of(t, m) : NULL;
    for (uint64_t i = 0; t && i < m; i++) {
      uint64_t v = __atomic_load_n(&t[i], __ATOMIC_RELAXED);
      if (!v) continue;
      uint64_t size = sz ? _hg_rec_size_decode(__atomic_load_n(&sz[i], __ATOMIC_RELAXED)) : 0;
      int rc = fn(ctx, (uintptr_t)((v >> HG_REC_STACK_ID_BITS) << ADDR_SHIFT), (uint32_t)(v & ID_MASK), size);
      if (rc) return rc;
    }
  }
  return 0;
}

void _hg_rec_prefetch(const struct hg_rec *r, uintptr_t addr) {
  uint64_t h = ahash(key_of(addr));
  const struct hg_rec_shard *s = shard_of(r, h);
  const uint64_t *t = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
  uint64_t m = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);
  /* non-temporal: the slot is used once soon, then not for long; kept out
   * of the caches' recent side it pushes out less of what the app's threads
   * reuse (measured: ~1.5 % of the allocating thread's time on the bench) */
  if (t) __builtin_prefetch(&t[home(h, m)], 0, 0);
}

uint32_t _hg_rec_lookup(const struct hg_rec *r, uintptr_t addr) {
  uint64_t key = key_of(addr);
  if ((addr & ((1u << ADDR_SHIFT) - 1)) || (key >> ADDR_BITS)) return 0;
  uint64_t h = ahash(key);
  const struct hg_rec_shard *s = shard_of(r, h);
  /* a frozen writer may be mid-grow: the new table is published before its
   * size, so reading the size first never pairs a big size with the old table */
  uint64_t m = __atomic_load_n(&s->cap, __ATOMIC_ACQUIRE);
  const uint64_t *t = __atomic_load_n(&s->slots, __ATOMIC_ACQUIRE);
  if (!t) return 0;
  for (uint64_t i = home(h, m), n = 0; n < m; i = step(i, m), n++) {
    uint64_t v = __atomic_load_n(&t[i], __ATOMIC_RELAXED);
    if (!v) return 0;
    if ((v >> HG_REC_STACK_ID_BITS) == key) return (uint32_t)(v & ID_MASK);
  }
  return 0;
}
