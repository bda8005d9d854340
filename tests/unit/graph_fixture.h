/*
 * graph_fixture.h — builds a struct hg_graph directly from an edge list for
 * the analysis unit tests (no file, no reader): nodes 0..n-1 at addresses
 * 0x1000 + 0x100*i, size 1 each unless set, edges sorted into CSR by source.
 * The result is freed with hg_graph_free (every array is malloc'd).
 */
#ifndef HG_TEST_GRAPH_FIXTURE_H
#define HG_TEST_GRAPH_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

struct fx {
  uint32_t n, m, cap, nroots, nclasses, nstrings;
  uint32_t *src, *dst, *off, *field;
  uint8_t *kind;
  uint64_t *size;
  uint32_t *cls;
  uint8_t *flags;
  struct hg_root roots[64];
  const char *class_names[16];
  const char *strings[16];
};

/* xorshift64 in [0, n), on the caller's state */
static inline uint32_t fx_rnd(uint64_t *state, uint32_t n) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return (uint32_t)(x % n);
}

/* FNV-1a over n bytes, continuing from h: result fingerprints */
static inline uint64_t fx_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static inline struct fx *fx_new(uint32_t n) {
  struct fx *f = calloc(1, sizeof *f);
  f->n = n;
  f->size = malloc(((size_t)n + 1) * sizeof *f->size);
  f->cls = calloc((size_t)n + 1, sizeof *f->cls);
  f->flags = malloc((size_t)n + 1);
  for (uint32_t i = 0; i < n; i++) f->size[i] = 1, f->flags[i] = HG_NODE_MALLOC;
  return f;
}

/* Edge with a field name id (0 = none); offsets count up per source. */
static inline void fx_edge_f(struct fx *f, uint32_t s, uint32_t d, uint8_t kind, uint32_t field) {
  if (f->m == f->cap) {
    f->cap = f->cap ? f->cap * 2 : 64;
    f->src = realloc(f->src, f->cap * sizeof *f->src);
    f->dst = realloc(f->dst, f->cap * sizeof *f->dst);
    f->off = realloc(f->off, f->cap * sizeof *f->off);
    f->field = realloc(f->field, f->cap * sizeof *f->field);
    f->kind = realloc(f->kind, f->cap);
  }
  f->src[f->m] = s;
  f->dst[f->m] = d;
  f->kind[f->m] = kind;
  f->field[f->m] = field;
  f->off[f->m] = 8 * f->m;
  f->m++;
}

static inline void fx_edge(struct fx *f, uint32_t s, uint32_t d) { fx_edge_f(f, s, d, HG_EDGE_STRONG, 0); }

static inline void fx_root(struct fx *f, uint32_t t) {
  f->roots[f->nroots++] = (struct hg_root){HG_ROOT_GLOBAL, HG_NO_OWNER, 0x10 * f->nroots, t};
}

static inline uint32_t fx_class(struct fx *f, const char *name) {
  f->class_names[f->nclasses++] = name;
  return f->nclasses;
}

static inline uint32_t fx_string(struct fx *f, const char *s) {
  f->strings[f->nstrings++] = s;
  return f->nstrings;
}

/* Consumes f. */
static inline struct hg_graph *fx_build(struct fx *f) {
  struct hg_graph *g = calloc(1, sizeof *g);
  uint32_t n = f->n, m = f->m;
  g->node_count = n;
  g->node_addr = malloc(((size_t)n + 1) * 8);
  g->node_size = f->size;
  g->node_class = f->cls;
  g->node_flags = f->flags;
  g->node_heap = calloc((size_t)n + 1, 4);
  for (uint32_t i = 0; i < n; i++) g->node_addr[i] = 0x1000 + 0x100 * (uint64_t)i;
  g->edge_count = m;
  g->edge_start = calloc((size_t)n + 2, 4);
  g->edge_target = malloc(((size_t)m + 1) * 4);
  g->edge_offset = malloc(((size_t)m + 1) * 4);
  g->edge_kind = malloc((size_t)m + 1);
  g->named_edge = malloc(((size_t)m + 1) * 4);
  g->named_field = malloc(((size_t)m + 1) * 4);
  for (uint32_t e = 0; e < m; e++) g->edge_start[f->src[e] + 1]++;
  for (uint32_t i = 0; i < n; i++) g->edge_start[i + 1] += g->edge_start[i];
  uint32_t *cur = malloc(((size_t)n + 1) * 4);
  memcpy(cur, g->edge_start, (size_t)n * 4);
  for (uint32_t e = 0; e < m; e++) { /* stable by source */
    uint32_t at = cur[f->src[e]]++;
    g->edge_target[at] = f->dst[e];
    g->edge_kind[at] = f->kind[e];
    g->edge_offset[at] = f->off[e];
  }
  memcpy(cur, g->edge_start, (size_t)n * 4);
  uint32_t *fld = calloc((size_t)m + 1, 4);
  for (uint32_t e = 0; e < m; e++) fld[cur[f->src[e]]++] = f->field[e];
  for (uint32_t e = 0; e < m; e++)
    if (fld[e]) {
      g->named_edge[g->named_count] = e;
      g->named_field[g->named_count++] = fld[e];
    }
  free(fld);
  free(cur);
  g->root_count = f->nroots;
  g->roots = malloc(((size_t)f->nroots + 1) * sizeof *g->roots);
  memcpy(g->roots, f->roots, f->nroots * sizeof *g->roots);
  g->class_count = f->nclasses;
  g->classes = calloc((size_t)f->nclasses + 1, sizeof *g->classes);
  for (uint32_t c = 0; c < f->nclasses; c++)
    g->classes[c] = (struct hg_class){f->class_names[c], HG_CLASS_OBJC, 0};
  g->string_count = f->nstrings;
  g->strings = calloc((size_t)f->nstrings + 1, sizeof *g->strings);
  for (uint32_t s = 0; s < f->nstrings; s++) g->strings[s] = f->strings[s];
  free(f->src);
  free(f->dst);
  free(f->off);
  free(f->field);
  free(f->kind);
  free(f);
  return g;
}

#endif
