/*
 * alloc_logger.c — allocation stacks on Darwin (iOS, macOS): libmalloc's
 * malloc_logger hook feeds the portable recorder (capture/alloc_record.c) and
 * the large-allocation monitor (capture/alloc_large.c).
 *
 * libmalloc calls malloc_logger(type, arg1, arg2, arg3, result, skip) from its
 * public entry points (malloc_zone_malloc/calloc/valloc/realloc/free/
 * memalign, batch_free): ALLOCATE with arg2 = size and result = block;
 * DEALLOCATE with arg2 = block, before the zone frees it; realloc as
 * ALLOCATE|DEALLOCATE with arg2 = old block, arg3 = new size, result = new
 * block. What each call does to the live map is portable
 * (capture/darwin_portable/mlog_event.c, which cites libmalloc's lines).
 * A logger already installed (MallocStackLogging's, a debugger's) is
 * kept and called first; ours goes in and out of the slot with a
 * compare-and-swap (mlog.c) and stays there: after hg_stacks_stop it records
 * no new block but still removes the frees of recorded ones, so those keep
 * exact stacks (a restart only sets the flag again). The symbol is looked up
 * with dlsym, so nothing links against a private libmalloc name.
 *
 * Per-thread state (in the hook, the sampling gap, its random state) is in
 * three pthread keys, never in `__thread` variables: a thread's first
 * touch of a thread-local variable makes dyld malloc its buffer, which
 * calls this hook, which touches the variable again — without end
 * (mlog.c gives the source lines). pthread_getspecific/setspecific read
 * and write fixed slots of the pthread_t and never allocate.
 *
 * Stacks: a frame-pointer walk (arm64 always keeps frame pointers; x86_64
 * Apple toolchains do by default), bounded by the thread's stack, pointer
 * authentication bits stripped. Bytes: malloc_size() of a new block, kept
 * in the live map (hg_rec_config.sizes): a free or realloc takes the old
 * block's size from there (no zone lookup), and a capture lists the blocks
 * of zones it cannot walk with their sizes (zone_recorded.c).
 *
 * Compiled by `make darwin`; cannot run on this project's Linux machines.
 */
#if defined(__APPLE__)

#include <dlfcn.h>
#include <malloc/malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/darwin/darwin.h"
#include "capture/darwin_portable/darwin_portable.h"
#include "capture/stacks/alloc_large.h"
#include "capture/stacks/alloc_record.h"
#include "heapgraph.h"

typedef void(hg_malloc_logger_t)(uint32_t type, uintptr_t arg1, uintptr_t arg2, uintptr_t arg3,
                                 uintptr_t result, uint32_t num_hot_frames_to_skip);

static struct hg_rec rec;
static hg_malloc_logger_t **logger_slot;
static hg_malloc_logger_t *prev;
static uint64_t large_T;
static int enabled;                      /* 1: record new blocks (0 after stop) */
static int installed;                    /* the logger is chained in   */
static pthread_key_t keys[HG_MLOG_NSLOTS];
static int have_keys;

static uintptr_t tsd_get(void *ctx, unsigned slot) {
  (void)ctx;
  return (uintptr_t)pthread_getspecific(keys[slot]);
}

static void tsd_set(void *ctx, unsigned slot, uintptr_t v) {
  (void)ctx;
  pthread_setspecific(keys[slot], (const void *)v);
}

static const struct hg_mlog_tls TSD = {tsd_get, tsd_set, NULL};

static uintptr_t strip(uintptr_t pc) {
#if defined(__arm64__) || defined(__aarch64__)
  return pc & 0x0000000fffffffffull; /* pointer authentication / top-byte bits */
#else
  return pc;
#endif
}

/* Return addresses from the frame record at fp outwards. */
static uint32_t fp_walk(uintptr_t fp, uintptr_t *out, uint32_t max) {
  pthread_t self = pthread_self();
  uintptr_t hi = (uintptr_t)pthread_get_stackaddr_np(self);
  uintptr_t lo = hi - pthread_get_stacksize_np(self);
  uint32_t n = 0;
  while (n < max && fp >= lo && fp + 16 <= hi && !(fp & 7)) {
    uintptr_t next = ((const uintptr_t *)fp)[0], ret = strip(((const uintptr_t *)fp)[1]);
    if (!ret) break;
    out[n++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

static uint64_t block_size(void *ctx, uintptr_t p) {
  (void)ctx;
  return malloc_size((const void *)p);
}

/* ctx: the logger's frame: the walk starts at its return into libmalloc,
 * however the calls in between were inlined. */
static void record(void *ctx, uintptr_t p, uint64_t n, uint64_t size, uint32_t skip) {
  if (rec.sample_bytes && !(large_T && n >= large_T) &&
      !_hg_mlog_sampled(&TSD, rec.sample_bytes, size))
    return;
  uintptr_t f[HG_REC_MAX_FRAMES + 16];
  if (skip > 16) skip = 16; /* libmalloc passes 0 (malloc.c); f has room for 16 */
  uint32_t k = fp_walk((uintptr_t)ctx, f, rec.max_frames + skip);
  uint32_t cut = skip < k ? skip : k; /* the hot frames libmalloc asks to skip */
  uint32_t id = _hg_rec_intern(&rec, f + cut, k - cut);
  if (id) _hg_rec_add(&rec, p, size, id);
  if (large_T && n >= large_T) _hg_large_push(p, n, id, f + cut, k - cut);
}

static void logger(uint32_t type, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t result,
                   uint32_t skip) {
  hg_malloc_logger_t *p = __atomic_load_n(&prev, __ATOMIC_ACQUIRE);
  if (p) p(type, a1, a2, a3, result, skip);
  if (!_hg_mlog_enter(&TSD)) return;
  struct hg_mlog_sink sink = {block_size, record, __builtin_frame_address(0)};
  _hg_mlog_event(&rec, __atomic_load_n(&enabled, __ATOMIC_ACQUIRE), type, a2, a3, result, skip, &sink);
  _hg_mlog_leave(&TSD);
}

int hg_stacks_start(const struct hg_stacks_options *o) {
  if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) return _hg_stacks_resume(&rec, &enabled); /* after a stop */
  logger_slot = (hg_malloc_logger_t **)dlsym(RTLD_DEFAULT, "malloc_logger");
  if (!logger_slot) return HG_EUNSUPPORTED;
  if (!have_keys) { /* pthread_key_create allocates nothing (mlog.c) */
    for (unsigned i = 0; i < HG_MLOG_NSLOTS; i++)
      if (pthread_key_create(&keys[i], NULL) != 0) return HG_ENOMEM;
    have_keys = 1;
  }
  /* this thread is "in the hook" while the tables are set up: their own
   * allocations (there are none: mmap) would not be recorded */
  int outer = _hg_mlog_enter(&TSD);
  int rc = _hg_stacks_setup(&rec, o, 1); /* sizes: malloc_size now, not while frozen */
  if (!rc) {
    large_T = _hg_large_threshold;
    _hg_rec_unwinder = "frame-pointer";
    __atomic_store_n(&_hg_rec_global, &rec, __ATOMIC_RELEASE);
    __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
    _hg_mlog_chain((void **)logger_slot, (void *)logger, (void **)&prev); /* chains whoever was there */
    __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
  }
  if (outer) _hg_mlog_leave(&TSD);
  return rc;
}

/* The logger stays chained (frees of recorded blocks still leave the map). */
int hg_stacks_stop(void) { return _hg_stacks_halt(&rec, &enabled); }

#endif /* __APPLE__ */
