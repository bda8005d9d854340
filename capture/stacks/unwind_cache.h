/*
 * unwind_cache.h — the interposer's cached .eh_frame unwinder (x86_64 Linux;
 * see unwind_cache.c). Not thread-unsafe, never calls malloc except through
 * libunwind/pthread_getattr_np on a cache miss (the caller's re-entrancy
 * guard must be set).
 */
#ifndef HG_UNWIND_CACHE_H
#define HG_UNWIND_CACHE_H

#include <stdint.h>

/* Return addresses of the caller's stack, innermost first (out[0] is the
 * return address into the caller), at most max. Returns the count. */
int _hg_unwind_cached(uintptr_t *out, int max);

#endif
