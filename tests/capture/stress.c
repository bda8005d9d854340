/*
 * stress.c — captures under fire: 8 mutator threads (malloc/free/realloc,
 * C++ new/delete, threads starting and exiting) while N captures run back
 * to back in each mode. No crash, no hang; every snapshot loads (the reader
 * validates it) and every edge and root targets an existing node.
 *
 *   stress [COUNT] [DIR]     COUNT captures per mode (default 100)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

#define MUTATORS 8
#define SLOTS 512

int stress_cxx_churn(unsigned seed);

static atomic_int stop;
static atomic_long ops;

static void *short_lived(void *arg) {
  char *p = malloc(100 + (size_t)(uintptr_t)arg % 1000);
  if (p) p[0] = 1;
  free(p);
  return NULL;
}

static void *mutator(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
  void **slot = calloc(SLOTS, sizeof *slot);
  while (!atomic_load(&stop)) {
    for (int k = 0; k < 256; k++) {
      seed = seed * 1103515245u + 12345u;
      unsigned i = (seed >> 8) % SLOTS, op = (seed >> 20) % 8;
      size_t size = (seed >> 4) % 2048 + 1;
      if ((seed >> 28) == 0) size = 150000 + (seed % 50000); /* mmapped */
      if (op < 3) {
        free(slot[i]);
        slot[i] = malloc(size);
        if (slot[i]) *(void **)slot[i] = slot[(i + 1) % SLOTS];
      } else if (op < 5) {
        void *q = realloc(slot[i], size);
        if (q) slot[i] = q;
      } else if (op < 7) {
        free(slot[i]);
        slot[i] = NULL;
      } else {
        stress_cxx_churn(seed);
      }
    }
    if ((seed & 15) == 0) {
      pthread_t t;
      if (pthread_create(&t, NULL, short_lived, (void *)(uintptr_t)seed) == 0) pthread_join(t, NULL);
    }
    atomic_fetch_add(&ops, 256);
    usleep(300); /* 2 cores: leave the capture some CPU */
  }
  for (int i = 0; i < SLOTS; i++) free(slot[i]);
  free(slot);
  return NULL;
}

static int count = 100;
static char dir[256] = "/tmp";

static void run_mode(uint32_t mode, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/hg_stress_%d_%s.hgsnap", dir, (int)getpid(), name);
  int ok = 0, busy = 0, failed = 0, bad_graph = 0;
  uint64_t nodes = 0, edges = 0, max_pause = 0, sum_pause = 0, retries = 0;
  for (int i = 0; i < count; i++) {
    struct hg_options o;
    struct hg_capture_stats st;
    hg_options_init(&o);
    o.mode = mode;
    o.stats = &st;
    int rc = hg_capture(path, &o);
    if (rc == HG_EBUSY) {
      busy++;
      continue;
    }
    if (rc) {
      if (failed++ < 3) fprintf(stderr, "%s: capture %d: %s\n", name, i, hg_error_string(rc));
      continue;
    }
    struct hg_load_error err;
    struct hg_graph *g = hg_graph_load(path, &err);
    if (!g) {
      if (bad_graph++ < 3) fprintf(stderr, "%s: load: %s\n", name, err.message);
      continue;
    }
    int good = 1;
    for (uint32_t e = 0; e < g->edge_count; e++) good &= g->edge_target[e] < g->node_count;
    for (uint32_t r = 0; r < g->root_count; r++) good &= g->roots[r].target < g->node_count;
    for (uint32_t n = 1; n < g->node_count; n++)
      good &= g->node_addr[n] >= g->node_addr[n - 1] + g->node_size[n - 1];
    if (!good) bad_graph++;
    nodes += g->node_count;
    edges += g->edge_count;
    hg_graph_free(g);
    ok++;
    sum_pause += st.pause_ns;
    if (st.pause_ns > max_pause) max_pause = st.pause_ns;
    retries += st.busy_retries;
  }
  unlink(path);
  fprintf(stderr, "%s: %d ok, %d busy, %d failed, %d bad; avg %llu nodes %llu edges; pause avg %.2f ms max %.2f ms; %llu lock retries\n",
          name, ok, busy, failed, bad_graph, ok ? (unsigned long long)(nodes / ok) : 0,
          ok ? (unsigned long long)(edges / ok) : 0, ok ? sum_pause / 1e6 / ok : 0, max_pause / 1e6,
          (unsigned long long)retries);
  CHECK_EQ_U(failed, 0);
  CHECK_EQ_U(bad_graph, 0);
  CHECK(ok >= count * 9 / 10); /* HG_EBUSY (locks held through every retry) stays rare */
}

static void test_fork(void) { run_mode(HG_MODE_FORK, "fork"); }
static void test_suspend(void) { run_mode(HG_MODE_SUSPEND, "suspend"); }

int main(int argc, char **argv) {
  if (argc > 1) count = atoi(argv[1]);
  if (argc > 2) snprintf(dir, sizeof dir, "%s", argv[2]);
  pthread_t th[MUTATORS];
  for (int i = 0; i < MUTATORS; i++) pthread_create(&th[i], NULL, mutator, (void *)(uintptr_t)(i + 1));
  usleep(50000);
  RUN(test_fork);
  RUN(test_suspend);
  atomic_store(&stop, 1);
  for (int i = 0; i < MUTATORS; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "mutator ops: %ld\n", atomic_load(&ops));
  return hg_test_done();
}
