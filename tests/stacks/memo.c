/*
 * memo.c — the unwinder's memo (capture/stacks/unwind_cache.c) against
 * libunwind. Every block is allocated by leaf(), which then asks libunwind
 * for its own stack; the recorded stack of the block must have the same
 * return addresses after the first (the first is the call to malloc, not
 * to unw_backtrace). The stacks change the ways a memo can be fooled:
 * recursion of random depth (the memo's outer part taken at another level),
 * two callers with the same frame size at the same stack pointer (a match
 * whose outer part changed), longjmp out of a deep stack (memo frames below
 * the stack pointer), stacks deeper than the memo, threads at once and a
 * thread that inherits an exited thread's memo. The memo's own counters
 * show that the kept-walk, the splice and the changed-outer-part paths all
 * ran.
 *
 * A static link of libheapgraph_stacks.a, built without frame pointers.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/stacks/alloc_queue.h"
#include "capture/stacks/alloc_record.h"
#include "capture/stacks/linux/unwind_cache.h"
#include "heapgraph.h"
#include "hg_test.h"

#define DEPTH 14   /* frames compared per block */
#define PER 3000   /* blocks per scenario and thread */

struct rec {
  void *p;
  uintptr_t f[DEPTH];
  int n;
};

struct run {
  struct rec r[PER];
  int n;
  uint64_t rng;
  jmp_buf jb;
};

/* The reference: libunwind's own walk from here, raw return addresses
 * (unw_get_reg; unw_backtrace of libunwind 1.3, Debian 11, gives the
 * addresses less 1 for all but the first frame). A macro: f[0] is then in
 * leaf itself, as the recorded stack's first frame is. */
#define REF_STACK(f, max, n)                                                 \
  do {                                                                       \
    unw_context_t uc_;                                                       \
    unw_cursor_t c_;                                                         \
    (n) = 0;                                                                 \
    if (unw_getcontext(&uc_) || unw_init_local(&c_, &uc_)) break;           \
    do {                                                                     \
      unw_word_t ip_ = 0;                                                    \
      unw_get_reg(&c_, UNW_REG_IP, &ip_);                                    \
      (f)[(n)++] = (uintptr_t)ip_;                                           \
    } while ((n) < (max) && unw_step(&c_) > 0);                              \
  } while (0)

__attribute__((noinline)) static void leaf(struct run *u) {
  struct rec *r = &u->r[u->n++];
  r->p = malloc(24);
  REF_STACK(r->f, DEPTH, r->n);
  __asm__ volatile("" ::: "memory");
}

static unsigned next(struct run *u) {
  u->rng ^= u->rng << 13;
  u->rng ^= u->rng >> 7;
  u->rng ^= u->rng << 17;
  return (unsigned)u->rng;
}

/* ---- the stacks ---- */

__attribute__((noinline)) static void recurse(struct run *u, int d) {
  if (d == 0) leaf(u);
  else recurse(u, d - 1);
  __asm__ volatile("" ::: "memory"); /* no tail call: a frame per level */
}

/* Two callers of mid() with the same frame (bodies differ: never folded
 * into one), called from one call site:
 * mid's frame is at the same stack pointer under either. */
