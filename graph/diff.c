/*
 * diff.c — per-class comparison of two snapshots (hg_diff_classes).
 *
 * Addresses mean nothing across snapshots, so only aggregates are compared:
 * classes are matched by (name, kind) through a small open-addressing hash
 * table; unclassified nodes form one bucket (name NULL). Memory is
 * proportional to the number of classes, not nodes.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/analysis.h"

struct table {
  struct hg_class_delta *rows;
  uint32_t count, cap;   /* rows */
  uint32_t *slots;       /* row index + 1, 0 = empty */
  uint32_t nslots;       /* power of two */
};

/* XXH64 of the name, seeded with the kind; the unclassified bucket (no name)
 * hashes apart from the empty name. */
static uint64_t hash(const char *s, uint32_t kind) {
  return s ? XXH64(s, strlen(s), kind) : ~XXH64("", 0, kind);
}

static int same(const struct hg_class_delta *d, const char *name, uint32_t kind) {
  if (d->kind != kind) return 0;
  if (!d->name || !name) return d->name == name;
  return !strcmp(d->name, name);
}

static int rehash(struct table *t, uint32_t nslots) {
  uint32_t *s = calloc(nslots, sizeof *s);
  if (!s) return HG_ENOMEM;
  for (uint32_t i = 0; i < t->count; i++) {
    uint64_t h = hash(t->rows[i].name, t->rows[i].kind);
    uint32_t j = (uint32_t)h & (nslots - 1);
    while (s[j]) j = (j + 1) & (nslots - 1);
    s[j] = i + 1;
  }
  free(t->slots);
  t->slots = s;
  t->nslots = nslots;
  return 0;
}

/* Row for (name, kind), created if missing; NULL on ENOMEM. */
static struct hg_class_delta *row(struct table *t, const char *name, uint32_t kind) {
  uint64_t h = hash(name, kind);
  uint32_t j = (uint32_t)h & (t->nslots - 1);
  for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
    if (same(&t->rows[t->slots[j] - 1], name, kind)) return &t->rows[t->slots[j] - 1];
  if (t->count == t->cap) {
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    struct hg_class_delta *r = realloc(t->rows, (size_t)cap * sizeof *r);
    if (!r) return NULL;
    t->rows = r;
    t->cap = cap;
  }
  t->rows[t->count] = (struct hg_class_delta){.name = name, .kind = kind};
  t->slots[j] = ++t->count;
  if ((uint64_t)t->count * 2 > t->nslots) {
    if (rehash(t, t->nslots * 2)) return NULL;
  }
  return &t->rows[t->count - 1];
}

/* Adds graph g's per-class counts into column 0 (old) or 1 (new). */
static int add(struct table *t, const struct hg_graph *g, int col, struct hg_diff *d) {
  uint32_t nc = g->class_count + 1;
  uint64_t *cnt = calloc(nc, sizeof *cnt), *bytes = calloc(nc, sizeof *bytes);
  int rc = HG_ENOMEM;
  if (!cnt || !bytes) goto out;
  for (uint32_t v = 0; v < g->node_count; v++) {
    uint32_t c = g->node_class[v] < nc ? g->node_class[v] : 0;
    cnt[c]++;
    bytes[c] += g->node_size[v];
  }
  for (uint32_t c = 0; c < nc; c++) {
    if (!cnt[c]) continue;
    const char *name = c ? g->classes[c - 1].name : NULL;
    uint32_t kind = c ? g->classes[c - 1].kind : 0;
    struct hg_class_delta *r = row(t, name, kind);
    if (!r) goto out;
    if (col) {
      r->new_count += cnt[c];
      r->new_bytes += bytes[c];
      d->new_count += cnt[c];
      d->new_bytes += bytes[c];
    } else {
      r->old_count += cnt[c];
      r->old_bytes += bytes[c];
      d->old_count += cnt[c];
      d->old_bytes += bytes[c];
    }
  }
  rc = 0;
out:
  free(cnt);
  free(bytes);
  return rc;
}

static int by_growth(const void *a, const void *b) {
  const struct hg_class_delta *x = a, *y = b;
  int64_t dx = (int64_t)(x->new_bytes - x->old_bytes), dy = (int64_t)(y->new_bytes - y->old_bytes);
  if (dx != dy) return dx > dy ? -1 : 1;
  int64_t cx = (int64_t)(x->new_count - x->old_count), cy = (int64_t)(y->new_count - y->old_count);
  if (cx != cy) return cx > cy ? -1 : 1;
  if (!x->name || !y->name) return (x->name != NULL) - (y->name != NULL);
  return strcmp(x->name, y->name);
}

int hg_diff_classes(const struct hg_graph *old_graph, const struct hg_graph *new_graph,
                    struct hg_diff **out) {
  if (!old_graph || !new_graph || !out) return HG_EINVAL;
  *out = NULL;
  struct table t = {0};
  struct hg_diff *d = calloc(1, sizeof *d);
  int rc = HG_ENOMEM;
  if (!d || rehash(&t, 256)) goto fail;
  if ((rc = add(&t, old_graph, 0, d)) || (rc = add(&t, new_graph, 1, d))) goto fail;
  qsort(t.rows, t.count, sizeof *t.rows, by_growth);
  d->count = t.count;
  d->classes = t.rows;
  free(t.slots);
  *out = d;
  return 0;
fail:
  free(t.rows);
  free(t.slots);
  free(d);
  return rc;
}

void hg_diff_free(struct hg_diff *d) {
  if (!d) return;
  free(d->classes);
  free(d);
}
