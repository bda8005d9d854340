/*
 * agent_target.c — an unmodified program for the LD_PRELOAD agent test
 * (agent.sh): it never links libheapgraph. Builds a linked list of N
 * 48-byte blocks reachable from a global, then
 *   agent_target exit [N]          returns (the at-exit capture runs)
 *   agent_target wait READY [N]    creates the file READY, then sleeps until
 *                                  killed (at most 60 s): the test sends the
 *                                  capture signal to this pid only.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct link {
  struct link *next;
  long payload[5];
};

struct link *volatile agent_list; /* a root: the list is reachable */

int main(int argc, char **argv) {
  int wait_mode = argc > 2 && argv[1][0] == 'w';
  long n = strtol(argc > (wait_mode ? 3 : 2) ? argv[wait_mode ? 3 : 2] : "1000", NULL, 10);
  for (long i = 0; i < n; i++) {
    struct link *l = malloc(sizeof *l);
    if (!l) return 1;
    l->next = agent_list;
    l->payload[0] = i;
    agent_list = l;
  }
  if (!wait_mode) return 0;
  FILE *f = fopen(argv[2], "w");
  if (!f) return 1;
  fclose(f);
  for (int i = 0; i < 600; i++) usleep(100000);
  return 0;
}
