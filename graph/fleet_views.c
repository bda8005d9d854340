/*
 * fleet_views.c — two views of a set of summaries besides the issues
 * (docs/fleet.md, "Class growth" and "Merged retention tree"): per class
 * the median bytes per snapshot of a version against its baseline, and
 * the retention paths of a version's snapshots merged into one tree of
 * class steps that a viewer draws as an icicle.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/fleet.h"
#include "graph/fleet_set.h"
#include "graph/fleet_stats.h"

/* ---- Class growth ---- */

/* Median of the bytes of class occurrences occ[idx[lo..hi)] in version v,
 * counting the version's n snapshots that do not list the class as 0. */
static uint64_t class_median(const struct hg_fleet *f, const uint64_t *idx, uint64_t lo, uint64_t hi,
                             uint32_t v, uint32_t n, uint64_t *buf, uint32_t *listed) {
  uint32_t m = 0;
  for (uint64_t k = lo; k < hi; k++) {
    const struct _hg_occ *o = &f->cocc[idx[k]];
    if (f->snaps[o->snap].version == v && m < n) buf[m++] = o->bytes;
  }
  *listed = m;
  for (uint32_t i = m; i < n; i++) buf[i] = 0;
  _hg_fleet_sort(buf, n);
  return _hg_fleet_pct(buf, n, 50);
}

static int by_delta(const void *x, const void *y) {
  const struct hg_fleet_growth_row *a = x, *b = y;
  if (a->delta != b->delta) return a->delta > b->delta ? -1 : 1;
  return strcmp(a->name, b->name);
}

int hg_fleet_class_growth(const struct hg_fleet *f, const char *version, const char *baseline,
                          struct hg_fleet_growth **out) {
  *out = NULL;
  uint32_t v, b;
  int rc = _hg_fleet_pair(f, version, baseline, &v, &b);
  if (rc) return rc;
  uint32_t nv = 0, nb = 0;
  for (uint32_t i = 0; i < f->nsnap; i++) {
    nv += f->snaps[i].version == v;
    nb += f->snaps[i].version == b;
  }
  struct _hg_arena a = {0};
  struct hg_fleet_growth *g = _hg_fa_result(&a, sizeof *g);
  uint64_t *start = NULL, *idx = NULL, *buf = malloc(((size_t)f->nsnap + 1) * 8);
  uint32_t nc = f->classes.n;
  struct hg_fleet_growth_row *rows = g ? _hg_fa_alloc(&a, ((size_t)nc + 1) * sizeof *rows) : NULL;
  rc = (!rows || !buf) ? HG_ENOMEM : _hg_fleet_group(f->cocc, f->ncocc, nc, &start, &idx);
  for (uint32_t c = 0; !rc && c < nc; c++) {
    struct hg_fleet_growth_row *r = &rows[c];
    r->name = f->classes.str[c];
    r->median = class_median(f, idx, start[c], start[c + 1], v, nv, buf, &r->snapshots);
    r->base_median = b == UINT32_MAX ? 0 : class_median(f, idx, start[c], start[c + 1], b, nb, buf, &r->base_snapshots);
    r->delta = (int64_t)(r->median - r->base_median);
  }
  free(start);
  free(idx);
  free(buf);
  if (rc) {
    _hg_fa_free(&a);
    return rc;
  }
  qsort(rows, nc, sizeof *rows, by_delta);
  g->version = f->versions.str[v];
  g->baseline = b == UINT32_MAX ? NULL : f->versions.str[b];
  g->rows = rows;
  g->count = nc;
  g->priv = _hg_fa_keep(&a, g, sizeof *g);
  *out = g;
  return 0;
}

void hg_fleet_growth_free(struct hg_fleet_growth *g) {
  if (g) _hg_fa_release(g->priv);
}

/* ---- Merged retention tree ---- */

struct tnode {
  const char *name;
  uint32_t child, next;      /* first child, next sibling (0 = none)       */
  uint32_t stamp, snapshots; /* last snapshot + 1 that passed through it    */
  uint64_t own, total;       /* bytes of holders ending here; merged total  */
};

static int child_of(struct tnode **tn, uint32_t *n, uint32_t *cap, uint32_t parent, const char *name,
                    uint32_t *out) {
  for (uint32_t c = (*tn)[parent].child; c; c = (*tn)[c].next)
    if (!strcmp((*tn)[c].name, name)) {
      *out = c;
      return 0;
    }
  if (*n == *cap) {
    uint32_t nc = *cap * 2;
    struct tnode *t = realloc(*tn, (size_t)nc * sizeof *t);
    if (!t) return HG_ENOMEM;
    *tn = t;
    *cap = nc;
  }
  struct tnode *t = *tn;
  t[*n] = (struct tnode){name, 0, t[parent].child, 0, 0, 0, 0};
  t[parent].child = *n;
  *out = (*n)++;
  return 0;
}

