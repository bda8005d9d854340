/*
 * reentry.c — hg_capture from a signal handler (issue 18, item 5): it is
 * not async-signal-safe, so it must refuse (HG_EBUSY) instead of
 * deadlocking on its own capture lock or corrupting the heap:
 *   - a timer signal interrupts this thread's own capture and the handler
 *     calls hg_capture: HG_EBUSY, the outer capture succeeds;
 *   - the signal interrupts this thread's malloc/free loop: HG_EBUSY, no
 *     crash, the heap still consistent (a capture afterwards succeeds);
 *   - after handlers ran deep in the stack, a normal capture from a frame
 *     with a big uninitialised buffer (stale signal frames below) is not
 *     mistaken for one made in a handler.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

static char path[256], inner_path[256];
static volatile sig_atomic_t handler_rc, handler_ran;

static void on_alarm(int sig) {
  (void)sig;
  struct hg_options o;
  hg_options_init(&o);
  o.mode = HG_MODE_SUSPEND;
  handler_rc = hg_capture(inner_path, &o);
  handler_ran++;
}

static void arm(long usec) {
  struct itimerval it = {{0, 0}, {0, usec}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static void **blocks;
#define NBLOCKS 200000

static void test_interrupts_own_capture(void) {
  int busy = 0, ran = 0;
  for (int i = 0; i < 10; i++) {
    handler_ran = 0;
    handler_rc = 1;
    arm(1000 + 1500 * i);
    struct hg_options o;
    hg_options_init(&o);
    o.mode = i % 2 ? HG_MODE_FORK : HG_MODE_SUSPEND;
    int rc = hg_capture(path, &o);
    CHECK_EQ_U(rc, 0);
    while (!handler_ran) usleep(1000);
    ran++;
    busy += handler_rc == HG_EBUSY;
  }
  fprintf(stderr, "reentry: %d of %d captures from a handler refused with HG_EBUSY\n", busy, ran);
  CHECK_EQ_U(busy, ran);
}

static void test_interrupts_malloc(void) {
  int busy = 0, ran = 0;
  for (int round = 0; round < 20; round++) {
    handler_ran = 0;
    handler_rc = 1;
    arm(300 + 97 * round);
    unsigned seed = (unsigned)round;
    while (!handler_ran) {
      seed = seed * 1103515245u + 12345u;
      size_t k = (seed >> 8) % NBLOCKS;
      free(blocks[k]);
      blocks[k] = malloc((seed >> 4) % 3000 + 1);
    }
    ran++;
    busy += handler_rc == HG_EBUSY;
  }
  fprintf(stderr, "reentry: %d of %d captures from a handler that interrupted malloc refused\n", busy,
          ran);
  CHECK_EQ_U(busy, ran);
  struct hg_options o;
  hg_options_init(&o);
  CHECK_EQ_U(hg_capture(path, &o), 0); /* the heap is intact */
}

static void nothing(int sig) { (void)sig; }

__attribute__((noinline)) static void deep_raise(int depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  if (depth > 0) deep_raise(depth - 1);
  else raise(SIGUSR2);
  (void)pad[0];
}

__attribute__((noinline)) static int capture_over_stale_frames(void) {
  volatile char big[32768]; /* uninitialised: holds stale signal frames */
  big[0] = 1;
  struct hg_options o;
  hg_options_init(&o);
  int rc = hg_capture(path, &o);
  (void)big[0];
  return rc;
}

static void test_not_in_handler(void) {
  signal(SIGUSR2, nothing);
  for (int d = 0; d < 40; d += 3) deep_raise(d);
  CHECK_EQ_U(capture_over_stale_frames(), 0);
  signal(SIGUSR2, SIG_DFL);
}

int main(void) {
  snprintf(path, sizeof path, "/tmp/hg_reentry_%d.hgsnap", (int)getpid());
  snprintf(inner_path, sizeof inner_path, "/tmp/hg_reentry_inner_%d.hgsnap", (int)getpid());
  blocks = calloc(NBLOCKS, sizeof *blocks);
  for (int i = 0; i < NBLOCKS; i++) blocks[i] = malloc(16 + (size_t)(i % 64) * 8);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  RUN(test_interrupts_own_capture);
  RUN(test_interrupts_malloc);
  RUN(test_not_in_handler);
  unlink(path);
  unlink(inner_path);
  for (int i = 0; i < NBLOCKS; i++) free(blocks[i]);
  free(blocks);
  return hg_test_done();
}