__attribute__((noinline)) static void mid(struct run *u) {
  leaf(u);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void outer_a(struct run *u) {
  mid(u);
  __asm__ volatile("nop" ::: "memory");
}
__attribute__((noinline)) static void outer_b(struct run *u) {
  mid(u);
  __asm__ volatile("nop; nop" ::: "memory");
}
static void (*const outers[2])(struct run *) = {outer_a, outer_b};

static volatile int jump_out = 1; /* always: a dive returns only by longjmp */
__attribute__((noinline)) static void dive(struct run *u, int d) {
  if (d == 0) {
    leaf(u);
    if (jump_out) longjmp(u->jb, 1);
    return;
  }
  dive(u, d - 1);
  __asm__ volatile("" ::: "memory");
}

static void scenario_depths(struct run *u) {
  for (int i = 0; i < PER / 3; i++) recurse(u, (int)(next(u) % 16));
}
static void scenario_outers(struct run *u) {
  for (int i = 0; i < PER / 3; i++) outers[next(u) & 1](u);
}
static void scenario_longjmp(struct run *u) {
  for (int i = 0; i < PER / 6; i++) {
    if (!setjmp(u->jb)) dive(u, 20 + (int)(next(u) % 20));
    recurse(u, (int)(next(u) % 3)); /* right after, above the stale frames */
  }
}

/* ---- checks ---- */

/* Blocks whose recorded stack differs from libunwind's. */
static int mismatches(const struct run *u, int *checked) {
  struct hg_rec *R = _hg_rec_global;
  _hg_stacks_pause(1);
  /* the update queue applied (the recorder's thread may hold its lock for
   * one more batch): lookups see every block */
  while (R->queue && _hg_rq_pending(R->queue)) {
    _hg_stacks_flush();
    sched_yield();
  }
  int bad = 0;
  for (int i = 0; i < u->n; i++) {
    const struct rec *r = &u->r[i];
    const struct hg_rec_stack *s = _hg_rec_stack(R, _hg_rec_lookup(R, (uintptr_t)r->p));
    int n = s ? ((int)s->nframes < r->n ? (int)s->nframes : r->n) : 0, ok = n >= 4;
    for (int k = 1; ok && k < n; k++) ok = s->frames[k] == r->f[k];
    if (!ok && getenv("MEMO_DEBUG") && bad < 2) {
      fprintf(stderr, "block %d: recorded %u frames, libunwind %d\n", i, s ? s->nframes : 0, r->n);
      for (int k = 0; k < DEPTH; k++)
        fprintf(stderr, "  %2d %#lx %#lx\n", k, s && k < (int)s->nframes ? (unsigned long)s->frames[k] : 0ul,
                k < r->n ? (unsigned long)r->f[k] : 0ul);
    }
    bad += !ok;
  }
  _hg_stacks_pause(0);
  *checked += u->n;
  return bad;
}

static void free_all(struct run *u) {
  for (int i = 0; i < u->n; i++) free(u->r[i].p);
  u->n = 0;
}

static struct run mainrun;

static void test_memo_single_thread(void) {
  struct run *u = &mainrun;
  u->rng = 88172645463325252ull;
  int checked = 0;
  scenario_depths(u);
  CHECK_EQ_U(mismatches(u, &checked), 0);
  const struct hg_unwind_memo *m = _hg_stacks_memo_self();
  REQUIRE(m != NULL);
  /* most allocations took a kept walk (16 depths: 16 first frames) or the
   * memo's outer part */
  CHECK(m->recalled > 0);
  CHECK(m->spliced > 0);
  CHECK(m->recalled + m->spliced >= (uint64_t)(PER / 3) / 2);
  free_all(u);
  scenario_outers(u);
  CHECK_EQ_U(mismatches(u, &checked), 0);
  CHECK(m->changed > 0); /* a match at mid's frame under the other caller */
  free_all(u);
  scenario_longjmp(u);
  CHECK_EQ_U(mismatches(u, &checked), 0);
  free_all(u);
  for (int i = 0; i < 40; i++) recurse(u, 180 + i); /* deeper than the memo */
  for (int i = 0; i < 200; i++) recurse(u, (int)(next(u) % 8));
  CHECK_EQ_U(mismatches(u, &checked), 0);
  free_all(u);
  CHECK(checked > PER);
}

static struct run runs[4];

static void *worker(void *arg) {
  struct run *u = arg;
  scenario_depths(u);
  scenario_outers(u);
  scenario_longjmp(u);
  return NULL;
}

static void test_memo_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    runs[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    REQUIRE(pthread_create(&t[i], NULL, worker, &runs[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  int checked = 0;
  for (int i = 0; i < 4; i++) CHECK_EQ_U(mismatches(&runs[i], &checked), 0);
  for (int i = 0; i < 4; i++) free_all(&runs[i]);
  /* one after another: each inherits the memo page the last one gave back */
  for (int i = 0; i < 4; i++) {
    REQUIRE(pthread_create(&t[0], NULL, worker, &runs[i]) == 0);
    pthread_join(t[0], NULL);
  }
  for (int i = 0; i < 4; i++) CHECK_EQ_U(mismatches(&runs[i], &checked), 0);
  for (int i = 0; i < 4; i++) free_all(&runs[i]);
  CHECK(checked >= 8 * (PER / 3) * 2);
}

int main(void) {
  struct hg_stacks_options o;
  hg_stacks_options_init(&o);
  if (hg_stacks_start(&o) != 0) {
    fprintf(stderr, "hg_stacks_start failed\n");
    return 1;
  }
  RUN(test_memo_single_thread);
  RUN(test_memo_threads);
  return hg_test_done();
}
