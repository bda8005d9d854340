/*
 * jemalloc.c — a program linked with jemalloc (-ljemalloc): the capture must
 * not guess. It writes regions, images and threads, no heap nodes, returns
 * HG_EUNSUPPORTED and says why in the metadata, in both modes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

static void *keep[100];
static char path[256];

static void check_mode(uint32_t mode) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = mode;
  CHECK_EQ_U(hg_capture(path, &o), (uint64_t)(int64_t)HG_EUNSUPPORTED);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  REQUIRE(g != NULL);
  CHECK_EQ_U(g->node_count, 0);
  CHECK_EQ_U(g->root_count, 0);
  CHECK(g->region_count > 5);
  CHECK(g->image_count >= 3);
  CHECK(g->thread_count >= 1);
  CHECK(g->meta.heap_status && strstr(g->meta.heap_status, "unsupported allocator"));
  CHECK(g->meta.heap_status && strstr(g->meta.heap_status, "jemalloc"));
  fprintf(stderr, "heap_status: %s\n", g->meta.heap_status ? g->meta.heap_status : "(none)");
  hg_graph_free(g);
  unlink(path);
}

static void test_fork(void) { check_mode(HG_MODE_FORK); }
static void test_suspend(void) { check_mode(HG_MODE_SUSPEND); }

int main(void) {
  snprintf(path, sizeof path, "/tmp/hg_jemalloc_%d.hgsnap", (int)getpid());
  for (int i = 0; i < 100; i++) keep[i] = malloc(16 + 8 * (size_t)i);
  RUN(test_fork);
  RUN(test_suspend);
  for (int i = 0; i < 100; i++) free(keep[i]);
  return hg_test_done();
}
