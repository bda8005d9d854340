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
  /* malloc_state layout */
  uint32_t off_fastbins, nfastbins, off_top, off_bins, off_next, sizeof_state;
  int safe_linking;         /* tcache/fastbin next pointers are protected   */
  uint64_t tcache_key;      /* value found at offset 8 of tcache entries    */
  int key_is_struct;        /* glibc < 2.34: key is the tcache struct       */
  uint64_t heap_max;        /* HEAP_MAX_SIZE (alignment of arena heaps)     */
  uint64_t tcache_chunk;    /* chunk size of tcache_perthread_struct        */
  uint32_t tcache_bins;     /* TCACHE_MAX_BINS                              */
};
extern struct hg_glibc _hg_glibc;

/* Raw directory read without malloc: calls fn for each numeric entry. */
int _hg_linux_list_tids(void (*fn)(void *arg, uint64_t tid), void *arg);

#endif
