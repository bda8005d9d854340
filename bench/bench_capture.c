/*
 * bench_capture.c — capture cost on a synthetic heap, and the same heap
 * through LeakSanitizer's recoverable leak check (built with
 * -DHG_BENCH_LSAN=1 -fsanitize=leak).
 *
 *   bench_capture BLOCKS OUTDIR    prints one line "key=value …" per mode
 *   (HG_BENCH_MODE=fork or suspend runs only that mode, HG_BENCH_REPS=N takes
 *   the best of N captures — or LSan checks — instead of 2: for profiling
 *   and A/B runs; HG_BENCH_HELPERS=N sets hg_options.helpers)
 *
 * The heap (issue 33's workload): BLOCKS blocks in random order of sizes,
 * 99 % of 16..400 bytes (uniform) and 1 % of 4 KiB (~290 MB at 1 M blocks
 * with glibc's headers); each holds pointers to two earlier blocks (random,
 * and the one just before) in its first two words, the rest zero; all
 * reachable from one array.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HG_BENCH_LSAN
#include "heapgraph.h"
#else
#include <sanitizer/lsan_interface.h>
#endif

/* exported and volatile: the stores must stay visible to both scanners */
void **volatile blocks;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void build(size_t n) {
  blocks = malloc(n * sizeof *blocks);
  unsigned seed = 12345;
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t size = (seed >> 8) % 100 == 0 ? 4096 : 16 + (seed >> 4) % 385;
    void **b = malloc(size);
    memset(b, 0, size);
    seed = seed * 1103515245u + 12345u;
    b[0] = i ? blocks[(seed >> 4) % i] : NULL;
    b[1] = i ? blocks[i - 1] : NULL;
    blocks[i] = b;
  }
}

__attribute__((unused)) static double bare_fork_ms(void) {
  double best = 1e9;
  for (int k = 0; k < 3; k++) {
    double t0 = now();
    pid_t p = fork();
    if (p == 0) _exit(0);
    double t1 = now();
    waitpid(p, NULL, 0);
    if (t1 - t0 < best) best = t1 - t0;
  }
  return best * 1e3;
}

/* The floor of any fork-mode capture here: a forked child reading one word
 * of every block (so every heap page once), in ms. On this project's VM
 * the first touch of each page in a child costs ~15 us (its page tables
 * are built anew), against ~0.1 us on the second touch. */
__attribute__((unused)) static double child_touch_ms(size_t n) {
  int fd[2];
  double ms = -1;
  if (pipe(fd) != 0) return ms;
  pid_t p = fork();
  if (p == 0) {
    double t0 = now();
    volatile uintptr_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += *(volatile uintptr_t *)blocks[i];
    double t = (now() - t0) * 1e3;
    if (write(fd[1], &t, sizeof t) != (ssize_t)sizeof t) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  if (p > 0 && read(fd[0], &ms, sizeof ms) != (ssize_t)sizeof ms) ms = -1;
  close(fd[0]);
  if (p > 0) waitpid(p, NULL, 0);
  return ms;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  build(n);
#ifdef HG_BENCH_LSAN
  (void)dir;
  double best = 1e9;
  int reps = getenv("HG_BENCH_REPS") ? atoi(getenv("HG_BENCH_REPS")) : 2;
  for (int k = 0; k < reps || k < 1; k++) {
    double t0 = now();
    __lsan_do_recoverable_leak_check();
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("lsan blocks=%zu check_ms=%.1f\n", n, best * 1e3);
#else
  printf("fork blocks=%zu bare_fork_ms=%.2f child_touch_ms=%.1f\n", n, bare_fork_ms(),
         child_touch_ms(n));
  static const char *names[] = {"fork", "suspend"};
  const char *only = getenv("HG_BENCH_MODE"); /* fork|suspend: profile one mode */
  for (int m = 0; m < 2; m++) {
    if (only && strcmp(only, names[m]) != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/bench_capture_%zu_%s.hgsnap", dir, n, names[m]);
    struct hg_options o;
    struct hg_capture_stats st, best;
    memset(&best, 0, sizeof best);
    best.total_ns = UINT64_MAX;
    int reps = getenv("HG_BENCH_REPS") ? atoi(getenv("HG_BENCH_REPS")) : 2;
    for (int k = 0; k < reps || k < 1; k++) {
      hg_options_init(&o);
      o.mode = m ? HG_MODE_SUSPEND : HG_MODE_FORK;
      if (getenv("HG_BENCH_HELPERS")) o.helpers = (uint32_t)atoi(getenv("HG_BENCH_HELPERS"));
      o.stats = &st;
      int rc = hg_capture(path, &o);
      if (rc) {
        fprintf(stderr, "capture: %s\n", hg_error_string(rc));
        return 1;
      }
      if (st.total_ns < best.total_ns) best = st;
    }
    printf("%s blocks=%zu nodes=%llu edges=%llu total_ms=%.1f pause_ms=%.2f walk_ms=%.1f "
           "scan_ms=%.1f write_ms=%.1f scratch_bytes=%llu scratch_per_block=%.2f file_bytes=%llu\n",
           names[m], n, (unsigned long long)best.nodes, (unsigned long long)best.edges,
           best.total_ns / 1e6, best.pause_ns / 1e6, best.walk_ns / 1e6, best.scan_ns / 1e6,
           best.write_ns / 1e6, (unsigned long long)best.scratch_peak_bytes,
           (double)best.scratch_peak_bytes / (double)n, (unsigned long long)best.file_bytes);
    if (!getenv("HG_BENCH_KEEP")) unlink(path); /* bench_compress.sh keeps it */
  }
#endif
  return 0;
}
