/*
 * linux_hook.c — the Linux malloc interposer of the allocation-stack recorder.
 *
 * Defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc, reallocarray, malloc_usable_size, free_sized,
 * free_aligned_sized and the C++ operators new and delete (plain, nothrow,
 * sized, aligned), each forwarding to the next definition in lookup order
 * (next_alloc.h): glibc's, or jemalloc's, tcmalloc's, mimalloc's when one
 * serves the program, so a block is always freed by the allocator that made
 * it. Blocks carry no header. Until recording starts each wrapper is one
 * predictable branch around the forwarded call. The C++ operators record
 * only where the allocator replaces them (tcmalloc, jemalloc, mimalloc:
 * their new does not call malloc); libstdc++'s call malloc and free, which
 * record.
 *
 * Only in libheapgraph_stacks.so (preloaded by `heapgraph run --stacks`; the
 * same library as libheapgraph.so plus this file, with its SONAME, so a
 * program linked with libheapgraph.so gets it instead when preloaded) and
 * alone in libheapgraph_stacks.a for static links; never in libheapgraph.so
 * or libheapgraph.a, whose users would otherwise get malloc interposed.
 *
 * Unwinding: from .eh_frame, so programs built without frame pointers
 * unwind correctly: on x86_64 a cache of per-return-address CFA rules learnt
 * from Debian's libunwind (unwind_cache.c), elsewhere or with
 * HEAPGRAPH_UNWIND=libunwind libunwind's unw_backtrace with its own cache.
 * libunwind may call malloc (first use, dl_iterate_phdr callbacks): a
 * thread-local guard makes every allocation made while this thread is inside
 * the recorder pass straight to the next allocator, unrecorded, so nothing recurses and no
 * lock is taken twice. Frames inside this file (section hg_hook) are cut off.
 *
 * Full tracking sends live-map updates through the update queue
 * (alloc_queue.h) drained by the recorder's thread "heapgraph-rec", so the
 * allocating thread does not wait for the map's cache misses; a remove is
 * queued before the block goes back to its allocator, an add after the
 * allocator returned it.
 *
 * Sampling (sample_bytes = T): each thread counts down an exponentially
 * distributed number of bytes (mean T) and records the block that crosses
 * zero, as tcmalloc and heapprofd do; the recorder weighs it by 1/p.
 *
 * Under AddressSanitizer ASan owns malloc: this file then defines no
 * wrapper and hg_stacks_start says HG_EUNSUPPORTED.
 *
 * Environment when preloaded (heapgraph run --stacks sets them):
 *   HEAPGRAPH_STACKS=1            record allocation stacks from the start
 *   HEAPGRAPH_STACK_FRAMES=N      frames per stack (default 32)
 *   HEAPGRAPH_STACKS_BUDGET=BYTES tracking memory budget (default 256 MiB)
 *   HEAPGRAPH_SAMPLE_BYTES=N      sample one block per N bytes on average
 *   HEAPGRAPH_LARGE_ALLOC=BYTES   report allocations >= BYTES on stderr
 *   HEAPGRAPH_STACKS_QUEUE=0      full tracking updates the map inline
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/stacks/alloc_large.h"
#include "capture/stacks/alloc_queue.h"
#include "capture/stacks/alloc_record.h"
#include "heapgraph.h"

#if defined(__SANITIZE_ADDRESS__)
#define HG_NO_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HG_NO_HOOK 1
#endif
#endif

#define HOOK_API __attribute__((visibility("default")))

#ifdef HG_NO_HOOK

int hg_stacks_start(const struct hg_stacks_options *o) {
  (void)o;
  return HG_EUNSUPPORTED;
}

#else

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "capture/stacks/linux/unwind_cache.h"

#include "capture/stacks/linux/next_alloc.h"

#define HOT __attribute__((section("hg_hook"), noinline))
extern const char __start_hg_hook[] __attribute__((visibility("hidden")));
extern const char __stop_hg_hook[] __attribute__((visibility("hidden")));

static struct hg_rec rec;
static struct hg_rq rq;      /* full tracking: the live-map update queue   */
static int queued;           /* live-map updates go through rq             */
static int on;               /* recording new allocations                  */
static int track;            /* the live map is kept (from the first start on,
                                also after hg_stacks_stop): frees remove    */
