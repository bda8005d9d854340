/*
 * exited_stack.c — blocks that only a dead thread's stack still names, for
 * leak_cycle.sh (issue 26): glibc keeps an exited thread's stack for reuse,
 * and its stale frames once rooted a leaked block conservatively. Thread A
 * makes a cycle of two blocks, keeps both addresses in its own stack frame
 * and exits (main joins it: its stack goes to glibc's cache); the cycle is
 * then a leak. Thread B returns a block as its result and exits unjoined:
 * the result lies in its thread descriptor, where pthread_join would find
 * it, so that block is not a leak. Never linked with libheapgraph; prints
 * "cycle 0x… 0x… result 0x…".
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pair {
  struct pair *other;
  char pad[200];
};

static char *a_text, *b_text, r_text[32];

__attribute__((noinline)) static void hold(struct pair *a, struct pair *b) {
  struct pair *volatile frame[2] = {a, b}; /* stays in the dead stack */
  snprintf(a_text, 32, "%p", (void *)frame[0]);
  snprintf(b_text, 32, "%p", (void *)frame[1]);
}

static void *make_cycle(void *arg) {
  (void)arg;
  struct pair *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  if (!a || !b) abort();
  a->other = b;
  b->other = a;
  hold(a, b);
  return NULL;
}

static void *make_result(void *arg) {
  (void)arg;
  char *r = malloc(300);
  if (!r) abort();
  strcpy(r, "the result of an unjoined thread");
  snprintf(r_text, sizeof r_text, "%p", (void *)r);
  return r;
}

static int threads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int main(void) {
  static char at[32], bt[32];
  a_text = at;
  b_text = bt;
  pthread_t ta, tb;
  /* both started before A is joined: two stacks, B does not reuse A's */
  if (pthread_create(&tb, NULL, make_result, NULL) || pthread_create(&ta, NULL, make_cycle, NULL) ||
      pthread_join(ta, NULL))
    return 1;
  /* until B has exited (only main is left in /proc/self/task), 5 s at most */
  for (int i = 0; i < 500 && threads() > 1; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  printf("cycle %s %s result %s\n", at, bt, r_text);
  return 0;
}
