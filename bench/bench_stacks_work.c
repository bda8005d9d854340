/*
 * bench_stacks_work.c — the malloc-heavy workload of `make bench-stacks`
 * (bench/bench_stacks.sh): ITER mallocs and as many frees through call
 * chains 4-11 frames deep (8 distinct sites), sizes 16-512 bytes, LIVE
 * blocks kept alive in a ring (the oldest freed as a new one comes). Built
 * with -O2 and no frame pointers, like Debian binaries. Never linked with
 * libheapgraph: it runs plain, under heaptrack and under the preloaded
 * libheapgraph.so. Prints its own run time on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void **ring;
static size_t live, at;
static uint64_t rng = 88172645463325252ull;

static inline uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

__attribute__((noinline)) static void leaf(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  *(volatile char *)p = 1;
  free(ring[at]);
  ring[at] = p;
  at = at + 1 == live ? 0 : at + 1;
}

__attribute__((noinline)) static void depth(int d, size_t n) {
  if (d == 0) {
    leaf(n);
    return;
  }
  depth(d - 1, n);
  __asm__ volatile("" ::: "memory"); /* no tail call: every level stays a frame */
}

__attribute__((noinline)) static void site(unsigned s, size_t n) { depth((int)s, n); }

int main(int argc, char **argv) {
  size_t iter = argc > 1 ? strtoull(argv[1], NULL, 0) : 4000000;
  live = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000;
  ring = calloc(live, sizeof *ring);
  if (!ring) return 1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (size_t i = 0; i < iter; i++) {
    uint64_t r = next();
    site((unsigned)(r & 7), 16 + (size_t)((r >> 8) % 497));
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "work_ms=%.1f\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  return 0;
}
