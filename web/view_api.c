/*
 * view_api.c — the JSON answers of the viewer's API (docs/viewer.md). The
 * answers named after CLI subcommands (info, regions, top, show, dominators,
 * path, leaks, cycles, diff, stacks) are the objects that `heapgraph CMD
 * --json` prints for the same snapshot, built from the same library results
 * and the CLI's writers (tools/analysis_json.c, acli_show_json,
 * stack_table_json); `offset` pages through their lists. The others (summary, classes,
 * instances, children, icicle, leak, stack) are views over the indexes of
 * view_state.c. Every answer is bounded by `n`.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"
#include "tools/stack_table.h"
#include "web/view.h"

#define MAX_PAGE 1000

struct req {
  const struct view *v;
  view_arg_fn arg;
  void *ctx;
  FILE *f;
};

static uint64_t num(const struct req *r, const char *key, uint64_t dflt, uint64_t max) {
  uint64_t x;
  const char *s = r->arg(r->ctx, key);
  if (!s || cli_parse_u64(s, &x)) return dflt;
  return x > max ? max : x;
}

static void node(const struct req *r, uint32_t v) { acli_node_json(r->f, r->v->g, r->v->names, v); }

static void node_retained(const struct req *r, uint32_t v) {
  node(r, v);
  fprintf(r->f, ",\"retained\":%" PRIu64 "}", r->v->d->retained[v]);
}

static void str(const struct req *r, const char *s) { cli_json_str(r->f, s); }

/* Rows off..off+k of items[0..total) as nodes with their retained size,
 * then the closing "]}" of the answer. */
static void node_page(const struct req *r, const uint32_t *items, uint32_t total, uint32_t off, uint32_t k) {
  for (uint32_t i = off; i < total && i - off < k; i++) {
    fputs(i == off ? "\n" : ",\n", r->f);
    node_retained(r, items[i]);
  }
  fputs("]}", r->f);
}

/* ---- answers shaped like the CLI's --json ---- */

static int api_info(const struct req *r) {
  ajson_info(r->f, r->v->g, r->v->path);
  return 200;
}

/* `regions --json` (one object per line there) as one array. */
static int api_regions(const struct req *r) {
  size_t ng = 0;
  struct ajson_region_group *gr = ajson_region_groups(r->v->g, &ng);
  if (!gr) return 500;
  fputc('[', r->f);
  for (size_t i = 0; i <= ng; i++) {
    fputs(i ? ",\n" : "", r->f);
    ajson_region_group(r->f, &gr[i], i == ng);
  }
  fputc(']', r->f);
  free(gr);
  return 200;
}

static int api_top(const struct req *r) {
  const struct view *v = r->v;
  const struct hg_graph *g = v->g;
  uint32_t k = (uint32_t)num(r, "n", 20, MAX_PAGE);
  uint32_t *top = malloc(((size_t)k + 1) * sizeof *top);
  if (!top) return 500;
  uint32_t nt = 0; /* hg_dominators_top's answer, from the sorted order */
  for (uint32_t i = 0; i < g->node_count && nt < k; i++)
    if (v->d->idom[v->order[i]] != HG_NONE) top[nt++] = v->order[i];
  int rc = ajson_top(r->f, g, v->names, v->d, top, nt, v->rcount, v->rbytes, v->cretained, k);
  free(top);
  return rc ? 500 : 200;
}

/* The node named by ?node=, or -1 after writing a 404 answer. */
static int64_t node_of(const struct req *r) {
  int64_t v = view_node_arg(r->v, r->arg(r->ctx, "node"));
  if (v < 0) fputs("{\"error\":\"no node at that address\"}", r->f);
  return v;
}

