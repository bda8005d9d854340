/*
 * linux.h — names shared between the files of the Linux capture backend
 * (capture/linux/ files). Nothing here is used by the portable files.
 */
#ifndef HG_CAPTURE_LINUX_H
#define HG_CAPTURE_LINUX_H

#include "capture/internal.h"

/* threads.c: the persistent slot table (mmap) for own-memory marking. */
void _hg_linux_slots_range(uint64_t *lo, uint64_t *hi);

/* glibc_detect.c: what the prepare step found, used by glibc_heap.c. */
struct hg_glibc {
  int ok;                   /* layout understood                            */
  uint64_t main_arena;
  const char *layout;       /* which malloc_state layout matched            */
  /* malloc_state layout (nfastbins 0: no fastbins, glibc 2.43+) */
  uint32_t off_fastbins, nfastbins, off_top, off_bins, off_next, sizeof_state;
  int safe_linking;         /* tcache/fastbin next pointers are protected   */
  uint64_t tcache_key;      /* value found at offset 8 of tcache entries    */
  uint64_t heap_max;        /* HEAP_MAX_SIZE (alignment of arena heaps)     */
  uint64_t tcache_chunk;    /* chunk size of tcache_perthread_struct (0: none;
                               it may be 16 bytes more) */
  uint32_t tcache_bins;     /* TCACHE_MAX_BINS: 64, or 76 (2.43: 12 large)  */
  int mmap_shape;           /* HG_MMAP_*: how an mmapped chunk's size reads */
};
/* Mmapped chunk headers: size is the whole mapping (usable = size - 16), or
 * the mapping less the header (2.43+, usable = size - 8); ANY when the probe
 * got no mmapped chunk (then each chunk's size says which: the two never
 * agree on a page-sized mapping). */
enum { HG_MMAP_ANY = 0, HG_MMAP_WHOLE = 1, HG_MMAP_LESS_HDR = 2 };
extern struct hg_glibc _hg_glibc;

/* arena_lock.c: takes every arena lock (glibc's order, bounded wait until
 * deadline; 0, or -1 with none held); gives them back; whether an arena's
 * lock is one we hold. */
int _hg_linux_arenas_lock(uint64_t deadline);
void _hg_linux_arenas_unlock(void);
int _hg_linux_arena_held(uint64_t arena);

/* Raw directory read without malloc: calls fn for each numeric entry. */
int _hg_linux_list_tids(void (*fn)(void *arg, uint64_t tid), void *arg);

/* prefault.c (fork mode, in the child): the helper thread touches one word
 * per page of the given ranges (pairs lo, hi at ranges[i*stride]) so the
 * walk does not pay the child's first-access cost; the ranges must stay
 * valid until _hg_prefault_stop(), which joins it and returns the pages
 * touched. A no-op outside fork mode or without a helper. */
void _hg_prefault_start(struct hg_cap *c, const uint64_t *ranges, size_t n, size_t stride);
uint64_t _hg_prefault_stop(struct hg_cap *c);
/* Before _hg_prefault_start: once its pages are touched the helper also
 * reads /proc/self/smaps into buf (cap bytes), so the region figures need
 * not hold up the walk (maps.c). After _hg_prefault_stop: the bytes read,
 * or -1 when the helper did not run or the file did not fit. */
void _hg_prefault_want_smaps(char *buf, size_t cap);
long _hg_prefault_smaps(void);
/* A system call with up to four arguments, without libc (no errno): what a
 * helper thread may use. -errno on failure. */
long _hg_linux_syscall4(long nr, long a, long b, long c, long d);
/* The last helper's placement: the CPU its creator ran on when starting
 * it, and the one it ran on once moved off that CPU (helper.c); -1 when
 * not known or when no helper ran. For tests. */
void _hg_linux_helper_cpus(long *creator, long *helper);

#endif
