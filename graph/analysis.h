/*
 * analysis.h — internals shared by the graph analyses (dominators.c, scc.c,
 * leaks.c, paths.c, diff.c, export_*.c). Declares the "_hg_" helpers, grouped
 * by the file that defines them. Nothing here is public API.
 *
 * Conventions: every per-node array is a flat uint32/uint64 array indexed by
 * node index; bitmaps are uint64 words; algorithms are iterative (explicit
 * stacks on the heap) so graph depth never touches the C stack.
 */
#ifndef HG_GRAPH_ANALYSIS_H
#define HG_GRAPH_ANALYSIS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heapgraph.h"

/* ---- A second core (jobs.c) ---- */

/* A job on a helper thread, or already done on the calling thread. */
struct _hg_job {
  pthread_t th;
  int threaded;
  int done;                 /* a long job: set when fn returned or released */
  void *(*fn)(void *);      /* a long job's function and argument */
  void *arg;
};
/* Runs fn(arg) on a new thread when want_thread and one can be started,
 * else here, at once. Pair with _hg_job_wait. */
void _hg_job_start(struct _hg_job *j, void *(*fn)(void *), void *arg, int want_thread);
/* Runs fn(arg) on a new thread (here, at once, if none can be started)
 * that keeps the second core: until it returns, this thread's own
 * _hg_job_start calls run inline. Pair with _hg_job_wait. */
void _hg_job_start_long(struct _hg_job *j, void *(*fn)(void *), void *arg);
/* Called by a long job's function: from now on it shares the second core
 * (the starting thread's jobs get threads again). */
void _hg_job_release(struct _hg_job *j);
/* Returns once the job is done (at once when it ran here); j may be a
 * zeroed job never started. */
void _hg_job_wait(struct _hg_job *j);

/* ---- Edge semantics ---- */

/* Conservative, interior and strong edges retain; weak and unowned do not. */
static inline int _hg_retains(uint8_t kind) {
  return kind == HG_EDGE_CONSERVATIVE || kind == HG_EDGE_INTERIOR || kind == HG_EDGE_STRONG;
}

/* ---- Big work arrays ---- */

/*
 * malloc/calloc for the per-node and per-edge work arrays, asking for
 * transparent huge pages on the 2 MiB-aligned inside of big blocks (large
 * blocks are fresh mmaps, not yet touched). The analyses index 10M-element
 * arrays at random; with 4 KiB pages nearly every such access also misses
 * the TLB (a two-level walk under virtualisation). Freed with free().
 */
