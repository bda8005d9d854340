/*
 * busy_alloc.c — captures while the allocator is busy (issue 18, item 1):
 * one thread grows and shrinks a block with realloc so that glibc copies
 * megabytes inside its arena (holding the arena lock for the memcpy), one
 * loops malloc/free/malloc_trim(0) (which takes every arena lock in turn),
 * and one sleeps in nanosleep and poll, counting EINTR. COUNT captures per
 * mode (fork and suspend) run back to back.
 *
 * Counted: captures that succeed (must be >= 99.5 % overall), each within
 * 2 s, no wrong heap walk (every one of 2,000 planted blocks is a node of
 * its usable size, heap_errors 0, a consistent graph), and the EINTRs the
 * sleeper saw per capture. The last lines print the figures `make bench`
 * shows.
 *
 *   busy_alloc [COUNT] [DIR]     COUNT captures per mode (default 60)
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

#define PLANTED 2000

static atomic_int stop;
static atomic_long reallocs, trims, eintr, sleeps;
static void *planted[PLANTED];

static void *realloc_copier(void *arg) {
  (void)arg;
  char *p = malloc(64 << 10);
  void *wall = NULL;
  size_t size = 64 << 10;
  while (!atomic_load(&stop)) {
    /* a block right after p keeps realloc from growing in place: it copies */
    free(wall);
    wall = malloc(32);
    size = size >= (6u << 20) ? (64u << 10) : size * 2;
    char *q = realloc(p, size);
    if (q) {
      p = q;
      p[size - 1] = 1;
    }
    atomic_fetch_add(&reallocs, 1);
  }
  free(wall);
  free(p);
  return NULL;
}

static void *trimmer(void *arg) {
  (void)arg;
  void *v[64];
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 64; i++) v[i] = malloc(16 + (size_t)i * 512);
    for (int i = 0; i < 64; i++) free(v[i]);
    malloc_trim(0);
    atomic_fetch_add(&trims, 1);
  }
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    struct timespec ts = {0, 2000000};
    if (nanosleep(&ts, NULL) != 0 && errno == EINTR) atomic_fetch_add(&eintr, 1);
    if (poll(NULL, 0, 2) < 0 && errno == EINTR) atomic_fetch_add(&eintr, 1);
    atomic_fetch_add(&sleeps, 2);
  }
  return NULL;
}

static int count = 60;
static char dir[256] = "/tmp";
static int total_ok, total_runs;

static uint64_t meta_num(const struct hg_graph *g, const char *key) {
  for (size_t i = 0; i < g->meta.capture_count; i++)
    if (!strcmp(g->meta.capture[i].key, key)) return g->meta.capture[i].value;
  return UINT64_MAX;
}

/* Every planted block a node of its usable size, a consistent graph. */
static int graph_right(const struct hg_graph *g) {
  uint64_t heap_errors = meta_num(g, "heap_errors"); /* zero numbers are not written */
  if (!g->meta.heap_status || strcmp(g->meta.heap_status, "ok") ||
      (heap_errors != 0 && heap_errors != UINT64_MAX))
    return 0;
  for (int i = 0; i < PLANTED; i++) {
    int64_t n = hg_graph_find(g, (uint64_t)(uintptr_t)planted[i]);
    if (n < 0 || g->node_addr[n] != (uint64_t)(uintptr_t)planted[i] ||
        g->node_size[n] != malloc_usable_size(planted[i]))
      return 0;
  }
  for (uint32_t e = 0; e < g->edge_count; e++)
    if (g->edge_target[e] >= g->node_count) return 0;
  for (uint32_t n = 1; n < g->node_count; n++)
    if (g->node_addr[n] < g->node_addr[n - 1] + g->node_size[n - 1]) return 0;
  return 1;
}

static void run_mode(uint32_t mode, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/hg_busy_%d_%s.hgsnap", dir, (int)getpid(), name);
  int ok = 0, busy = 0, failed = 0, slow = 0, wrong = 0;
  uint64_t max_ns = 0, sum_ns = 0, retries = 0;
  long eintr0 = atomic_load(&eintr);
  for (int i = 0; i < count; i++) {
    struct hg_options o;
    struct hg_capture_stats st;
    hg_options_init(&o);
    o.mode = mode;
    o.stats = &st;
    int rc = hg_capture(path, &o);
    retries += st.busy_retries;
    if (st.total_ns > max_ns) max_ns = st.total_ns;
    sum_ns += st.total_ns;
    if (rc == HG_EBUSY) {
      busy++;
      continue;
    }
    if (rc) {
      if (failed++ < 3) fprintf(stderr, "%s: capture %d: %s\n", name, i, hg_error_string(rc));
      continue;
    }
    if (st.total_ns > 2000000000u) slow++;
    struct hg_load_error err;
    struct hg_graph *g = hg_graph_load(path, &err);
    if (!g || !graph_right(g)) {
      if (wrong++ < 3) fprintf(stderr, "%s: capture %d: wrong heap walk\n", name, i);
    } else {
      ok++;
    }
    if (g) hg_graph_free(g);
  }
  unlink(path);
  long ei = atomic_load(&eintr) - eintr0;
  fprintf(stderr,
          "busy_alloc %s: %d/%d ok (%.1f %%), %d busy, %d failed, %d wrong, %d over 2 s; "
          "capture avg %.1f ms max %.1f ms; %llu re-freezes; sleeper EINTR %.2f per capture\n",
          name, ok, count, 100.0 * ok / count, busy, failed, wrong, slow, sum_ns / 1e6 / count,
          max_ns / 1e6, (unsigned long long)retries, (double)ei / count);
  total_ok += ok;
  total_runs += count;
  CHECK_EQ_U(failed, 0);
  CHECK_EQ_U(wrong, 0);
  CHECK_EQ_U(slow, 0);
}

static void test_fork(void) { run_mode(HG_MODE_FORK, "fork"); }
static void test_suspend(void) { run_mode(HG_MODE_SUSPEND, "suspend"); }
static void test_success_rate(void) {
  fprintf(stderr, "busy_alloc: %d of %d captures succeeded (%.1f %%; target >= 99.5 %%)\n",
          total_ok, total_runs, 100.0 * total_ok / total_runs);
  CHECK(total_ok * 1000 >= total_runs * 995);
}

int main(int argc, char **argv) {
  if (argc > 1) count = atoi(argv[1]);
  if (argc > 2) snprintf(dir, sizeof dir, "%s", argv[2]);
  mallopt(M_MMAP_THRESHOLD, 64 << 20); /* the big reallocs stay in the arena */
  for (int i = 0; i < PLANTED; i++) planted[i] = malloc(24 + (size_t)(i % 50) * 16);
  pthread_t th[3];
  pthread_create(&th[0], NULL, realloc_copier, NULL);
  pthread_create(&th[1], NULL, trimmer, NULL);
  pthread_create(&th[2], NULL, sleeper, NULL);
  usleep(50000);
  RUN(test_fork);
  RUN(test_suspend);
  RUN(test_success_rate);
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "busy_alloc: %ld reallocs, %ld trims, %ld sleeps while capturing\n",
          atomic_load(&reallocs), atomic_load(&trims), atomic_load(&sleeps));
  for (int i = 0; i < PLANTED; i++) free(planted[i]);
  return hg_test_done();
}