static int use_cache;        /* cached rules (unwind_cache.c) or unw_backtrace */
static uint64_t sample_T;    /* copy of rec.sample_bytes                   */
static uint64_t large_T;     /* copy of the large threshold (0 off)        */
/* The thread's state, in one initial-exec TLS block (one offset to load on
 * the sampled fast path, not one per variable). */
struct hook_tls {
  int in_hook;          /* inside the recorder: allocations pass unrecorded  */
  int counted;          /* the sampler counted this allocation already       */
  int64_t sample_left;  /* bytes to the next sample                          */
  uint64_t rng;         /* the sampler's generator (0: not seeded)           */
  struct hg_unwind_memo *memo; /* unwind_cache.h (memo_get)                 */
};
static __thread struct hook_tls me __attribute__((tls_model("initial-exec")));

/* Per-thread unwinder memos (unwind_cache.h: the last walk and the kept
 * walks, three 4 KiB pages), mapped on a thread's first recorded
 * allocation (counted in the budget), given back to a free list when the
 * thread exits (a pthread key's destructor) and reused by the next thread. MEMO_NONE: none to be had (budget or mmap). */
#define MEMO_NONE ((struct hg_unwind_memo *)1)
static pthread_key_t memo_key;
static int memo_ready;             /* memo_key exists                       */
static int memo_lock;              /* memo_free                             */
static struct hg_unwind_memo *memo_free; /* linked through their first word */

