/*
 * stop.c — hg_stacks_stop in-process (a static link of libheapgraph_stacks.a
 * and libheapgraph.a, like inproc.c): stop before any start and a second
 * stop say HG_EINVAL; blocks allocated before the stop keep their stacks in
 * a later snapshot (status "stopped"), their frees after the stop still
 * leave the live map (count and nodes exact), a block realloc'ed after the
 * stop loses its stack, blocks allocated after the stop have none; a start
 * after the stop resumes recording (status "ok"; a second start HG_EBUSY)
 * and the blocks stopped in between stay without stacks. Run once with the
 * recorder's update queue (the default) and once more, re-executed with
 * HEAPGRAPH_STACKS_QUEUE=0, with live-map updates made inline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

#define NA 50
#define NB 40
#define NC 30
void *keep_a[NA], *keep_b[NB], *keep_c[NC]; /* global: the mallocs stay */

__attribute__((noinline)) void stop_site_a(int i) { keep_a[i] = malloc(96); }
__attribute__((noinline)) void stop_site_b(int i) { keep_b[i] = malloc(96); }
__attribute__((noinline)) void stop_site_c(int i) { keep_c[i] = malloc(96); }

/* The stack's innermost frame as an address. */
static uintptr_t first_pc(const struct hg_graph *g, uint32_t id) {
  if (!id || id > g->stack_count || !g->stacks[id - 1].frame_count) return 0;
  const struct hg_stack_frame *f = &g->stacks[id - 1].frames[0];
  return f->image == HG_NO_OWNER ? f->offset : g->images[f->image].load_addr + f->offset;
}

/* pc is in fn: after its start, within 64 bytes, and no other site's start
 * lies between (the three are small and may be laid out next to each other). */
static int in_fn(uintptr_t pc, void (*fn)(int)) {
  void (*sites[])(int) = {stop_site_a, stop_site_b, stop_site_c};
  if (!(pc > (uintptr_t)fn && pc - (uintptr_t)fn < 64)) return 0;
  for (unsigned i = 0; i < 3; i++)
    if ((uintptr_t)sites[i] > (uintptr_t)fn && (uintptr_t)sites[i] < pc) return 0;
  return 1;
}

/* Live count the snapshot gives the stacks starting in fn. */
static uint64_t site_count(const struct hg_graph *g, void (*fn)(int)) {
  uint64_t n = 0;
  for (uint32_t id = 1; id <= g->stack_count; id++)
    if (in_fn(first_pc(g, id), fn)) n += g->stacks[id - 1].count;
  return n;
}

/* How many of the n blocks are nodes whose stack starts in fn; *none: how
 * many are nodes without a stack. */
static uint32_t nodes_from(const struct hg_graph *g, void **blocks, int n, void (*fn)(int), uint32_t *none) {
  uint32_t k = 0;
  *none = 0;
  for (int i = 0; i < n; i++) {
    if (!blocks[i]) continue;
    int64_t x = hg_graph_find(g, (uint64_t)(uintptr_t)blocks[i]);
    if (x < 0) continue;
    k += in_fn(first_pc(g, g->node_stack[x]), fn);
    *none += g->node_stack[x] == 0;
  }
  return k;
}

static struct hg_graph *snap(void) {
  char path[] = "/tmp/hg_stop.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  close(fd);
  int rc = hg_capture(path, NULL);
  if (rc) fprintf(stderr, "capture: %s\n", hg_error_string(rc));
  struct hg_load_error e;
  struct hg_graph *g = rc ? NULL : hg_graph_load(path, &e);
  unlink(path);
  return g;
}

static void test_stop(void) {
  uint32_t none;
  CHECK_EQ_U(hg_stacks_stop(), HG_EINVAL); /* never started */
  REQUIRE(hg_stacks_start(NULL) == 0);
  for (int i = 0; i < NA; i++) stop_site_a(i);
  CHECK_EQ_U(hg_stacks_stop(), 0);
  CHECK_EQ_U(hg_stacks_stop(), HG_EINVAL); /* twice: harmless */
  for (int i = 0; i < NB; i++) stop_site_b(i);
  for (int i = 0; i < 10; i++) { /* frees after the stop still count */
    free(keep_a[i]);
    keep_a[i] = NULL;
  }
  void *r = realloc(keep_a[10], 5000); /* a new block after the stop: no stack */
  REQUIRE(r);
  keep_a[10] = NULL;

  struct hg_graph *g = snap();
  REQUIRE(g && g->has_stacks);
  CHECK(!strcmp(g->stack_info.status, "stopped"));
  CHECK_EQ_U(site_count(g, stop_site_a), NA - 11);
  CHECK_EQ_U(nodes_from(g, keep_a, NA, stop_site_a, &none), NA - 11);
  CHECK_EQ_U(site_count(g, stop_site_b), 0);
  CHECK_EQ_U(nodes_from(g, keep_b, NB, stop_site_b, &none), 0);
  CHECK_EQ_U(none, NB); /* every block of b is a node, without a stack */
  int64_t x = hg_graph_find(g, (uint64_t)(uintptr_t)r);
  CHECK(x >= 0 && g->node_stack[x] == 0);
  hg_graph_free(g);

  /* restart: recording resumes into the same tables */
  struct hg_stacks_options o;
  hg_stacks_options_init(&o);
  o.max_frames = 7; /* not read again: the first start's settings stay */
  CHECK_EQ_U(hg_stacks_start(&o), 0);
  CHECK_EQ_U(hg_stacks_start(&o), HG_EBUSY);
  for (int i = 0; i < NC; i++) stop_site_c(i);
  g = snap();
  REQUIRE(g && g->has_stacks);
  CHECK(!strcmp(g->stack_info.status, "ok"));
  CHECK_EQ_U(g->stack_info.max_frames, 32);
  CHECK_EQ_U(site_count(g, stop_site_c), NC);
  CHECK_EQ_U(nodes_from(g, keep_c, NC, stop_site_c, &none), NC);
  CHECK_EQ_U(site_count(g, stop_site_a), NA - 11);
  CHECK_EQ_U(site_count(g, stop_site_b), 0);
  CHECK_EQ_U(nodes_from(g, keep_b, NB, stop_site_b, &none), 0);
  CHECK_EQ_U(none, NB);
  hg_graph_free(g);
  CHECK_EQ_U(hg_stacks_stop(), 0);
  CHECK_EQ_U(hg_stacks_stop(), HG_EINVAL);
  free(r);
}

/* The same, re-executed with live-map updates made inline. */
static const char *self;
static void test_inline(void) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("HEAPGRAPH_STACKS_QUEUE", "0", 1);
    execl(self, self, "inline", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv) {
  RUN(test_stop);
  self = argv[0];
  if (argc < 2) RUN(test_inline);
  return hg_test_done();
}
