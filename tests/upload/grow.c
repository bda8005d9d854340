/*
 * grow.c — a program that grows until its memory limit makes the watcher
 * capture: it links 3000-byte blocks (a size nothing else here allocates)
 * into a list, STEP_KB per 10 ms, up to MAX_MB, then sleeps HOLD_MS and
 * exits 0. Never linked with libheapgraph: run under the preload agent.
 *   grow MAX_MB STEP_KB HOLD_MS
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct block {
  struct block *next;
  char pad[3000 - sizeof(struct block *)];
};
struct block *volatile head;

int main(int argc, char **argv) {
  long max_mb = argc > 1 ? atol(argv[1]) : 200, step_kb = argc > 2 ? atol(argv[2]) : 1024;
  long hold_ms = argc > 3 ? atol(argv[3]) : 1000;
  long total = 0, n = 0;
  struct timespec tick = {0, 10 * 1000000L}, hold = {hold_ms / 1000, hold_ms % 1000 * 1000000L};
  while (total < max_mb << 20) {
    for (long k = 0; k < step_kb * 1024 / 3000 + 1; k++) {
      struct block *b = malloc(sizeof *b);
      if (!b) return 3; /* the watcher never fired */
      memset(b->pad, 1, sizeof b->pad); /* resident */
      b->next = head;
      head = b;
      total += (long)sizeof *b;
      n++;
    }
    nanosleep(&tick, NULL);
  }
  printf("grow: %ld blocks, %ld bytes\n", n, total);
  fflush(stdout);
  nanosleep(&hold, NULL);
  return 0;
}
