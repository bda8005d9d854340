/*
 * view_state.c — what `heapgraph view` computes once at startup: the
 * library's analyses (dominators, class retained sizes, leaks, cycles, diff,
 * allocation-stack totals) and indexes over them (dominator-tree children,
 * class instances and each allocation stack's blocks, biggest first), so
 * every API answer is a lookup.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli_util.h"
#include "tools/stack_table.h"
#include "web/view.h"

/* Startup steps, timed; load_baseline and reverse run on threads of their
 * own beside the others. */
const char *const view_step_names[8] = {"load",   "load_baseline", "dominators", "classes",
                                        "indexes", "reverse_bfs",       "leaks",      "cycles_diff"};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Node indices sorted by key (retained or size), biggest first, ties by
 * index: a stable LSD radix sort on ~key, 11 bits a pass, passes whose digit
 * is the same for every node skipped. */
static uint32_t *biggest_first(const uint64_t *key, uint32_t n) {
  uint32_t *a = malloc(((size_t)n + 1) * sizeof *a), *b = malloc(((size_t)n + 1) * sizeof *b);
  uint64_t *ka = malloc(((size_t)n + 1) * 8), *kb = malloc(((size_t)n + 1) * 8);
  if (!a || !b || !ka || !kb) {
    free(a), free(b), free(ka), free(kb);
    return NULL;
  }
  uint64_t or_ = 0, and_ = ~(uint64_t)0;
  for (uint32_t i = 0; i < n; i++) {
    a[i] = i;
    ka[i] = ~key[i];
    or_ |= ka[i];
    and_ &= ka[i];
  }
  for (unsigned shift = 0; shift < 64; shift += 11) {
    if (!(((or_ ^ and_) >> shift) & 0x7ff)) continue;
    static uint32_t cnt[2048];
    memset(cnt, 0, sizeof cnt);
    for (uint32_t i = 0; i < n; i++) cnt[(ka[i] >> shift) & 0x7ff]++;
    for (uint32_t s = 0, i = 0; i < 2048; i++) {
      uint32_t c = cnt[i];
      cnt[i] = s;
      s += c;
    }
    for (uint32_t i = 0; i < n; i++) {
      uint32_t p = cnt[(ka[i] >> shift) & 0x7ff]++;
      b[p] = a[i];
      kb[p] = ka[i];
    }
    uint32_t *t = a;
    a = b, b = t;
    uint64_t *tk = ka;
    ka = kb, kb = tk;
  }
  free(b), free(ka), free(kb);
  return a;
}

/* CSR of nodes grouped by key(v) < groups, in the order of `order`. */
static int group(uint32_t n, const uint32_t *order, const uint32_t *key, uint32_t groups,
                 uint32_t **start_out, uint32_t **items_out) {
  uint32_t *start = calloc((size_t)groups + 2, sizeof *start);
  uint32_t *items = malloc(((size_t)n + 1) * sizeof *items);
  if (!start || !items) {
    free(start), free(items);
    return HG_ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++)
    if (key[i] < groups) start[key[i] + 1]++;
  for (uint32_t c = 0; c < groups; c++) start[c + 1] += start[c];
  start[groups + 1] = start[groups];
  uint32_t *fill = malloc(((size_t)groups + 1) * sizeof *fill);
  if (!fill) {
    free(start), free(items);
    return HG_ENOMEM;
  }
  memcpy(fill, start, (size_t)groups * sizeof *fill);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = order[i];
    if (key[v] < groups) items[fill[key[v]]++] = v;
  }
  free(fill);
  *start_out = start;
  *items_out = items;
  return 0;
}

static int indexes(struct view *v) {
  const struct hg_graph *g = v->g;
  uint32_t n = g->node_count, *order = biggest_first(v->d->retained, n), *parent = malloc(((size_t)n + 1) * 4);
  int rc = order && parent ? 0 : HG_ENOMEM;
  for (uint32_t i = 0; !rc && i < n; i++) {
    uint32_t p = v->d->idom[i];
    parent[i] = p == HG_SUPER_ROOT ? n : p; /* HG_NONE (unreachable) is left out */
  }
  if (!rc) rc = group(n, order, parent, n + 1, &v->kid_start, &v->kids);
  if (!rc) rc = group(n, order, g->node_class, g->class_count + 1, &v->inst_start, &v->inst);
  v->order = order;
  free(parent);
  return rc;
}

/* Allocation stacks: totals, the listed stacks in each order, each stack's
 * blocks by size and by retained size (after indexes: needs v->order). */
static int stacks(struct view *v) {
  const struct hg_graph *g = v->g;
  if (!g->has_stacks) return 0;
  v->sym = sym_new(g);
  int rc = v->sym ? hg_stack_totals(g, v->d, &v->stack_tot) : HG_ENOMEM;
  for (int k = 0; !rc && k < STACK_BY_KEYS; k++) {
    int64_t n = stack_table_sorted(g, v->stack_tot, k, &v->stack_order[k]);
    if (n < 0) rc = HG_ENOMEM;
    else v->stacks_listed = (uint32_t)n;
  }
  if (rc || !g->node_stack) return rc; /* no node carries a stack: no blocks to list */
  uint32_t *by_size = biggest_first(g->node_size, g->node_count), *start2 = NULL;
  rc = by_size ? group(g->node_count, by_size, g->node_stack, g->stack_count + 1, &v->sblk_start, &v->sblk_size)
               : HG_ENOMEM;
  if (!rc) rc = group(g->node_count, v->order, g->node_stack, g->stack_count + 1, &start2, &v->sblk_ret);
  free(by_size), free(start2);
  return rc;
}