static int api_show(const struct req *r) {
  int64_t n = node_of(r);
  if (n < 0) return 404;
  uint32_t k = (uint32_t)num(r, "n", 50, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  acli_show_json(r->f, r->v->g, r->v->names, r->v->sym, (uint32_t)n, off, k);
  return 200;
}

static int api_dominators(const struct req *r) {
  const struct view *v = r->v;
  int64_t n = node_of(r);
  if (n < 0) return 404;
  uint32_t x = (uint32_t)n, k = (uint32_t)num(r, "n", 20, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  uint32_t b = v->kid_start[x];
  ajson_dominators(r->f, v->g, v->names, v->d, x, v->kids + b, v->kid_start[x + 1] - b, off, k);
  return 200;
}

static int api_path(const struct req *r) {
  int64_t n = node_of(r);
  if (n < 0) return 404;
  uint32_t k = (uint32_t)num(r, "n", 1, 100);
  struct hg_paths *p = NULL;
  int rc = hg_paths_to_roots(r->v->g, (uint32_t)n, k ? k : 1, &p);
  if (rc && rc != HG_ENOTFOUND) return 500;
  ajson_paths(r->f, r->v->g, r->v->names, rc ? NULL : p);
  hg_paths_free(p);
  return 200;
}

static int api_leaks(const struct req *r) {
  uint32_t k = (uint32_t)num(r, "n", 50, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  ajson_leaks(r->f, r->v->g, r->v->names, r->v->leaks, off, k);
  return 200;
}

static int api_cycles(const struct req *r) {
  uint32_t k = (uint32_t)num(r, "n", 20, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  ajson_cycles(r->f, r->v->g, r->v->names, r->v->cycles, off, k);
  return 200;
}

static int api_diff(const struct req *r) {
  if (!r->v->diff) {
    fputs("{\"error\":\"no baseline: run heapgraph view SNAP BASELINE\"}", r->f);
    return 404;
  }
  uint32_t k = (uint32_t)num(r, "n", 30, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  ajson_diff(r->f, r->v->diff, off, k, 0, 1);
  return 200;
}

static const char no_stacks[] =
    "{\"error\":\"this snapshot has no allocation stacks (capture with heapgraph run --stacks)\"}";

/* `stacks --json --by KEY -n N`, paged. */
static int api_stacks(const struct req *r) {
  const struct view *v = r->v;
  if (!v->g->has_stacks) {
    fputs(no_stacks, r->f);
    return 404;
  }
  int key = stack_table_key(r->arg(r->ctx, "by"));
  if (key < 0) {
    fputs("{\"error\":\"by= takes retained, bytes or count\"}", r->f);
    return 400;
  }
  uint32_t k = (uint32_t)num(r, "n", 50, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  stack_table_json(r->f, v->g, v->stack_tot, v->sym, v->stack_order[key], v->stacks_listed, off, k);
  return 200;
}

/* ---- viewer-only answers ---- */

static int api_summary(const struct req *r) {
  const struct view *v = r->v;
  fprintf(r->f, "{\"nodes_total\":%" PRIu32 ",\"edges_total\":%" PRIu32 ",\"bytes_total\":%" PRIu64
                ",\"reachable_count\":%" PRIu32 ",\"reachable_bytes\":%" PRIu64 ",\"leaked_count\":%" PRIu32
                ",\"leaked_bytes\":%" PRIu64 ",\"root_leaks\":%" PRIu32 ",\"cycle_count\":%" PRIu32
                ",\"class_count\":%" PRIu32 ",\"stacks\":",
          v->g->node_count, v->g->edge_count, v->bytes_total, v->d->reachable_count, v->d->reachable_bytes,
          v->leaks->leaked_count, v->leaks->leaked_bytes, v->leaks->count, v->cycles->count,
          v->g->class_count);
  if (v->g->has_stacks) {
    const struct hg_stack_info *si = &v->g->stack_info;
    fputs("{\"status\":", r->f);
    str(r, si->status);
    fprintf(r->f, ",\"sample_bytes\":%" PRIu64 ",\"listed\":%" PRIu32 ",\"unattributed_nodes\":%" PRIu64 "}",
            si->sample_bytes, v->stacks_listed, v->stack_tot[0].nodes);
  } else {
    fputs("null", r->f);
  }
  fputs(",\"baseline\":", r->f);
  str(r, v->base_path);
  fputs(",\"startup_seconds\":{", r->f);
  for (int i = 0; i < 8; i++) fprintf(r->f, "%s\"%s\":%.3f", i ? "," : "", view_step_names[i], v->seconds[i]);
  fputs("}}", r->f);
  return 200;
}

static const char *class_label(const struct view *v, uint32_t c) {
  return c ? v->names[c] : "(unclassified)";
}

/* Classes with count, bytes, retained: ?sort=retained|bytes|count|name
 * &desc=1|0 &q=substring &offset &n. */
static const struct view *cls_v;
static int cls_field;
static int cls_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  const uint64_t *k = cls_field == 0 ? cls_v->cretained : cls_field == 1 ? cls_v->cbytes : cls_v->ccount;
  if (cls_field < 3 && k[x] != k[y]) return k[x] > k[y] ? -1 : 1;
  if (cls_field == 3) {
    int s = strcmp(class_label(cls_v, x), class_label(cls_v, y));
    if (s) return s;
  }
  return x < y ? -1 : x > y;
}

static int api_classes(const struct req *r) {
  const struct view *v = r->v;
  uint32_t nc = v->g->class_count + 1, nrows = 0;
  uint32_t k = (uint32_t)num(r, "n", 100, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  const char *q = r->arg(r->ctx, "q"), *sort = r->arg(r->ctx, "sort");
  int asc = num(r, "asc", 0, 1) == 1;
  uint32_t *rows = malloc((size_t)nc * sizeof *rows);
  if (!rows) return 500;
  for (uint32_t c = 0; c < nc; c++)
    if (v->ccount[c] && (!q || !*q || strcasestr(class_label(v, c), q))) rows[nrows++] = c;
  cls_v = v;
  cls_field = !sort || !strcmp(sort, "retained") ? 0 : !strcmp(sort, "bytes") ? 1 : !strcmp(sort, "count") ? 2 : 3;
  qsort(rows, nrows, sizeof *rows, cls_cmp);
  fprintf(r->f, "{\"total\":%" PRIu32 ",\"rows\":[", nrows);
  for (uint32_t i = off; i < nrows && i - off < k; i++) {
    uint32_t c = rows[asc ? nrows - 1 - i : i];
    const struct hg_class *kc = c ? &v->g->classes[c - 1] : NULL;
    fprintf(r->f, "%s{\"id\":%" PRIu32 ",\"class\":", i == off ? "\n" : ",\n", c);
    str(r, c ? v->names[c] : NULL);
    fputs(",\"kind\":", r->f);
    str(r, kc ? hg_class_kind_name(kc->kind) : NULL);
    fputs(",\"mangled\":", r->f);
    str(r, kc ? kc->name : NULL);
    fprintf(r->f, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"retained\":%" PRIu64 "}", v->ccount[c],
            v->cbytes[c], v->cretained[c]);
  }
  fputs("]}", r->f);
  free(rows);
  return 200;
}

static int api_instances(const struct req *r) {
  const struct view *v = r->v;
  uint64_t c = num(r, "class", UINT64_MAX, UINT64_MAX);
  if (c > v->g->class_count) {
    fputs("{\"error\":\"no such class\"}", r->f);
    return 404;
  }
  uint32_t k = (uint32_t)num(r, "n", 100, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  uint32_t b = v->inst_start[c], total = v->inst_start[c + 1] - b;
  fprintf(r->f, "{\"id\":%" PRIu64 ",\"class\":", c);
  str(r, c ? v->names[c] : NULL);
  fprintf(r->f, ",\"total\":%" PRIu32 ",\"rows\":[", total);
  node_page(r, v->inst + b, total, off, k);
  return 200;
}

/* Dominator-tree children of ?node= (absent: the roots). */
static int api_children(const struct req *r) {
  const struct view *v = r->v;
  uint32_t x = v->g->node_count;
  if (r->arg(r->ctx, "node")) {
    int64_t n = node_of(r);
    if (n < 0) return 404;
    x = (uint32_t)n;
  }
  uint32_t k = (uint32_t)num(r, "n", 100, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  uint32_t b = v->kid_start[x], total = v->kid_start[x + 1] - b;
  fprintf(r->f, "{\"retained\":%" PRIu64 ",\"total\":%" PRIu32 ",\"rows\":[",
          x < v->g->node_count ? v->d->retained[x] : v->d->reachable_bytes, total);
  for (uint32_t i = off; i < total && i - off < k; i++) {
    uint32_t u = v->kids[b + i];
    fputs(i == off ? "\n" : ",\n", r->f);
    node(r, u);
    fprintf(r->f, ",\"retained\":%" PRIu64 ",\"children\":%" PRIu32 "}", v->d->retained[u],
            v->kid_start[u + 1] - v->kid_start[u]);
  }
  fputs("]}", r->f);
  return 200;
}

/* Icicle: the dominator subtree of ?node= (absent: the roots) to ?depth=
 * levels, the ?n= biggest children per node, none under 0.1 % of the whole
 * drawn (so at most 1,000 blocks a level); "other" = the rest's bytes. */
static void icicle(const struct req *r, uint32_t x, unsigned depth, uint32_t k, uint64_t whole) {
  const struct view *v = r->v;
  uint32_t b = v->kid_start[x], total = v->kid_start[x + 1] - b;
  uint64_t shown = 0;
  if (x < v->g->node_count) {
    node(r, x);
    fprintf(r->f, ",\"retained\":%" PRIu64, v->d->retained[x]);
  } else {
    fprintf(r->f, "{\"index\":null,\"class\":\"(roots)\",\"size\":0,\"retained\":%" PRIu64, v->d->reachable_bytes);
  }
  fputs(",\"children\":[", r->f);
  for (uint32_t i = 0; depth && i < total && i < k; i++) {
    uint32_t u = v->kids[b + i];
    if (!v->d->retained[u] || v->d->retained[u] < whole / 1000) break; /* <= 1,000 blocks a level */
    fputs(i ? "," : "", r->f);
    icicle(r, u, depth - 1, k, whole);
    shown += v->d->retained[u];
  }
  uint64_t all = x < v->g->node_count ? v->d->retained[x] - v->g->node_size[x] : v->d->reachable_bytes;
  fprintf(r->f, "],\"other\":%" PRIu64 "}", all - shown);
}

static int api_icicle(const struct req *r) {
  uint32_t x = r->v->g->node_count;
  if (r->arg(r->ctx, "node")) {
    int64_t n = node_of(r);
    if (n < 0) return 404;
    x = (uint32_t)n;
  }
  icicle(r, x, (unsigned)num(r, "depth", 4, 8), (uint32_t)num(r, "n", 12, 50),
         x < r->v->g->node_count ? r->v->d->retained[x] : r->v->d->reachable_bytes);
  return 200;
}

/* The group of the root leak at ?node=: its cycle's members (a lone block
 * is its own group). */
static int api_leak(const struct req *r) {
  const struct view *v = r->v;
  int64_t n = node_of(r);
  if (n < 0) return 404;
  const struct hg_cycles *c = v->cycles;
  for (uint32_t i = 0; i < c->count; i++)
    for (uint32_t j = 0; j < c->cycles[i].count; j++)
      if (c->members[c->cycles[i].first + j] == (uint32_t)n) {
        ajson_cycle(r->f, v->g, v->names, c, i, (uint32_t)num(r, "n", 100, MAX_PAGE));
        return 200;
      }
  fprintf(r->f, "{\"count\":1,\"bytes\":%" PRIu64 ",\"leaked\":%s,\"members\":[", v->g->node_size[n],
          v->d->idom[n] == HG_NONE ? "true" : "false");
  node(r, (uint32_t)n);
  fputs("}],\"references\":[]}", r->f);
  return 200;
}

/* One allocation stack (?id=) and its blocks: the stacks entry plus
 * {total, rows: [NODE + retained]}, ?sort=size (largest first, the
 * default) or retained (biggest retained first), paged. */
static int api_stack(const struct req *r) {
  const struct view *v = r->v;
  const struct hg_graph *g = v->g;
  if (!g->has_stacks) {
    fputs(no_stacks, r->f);
    return 404;
  }
  uint64_t id = num(r, "id", 0, UINT64_MAX);
  if (!id || id > g->stack_count) {
    fputs("{\"error\":\"no such stack\"}", r->f);
    return 404;
  }
  const char *sort = r->arg(r->ctx, "sort");
  int by_ret = sort && !strcmp(sort, "retained");
  uint32_t k = (uint32_t)num(r, "n", 100, MAX_PAGE), off = (uint32_t)num(r, "offset", 0, UINT32_MAX);
  uint32_t b = v->sblk_start ? v->sblk_start[id] : 0, total = v->sblk_start ? v->sblk_start[id + 1] - b : 0;
  stack_table_entry_json(r->f, g, v->stack_tot, v->sym, (uint32_t)id);
  fprintf(r->f, ",\"sort\":\"%s\",\"total\":%" PRIu32 ",\"rows\":[", by_ret ? "retained" : "size", total);
  node_page(r, v->sblk_start ? (by_ret ? v->sblk_ret : v->sblk_size) + b : NULL, total, off, k);
  return 200;
}

/* One level of the stacks' call tree, as `heapgraph stacks --tree` merges
 * it: ?order=bottom-up (allocating function first) or top-down; the node is
 * ?stack=S&depth=D, the first D frames of stack S in that order (depth 0:
 * the root). Answers its children — the distinct next frames of the listed
 * stacks below it, with their summed count, bytes and retained bytes (an
 * upper bound where stacks nest, as in the CLI), the number of stacks through
 * each, one of them (`stack`, the lowest id) to name the child by, and `leaf`
 * when no stack goes deeper — biggest ?by= first, at most ?n=. */
struct tkid {
  struct hg_stack_frame f;
  uint32_t stack, stacks;
  int leaf;
  uint64_t count, bytes, retained;
};

static const struct hg_stack_frame *frame_at(const struct hg_stack *s, uint32_t i, int top_down) {
  return &s->frames[top_down ? s->frame_count - 1 - i : i];
}

static int same_frame(const struct hg_stack_frame *a, const struct hg_stack_frame *b) {
  return a->image == b->image && a->offset == b->offset;
}

static int tkid_by_frame(const void *a, const void *b) {
  const struct tkid *x = a, *y = b;
  if (x->f.image != y->f.image) return x->f.image < y->f.image ? -1 : 1;
  if (x->f.offset != y->f.offset) return x->f.offset < y->f.offset ? -1 : 1;
  return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int tkid_key;
static int tkid_by_key(const void *a, const void *b) {
  const struct tkid *x = a, *y = b;
  uint64_t kx = tkid_key == STACK_BY_COUNT ? x->count : tkid_key == STACK_BY_BYTES ? x->bytes : x->retained;
  uint64_t ky = tkid_key == STACK_BY_COUNT ? y->count : tkid_key == STACK_BY_BYTES ? y->bytes : y->retained;
  if (kx != ky) return kx < ky ? 1 : -1;
  return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int api_stacktree(const struct req *r) {
  const struct view *v = r->v;
  const struct hg_graph *g = v->g;
  if (!g->has_stacks) {
    fputs(no_stacks, r->f);
    return 404;
  }
  const char *order = r->arg(r->ctx, "order");
  int key = stack_table_key(r->arg(r->ctx, "by"));
  if (key < 0 || (order && strcmp(order, "bottom-up") && strcmp(order, "top-down"))) {
    fputs("{\"error\":\"order= takes bottom-up or top-down, by= retained, bytes or count\"}", r->f);
    return 400;
  }
  int td = order && !strcmp(order, "top-down");
  uint64_t sid = num(r, "stack", 0, UINT64_MAX), depth = num(r, "depth", 0, 1024);
  const struct hg_stack *at = sid && sid <= g->stack_count ? &g->stacks[sid - 1] : NULL;
  if (depth && (!at || depth > at->frame_count)) {
    fputs("{\"error\":\"no such tree node\"}", r->f);
    return 404;
  }
  uint32_t d = (uint32_t)depth, k = (uint32_t)num(r, "n", 100, MAX_PAGE), m = 0;
  struct tkid *kid = malloc(((size_t)v->stacks_listed + 1) * sizeof *kid);
  if (!kid) return 500;
  for (uint32_t i = 0; i < v->stacks_listed; i++) { /* the listed stacks below the node */
    uint32_t id = v->stack_order[0][i];
    const struct hg_stack *s = &g->stacks[id - 1];
    if (s->frame_count <= d) continue;
    uint32_t j = 0;
    while (j < d && same_frame(frame_at(s, j, td), frame_at(at, j, td))) j++;
    if (j < d) continue;
    kid[m++] = (struct tkid){*frame_at(s, d, td), id, 1, s->frame_count == d + 1, s->count, s->bytes,
                             v->stack_tot[id].retained};
  }
  qsort(kid, m, sizeof *kid, tkid_by_frame);
  uint32_t nk = 0; /* merge the runs of one frame into their first (lowest id) */
  for (uint32_t i = 0; i < m; i++) {
    struct tkid *last = nk ? &kid[nk - 1] : NULL;
    if (last && same_frame(&last->f, &kid[i].f)) {
      last->stacks++;
      last->leaf &= kid[i].leaf;
      last->count += kid[i].count;
      last->bytes += kid[i].bytes;
      last->retained += kid[i].retained;
    } else {
      kid[nk++] = kid[i];
    }
  }
  tkid_key = key;
  qsort(kid, nk, sizeof *kid, tkid_by_key);
  fprintf(r->f, "{\"order\":\"%s\",\"depth\":%" PRIu32 ",\"total\":%" PRIu32 ",\"children\":[",
          td ? "top-down" : "bottom-up", d, nk);
  for (uint32_t i = 0; i < nk && i < k; i++) {
    const struct tkid *c = &kid[i];
    struct hg_stack one = {0, 0, 1, &c->f};
    fprintf(r->f, "%s{\"stack\":%" PRIu32 ",\"depth\":%" PRIu32 ",\"stacks\":%" PRIu32 ",\"leaf\":%s,\"count\":%" PRIu64
                  ",\"bytes\":%" PRIu64 ",\"retained\":%" PRIu64 ",\"frames\":",
            i ? ",\n" : "\n", c->stack, d + 1, c->stacks, c->leaf ? "true" : "false", c->count, c->bytes, c->retained);
    sym_print_stack(r->f, v->sym, &one, 1, "");
    fputc('}', r->f);
  }
  fputs("]}", r->f);
  free(kid);
  return 200;
}

int view_api(const struct view *v, const char *name, view_arg_fn arg, void *ctx, FILE *f) {
  static const struct {
    const char *name;
    int (*fn)(const struct req *);
  } table[] = {{"info", api_info},       {"regions", api_regions},     {"top", api_top},
               {"show", api_show},       {"dominators", api_dominators}, {"path", api_path},
               {"leaks", api_leaks},     {"cycles", api_cycles},       {"diff", api_diff},
               {"summary", api_summary}, {"classes", api_classes},     {"instances", api_instances},
               {"children", api_children}, {"icicle", api_icicle},     {"leak", api_leak},
               {"stacks", api_stacks},   {"stack", api_stack},         {"stacktree", api_stacktree}};
  struct req r = {v, arg, ctx, f};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(name, table[i].name)) return table[i].fn(&r);
  fputs("{\"error\":\"no such API\"}", f);
  return 404;
}
