/*
 * inproc.c — allocation stacks enabled in-process: a static link of
 * libheapgraph_stacks.a (the interposer) and libheapgraph.a, hg_stacks_start
 * with a large-allocation callback, hg_capture, then the snapshot read back:
 * the known site's live count, a freed site absent, the callback called on
 * the monitor thread (not the allocating one) with the stack. Then captures
 * taken while another thread allocates and frees without pause: however the
 * thread and the recorder's update queue are caught, each stack's live
 * count and bytes equal the number and sizes of the nodes carrying it.
 * make check-matrix runs it (and memo.c) on every glibc we support.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

void *keep[300]; /* global: the compiler may not drop the mallocs */
static volatile int calls;
static volatile pthread_t cb_thread;
static volatile uint32_t cb_frames;

__attribute__((noinline)) void inproc_site(int i) { keep[i] = malloc(100); }
__attribute__((noinline)) void inproc_freed(void) {
  void *volatile p = malloc(100); /* volatile: a malloc+free pair is otherwise elided */
  free(p);
}
__attribute__((noinline)) void inproc_large(void) { keep[299] = malloc(4u << 20); }

/* A block nothing points to (a leak), its address kept only disguised: the
 * recorder's own tables (the update queue's ring holds the block's address
 * from its add event) must not root it. */
#define DISGUISE 0x5a5a5a5a5a5a5a5aull
static volatile uint64_t lost_disguised;
__attribute__((noinline)) void inproc_lost(void) {
  void *p = malloc(3000);
  lost_disguised = (uint64_t)(uintptr_t)p ^ DISGUISE;
}

static void on_large(const struct hg_large_event *ev, void *user) {
  (void)user;
  if (ev->size == (4u << 20)) {
    cb_thread = pthread_self();
    cb_frames = ev->frame_count;
    __atomic_store_n(&calls, calls + 1, __ATOMIC_RELEASE);
  }
}

static void test_inproc(void) {
  struct hg_stacks_options o;
  hg_stacks_options_init(&o);
  o.large_alloc_bytes = 1u << 20;
  o.on_large = on_large;
  REQUIRE(hg_stacks_start(&o) == 0);
  CHECK_EQ_U(hg_stacks_start(&o), HG_EBUSY);
  for (int i = 0; i < 200; i++) inproc_site(i);
  for (int i = 0; i < 50; i++) inproc_freed();
  inproc_large();
  inproc_lost();
  for (int i = 0; i < 200 && !__atomic_load_n(&calls, __ATOMIC_ACQUIRE); i++) usleep(10000);
  CHECK_EQ_U(calls, 1);
  CHECK(!pthread_equal(cb_thread, pthread_self()));
  CHECK(cb_frames >= 2);
  char path[] = "/tmp/hg_inproc.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  int rc = hg_capture(path, NULL);
  REQUIRE(rc == 0);
  struct hg_load_error e;
  struct hg_graph *g = hg_graph_load(path, &e);
  unlink(path);
  REQUIRE(g && g->has_stacks);
  /* the stacks whose first frame is in inproc_site / inproc_freed */
  uint64_t site = 0, freed = 0, nodes = 0;
  uintptr_t a = (uintptr_t)inproc_site, b = (uintptr_t)inproc_freed;
  for (uint32_t id = 1; id <= g->stack_count; id++) {
    const struct hg_stack *s = &g->stacks[id - 1];
    if (!s->frame_count) continue;
    const struct hg_stack_frame *f = &s->frames[0];
    uintptr_t pc = f->image == HG_NO_OWNER ? f->offset : g->images[f->image].load_addr + f->offset;
    if (pc > a && pc - a < 64) site += s->count;
    if (pc > b && pc - b < 64) freed += s->count;
  }
  for (uint32_t n = 0; n < g->node_count; n++)
    if (g->node_stack[n]) {
      const struct hg_stack *s = &g->stacks[g->node_stack[n] - 1];
      const struct hg_stack_frame *f = &s->frames[0];
      uintptr_t pc = f->image == HG_NO_OWNER ? f->offset : g->images[f->image].load_addr + f->offset;
      nodes += pc > a && pc - a < 64;
    }
  CHECK_EQ_U(site, 200);
  CHECK_EQ_U(nodes, 200);
  /* the lost block: a node, with its stack, and no root or edge reaches it */
  int64_t lost = hg_graph_find(g, lost_disguised ^ DISGUISE);
  REQUIRE(lost >= 0);
  CHECK(g->node_stack[lost] != 0);
  uint32_t rooted = 0, pointed = 0, other_roots = 0;
  for (uint32_t r = 0; r < g->root_count; r++) {
    rooted += g->roots[r].target == (uint32_t)lost;
    other_roots += g->roots[r].kind == HG_ROOT_OTHER;
  }
  for (uint32_t e = 0; e < g->edge_count; e++) pointed += g->edge_target[e] == (uint32_t)lost;
  if (rooted || pointed) fprintf(stderr, "lost block: %u roots, %u edges (%u roots of kind other)\n", rooted, pointed, other_roots);
  CHECK_EQ_U(rooted, 0);
  CHECK_EQ_U(pointed, 0);
  CHECK_EQ_U(freed, 0);
  CHECK_EQ_U(g->large_count, 1);
  hg_graph_free(g);
}