static int classes(struct view *v) {
  const struct hg_graph *g = v->g;
  size_t nc = (size_t)g->class_count + 1;
  v->ccount = calloc(nc, 8);
  v->cbytes = calloc(nc, 8);
  v->cretained = calloc(nc, 8);
  v->rcount = calloc(nc, 8);
  v->rbytes = calloc(nc, 8);
  v->names = cli_class_names(g, 0);
  if (!v->ccount || !v->cbytes || !v->cretained || !v->rcount || !v->rbytes || !v->names) return HG_ENOMEM;
  for (uint32_t i = 0; i < g->node_count; i++) {
    v->ccount[g->node_class[i]]++;
    v->cbytes[g->node_class[i]] += g->node_size[i];
    v->bytes_total += g->node_size[i];
  }
  return hg_class_retained(g, v->d, v->rcount, v->rbytes, v->cretained);
}

/* Work that runs beside the main sequence: loading the baseline, and the
 * reverse edges (they touch only g->in_*, which the analyses never read). */
struct side {
  struct view *v;
  int rc;
};

static void *load_base(void *arg) {
  struct side *s = arg;
  double t = now();
  s->v->base = cli_load(s->v->base_path, 0);
  s->rc = s->v->base ? 0 : 1;
  s->v->seconds[1] = now() - t;
  return NULL;
}

/* Reverse edges, then the library's BFS from the roots that every
 * retaining-path answer walks back through (cached on the graph). */
static void *reverse(void *arg) {
  struct side *s = arg;
  double t = now();
  struct hg_paths *p = NULL;
  s->rc = hg_graph_build_reverse(s->v->g);
  if (!s->rc && s->v->g->root_count) {
    s->rc = hg_paths_to_roots(s->v->g, s->v->g->roots[0].target, 1, &p);
    if (s->rc == HG_ENOTFOUND || s->rc == HG_EINVAL) s->rc = 0; /* a root outside the nodes */
    hg_paths_free(p);
  }
  s->v->seconds[5] = now() - t;
  return NULL;
}

int view_open(struct view *v, const char *path, const char *base_path) {
  memset(v, 0, sizeof *v);
  v->path = path;
  v->base_path = base_path;
  struct side bs = {v, 0}, rs = {v, 0};
  pthread_t bt, rt;
  int have_bt = base_path && !pthread_create(&bt, NULL, load_base, &bs);
  if (base_path && !have_bt) load_base(&bs);
  double t = now();
#define STEP(i) (v->seconds[i] = now() - t, t = now())
  v->g = cli_load(path, 0);
  STEP(0);
  int have_rt = v->g && !pthread_create(&rt, NULL, reverse, &rs);
  int rc = v->g ? 0 : 1;
  if (!rc) rc = hg_dominators_compute(v->g, &v->d);
  STEP(2);
  if (!rc) rc = classes(v);
  STEP(3);
  if (!rc) rc = indexes(v);
  if (!rc) rc = stacks(v);
  STEP(4);
  if (!rc) rc = hg_leaks_find(v->g, &v->leaks);
  STEP(6);
  if (!rc) rc = hg_cycles_find(v->g, 2, &v->cycles);
  if (have_bt) pthread_join(bt, NULL);
  if (!rc && bs.rc) rc = 1;
  if (!rc && v->base) rc = hg_diff_classes(v->base, v->g, &v->diff);
  STEP(7);
#undef STEP
  if (have_rt) pthread_join(rt, NULL);
  else if (v->g) reverse(&rs);
  if (!rc) rc = rs.rc;
  if (rc < 0) fprintf(stderr, "heapgraph view: %s\n", hg_error_string(rc));
  return rc;
}

void view_close(struct view *v) {
  free(v->ccount), free(v->cbytes), free(v->cretained), free(v->rcount), free(v->rbytes);
  free(v->kid_start), free(v->kids), free(v->inst_start), free(v->inst), free(v->order);
  free(v->stack_tot), free(v->sblk_start), free(v->sblk_size), free(v->sblk_ret);
  for (int k = 0; k < STACK_BY_KEYS; k++) free(v->stack_order[k]);
  sym_free(v->sym);
  hg_diff_free(v->diff);
  hg_cycles_free(v->cycles);
  hg_leaks_free(v->leaks);
  hg_dominators_free(v->d);
  if (v->g) cli_class_names_free(v->g, v->names);
  hg_graph_free(v->base);
  hg_graph_free(v->g);
  memset(v, 0, sizeof *v);
}

int64_t view_node_arg(const struct view *v, const char *arg) {
  uint64_t x;
  if (!arg) return -1;
  if (arg[0] == '#') return cli_parse_u64(arg + 1, &x) == 0 && x < v->g->node_count ? (int64_t)x : -1;
  return cli_parse_u64(arg, &x) == 0 ? hg_graph_find(v->g, x) : -1;
}
