/*
 * builder.c — an in-memory graph builder: collects records in any order,
 * with edges and roots given by addresses, then sorts, resolves and writes
 * them through the streaming writer. Uses malloc freely: it is for tools,
 * tests, the demo and converters, never for the capture path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_priv.h"
#include "heapgraph.h"

struct bnode { uint64_t addr, size; uint32_t cls, flags, heap; };
struct bedge { uint64_t src, off, dst; uint32_t kind, field; };
struct bref { uint32_t src; uint32_t field; uint64_t off; uint32_t dst, kind; };
struct broot { uint64_t where, dst; uint32_t kind, owner; };
struct bname { const char *name; uint32_t kind; uint64_t size; };

#define VEC(T) struct { T *v; size_t n, cap; }

struct hg_builder {
  struct hg_graph_priv arena;
  VEC(struct bnode) nodes;
  VEC(struct bedge) edges;
  VEC(struct broot) roots;
  VEC(struct hg_region) regions;
  VEC(struct hg_image) images;
  VEC(struct hg_thread) threads;
  VEC(struct bname) classes;
  VEC(struct bname) heaps;
  VEC(struct bname) strings;
  VEC(struct hg_meta) metas;
  int oom;
  char msg[256];
};

static int vec_push(void **v, size_t *n, size_t *cap, size_t size, const void *x) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, nc * size);
    if (!nv) return HG_ENOMEM;
    *v = nv;
    *cap = nc;
  }
  memcpy((char *)*v + *n * size, x, size);
  (*n)++;
  return 0;
}
#define PUSH(b, vec, x) vec_push((void **)&(vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v, (x))

static const char *dup(struct hg_builder *b, const char *s) {
  if (!s) return NULL;
  char *d = _hg_arena_strndup(&b->arena, s, strlen(s));
  if (!d) b->oom = 1;
  return d;
}

struct hg_builder *hg_builder_new(void) { return calloc(1, sizeof(struct hg_builder)); }

void hg_builder_free(struct hg_builder *b) {
  if (!b) return;
  _hg_arena_free(&b->arena);
  free(b->nodes.v);
  free(b->edges.v);
  free(b->roots.v);
  free(b->regions.v);
  free(b->images.v);
  free(b->threads.v);
  free(b->classes.v);
  free(b->heaps.v);
  free(b->strings.v);
  for (size_t i = 0; i < b->metas.n; i++) {
    free((void *)b->metas.v[i].app);
    free((void *)b->metas.v[i].capture);
  }
  free(b->metas.v);
  free(b);
}

const char *hg_builder_message(const struct hg_builder *b) {
  return b && b->msg[0] ? b->msg : "ok";
}

int hg_builder_meta(struct hg_builder *b, const struct hg_meta *m) {
  if (!b || !m) return HG_EINVAL;
  struct hg_meta c = *m;
  c.platform = dup(b, m->platform);
  c.os_version = dup(b, m->os_version);
  c.arch = dup(b, m->arch);
  c.process = dup(b, m->process);
  c.trigger = dup(b, m->trigger);
  c.allocator = dup(b, m->allocator);
  c.heap_status = dup(b, m->heap_status);
  c.app = NULL;
  c.capture = NULL;
  if (m->app_count) {
    struct hg_kv *a = calloc(m->app_count, sizeof *a);
    if (!a) return HG_ENOMEM;
    for (size_t i = 0; i < m->app_count; i++) {
      a[i].key = dup(b, m->app[i].key);
      a[i].value = dup(b, m->app[i].value);
    }
    c.app = a;
  }
  if (m->capture_count) {
    struct hg_num *a = calloc(m->capture_count, sizeof *a);
    if (!a) {
      free((void *)c.app);
      return HG_ENOMEM;
    }
    for (size_t i = 0; i < m->capture_count; i++) {
      a[i].key = dup(b, m->capture[i].key);
      a[i].value = m->capture[i].value;
    }
    c.capture = a;
  }
  if (b->oom || PUSH(b, b->metas, &c)) {
    free((void *)c.app);
    free((void *)c.capture);
    return HG_ENOMEM;
  }
  return 0;
}

int hg_builder_region(struct hg_builder *b, const struct hg_region *r) {
  if (!b || !r) return HG_EINVAL;
  struct hg_region c = *r;
  c.name = dup(b, r->name);
  return b->oom ? HG_ENOMEM : PUSH(b, b->regions, &c);
}

int hg_builder_image(struct hg_builder *b, const struct hg_image *im) {
  if (!b || !im || !im->path) return HG_EINVAL;
  struct hg_image c = *im;
  c.path = dup(b, im->path);
  if (im->id_len) {
    uint8_t *id = _hg_arena_alloc(&b->arena, im->id_len);
    if (!id) return HG_ENOMEM;
    memcpy(id, im->id, im->id_len);
    c.id = id;
  }
  return b->oom ? HG_ENOMEM : PUSH(b, b->images, &c);
}

int hg_builder_thread(struct hg_builder *b, const struct hg_thread *t) {
  if (!b || !t) return HG_EINVAL;
  struct hg_thread c = *t;
  c.name = dup(b, t->name);
  return b->oom ? HG_ENOMEM : PUSH(b, b->threads, &c);
}

/* Interned names: linear search is fine for the class/field counts the
 * builder serves (tools and tests); ids are positions + 1. */
