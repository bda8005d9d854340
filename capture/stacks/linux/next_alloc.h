/*
 * next_alloc.h — the allocator the interposer forwards to (Linux): for each
 * function of the malloc family, the next definition in lookup order
 * (dlsym(RTLD_NEXT)), i.e. the one that would have served the call without
 * the interposer: glibc's, or jemalloc's, tcmalloc's, mimalloc's when one is
 * linked or preloaded. Resolved on the first call (or by the interposer's
 * constructor), before any allocator is initialised; what is allocated while
 * resolving (dlsym's own calloc on older glibc, other threads meanwhile)
 * comes from a small static bootstrap arena whose blocks are recognised on
 * free, realloc and malloc_usable_size (next_alloc.c).
 */
#ifndef HG_NEXT_ALLOC_H
#define HG_NEXT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

struct _hg_next {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void *);
  void (*free_sized)(void *, size_t);                 /* NULL: not defined */
  void (*free_aligned_sized)(void *, size_t, size_t); /* NULL: not defined */
  /* the usable size of a block of the next malloc's allocator, NULL when
   * that allocator has none (then blocks are recorded with 0 bytes) */
  size_t (*own_usable)(void *);
  /* 1 when the function is the next malloc's allocator's own (same object),
   * so its blocks are recorded; 0: forwarded unrecorded (it is another
   * object's, e.g. glibc's pvalloc next to jemalloc, whose blocks are not
   * this allocator's) */
  uint8_t own_memalign, own_aligned_alloc, own_posix_memalign, own_valloc, own_pvalloc;
  uint8_t glibc;        /* the next malloc is glibc's (its chunk layout is known) */
  const char *name;     /* file of the next malloc (for messages)             */
};

/* Filled by _hg_next_resolve; before that every pointer is a bootstrap
 * function that resolves first (so the fast path has no extra branch). */
extern struct _hg_next _hg_nx;

/* Resolves every pointer once (thread-safe). 0: resolved; 1: resolution is
 * under way (on this thread: a call made by dlsym; or on another thread) —
 * the caller uses the bootstrap arena. */
int _hg_next_resolve(void);

/* The bootstrap arena: 16-byte aligned blocks with their size in front,
 * never reused, never given back. */
#define HG_BOOT_BYTES (64u << 10)
extern char _hg_boot[HG_BOOT_BYTES];
void *_hg_boot_alloc(size_t n, size_t align); /* NULL when full */
static inline int _hg_boot_owns(const void *p) {
  return (uintptr_t)p - (uintptr_t)_hg_boot < HG_BOOT_BYTES;
}
static inline size_t _hg_boot_size(const void *p) { return ((const size_t *)p)[-2]; }

/* The C++ operator the interposer wraps (`sym`, e.g. "_Znwm"), resolved on
 * first use (libstdc++ may be loaded later by dlopen): *fn is set, and
 * *own to 1 when it is the next malloc's allocator's own operator (its
 * blocks do not pass through malloc/free, so the wrapper records them). */
void *_hg_next_cxx(const char *sym, void **fn, uint8_t *own);

#endif