static inline void _hg_huge(void *p, size_t n) {
#if defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (!p || n < 2 * huge) return;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + n) & ~(huge - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}
/* Asks the kernel to fault in [p, p + n) now, without changing what it
 * holds (MADV_POPULATE_WRITE, Linux 5.14; a no-op elsewhere or on older
 * kernels). A fresh page's first touch is the costly part of a big array
 * (the kernel clears it, and under a hypervisor the host may have to back
 * it first), so a helper thread populates arrays ahead of the thread that
 * will write them: the cost moves to the idle core. Safe while another
 * thread writes the same range. */
static inline void _hg_populate(void *p, size_t n) {
#if defined(__linux__)
  /* madvise wants a page-aligned start; the page below p is ours too. */
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
  if (p && n) (void)madvise((void *)lo, (uintptr_t)p + n - lo, 23 /* MADV_POPULATE_WRITE */);
#else
  (void)p;
  (void)n;
#endif
}

static inline void *_hg_malloc_big(size_t n) {
  void *p = malloc(n);
  _hg_huge(p, n);
  return p;
}
static inline void *_hg_calloc_big(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = _hg_malloc_big(count * size);
  if (p) memset(p, 0, count * size);
  return p;
}

/* ---- Bitmaps ---- */

static inline uint64_t *_hg_bits_new(uint32_t n) {
  return (uint64_t *)calloc((size_t)n / 64 + 1, sizeof(uint64_t));
}
static inline int _hg_bit(const uint64_t *b, uint32_t i) { return (int)((b[i >> 6] >> (i & 63)) & 1u); }
static inline void _hg_bit_set(uint64_t *b, uint32_t i) { b[i >> 6] |= (uint64_t)1 << (i & 63); }

/* ---- retaining.c ---- */

/* A compact CSR over nodes 0..n-1: out-edges of v are
 * target[start[v] .. start[v+1]). */
struct _hg_csr {
  uint32_t n;
  uint32_t *start;   /* n + 1 entries */
  uint32_t *target;  /* start[n] entries (+1 spare) */
};

/* The graph's retaining edges only, in the graph's edge order (so every
 * traversal visits them in the same order as over g's own CSR). 0 or
 * HG_ENOMEM (c is then empty). */
int _hg_csr_retaining(const struct hg_graph *g, struct _hg_csr *c);
void _hg_csr_free(struct _hg_csr *c);

/*
 * The view: the retaining edges renumbered in the dominators' BFS order,
 * cached on the graph (struct hg_graph_priv) by hg_dominators_compute and
 * reused by the later analyses. Numbers 0..reached-1 are the nodes
 * reachable from the roots in BFS order (every node after its dominator),
 * reached..n-1 the others in index order. c is a CSR over numbers whose
 * edges keep the graph's order. reach: node-space bitmap of the reachable
 * nodes. Freed with the graph or by hg_graph_drop_cache.
 */
struct _hg_view {
  struct _hg_csr c;
  uint32_t reached;
  uint32_t *node;       /* number -> node index (n entries)                */
  uint64_t *reach;      /* node-space bitmap                               */
  uint32_t edge_count;  /* the graph's counts when built: a cheap guard    */
  uint32_t root_count;
};

/* The graph's cached view, or NULL (none, or the graph's counts changed). */
const struct _hg_view *_hg_view_get(const struct hg_graph *g);
/* Attaches v to g (replacing any previous view); frees v if it cannot. */
void _hg_view_put(struct hg_graph *g, struct _hg_view *v);
void _hg_view_free(struct _hg_view *v);

/* Bitmap of nodes reachable through retaining edges from the roots (and, when
 * regions_are_roots, from every HG_NODE_REGION node). Starts from the cached
 * view's reach bitmap when there is one (then only region nodes are walked
 * from). NULL on ENOMEM. */
uint64_t *_hg_reachable(const struct hg_graph *g, int regions_are_roots);
/* The same, expanding big BFS levels on two threads. */
uint64_t *_hg_reachable_par(const struct hg_graph *g, int regions_are_roots);
/* The same from `seen` (taken: returned, or freed on ENOMEM), a set already
 * known reachable from the roots and closed under retaining edges: only the
 * roots and region nodes outside it are walked from. One thread; never
 * reads the graph's cache, so it may run beside a dominator computation. */
uint64_t *_hg_reachable_from(const struct hg_graph *g, uint64_t *seen, int regions_are_roots);

/* ---- leaks.c ---- */

/* hg_leaks_find with root reachability given: `reach` as for
 * _hg_reachable_from (taken). Never reads the graph's cache. held = 0:
 * what each root leak holds is not searched (count/bytes = owned_count/
 * owned_bytes, held_exact = 0, sorted by them): the fleet summary's. */
int _hg_leaks_find_from(const struct hg_graph *g, uint64_t *reach, int held,
                        struct hg_leaks **out);

/* ---- dominators.c ---- */

/*
 * SEMI-NCA over c from a virtual super-root whose children are `entries`
 * (node ids of c; out-of-range ones are ignored). Everything it returns is
 * in BFS-number space: order[w-1] = node with number w (1..cnt; every node
 * after its dominator), idom[w] = number of w's immediate dominator (0 = super-root),
 * and, when pre is non-NULL, pre[node] = its number (HG_NONE: unreached).
 * order has c->n + 1 entries (the BFS writes one spare), idom c->n + 1, pre c->n.
 * *reached = cnt.
 * Reads c (never changes or frees it). When view is non-NULL it receives the renumbered CSR
 * (view->c; view->node = NULL, reach = NULL: order[] holds the numbering,
 * order[cnt..n-1] being the unreached nodes in index order) and
 * view->reached. 0 or HG_ENOMEM.
 */
int _hg_dom_core(const struct _hg_csr *c, const uint32_t *entries, uint32_t entry_count,
                 uint32_t *order, uint32_t *idom, uint32_t *pre, uint32_t *reached,
                 struct _hg_view *view);

/* Test hooks (defaults in brackets): work size from which a step is split
 * between two threads [65536 edges], and iterative passes before SEMI-NCA
 * takes over [8; 0 forces SEMI-NCA]. Every setting gives the same results;
 * the unit tests move them to prove it. Not for use in the library. */
extern uint32_t _hg_dom_par_min;
extern int _hg_dom_max_passes;
extern uint32_t _hg_scc_giant_min; /* scc.c: smallest graph for the giant-component step */

/* ---- scc.c ---- */

/*
 * Strongly connected components (iterative Pearce/Tarjan) of c, over the
 * edges whose kind retains (kind = per-edge kinds, or NULL: every edge):
 * comp[node] gets a component id (< c->n, ids of one component equal);
 * *count gets the number of components. Starts DFS at nodes in index order
 * and follows edges in CSR order; on a compact CSR (kind NULL) of at least
 * _hg_scc_giant_min nodes the giant component is found first (scc.c).
 */
int _hg_scc(const struct _hg_csr *c, const uint8_t *kind, uint32_t *comp, uint32_t *count);

/* ---- export_*.c: buffered output ---- */

struct _hg_out {
  hg_write_fn write;
  void *ctx;
  int err;          /* first error: HG_EIO                              */
  size_t len;
  uint64_t total;   /* bytes emitted                                    */
  char buf[1 << 16];
};

void _hg_out_flush(struct _hg_out *o);
void _hg_out_mem(struct _hg_out *o, const void *p, size_t n);
void _hg_out_str(struct _hg_out *o, const char *s);
void _hg_out_u64(struct _hg_out *o, uint64_t v);
void _hg_out_printf(struct _hg_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quotes included); NULL prints null. Invalid UTF-8
 * bytes become U+FFFD so the output always parses. */
void _hg_out_json_str(struct _hg_out *o, const char *s);
/* The same escaped text without the quotes (also valid inside DOT strings). */
void _hg_out_json_chars(struct _hg_out *o, const char *s);

/* Display name of class `id` (1-based; 0 → NULL) through the options' hook. */
const char *_hg_class_display(const struct hg_graph *g, const struct hg_export_options *opt,
                              uint32_t class_id);

int _hg_export_heapsnapshot(struct hg_graph *g, const struct hg_export_options *opt,
                            struct _hg_out *o, struct hg_export_stats *st);
int _hg_export_dot(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                   struct hg_export_stats *st);
int _hg_export_json(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                    struct hg_export_stats *st);

#endif