static uint32_t intern(struct hg_builder *b, void *vec, const char *name, uint32_t kind,
                       uint64_t size) {
  VEC(struct bname) *v = vec;
  if (!name) return 0;
  for (size_t i = 0; i < v->n; i++)
    if (v->v[i].kind == kind && !strcmp(v->v[i].name, name)) return (uint32_t)i + 1;
  struct bname x = {dup(b, name), kind, size};
  if (b->oom || vec_push((void **)&v->v, &v->n, &v->cap, sizeof x, &x)) return 0;
  return (uint32_t)v->n;
}

uint32_t hg_builder_class(struct hg_builder *b, const char *name, uint32_t kind,
                          uint64_t instance_size) {
  return b ? intern(b, &b->classes, name, kind, instance_size) : 0;
}

uint32_t hg_builder_heap(struct hg_builder *b, const char *name) {
  return b ? intern(b, &b->heaps, name, 0, 0) : 0;
}

int hg_builder_node(struct hg_builder *b, uint64_t addr, uint64_t size, uint32_t class_id,
                    uint32_t flags, uint32_t heap_id) {
  if (!b || size == 0 || addr + size < addr) return HG_EINVAL;
  struct bnode n = {addr, size, class_id, flags, heap_id};
  return PUSH(b, b->nodes, &n);
}

int hg_builder_edge(struct hg_builder *b, uint64_t src_addr, uint64_t offset, uint64_t dst_addr,
                    uint32_t kind, const char *field) {
  if (!b || kind >= HG_EDGE_KIND_COUNT) return HG_EINVAL;
  uint32_t fid = field ? intern(b, &b->strings, field, 0, 0) : 0;
  if (field && !fid) return HG_ENOMEM;
  struct bedge e = {src_addr, offset, dst_addr, kind, fid};
  return PUSH(b, b->edges, &e);
}

int hg_builder_root(struct hg_builder *b, uint32_t kind, uint32_t owner, uint64_t where,
                    uint64_t dst_addr) {
  if (!b || kind >= HG_ROOT_KIND_COUNT) return HG_EINVAL;
  struct broot r = {where, dst_addr, kind, owner};
  return PUSH(b, b->roots, &r);
}

/* ---- write ---- */

static int cmp_node(const void *a, const void *b) {
  const struct bnode *x = a, *y = b;
  return (x->addr > y->addr) - (x->addr < y->addr);
}

static int cmp_ref(const void *a, const void *b) {
  const struct bref *x = a, *y = b;
  if (x->src != y->src) return (x->src > y->src) - (x->src < y->src);
  return (x->off > y->off) - (x->off < y->off);
}

static int64_t find(const struct bnode *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return -1;
  return addr - v[lo - 1].addr < v[lo - 1].size ? (int64_t)(lo - 1) : -1;
}

