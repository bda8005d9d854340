/*
 * leaks.c — a program with a known set of leaks, for comparing heapgraph's
 * unreachable nodes with valgrind memcheck's lost blocks.
 *
 *   leaks check DIR   capture (fork and suspend), compute reachability from
 *                     the snapshot's roots and print "unreachable N" per mode
 *   leaks plain       only build the heap and exit (run under valgrind)
 *
 * Reachable: a 50-element list and a 31-node tree from globals. Leaked: 20
 * lone blocks, a 10-element list, a 5-block cycle (35 blocks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"

struct node { struct node *next, *left, *right; char pad[40]; };

/* not static: the stores must survive optimisation */
struct node *volatile list_root, *volatile tree_root;

static struct node *mk(void) { return calloc(1, sizeof(struct node)); }

static struct node *tree(int depth) {
  if (!depth) return NULL;
  struct node *n = mk();
  n->left = tree(depth - 1);
  n->right = tree(depth - 1);
  return n;
}

__attribute__((noinline)) static void build_reachable(void) {
  for (int i = 0; i < 50; i++) {
    struct node *n = mk();
    n->next = (struct node *)list_root;
    list_root = n;
  }
  tree_root = tree(5);
}

__attribute__((noinline)) static void leak_lone(void) {
  for (int i = 0; i < 20; i++) {
    volatile struct node *lost = mk();
    lost->pad[0] = 1;
  }
}

__attribute__((noinline)) static void leak_list(void) {
  struct node *volatile head = NULL;
  for (int i = 0; i < 10; i++) {
    struct node *n = mk();
    n->next = head;
    head = n;
  }
  head = NULL;
}

__attribute__((noinline)) static void leak_cycle(void) {
  struct node *volatile first = mk();
  struct node *volatile p = first;
  for (int i = 0; i < 4; i++) {
    p->next = mk();
    p = p->next;
  }
  p->next = first;
  first = p = NULL;
}

/* Leaves no stale copy of a leaked pointer in callee-saved registers. */
__attribute__((noinline)) static void build(void) {
  build_reachable();
  leak_lone();
  leak_list();
  leak_cycle();
  __asm__ volatile("xor %%ebx, %%ebx\n\txor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\t"
                   "xor %%r14d, %%r14d\n\txor %%r15d, %%r15d" ::: "rbx", "r12", "r13", "r14", "r15");
}

__attribute__((noinline)) static void clobber_stack(void) {
  volatile char buf[128 * 1024];
  memset((char *)buf, 0, sizeof buf);
}

static long unreachable(const char *path) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  if (!g) {
    fprintf(stderr, "load %s: %s\n", path, err.message);
    return -1;
  }
  unsigned char *seen = calloc(g->node_count + 1, 1);
  uint32_t *stack = malloc(sizeof(uint32_t) * (g->node_count + 1));
  size_t sp = 0;
  for (uint32_t r = 0; r < g->root_count; r++)
    if (!seen[g->roots[r].target]) {
      seen[g->roots[r].target] = 1;
      stack[sp++] = g->roots[r].target;
    }
  while (sp) {
    uint32_t n = stack[--sp];
    for (uint32_t e = g->edge_start[n]; e < g->edge_start[n + 1]; e++) {
      uint32_t t = g->edge_target[e];
      if (!seen[t]) {
        seen[t] = 1;
        stack[sp++] = t;
      }
    }
  }
  long count = 0;
  for (uint32_t n = 0; n < g->node_count; n++) {
    count += !seen[n];
    if (!seen[n] && getenv("LEAKS_VERBOSE"))
      fprintf(stderr, "unreachable %#llx size %llu\n", (unsigned long long)g->node_addr[n],
              (unsigned long long)g->node_size[n]);
  }
  free(seen);
  free(stack);
  hg_graph_free(g);
  return count;
}

int main(int argc, char **argv) {
  build();
  clobber_stack();
  if (argc > 1 && !strcmp(argv[1], "plain")) return 0;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  /* both captures first: analysing one leaves stale addresses in freed
   * memory that later live blocks (stdio buffers) would inherit */
  static char path[2][512];
  static const char *names[] = {"fork", "suspend"};
  for (int m = 0; m < 2; m++) {
    snprintf(path[m], sizeof path[m], "%s/hg_leaks_%d_%s.hgsnap", dir, (int)getpid(), names[m]);
    struct hg_options o;
    hg_options_init(&o);
    o.mode = m ? HG_MODE_SUSPEND : HG_MODE_FORK;
    int rc = hg_capture(path[m], &o);
    if (rc) {
      fprintf(stderr, "capture: %s\n", hg_error_string(rc));
      return 1;
    }
  }
  for (int m = 0; m < 2; m++) {
    printf("%s unreachable %ld\n", names[m], unreachable(path[m]));
    if (!getenv("LEAKS_KEEP")) unlink(path[m]);
  }
  return 0;
}