static void memo_lock_take(void) {
  while (__atomic_exchange_n(&memo_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void memo_lock_drop(void) { __atomic_store_n(&memo_lock, 0, __ATOMIC_RELEASE); }

/* This thread's memo or NULL; in_hook must be set (may map, and
 * pthread_setspecific may malloc). */
static struct hg_unwind_memo *memo_get(void) {
  struct hg_unwind_memo *m = me.memo;
  if (__builtin_expect(m != NULL, 1)) return m == MEMO_NONE ? NULL : m;
  if (!memo_ready) return NULL;
  memo_lock_take();
  if ((m = memo_free)) memo_free = *(struct hg_unwind_memo **)m;
  memo_lock_drop();
  if (!m) {
    if (_hg_rec_reserve(&rec, sizeof *m)) return me.memo = MEMO_NONE, NULL;
    void *p = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return me.memo = MEMO_NONE, NULL;
    m = p;
  }
  m->depth = m->whole = m->deep_pause = 0;
  m->spliced = m->changed = m->recalled = 0;
  for (unsigned i = 0; i < HG_WALKS; i++) m->walks[i].sp0 = 0;
  me.memo = m;
  pthread_setspecific(memo_key, m);
  return m;
}

const struct hg_unwind_memo *_hg_stacks_memo_self(void) { return me.memo == MEMO_NONE ? NULL : me.memo; }

static void memo_release(void *p) {
  me.memo = NULL; /* a later allocation of this thread maps another (the key's
                  destructor runs again for it) */
  memo_lock_take();
  *(struct hg_unwind_memo **)p = memo_free;
  memo_free = p;
  memo_lock_drop();
}

/* Bytes to the next sample (alloc_record.h), from this thread's generator. */
static int64_t next_gap(void) { return _hg_rec_gap(&me.rng, sample_T); }

/* The usable size of block p of the next allocator, or 0 when that
 * allocator has no malloc_usable_size. On x86_64 glibc (no memory tagging)
 * without the call: an in-use chunk that is not mmapped holds its size in
 * the header (less its 8 bytes; the capture's heap walker reports the same
 * figure as node size); mmapped chunks, whose header glibc versions lay out
 * differently, are asked. */
static inline uint64_t usable_size(void *p) {
#if defined(__x86_64__)
  if (_hg_nx.glibc) {
    uint64_t h = ((const uint64_t *)p)[-1];
    if (!(h & 2)) return (h & ~(uint64_t)7) - 8; /* 2: IS_MMAPPED */
  }
#endif
  size_t (*u)(void *) = _hg_nx.own_usable;
  return u ? u(p) : 0;
}

#define SMALL_MAX (64u << 10) /* below: the sampler counts a size from n */

/* Usable size of a block returned for n bytes from malloc/calloc, as the
 * sampler counts it (p NULL: before the call, n < SMALL_MAX). glibc: the
 * chunk is n + 8 rounded up to 16 (at least 32) less the 8-byte header
 * (glibc may hand out up to 16 bytes more: the recorded size is asked for,
 * record); other allocators: n rounded up to 16; big requests are asked. */
static inline uint64_t usable_of(void *p, size_t n) {
  if (n >= SMALL_MAX) return usable_size(p); /* p is never NULL here */
  if (!_hg_nx.glibc) return (n + 15) & ~(uint64_t)15;
  uint64_t c = (n + 8 + 15) & ~(uint64_t)15;
  return (c < 32 ? 32 : c) - 8;
}

/* The stack from (pc, sp), walked and interned (0: the budget is
 * exhausted); a large block (n bytes) also goes to the monitor. */
static HOT uint32_t walk_and_intern(void *p, uint64_t n, struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp,
                                int large) {
  uintptr_t f[HG_REC_MAX_FRAMES + 8];
  int nf = use_cache ? _hg_unwind_cached(f, (int)rec.max_frames + 8, m, pc, sp)
                     : unw_backtrace((void **)f, (int)rec.max_frames + 8);
  int skip = 0;
  while (skip < nf && f[skip] >= (uintptr_t)__start_hg_hook && f[skip] < (uintptr_t)__stop_hg_hook) skip++;
  /* return addresses point after the call: keep them as they are (the
   * symbolizer looks up address - 1) */
  uint32_t k = (uint32_t)(nf - skip);
  if (k > rec.max_frames) k = rec.max_frames;
  /* the memo holds the hash state of the whole stack from any frame out */
  uint64_t st;
  uint32_t id = k == (uint32_t)(nf - skip) && _hg_unwind_hash(m, skip, nf, &st)
                    ? _hg_rec_intern_hashed(&rec, f + skip, k, st)
                    : _hg_rec_intern(&rec, f + skip, k);
  if (m) _hg_unwind_keep(m, nf, id);
  if (large) _hg_large_push((uintptr_t)p, n, id, f + skip, k);
  return id;
}

/* Records p (n bytes were asked for). (pc, sp): the
 * frame the walk starts from, usually the app's: the return address and
 * CFA of the wrapper the allocator was called from (after_alloc). */
static HOT void record(void *p, uint64_t n, uintptr_t pc, uintptr_t sp) {
  me.in_hook = 1;
  /* the block's true usable size, not the one the request implies: glibc
   * hands out a bigger chunk when the rest would be too small to split, and
   * the free takes away what malloc_usable_size says (the header was just
   * written: no miss) */
  uint64_t size = usable_size(p);
  if (!queued) _hg_rec_prefetch(&rec, (uintptr_t)p); /* the slot's miss overlaps the unwinding */
  struct hg_unwind_memo *m = use_cache ? memo_get() : NULL;
  int large = large_T && n >= large_T; /* the monitor wants the frames */
  uint32_t id = m && !large ? _hg_unwind_recall(m, pc, sp) : 0;
  if (!id) id = walk_and_intern(p, n, m, pc, sp, large);
  if (id && queued) _hg_rq_push(&rq, &rec, HG_RQ_ADD, (uintptr_t)p, size, id);
  else if (id) _hg_rec_add(&rec, (uintptr_t)p, size, id);
  else __atomic_fetch_add(&rec.dropped, 1, __ATOMIC_RELAXED);
  me.in_hook = 0;
}

/* Sampled mode, before calling the allocator: a small request's usable size is known
 * from n, so it is counted down here and, while the countdown stays above
 * zero, the wrapper tail-calls the allocator with no further work. 1: skip recording
 * (counted, or inside the hook); 0: take the slow path. */
static inline int sampled_skip(size_t n) {
  if (!sample_T || n >= SMALL_MAX || (large_T && n >= large_T) || !me.rng) return 0;
  if (me.in_hook) return 1;
  me.sample_left -= (int64_t)usable_of(NULL, n);
  if (me.sample_left > 0) return 1;
  me.counted = 1; /* the slow path must not count it again */
  return 0;
}

/* After the allocator returned p for a request of n bytes (usable size u, from the
 * request for small blocks: what the sampler counts down). Always
 * inlined: the walk starts at the return address and CFA of the function
 * it is in, a wrapper that is usually a tail call from the app's frame, so
 * no frame of ours is walked (one that is gets cut as before). */
static inline __attribute__((always_inline)) void after_alloc(void *p, uint64_t n, uint64_t u) {
  if (me.in_hook || !__atomic_load_n(&on, __ATOMIC_RELAXED)) return; /* in the hook, or stopped */
  if (sample_T && !(large_T && n >= large_T)) { /* large blocks: always recorded */
    if (__builtin_expect(!me.rng, 0)) me.sample_left = next_gap();
    if (!me.counted) me.sample_left -= (int64_t)u; /* malloc/calloc count small ones first */
    me.counted = 0;
    if (me.sample_left > 0) return;
    me.sample_left = next_gap();
  }
  record(p, n, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

static inline void before_free(void *p) {
  /* frees are removed even from inside the hook: the block may be recorded;
   * queued before the block goes back to its allocator (alloc_queue.h: order) */
  if (queued) {
    /* the ticket first: its locked add would otherwise wait for the chunk
     * header's cache miss, which can then overlap with what follows */
    uint64_t t = _hg_rq_reserve(&rq, &rec);
    _hg_rq_fill(&rq, t, HG_RQ_REMOVE, (uintptr_t)p, usable_size(p), 0);
    return;
  }
  _hg_rec_prefetch(&rec, (uintptr_t)p); /* overlaps with the chunk header's miss */
  _hg_rec_remove(&rec, (uintptr_t)p, usable_size(p));
}

static HOT void *malloc_slow(size_t n) {
  void *p = _hg_nx.malloc(n);
  if (p) after_alloc(p, n, usable_of(p, n));
  return p;
}

/* Off, or a sampled block not picked: a tail call into the allocator. */
HOOK_API HOT void *malloc(size_t n) {
  if (__builtin_expect(on, 0) && !sampled_skip(n)) return malloc_slow(n);
  return _hg_nx.malloc(n);
}

static HOT void free_slow(void *p) {
  before_free(p);
  _hg_nx.free(p);
}

/* 1 when p is to be removed from the live map before it is freed. */
static inline int free_records(void *p) {
  return __builtin_expect(track, 0) && p && (!sample_T || _hg_rec_maybe(&rec, (uintptr_t)p));
}

HOOK_API HOT void free(void *p) {
  if (__builtin_expect(_hg_boot_owns(p), 0)) return; /* bootstrap blocks stay */
  if (free_records(p)) {
    free_slow(p);
    return;
  }
  _hg_nx.free(p);
}

HOOK_API HOT void free_sized(void *p, size_t n) {
  if (_hg_boot_owns(p)) return;
  if (free_records(p)) before_free(p);
  if (_hg_nx.free_sized) _hg_nx.free_sized(p, n);
  else _hg_nx.free(p);
}

HOOK_API HOT void free_aligned_sized(void *p, size_t a, size_t n) {
  if (_hg_boot_owns(p)) return;
  if (free_records(p)) before_free(p);
  if (_hg_nx.free_aligned_sized) _hg_nx.free_aligned_sized(p, a, n);
  else _hg_nx.free(p);
}

static HOT void *calloc_slow(size_t k, size_t n) {
  void *p = _hg_nx.calloc(k, n);
  if (p) after_alloc(p, k * n, usable_of(p, k * n));
  return p;
}

HOOK_API HOT void *calloc(size_t k, size_t n) {
  size_t t;
  if (__builtin_expect(on, 0) && (__builtin_mul_overflow(k, n, &t) || !sampled_skip(t))) return calloc_slow(k, n);
  return _hg_nx.calloc(k, n);
}

HOOK_API size_t malloc_usable_size(void *p) {
  if (_hg_boot_owns(p)) return _hg_boot_size(p);
  return _hg_nx.malloc_usable_size(p);
}

/* A bootstrap block grown or shrunk: a new block (recorded as malloc's). */
static void *realloc_boot(void *old, size_t n) {
  void *p = malloc(n);
  if (p) memcpy(p, old, _hg_boot_size(old) < n ? _hg_boot_size(old) : n);
  return p;
}

static HOT void *realloc_impl(void *old, size_t n) {
  if (__builtin_expect(_hg_boot_owns(old), 0)) return realloc_boot(old, n);
  if (!__builtin_expect(track, 0)) return _hg_nx.realloc(old, n);
  if (!old) {
    void *p = _hg_nx.malloc(n);
    if (p) after_alloc(p, n, usable_of(p, n));
    return p;
  }
  uint64_t u0 = usable_size(old);
  if (queued) {
    /* the ticket is taken before the allocator may hand old to another thread */
    uint64_t t = _hg_rq_reserve(&rq, &rec);
    void *p = _hg_nx.realloc(old, n);
    /* realloc(old, 0) frees old and returns NULL; a failure keeps it */
    _hg_rq_fill(&rq, t, p || !n ? HG_RQ_REMOVE : HG_RQ_NOP, (uintptr_t)old, u0, 0);
    if (p) after_alloc(p, n, usable_size(p));
    return p;
  }
  uint32_t id = _hg_rec_remove(&rec, (uintptr_t)old, u0);
  void *p = _hg_nx.realloc(old, n);
  if (!p) {
    if (n && id) _hg_rec_add(&rec, (uintptr_t)old, u0, id); /* old block still live */
    return NULL;
  }
  after_alloc(p, n, usable_size(p));
  return p;
}

HOOK_API HOT void *realloc(void *old, size_t n) { return realloc_impl(old, n); }

HOOK_API HOT void *reallocarray(void *old, size_t k, size_t n) {
  size_t t;
  if (__builtin_mul_overflow(k, n, &t)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_impl(old, t);
}

/* The aligned family: recorded when the function is the next malloc's
 * allocator's own (own: next_alloc.h). */
#define RECORD_ALIGNED(p, n, own)                                                                  \
  do {                                                                                             \
    if (__builtin_expect(on, 0) && (p) && (own)) after_alloc((p), (n), usable_size(p));           \
  } while (0)

HOOK_API HOT void *memalign(size_t a, size_t n) {
  void *p = _hg_nx.memalign(a, n);
  RECORD_ALIGNED(p, n, _hg_nx.own_memalign);
  return p;
}

HOOK_API HOT void *aligned_alloc(size_t a, size_t n) {
  void *p = _hg_nx.aligned_alloc(a, n);
  RECORD_ALIGNED(p, n, _hg_nx.own_aligned_alloc);
  return p;
}

HOOK_API HOT int posix_memalign(void **out, size_t a, size_t n) {
  int e = _hg_nx.posix_memalign(out, a, n);
  if (!e) RECORD_ALIGNED(*out, n, _hg_nx.own_posix_memalign);
  return e;
}

HOOK_API HOT void *valloc(size_t n) {
  void *p = _hg_nx.valloc(n);
  RECORD_ALIGNED(p, n, _hg_nx.own_valloc);
  return p;
}

HOOK_API HOT void *pvalloc(size_t n) {
  void *p = _hg_nx.pvalloc(n);
  RECORD_ALIGNED(p, n, _hg_nx.own_pvalloc);
  return p;
}

/* ---- C++ operators new and delete (Itanium names, 64-bit size_t) ----
 * Each forwards to the next definition (resolved on first use: libstdc++
 * may come later by dlopen). An allocator's own operators (tcmalloc,
 * jemalloc, mimalloc) do not pass through malloc and free, so they are
 * recorded here; libstdc++'s call malloc and free, which record, so they
 * are forwarded as they are. An exception thrown by new passes through the
 * wrapper's frame (.eh_frame; nothing to clean up). */
struct cxx_next {
  void *fn;
  uint8_t own;
};
#define CXX_FN(var, sym, T) ((T)(var.fn ? var.fn : _hg_next_cxx(sym, &var.fn, &var.own)))

#define CXX_NEW(sym, PARAMS, ARGS)                                                                 \
  static struct cxx_next nx_##sym;                                                                 \
  HOOK_API HOT void *sym PARAMS {                                                                  \
    void *(*f) PARAMS = CXX_FN(nx_##sym, #sym, void *(*) PARAMS);                                  \
    if (!__builtin_expect(on, 0) || !nx_##sym.own) return f ARGS;                                 \
    void *p = f ARGS;                                                                              \
    if (p) after_alloc(p, n, usable_size(p));                                                      \
    return p;                                                                                      \
  }
#define CXX_DELETE(sym, PARAMS, ARGS)                                                              \
  static struct cxx_next nx_##sym;                                                                 \
  HOOK_API HOT void sym PARAMS {                                                                   \
    void (*f) PARAMS = CXX_FN(nx_##sym, #sym, void (*) PARAMS);                                    \
    if (nx_##sym.own && free_records(p)) before_free(p);                                           \
    f ARGS;                                                                                        \
  }

typedef struct hg_nothrow hg_nothrow; /* std::nothrow_t, passed by reference */

CXX_NEW(_Znwm, (size_t n), (n))
CXX_NEW(_Znam, (size_t n), (n))
CXX_NEW(_ZnwmRKSt9nothrow_t, (size_t n, const hg_nothrow *t), (n, t))
CXX_NEW(_ZnamRKSt9nothrow_t, (size_t n, const hg_nothrow *t), (n, t))
CXX_NEW(_ZnwmSt11align_val_t, (size_t n, size_t a), (n, a))
CXX_NEW(_ZnamSt11align_val_t, (size_t n, size_t a), (n, a))
CXX_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const hg_nothrow *t), (n, a, t))
CXX_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const hg_nothrow *t), (n, a, t))
CXX_DELETE(_ZdlPv, (void *p), (p))
CXX_DELETE(_ZdaPv, (void *p), (p))
CXX_DELETE(_ZdlPvm, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdaPvm, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const hg_nothrow *t), (p, t))
CXX_DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const hg_nothrow *t), (p, t))
CXX_DELETE(_ZdlPvSt11align_val_t, (void *p, size_t a), (p, a))
CXX_DELETE(_ZdaPvSt11align_val_t, (void *p, size_t a), (p, a))
CXX_DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
CXX_DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
CXX_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const hg_nothrow *t), (p, a, t))
CXX_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const hg_nothrow *t), (p, a, t))

