/*
 * view.h — the `heapgraph view` viewer: what the server keeps about a loaded
 * snapshot (view_state.c), the JSON answers of its API (view_api.c), the
 * page files built into the binary (view_assets.c) and the HTTP server
 * (view_http.c). docs/viewer.md describes the API.
 */
#ifndef HG_WEB_VIEW_H
#define HG_WEB_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"

struct symbolizer;

/* Everything computed once at startup (before the URL is printed), so that
 * every API answer is a lookup plus a page of output. */
struct view {
  const char *path, *base_path;
  struct hg_graph *g, *base;      /* base: the BASELINE snapshot or NULL   */
  char **names;                   /* display names by class id             */
  struct hg_dominators *d;
  struct hg_leaks *leaks;
  struct hg_cycles *cycles;
  struct hg_diff *diff;           /* base -> g, or NULL                    */
  uint64_t bytes_total;
  /* Per class id 0..class_count: all nodes' count and bytes, and what the
   * reachable ones retain (hg_class_retained). */
  uint64_t *ccount, *cbytes, *cretained;
  uint64_t *rcount, *rbytes;      /* reachable instances' count and bytes  */
  /* Dominator-tree children, biggest retained first: children of node v are
   * kids[kid_start[v] .. kid_start[v+1]); v = node_count is the super-root. */
  uint32_t *kid_start, *kids;
  /* Instances of class c, biggest retained first (then by address):
   * inst[inst_start[c] .. inst_start[c+1]). */
  uint32_t *inst_start, *inst;
  /* Every node, biggest retained first (ties: lower index first). */
  uint32_t *order;
  /* Allocation stacks, when the snapshot has them (else all NULL/0):
   * hg_stack_totals by stack id; the stacks_listed stacks `heapgraph stacks`
   * lists, in each STACK_BY_* order (stack_table.h); the nodes allocated at
   * stack id s, largest first: sblk_size[sblk_start[s] .. sblk_start[s+1]),
   * and the same biggest retained first in sblk_ret; one symbolizer, used
   * by the server's one thread. */
  struct hg_stack_total *stack_tot;
  uint32_t stacks_listed, *stack_order[3];
  uint32_t *sblk_start, *sblk_size, *sblk_ret;
  struct symbolizer *sym;
  double seconds[8];              /* startup steps, see view_step_names    */
};

extern const char *const view_step_names[8];

/* Loads path (and base_path when non-NULL) and computes everything above.
 * Prints the reason on stderr and returns non-zero on failure. */
int view_open(struct view *v, const char *path, const char *base_path);
void view_close(struct view *v);
/* Node from "0x…" (an address inside it) or "#INDEX"; -1 when none. */
int64_t view_node_arg(const struct view *v, const char *arg);

/* One API request: path after "/api/", a lookup for query arguments.
 * Writes the JSON answer into f; returns the HTTP status (200, 400, 404). */
typedef const char *(*view_arg_fn)(void *ctx, const char *key);
int view_api(const struct view *v, const char *name, view_arg_fn arg, void *ctx, FILE *f);

/* Built-in page files. */
struct view_asset {
  const char *path;               /* "/app.js"                             */
  const char *type;               /* Content-Type                          */
  const unsigned char *data;
  size_t size;
};
const struct view_asset *view_asset_find(const char *path);
/* Defines sym[] .. sym_end[] (plus a NUL byte) holding the bytes of file,
 * with the assembler's .incbin (the path is relative to the build's
 * working directory, the top of the tree). */
#define VIEW_ASSET(sym, file)                                                        \
  __asm__(".section .rodata\n.balign 16\n.globl " #sym "\n.hidden " #sym "\n" #sym \
          ":\n.incbin \"" file "\"\n.globl " #sym "_end\n.hidden " #sym "_end\n" #sym \
          "_end:\n.byte 0\n.previous\n");                                           \
  extern const unsigned char sym[], sym##_end[];

/* Server. */
struct view_server;
/* Starts serving v on host:port (port 0 = chosen by the OS); fills url
 * (http://host:port/?token=…). NULL on failure (reason on stderr). */
struct view_server *view_serve(const struct view *v, const char *host, unsigned port, char *url,
                               size_t url_size);
void view_server_stop(struct view_server *s);

#endif