static volatile int stop;
__attribute__((noinline)) void *inproc_churn(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
  return p;
}

static void *churn(void *arg) {
  (void)arg;
  void *ring[4096] = {0};
  for (unsigned i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
    free(ring[i % 4096]);
    ring[i % 4096] = inproc_churn(16 + i % 200);
  }
  for (unsigned i = 0; i < 4096; i++) free(ring[i]);
  return NULL;
}

static void test_capture_while_allocating(void) {
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, churn, NULL) == 0);
  usleep(20000);
  for (int round = 0; round < 6; round++) {
    char path[] = "/tmp/hg_inproc.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    struct hg_options o;
    hg_options_init(&o);
    o.mode = round % 2 ? HG_MODE_SUSPEND : HG_MODE_FORK;
    int rc = hg_capture(path, &o);
    if (rc) fprintf(stderr, "mode %d: %s\n", o.mode, hg_error_string(rc));
    CHECK_EQ_U(rc, 0);
    struct hg_load_error e;
    struct hg_graph *g = rc ? NULL : hg_graph_load(path, &e);
    unlink(path);
    if (!g) continue;
    uint64_t *per = calloc(2 * ((size_t)g->stack_count + 1), sizeof *per), *per_bytes;
    REQUIRE(per);
    per_bytes = per + g->stack_count + 1;
    for (uint32_t n = 0; n < g->node_count; n++)
      if (g->node_stack[n] && g->node_stack[n] <= g->stack_count) {
        per[g->node_stack[n]]++;
        per_bytes[g->node_stack[n]] += g->node_size[n];
      }
    uint32_t wrong = 0;
    uint64_t churned = 0;
    uintptr_t c = (uintptr_t)inproc_churn;
    for (uint32_t id = 1; id <= g->stack_count; id++) {
      const struct hg_stack *s = &g->stacks[id - 1];
      const struct hg_stack_frame *f = s->frame_count ? &s->frames[0] : NULL;
      uintptr_t pc = !f ? 0 : f->image == HG_NO_OWNER ? f->offset : g->images[f->image].load_addr + f->offset;
      if (!(pc > c && pc - c < 64)) continue;
      if (s->count != per[id]) fprintf(stderr, "mode %d stack %u: count %llu, nodes %llu\n", o.mode, id, (unsigned long long)s->count, (unsigned long long)per[id]);
      /* bytes: usable sizes taken at malloc and free, the walker's node sizes */
      if (s->bytes != per_bytes[id]) fprintf(stderr, "mode %d stack %u: bytes %llu, nodes' %llu\n", o.mode, id, (unsigned long long)s->bytes, (unsigned long long)per_bytes[id]);
      wrong += s->count != per[id] || s->bytes != per_bytes[id];
      churned += s->count;
    }
    CHECK_EQ_U(wrong, 0);
    /* events left queued behind a thread frozen mid-push (with those other
     * threads queued after it): counted, never more than the ring holds */
    uint64_t unapplied = 0;
    for (size_t k = 0; k < g->meta.capture_count; k++)
      if (!strcmp(g->meta.capture[k].key, "stacks_unapplied")) unapplied = g->meta.capture[k].value;
    if (unapplied) fprintf(stderr, "mode %d: %llu events unapplied\n", o.mode, (unsigned long long)unapplied);
    CHECK(unapplied <= 65536);
    if (!(churned > 3000 && churned <= 4096)) fprintf(stderr, "churned %llu\n", (unsigned long long)churned);
    CHECK(churned > 3000 && churned <= 4096); /* the ring, less the few in flight */
    free(per);
    hg_graph_free(g);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
}

int main(void) {
  RUN(test_inproc);
  RUN(test_capture_while_allocating);
  return hg_test_done();
}
