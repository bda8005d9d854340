/*
 * ptrhash.h — the one pointer hash of the library's hash tables and caches
 * (cxxabi's type_info set, the C++ and Objective-C classifiers' caches, the
 * Objective-C class table): Fibonacci hashing of an 8-byte aligned address.
 * Header only, no libc: safe while the heap is frozen and on the scan's
 * helper thread.
 */
#ifndef HG_PTRHASH_H
#define HG_PTRHASH_H

#include <stdint.h>

/* A bits-bit hash (1 <= bits <= 32) of address p; its low 3 bits, zero in
 * aligned pointers, do not count. */
static inline uint32_t _hg_ptr_hash(uint64_t p, uint32_t bits) {
  return (uint32_t)(((p >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

#endif