/* fork: no other thread may hold a shard or stack-table lock in the child */
static void fork_prepare(void) {
  memo_lock_take();
  while (__atomic_exchange_n(&rq.lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
  for (unsigned i = 0; i < HG_REC_SHARDS; i++)
    while (__atomic_exchange_n(&rec.shards[i].lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
  while (__atomic_exchange_n(&rec.stack_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void release_table_locks(void) {
  memo_lock_drop();
  __atomic_store_n(&rec.stack_lock, 0, __ATOMIC_RELEASE);
  for (unsigned i = 0; i < HG_REC_SHARDS; i++) __atomic_store_n(&rec.shards[i].lock, 0, __ATOMIC_RELEASE);
}
static void fork_parent(void) {
  release_table_locks();
  __atomic_store_n(&rq.lock, 0, __ATOMIC_RELEASE);
}
/* The child has neither the recorder's thread nor the threads whose pushes
 * were unfinished: their tickets become no-ops; its own producers drain. */
static void fork_child(void) {
  release_table_locks();
  if (queued) _hg_rq_after_fork_child(&rq, &rec); /* still holding rq.lock */
  __atomic_store_n(&rq.lock, 0, __ATOMIC_RELEASE);
}

/* The recorder's own thread: drains the update queue in whole runs
 * (HG_RQ_RUN events, netted per address; whatever is left after a few idle
 * naps), so that each run's map misses overlap and it rarely shares a cache
 * line with a producer; when there is nothing to do it naps longer and longer (50 us up
 * to 3.2 ms: a full ring is drained by its producers anyway). In a fork
 * child it does not exist and producers drain the ring when it fills. */
static void *drainer(void *arg) {
  (void)arg;
  me.in_hook = 1;
  unsigned idle = 0;
  for (;;) {
    uint64_t p = _hg_rq_pending(&rq);
    uint64_t take = idle >= 4 ? p : p - p % HG_RQ_RUN;
    if (take && _hg_rq_drain(&rq, &rec, take)) {
      idle = 0;
      continue;
    }
    idle++; /* nothing to do, the lock taken, or a capture's pause */
    struct timespec ts = {0, 50000L << (idle < 12 ? idle / 2 : 6)};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Full tracking: the queue and its thread (HEAPGRAPH_STACKS_QUEUE=0: every
 * update on the allocating thread). Without the thread, producers drain. */
static void start_queue(void) {
  const char *e = getenv("HEAPGRAPH_STACKS_QUEUE");
  if (sample_T || (e && !strcmp(e, "0")) || _hg_rq_init(&rq, &rec, 16)) return;
  rec.queue = &rq;
  queued = 1;
  pthread_t t;
  pthread_attr_t a;
  if (pthread_attr_init(&a)) return;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64u << 10);
  if (pthread_create(&t, &a, drainer, NULL) == 0) pthread_setname_np(t, "heapgraph-rec");
  pthread_attr_destroy(&a);
}

int hg_stacks_start(const struct hg_stacks_options *o) {
  if (__atomic_load_n(&track, __ATOMIC_ACQUIRE)) return _hg_stacks_resume(&rec, &on); /* after a stop */
  me.in_hook = 1; /* what we allocate here is not the app's */
  int rc = _hg_stacks_setup(&rec, o, 0); /* sizes: malloc_usable_size at capture (alloc_heap.c) */
  if (!rc) {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    uintptr_t warm[4];
    unw_backtrace((void **)warm, 4); /* libunwind's own first-use set-up, here */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    sample_T = rec.sample_bytes;
    large_T = _hg_large_threshold;
#if defined(__x86_64__)
    const char *u = getenv("HEAPGRAPH_UNWIND");
    use_cache = !(u && !strcmp(u, "libunwind"));
#endif
    _hg_rec_unwinder = use_cache ? "libunwind+rule-cache" : "libunwind";
    if (use_cache && pthread_key_create(&memo_key, memo_release) == 0) memo_ready = 1;
    start_queue();
    __atomic_store_n(&_hg_rec_global, &rec, __ATOMIC_RELEASE);
    __atomic_store_n(&track, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&on, 1, __ATOMIC_RELEASE);
  }
  me.in_hook = 0;
  return rc;
}

/* New allocations pass unrecorded from now on; frees still leave the live
 * map (track stays 1), so the blocks recorded before keep exact stacks. */
int hg_stacks_stop(void) { return _hg_stacks_halt(&rec, &on); }

#endif /* HG_NO_HOOK */

static uint64_t env_u64(const char *name, uint64_t def) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end == 'k' || *end == 'K') v <<= 10, end++;
  else if (*end == 'm' || *end == 'M') v <<= 20, end++;
  else if (*end == 'g' || *end == 'G') v <<= 30, end++;
  if (*end) {
    fprintf(stderr, "heapgraph: ignoring %s='%s' (not a number)\n", name, s);
    return def;
  }
  return v;
}

/* Runs before the agent's constructor (agent.c), so blocks the program
 * allocates from its first constructor on are recorded. In an ASan build it
 * only says that stacks are not recorded. */
__attribute__((constructor(101))) static void stacks_env(void) {
#ifndef HG_NO_HOOK
  _hg_hook_malloc = (void *)malloc;
  _hg_next_resolve();
  _hg_hook_next_malloc = (void *)_hg_nx.malloc;
  _hg_hook_usable = _hg_nx.own_usable;
  _hg_hook_allocator = _hg_nx.name;
#endif
  const char *s = getenv("HEAPGRAPH_STACKS");
  if (!s || !*s || !strcmp(s, "0")) return;
  struct hg_stacks_options o;
  hg_stacks_options_init(&o);
  o.max_frames = (uint32_t)env_u64("HEAPGRAPH_STACK_FRAMES", o.max_frames);
  o.budget_bytes = env_u64("HEAPGRAPH_STACKS_BUDGET", o.budget_bytes);
  o.sample_bytes = env_u64("HEAPGRAPH_SAMPLE_BYTES", 0);
  o.large_alloc_bytes = env_u64("HEAPGRAPH_LARGE_ALLOC", 0);
  int rc = hg_stacks_start(&o);
  if (rc) fprintf(stderr, "heapgraph: allocation stacks not recorded: %s\n", hg_error_string(rc));
}
