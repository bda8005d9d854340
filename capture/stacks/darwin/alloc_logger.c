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
 * block. A logger already installed (MallocStackLogging's, a debugger's) is
 * kept and called first. The symbol is looked up with dlsym, so nothing
 * links against a private libmalloc name.
 *
 * Stacks: a frame-pointer walk (arm64 always keeps frame pointers; x86_64
 * Apple toolchains do by default), bounded by the thread's stack, pointer
 * authentication bits stripped. Bytes: malloc_size() of the block. For a
 * realloc the old block is already gone when the logger runs, so its bytes
 * are subtracted as the new block's (counts stay exact).
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

#include "capture/stacks/alloc_large.h"
#include "capture/stacks/alloc_record.h"
#include "heapgraph.h"

typedef void(hg_malloc_logger_t)(uint32_t type, uintptr_t arg1, uintptr_t arg2, uintptr_t arg3,
                                 uintptr_t result, uint32_t num_hot_frames_to_skip);

/* libmalloc's stack_logging.h */
#define LOG_ALLOCATE 2u
#define LOG_DEALLOCATE 4u

static struct hg_rec rec;
static hg_malloc_logger_t **logger_slot;
static hg_malloc_logger_t *prev;
static uint64_t large_T;
static __thread int in_hook;
static __thread int64_t sample_left;
static __thread uint64_t rng;

static uintptr_t strip(uintptr_t pc) {
#if defined(__arm64__) || defined(__aarch64__)
  return pc & 0x0000000fffffffffull; /* pointer authentication / top-byte bits */
#else
  return pc;
#endif
}

static uint32_t fp_walk(uintptr_t *out, uint32_t max) {
  pthread_t self = pthread_self();
  uintptr_t hi = (uintptr_t)pthread_get_stackaddr_np(self);
  uintptr_t lo = hi - pthread_get_stacksize_np(self);
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
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

static void record(uintptr_t p, uint64_t n, uint32_t skip) {
  uint64_t size = malloc_size((const void *)p);
  if (!size) return; /* not a block of a registered zone */
  if (rec.sample_bytes && !(large_T && n >= large_T)) {
    if (!rng) sample_left = _hg_rec_gap(&rng, rec.sample_bytes); /* this thread's first gap */
    sample_left -= (int64_t)size;
    if (sample_left > 0) return;
    /* exponential gaps, as on Linux: the weights of _hg_rec_weight hold */
    sample_left = _hg_rec_gap(&rng, rec.sample_bytes);
  }
  uintptr_t f[HG_REC_MAX_FRAMES + 16];
  uint32_t k = fp_walk(f, rec.max_frames + 2 + skip);
  uint32_t cut = 2 + skip < k ? 2 + skip : k; /* fp_walk's caller and the logger */
  uint32_t id = _hg_rec_intern(&rec, f + cut, k - cut);
  if (id) _hg_rec_add(&rec, p, size, id);
  if (large_T && n >= large_T) _hg_large_push(p, n, id, f + cut, k - cut);
}

static void logger(uint32_t type, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t result,
                   uint32_t skip) {
  if (prev) prev(type, a1, a2, a3, result, skip);
  if (in_hook) return;
  in_hook = 1;
  if ((type & (LOG_ALLOCATE | LOG_DEALLOCATE)) == (LOG_ALLOCATE | LOG_DEALLOCATE)) { /* realloc */
    if (a2) _hg_rec_remove(&rec, a2, result ? malloc_size((const void *)result) : 0);
    if (result) record(result, a3, skip);
  } else if (type & LOG_DEALLOCATE) {
    if (a2) _hg_rec_remove(&rec, a2, malloc_size((const void *)a2));
  } else if ((type & LOG_ALLOCATE) && result) {
    record(result, a2, skip);
  }
  in_hook = 0;
}

int hg_stacks_start(const struct hg_stacks_options *o) {
  logger_slot = (hg_malloc_logger_t **)dlsym(RTLD_DEFAULT, "malloc_logger");
  if (!logger_slot) return HG_EUNSUPPORTED;
  in_hook = 1;
  int rc = _hg_stacks_setup(&rec, o);
  if (!rc) {
    large_T = _hg_large_threshold;
    _hg_rec_unwinder = "frame-pointer";
    __atomic_store_n(&_hg_rec_global, &rec, __ATOMIC_RELEASE);
    prev = *logger_slot; /* chain whoever was there */
    __atomic_store_n(logger_slot, logger, __ATOMIC_RELEASE);
  }
  in_hook = 0;
  return rc;
}

#endif /* __APPLE__ */