struct kid { uint64_t total; uint32_t id; };
static int by_total(const void *x, const void *y) {
  const struct kid *a = x, *b = y;
  if (a->total != b->total) return a->total > b->total ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

int hg_fleet_tree(const struct hg_fleet *f, const char *version, struct hg_fleet_tree **out) {
  *out = NULL;
  uint32_t v;
  if (_hg_fleet_resolve(f, version, &v)) return HG_ENOTFOUND;
  uint32_t nv = 0;
  for (uint32_t i = 0; i < f->nsnap; i++) nv += f->snaps[i].version == v;
  uint32_t n = 1, cap = 1024;
  struct tnode *tn = malloc(cap * sizeof *tn);
  if (!tn) return HG_ENOMEM;
  tn[0] = (struct tnode){"(roots)", 0, 0, 0, 0, 0, 0};
  int rc = 0;
  for (uint64_t k = 0; k < f->nocc && !rc; k++) {
    const struct _hg_occ *o = &f->occ[k];
    const struct _hg_fsig *s = &f->sigs[o->key];
    if (s->kind != HG_FLEET_RETENTION || f->snaps[o->snap].version != v) continue;
    uint32_t at = 0;
    if (tn[0].stamp != o->snap + 1) tn[0].stamp = o->snap + 1, tn[0].snapshots++;
    for (uint32_t i = 0; i < s->step_count && !rc; i++) {
      rc = child_of(&tn, &n, &cap, at, s->steps[i], &at);
      if (!rc && tn[at].stamp != o->snap + 1) tn[at].stamp = o->snap + 1, tn[at].snapshots++;
    }
    if (!rc) tn[at].own += o->bytes;
  }
  /* Totals bottom-up: a node's total is at least its children's. Nodes are
   * created after their parents, so reverse creation order is bottom-up. */
  uint32_t *parent = rc ? NULL : calloc(n, sizeof *parent);
  if (!rc && !parent) rc = HG_ENOMEM;
  for (uint32_t i = 0; !rc && i < n; i++)
    for (uint32_t c = tn[i].child; c; c = tn[c].next) parent[c] = i;
  uint64_t *kids = rc ? NULL : calloc(n, sizeof *kids);
  if (!rc && !kids) rc = HG_ENOMEM;
  for (uint32_t i = n; !rc && i-- > 0;) {
    tn[i].total = tn[i].own > kids[i] ? tn[i].own : kids[i];
    if (i) kids[parent[i]] += tn[i].total;
  }
  /* Lay out breadth-first, children by total, biggest first. */
  struct _hg_arena a = {0};
  struct hg_fleet_tree *t = rc ? NULL : _hg_fa_result(&a, sizeof *t);
  struct hg_fleet_tree_node *nodes = t ? _hg_fa_alloc(&a, (size_t)n * sizeof *nodes) : NULL;
  uint32_t *queue = malloc((size_t)n * sizeof *queue);
  struct kid *kb = malloc((size_t)n * sizeof *kb);
  if (!rc && (!nodes || !queue || !kb)) rc = HG_ENOMEM;
  if (!rc) {
    uint32_t head = 0, tail = 0;
    queue[tail++] = 0;
    while (head < tail) {
      uint32_t id = queue[head], pos = head++;
      uint32_t nk = 0;
      for (uint32_t c = tn[id].child; c; c = tn[c].next) kb[nk++] = (struct kid){tn[c].total, c};
      qsort(kb, nk, sizeof *kb, by_total);
      nodes[pos] = (struct hg_fleet_tree_node){tn[id].name, tn[id].total,
                                               nv ? (double)tn[id].total / nv : 0, tn[id].snapshots,
                                               tail, nk};
      for (uint32_t j = 0; j < nk; j++) queue[tail++] = kb[j].id;
    }
  }
  free(queue);
  free(kb);
  free(parent);
  free(kids);
  free(tn);
  if (rc) {
    _hg_fa_free(&a);
    return rc;
  }
  t->version = f->versions.str[v];
  t->snapshots = nv;
  t->count = n;
  t->nodes = nodes;
  t->priv = _hg_fa_keep(&a, t, sizeof *t);
  *out = t;
  return 0;
}

void hg_fleet_tree_free(struct hg_fleet_tree *t) {
  if (t) _hg_fa_release(t->priv);
}
