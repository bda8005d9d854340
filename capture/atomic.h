/*
 * atomic.h — the few atomic operations the capture engine uses, on 32-bit
 * words shared between the capturing thread and the scan's helper thread
 * (scan_pipe.c), named for their memory order as mimalloc's atomic.h does.
 * Wraps the compiler's __atomic builtins: no libc, safe while the heap is
 * frozen and on the helper thread.
 */
#ifndef HG_CAPTURE_ATOMIC_H
#define HG_CAPTURE_ATOMIC_H

#include <stdint.h>

/* Acquire load: what the other thread wrote before its release store of
 * *p is visible after this. */
static inline uint32_t _hg_atomic_load_acquire(const volatile uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
/* Release store: what this thread wrote before is visible to an acquire
 * load that sees v. */
static inline void _hg_atomic_store_release(volatile uint32_t *p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
/* Sequentially consistent load and store: for the sleep/wake handshakes,
 * where each side stores one flag and then loads the other's (a release /
 * acquire pair does not order a store before a later load). */
static inline uint32_t _hg_atomic_load(const volatile uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
static inline void _hg_atomic_store(volatile uint32_t *p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* One polling step of a spin wait. */
static inline void _hg_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("pause");
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

#endif