static int write_all(struct hg_builder *b, struct hg_writer *w, const struct bref *refs, size_t nrefs,
                     const struct hg_root *roots, size_t nroots) {
  int rc = 0;
  for (size_t i = 0; i < b->metas.n && !rc; i++) rc = hg_writer_meta(w, &b->metas.v[i]);
  for (size_t i = 0; i < b->images.n && !rc; i++) rc = hg_writer_image(w, &b->images.v[i]);
  for (size_t i = 0; i < b->regions.n && !rc; i++) rc = hg_writer_region(w, &b->regions.v[i]);
  for (size_t i = 0; i < b->threads.n && !rc; i++) rc = hg_writer_thread(w, &b->threads.v[i]);
  for (size_t i = 0; i < b->heaps.n && !rc; i++) rc = hg_writer_heap(w, b->heaps.v[i].name, NULL);
  for (size_t i = 0; i < b->classes.n && !rc; i++) {
    struct hg_class c = {b->classes.v[i].name, b->classes.v[i].kind, b->classes.v[i].size};
    rc = hg_writer_class(w, &c, NULL);
  }
  for (size_t i = 0; i < b->strings.n && !rc; i++) rc = hg_writer_string(w, b->strings.v[i].name, NULL);
  for (size_t i = 0; i < b->nodes.n && !rc; i++) {
    const struct bnode *n = &b->nodes.v[i];
    rc = hg_writer_node(w, n->addr, n->size, n->cls, n->flags, n->heap);
  }
  for (size_t i = 0; i < nrefs && !rc; i++)
    rc = hg_writer_edge(w, refs[i].src, refs[i].off, refs[i].dst, refs[i].kind, refs[i].field);
  for (size_t i = 0; i < nroots && !rc; i++) rc = hg_writer_root(w, &roots[i]);
  return rc;
}

int hg_builder_write(struct hg_builder *b, const char *path, uint64_t *dropped) {
  if (!b || !path) return HG_EINVAL;
  if (b->oom) return HG_ENOMEM;
  uint64_t drop = 0;
  if (b->nodes.n) qsort(b->nodes.v, b->nodes.n, sizeof *b->nodes.v, cmp_node); /* none: v is NULL */
  for (size_t i = 1; i < b->nodes.n; i++)
    if (b->nodes.v[i].addr < b->nodes.v[i - 1].addr + b->nodes.v[i - 1].size) {
      snprintf(b->msg, sizeof b->msg, "nodes at 0x%llx and 0x%llx overlap",
               (unsigned long long)b->nodes.v[i - 1].addr, (unsigned long long)b->nodes.v[i].addr);
      return HG_EINVAL;
    }
  struct bref *refs = malloc((b->edges.n + 1) * sizeof *refs);
  struct hg_root *roots = malloc((b->roots.n + 1) * sizeof *roots);
  if (!refs || !roots) {
    free(refs);
    free(roots);
    return HG_ENOMEM;
  }
  size_t nrefs = 0;
  for (size_t i = 0; i < b->edges.n; i++) {
    const struct bedge *e = &b->edges.v[i];
    int64_t s = find(b->nodes.v, b->nodes.n, e->src);
    int64_t t = find(b->nodes.v, b->nodes.n, e->dst);
    if (s < 0 || t < 0) {
      drop++;
      continue;
    }
    uint32_t kind = e->kind;
    if (kind == HG_EDGE_CONSERVATIVE && e->dst != b->nodes.v[t].addr) kind = HG_EDGE_INTERIOR;
    refs[nrefs++] = (struct bref){(uint32_t)s, e->field,
                                  e->src - b->nodes.v[s].addr + e->off, (uint32_t)t, kind};
  }
  qsort(refs, nrefs, sizeof *refs, cmp_ref);
  size_t k = 0; /* one edge per (source, offset): keep the first */
  for (size_t i = 0; i < nrefs; i++) {
    if (k && refs[k - 1].src == refs[i].src && refs[k - 1].off == refs[i].off) {
      drop++;
      continue;
    }
    refs[k++] = refs[i];
  }
  nrefs = k;
  size_t nroots = 0; /* resolved once: roots whose target is no node are dropped */
  for (size_t i = 0; i < b->roots.n; i++) {
    const struct broot *x = &b->roots.v[i];
    int64_t t = find(b->nodes.v, b->nodes.n, x->dst);
    if (t < 0)
      drop++;
    else
      roots[nroots++] = (struct hg_root){x->kind, x->owner, x->where, (uint32_t)t};
  }

  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  if (!rc) rc = write_all(b, w, refs, nrefs, roots, nroots);
  if (!rc) rc = hg_writer_finish(w);
  if (rc && w) snprintf(b->msg, sizeof b->msg, "%s", hg_writer_message(w));
  hg_writer_close(w);
  free(refs);
  free(roots);
  if (dropped) *dropped = drop;
  return rc;
}
