/*
 * reader.c — the validating snapshot loader: CBOR tokens (pull.c) → records
 * → struct hg_graph (CSR edges).
 *
 * Treats its input as hostile. Every error names what is wrong and the byte
 * offset. Allocation is proportional to what the file holds: counts are
 * checked against the bytes that carry them before anything is reserved,
 * strings are copied only after their bytes were read, and arrays grow by
 * doubling as records arrive. No recursion; every loop consumes input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/format.h"
#include "graph/graph_priv.h"
#include "graph/pull.h"
#include "graph/utf8.h"
#include "heapgraph.h"

struct rd {
  struct hg_pull p;
  struct hg_graph *g;
  struct hg_graph_priv *pv;
  struct hg_load_error *err;
  unsigned flags;
  size_t cap_regions, cap_images, cap_threads, cap_heaps, cap_classes, cap_strings;
  size_t cap_nodes, cap_edges, cap_named, cap_roots, cap_app, cap_capture;
  size_t app_n, capture_n;
  struct hg_kv *app;
  struct hg_num *capture;
  uint32_t *edge_src;       /* per edge, freed once CSR is built          */
  uint64_t node_end;
  uint64_t last_src, last_off;
  int have_edge;
  size_t cap_stacks, cap_node_stack, cap_large;
  uint32_t node_stack_n;    /* node stacks read so far (records 14)      */
};

/* ---- errors ---- */

static int bad(struct rd *r, int code, uint64_t off, const char *fmt, ...) {
  if (r->err && r->err->code == 0) {
    r->err->code = code;
    r->err->offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err->message, sizeof r->err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

static int next(struct rd *r) {
  int rc = _hg_pull_next(&r->p);
  if (rc) return bad(r, rc, r->p.tok_offset, "%s", r->p.msg);
  return 0;
}

#define TRY(x)           \
  do {                   \
    int rc_ = (x);       \
    if (rc_) return rc_; \
  } while (0)

static uint64_t here(const struct rd *r) { return r->p.tok_offset; }

/* The next token inside an item: the file must not end here. */
static int next_value(struct rd *r, const char *what) {
  TRY(next(r));
  if (r->p.tok.type == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends before %s", what);
  return 0;
}

static int want(struct rd *r, int type, const char *what) {
  TRY(next(r));
  if (r->p.tok.type == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends before %s", what);
  if (r->p.tok.type != type) return bad(r, HG_EFORMAT, here(r), "%s: unexpected CBOR item", what);
  return 0;
}

static int get_uint(struct rd *r, uint64_t *v, const char *what) {
  TRY(want(r, TOK_UINT, what));
  *v = r->p.tok.u;
  return 0;
}

static int get_u32(struct rd *r, uint32_t *v, const char *what) {
  uint64_t x;
  TRY(get_uint(r, &x, what));
  if (x >= UINT32_MAX) return bad(r, HG_ELIMIT, here(r), "%s: value %llu too large", what,
                                  (unsigned long long)x);
  *v = (uint32_t)x;
  return 0;
}

/* Optional index: null → HG_NO_OWNER. */
static int get_opt_index(struct rd *r, uint32_t *v, const char *what) {
  TRY(next_value(r, what));
  if (r->p.tok.type == TOK_NULL) {
    *v = HG_NO_OWNER;
    return 0;
  }
  if (r->p.tok.type != TOK_UINT) return bad(r, HG_EFORMAT, here(r), "%s: expected index or null", what);
  if (r->p.tok.u >= UINT32_MAX) return bad(r, HG_ELIMIT, here(r), "%s: index too large", what);
  *v = (uint32_t)r->p.tok.u;
  return 0;
}

static int check_text(struct rd *r, const char *what) {
  size_t bad_at = _hg_utf8_check(r->p.tok.ptr, r->p.tok.len);
  if (bad_at != r->p.tok.len)
    return bad(r, HG_EFORMAT, _hg_pull_offset(&r->p) - r->p.tok.len + bad_at,
               "%s: invalid UTF-8 in text string", what);
  return 0;
}

/* A text string (or null when allow_null), copied into the graph's arena. */
static int get_text(struct rd *r, const char **out, int allow_null, const char *what) {
  TRY(next(r));
  if (r->p.tok.type == TOK_NULL && allow_null) {
    *out = NULL;
    return 0;
  }
  if (r->p.tok.type == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends before %s", what);
  if (r->p.tok.type != TOK_TEXT) return bad(r, HG_EFORMAT, here(r), "%s: expected a text string", what);
  TRY(check_text(r, what));
  char *s = _hg_arena_strndup(r->pv, (const char *)r->p.tok.ptr, r->p.tok.len);
  if (!s) return bad(r, HG_ENOMEM, here(r), "out of memory");
  *out = s;
  return 0;
}

/* Skips one complete item. Indefinite-length items are not part of v1
 * records and are rejected. */
static int skip(struct rd *r) {
  uint64_t pending = 1;
  while (pending) {
    TRY(next(r));
    pending--;
    uint64_t left = r->p.size - _hg_pull_offset(&r->p);
    switch (r->p.tok.type) {
      case TOK_EOF: return bad(r, HG_ETRUNCATED, here(r), "file ends inside an item");
      case TOK_ARRAY:
      case TOK_MAP: {
        uint64_t n = r->p.tok.u;
        if (r->p.tok.type == TOK_MAP) {
          if (n > left) return bad(r, HG_EFORMAT, here(r), "map length exceeds the file");
          n *= 2;
        }
        if (n > left) return bad(r, HG_EFORMAT, here(r), "array length exceeds the file");
        pending += n;
        break;
      }
      case TOK_TAG: pending++; break;
      case TOK_INDEF_ARRAY: case TOK_INDEF_MAP: case TOK_INDEF_BYTES: case TOK_INDEF_TEXT:
        return bad(r, HG_EFORMAT, here(r), "indefinite-length item inside a record");
      case TOK_BREAK: return bad(r, HG_EFORMAT, here(r), "unexpected break");
      default: break;
    }
  }
  return 0;
}

static int skip_n(struct rd *r, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) TRY(skip(r));
  return 0;
}

/* One array of a set that shares a capacity: where it is and its element size. */
struct col {
  void **arr;
  size_t size;
};
#define COL(a) {(void **)&(a), sizeof *(a)}

/* Grows every array in cols (parallel arrays sharing *cap) to hold `need`
 * elements, doubling the shared capacity. */
static int grow_cols(struct rd *r, size_t *cap, size_t need, const struct col *cols, size_t n) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) nc *= 2;
  for (size_t i = 0; i < n; i++) {
    void *na = realloc(*cols[i].arr, nc * cols[i].size);
    if (!na) return bad(r, HG_ENOMEM, here(r), "out of memory (%zu elements)", nc);
    *cols[i].arr = na;
  }
  *cap = nc;
  return 0;
}

static int grow(struct rd *r, void **arr, size_t *cap, size_t need, size_t size) {
  const struct col one = {arr, size};
  return grow_cols(r, cap, need, &one, 1);
}
#define GROW(r, arr, cap, need) grow((r), (void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---- metadata ---- */

static int meta_map_text(struct rd *r, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    TRY(GROW(r, r->app, r->cap_app, r->app_n + 1));
    struct hg_kv *kv = &r->app[r->app_n];
    TRY(get_text(r, &kv->key, 0, "app key"));
    TRY(get_text(r, &kv->value, 0, "app value"));
    r->app_n++;
  }
  return 0;
}

static int meta_map_num(struct rd *r, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    TRY(GROW(r, r->capture, r->cap_capture, r->capture_n + 1));
    struct hg_num *kv = &r->capture[r->capture_n];
    TRY(get_text(r, &kv->key, 0, "capture key"));
    TRY(get_uint(r, &kv->value, "capture value"));
    r->capture_n++;
  }
  return 0;
}

static int rec_meta(struct rd *r) {
  struct hg_meta *m = &r->g->meta;
  TRY(want(r, TOK_MAP, "metadata map"));
  uint64_t n = r->p.tok.u;
  if (n > r->p.size) return bad(r, HG_EFORMAT, here(r), "metadata map too long");
  for (uint64_t i = 0; i < n; i++) {
    const char *key;
    TRY(get_text(r, &key, 0, "metadata key"));
    const char **tp = NULL;
    if (!strcmp(key, "platform")) tp = &m->platform;
    else if (!strcmp(key, "os_version")) tp = &m->os_version;
    else if (!strcmp(key, "arch")) tp = &m->arch;
    else if (!strcmp(key, "process")) tp = &m->process;
    else if (!strcmp(key, "trigger")) tp = &m->trigger;
    else if (!strcmp(key, "allocator")) tp = &m->allocator;
    else if (!strcmp(key, "heap_status")) tp = &m->heap_status;
    if (tp) {
      TRY(get_text(r, tp, 0, key));
    } else if (!strcmp(key, "pointer_size")) {
      TRY(get_u32(r, &m->pointer_size, key));
    } else if (!strcmp(key, "page_size")) {
      TRY(get_u32(r, &m->page_size, key));
    } else if (!strcmp(key, "time_ns")) {
      TRY(get_uint(r, &m->time_ns, key));
    } else if (!strcmp(key, "pid")) {
      TRY(next_value(r, key));
      if (r->p.tok.type == TOK_UINT && r->p.tok.u <= INT64_MAX)
        m->pid = (int64_t)r->p.tok.u;
      else if (r->p.tok.type == TOK_NEGINT && r->p.tok.u <= INT64_MAX)
        m->pid = -1 - (int64_t)r->p.tok.u;
      else
        return bad(r, HG_EFORMAT, here(r), "pid: expected an integer");
    } else if (!strcmp(key, "app") || !strcmp(key, "capture")) {
      int is_app = key[0] == 'a';
      TRY(want(r, TOK_MAP, key));
      uint64_t k = r->p.tok.u;
      if (k > r->p.size) return bad(r, HG_EFORMAT, here(r), "%s map too long", key);
      TRY(is_app ? meta_map_text(r, k) : meta_map_num(r, k));
    } else {
      TRY(skip(r)); /* unknown key: forward compatible */
    }
  }
  return 0;
}

/* ---- small records ---- */

static int rec_region(struct rd *r) {
  TRY(GROW(r, r->g->regions, r->cap_regions, (size_t)r->g->region_count + 1));
  struct hg_region *x = &r->g->regions[r->g->region_count];
  memset(x, 0, sizeof *x);
  TRY(get_uint(r, &x->start, "region start"));
  TRY(get_uint(r, &x->size, "region size"));
  if (x->start + x->size < x->start) return bad(r, HG_EFORMAT, here(r), "region wraps around");
  TRY(get_u32(r, &x->prot, "region prot"));
  if (x->prot & ~15u) return bad(r, HG_EFORMAT, here(r), "region prot: unknown bits");
  TRY(get_u32(r, &x->tag, "region tag"));
  TRY(get_text(r, &x->name, 1, "region name"));
  TRY(get_uint(r, &x->resident, "region resident"));
  TRY(get_uint(r, &x->dirty, "region dirty"));
  TRY(get_uint(r, &x->swapped, "region swapped"));
  TRY(get_opt_index(r, &x->image, "region image"));
  r->g->region_count++;
  return 0;
}

static int rec_image(struct rd *r) {
  TRY(GROW(r, r->g->images, r->cap_images, (size_t)r->g->image_count + 1));
  struct hg_image *x = &r->g->images[r->g->image_count];
  memset(x, 0, sizeof *x);
  TRY(get_text(r, &x->path, 0, "image path"));
  TRY(want(r, TOK_BYTES, "image id"));
  if (r->p.tok.len > 64) return bad(r, HG_EFORMAT, here(r), "image id longer than 64 bytes");
  x->id_len = (uint32_t)r->p.tok.len;
  if (x->id_len) {
    uint8_t *id = _hg_arena_alloc(r->pv, x->id_len);
    if (!id) return bad(r, HG_ENOMEM, here(r), "out of memory");
    memcpy(id, r->p.tok.ptr, x->id_len);
    x->id = id;
  }
  TRY(get_uint(r, &x->load_addr, "image load address"));
  TRY(get_uint(r, &x->slide, "image slide"));
  TRY(get_uint(r, &x->size, "image size"));
  r->g->image_count++;
  return 0;
}

static int rec_thread(struct rd *r) {
  TRY(GROW(r, r->g->threads, r->cap_threads, (size_t)r->g->thread_count + 1));
  struct hg_thread *x = &r->g->threads[r->g->thread_count];
  memset(x, 0, sizeof *x);
  TRY(get_uint(r, &x->tid, "thread id"));
  TRY(get_text(r, &x->name, 1, "thread name"));
  TRY(get_uint(r, &x->stack_lo, "thread stack_lo"));
  TRY(get_uint(r, &x->stack_hi, "thread stack_hi"));
  if (x->stack_lo > x->stack_hi) return bad(r, HG_EFORMAT, here(r), "thread stack range reversed");
  r->g->thread_count++;
  return 0;
}

static int rec_id(struct rd *r, uint32_t count, const char *what) {
  uint64_t id;
  TRY(get_uint(r, &id, what));
  if (id != (uint64_t)count + 1)
    return bad(r, HG_EFORMAT, here(r), "%s id %llu out of sequence (expected %u)", what,
               (unsigned long long)id, count + 1);
  if (count >= UINT32_MAX - 2) return bad(r, HG_ELIMIT, here(r), "too many %s records", what);
  return 0;
}

static int rec_heap(struct rd *r) {
  TRY(rec_id(r, r->g->heap_count, "heap"));
  TRY(GROW(r, r->g->heaps, r->cap_heaps, (size_t)r->g->heap_count + 1));
  TRY(get_text(r, &r->g->heaps[r->g->heap_count], 0, "heap name"));
  r->g->heap_count++;
  return 0;
}

static int rec_string(struct rd *r) {
  TRY(rec_id(r, r->g->string_count, "string"));
  TRY(GROW(r, r->g->strings, r->cap_strings, (size_t)r->g->string_count + 1));
  TRY(get_text(r, &r->g->strings[r->g->string_count], 0, "string"));
  r->g->string_count++;
  return 0;
}

static int rec_class(struct rd *r) {
  TRY(rec_id(r, r->g->class_count, "class"));
  TRY(GROW(r, r->g->classes, r->cap_classes, (size_t)r->g->class_count + 1));
  struct hg_class *x = &r->g->classes[r->g->class_count];
  TRY(get_text(r, &x->name, 0, "class name"));
  TRY(get_u32(r, &x->kind, "class kind"));
  if (x->kind > HG_CLASS_CF) return bad(r, HG_EFORMAT, here(r), "class kind %u unknown", x->kind);
  TRY(get_uint(r, &x->instance_size, "class instance size"));
  r->g->class_count++;
  return 0;
}

/* ---- chunks ---- */

/* Reads a chunk's byte string; *base is its payload's file offset. */
static int get_chunk(struct rd *r, const uint8_t **p, const uint8_t **end, uint64_t *base,
                     uint64_t count, unsigned min_row, const char *what) {
  TRY(want(r, TOK_BYTES, what));
  if (r->p.tok.len > HG_CHUNK_MAX_BYTES)
    return bad(r, HG_ELIMIT, here(r), "%s: payload of %zu bytes exceeds %u", what, r->p.tok.len,
               HG_CHUNK_MAX_BYTES);
  if (count == 0 || count > r->p.tok.len / min_row)
    return bad(r, HG_EFORMAT, here(r), "%s: count %llu does not fit %zu payload bytes", what,
               (unsigned long long)count, r->p.tok.len);
  *p = r->p.tok.ptr;
  *end = *p + r->p.tok.len;
  *base = _hg_pull_offset(&r->p) - r->p.tok.len;
  return 0;
}

/* One-byte varints (most of them) are decoded inline; the rest, and every
 * error, go through _hg_get_varint. */
#define VARINT(r, p, end, v, base, start, what)                                              \
  do {                                                                                       \
    if ((p) < (end) && !(*(p) & 0x80))                                                       \
      (v) = *(p)++;                                                                          \
    else if (_hg_get_varint(&(p), (end), &(v)))                                               \
      return bad((r), HG_EFORMAT, (base) + (uint64_t)((p) - (start)), "%s: bad varint", what); \
  } while (0)

static int rec_nodes(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t first, count, addr;
  TRY(get_uint(r, &first, "nodes first index"));
  if (first != g->node_count)
    return bad(r, HG_EFORMAT, here(r), "nodes chunk starts at index %llu, expected %u",
               (unsigned long long)first, g->node_count);
  TRY(get_uint(r, &count, "nodes count"));
  TRY(get_uint(r, &addr, "nodes base address"));
  const uint8_t *p, *end, *start;
  uint64_t base;
  TRY(get_chunk(r, &p, &end, &base, count, HG_NODE_MIN_BYTES, "nodes chunk"));
  start = p;
  if (count > (uint64_t)UINT32_MAX - 1 - g->node_count)
    return bad(r, HG_ELIMIT, here(r), "too many nodes");
  size_t need = (size_t)(g->node_count + count);
  const struct col nodes[] = {COL(g->node_addr), COL(g->node_size), COL(g->node_class),
                              COL(g->node_flags), COL(g->node_heap)};
  TRY(grow_cols(r, &r->cap_nodes, need, nodes, sizeof nodes / sizeof nodes[0]));
  uint64_t heap = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t gap, size, cls, hp;
    const uint8_t *row = p;
    VARINT(r, p, end, gap, base, start, "node gap");
    VARINT(r, p, end, size, base, start, "node size");
    VARINT(r, p, end, cls, base, start, "node class");
    if (p >= end) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "node flags missing");
    uint8_t fl = *p++;
    if (fl & HG_NODE_ROW_HEAP) {
      VARINT(r, p, end, hp, base, start, "node heap");
      heap = hp;
    }
    uint64_t at = base + (uint64_t)(row - start);
    if (fl & 0x70) return bad(r, HG_EFORMAT, at, "node %llu: unknown flag bits",
                              (unsigned long long)(g->node_count));
    if (addr + gap < addr) return bad(r, HG_EFORMAT, at, "node address overflows");
    addr += gap;
    if (size == 0 || addr + size < addr)
      return bad(r, HG_EFORMAT, at, "node %u: empty or wrapping range", g->node_count);
    if (g->node_count && addr < r->node_end)
      return bad(r, HG_EFORMAT, at, "node %u at 0x%llx overlaps or precedes the previous node",
                 g->node_count, (unsigned long long)addr);
    if (cls >= UINT32_MAX || heap >= UINT32_MAX)
      return bad(r, HG_EFORMAT, at, "node %u: class or heap id too large", g->node_count);
    uint32_t n = g->node_count++;
    g->node_addr[n] = addr;
    g->node_size[n] = size;
    g->node_class[n] = (uint32_t)cls;
    g->node_flags[n] = fl & HG_NODE_FLAG_MASK;
    g->node_heap[n] = (uint32_t)heap;
    addr += size;
    r->node_end = addr;
  }
  if (p != end) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "trailing bytes in nodes chunk");
  return 0;
}

static int rec_edges(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t first, count;
  TRY(get_uint(r, &first, "edges first source"));
  TRY(get_uint(r, &count, "edges count"));
  const uint8_t *p, *end, *start;
  uint64_t base;
  TRY(get_chunk(r, &p, &end, &base, count, HG_EDGE_MIN_BYTES, "edges chunk"));
  start = p;
  if (count > (uint64_t)UINT32_MAX - 1 - g->edge_count)
    return bad(r, HG_ELIMIT, here(r), "too many edges");
  size_t need = (size_t)(g->edge_count + count);
  const struct col edges[] = {COL(g->edge_target), COL(g->edge_offset), COL(g->edge_kind),
                              COL(r->edge_src)};
  TRY(grow_cols(r, &r->cap_edges, need, edges, sizeof edges / sizeof edges[0]));
  uint64_t src = first, off = 0, done = 0;
  int first_group = 1;
  /* Per-edge state in locals (stores through r/g would alias the arrays);
   * written back at the end. On error the graph is discarded anyway. */
  uint64_t last_src = r->last_src, last_off = r->last_off;
  int have_edge = r->have_edge;
  uint32_t ecount = g->edge_count;
  uint32_t *esrc = r->edge_src, *etarget = g->edge_target, *eoffset = g->edge_offset;
  uint8_t *ekind = g->edge_kind;
  while (done < count) {
    uint64_t sd, n;
    VARINT(r, p, end, sd, base, start, "edge group source");
    VARINT(r, p, end, n, base, start, "edge group size");
    uint64_t at = base + (uint64_t)(p - start);
    int words = (n & HG_GROUP_WORDS) != 0;
    n >>= 1;
    if (first_group && sd != 0) return bad(r, HG_EFORMAT, at, "first edge group must start at the chunk's source");
    if (n == 0 || n > count - done) return bad(r, HG_EFORMAT, at, "edge group size %llu out of range",
                                               (unsigned long long)n);
    if (src + sd < src || src + sd >= UINT32_MAX) return bad(r, HG_EFORMAT, at, "edge source out of range");
    int absolute = first_group || sd != 0;
    src += sd;
    first_group = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t ok, field = 0, zz;
      const uint8_t *row = p;
      VARINT(r, p, end, ok, base, start, "edge offset");
      unsigned code = (unsigned)(ok & 7);
      if (code >= HG_KINDCODE_NAMED_BASE) VARINT(r, p, end, field, base, start, "edge field");
      VARINT(r, p, end, zz, base, start, "edge target");
      at = base + (uint64_t)(row - start);
      uint64_t q = ok >> HG_OFFKIND_SHIFT;
      if (words && q > (UINT64_MAX >> 3)) return bad(r, HG_EFORMAT, at, "edge offset overflows");
      uint64_t d = words ? q * 8 : q;
      if (absolute && i == 0) {
        off = d;
      } else {
        if (d == 0 || off + d < off) return bad(r, HG_EFORMAT, at, "edge offsets must increase");
        off += d;
      }
      if (off > UINT32_MAX) return bad(r, HG_EFORMAT, at, "edge offset beyond 4 GiB");
      if (have_edge && (src < last_src || (src == last_src && off <= last_off)))
        return bad(r, HG_EFORMAT, at, "edges out of order (source %llu offset %llu)",
                   (unsigned long long)src, (unsigned long long)off);
      int64_t dst = (int64_t)src + _hg_unzigzag(zz);
      if (dst < 0 || dst >= (int64_t)UINT32_MAX - 1) return bad(r, HG_EFORMAT, at, "edge target out of range");
      if (code >= HG_KINDCODE_NAMED_BASE && (field == 0 || field >= UINT32_MAX))
        return bad(r, HG_EFORMAT, at, "edge field id out of range");
      uint32_t e = ecount++;
      esrc[e] = (uint32_t)src;
      etarget[e] = (uint32_t)dst;
      eoffset[e] = (uint32_t)off;
      ekind[e] = (uint8_t)(code >= HG_KINDCODE_NAMED_BASE ? code - HG_KINDCODE_NAMED_BASE + HG_EDGE_STRONG : code);
      if (field) {
        const struct col named[] = {COL(g->named_edge), COL(g->named_field)};
        TRY(grow_cols(r, &r->cap_named, (size_t)g->named_count + 1, named, 2));
        g->named_edge[g->named_count] = e;
        g->named_field[g->named_count] = (uint32_t)field;
        g->named_count++;
      }
      have_edge = 1;
      last_src = src;
      last_off = off;
    }
    done += n;
  }
  g->edge_count = ecount;
  r->have_edge = have_edge;
  r->last_src = last_src;
  r->last_off = last_off;
  if (p != end) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "trailing bytes in edges chunk");
  return 0;
}

static int rec_roots(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t count;
  TRY(get_uint(r, &count, "roots count"));
  const uint8_t *p, *end, *start;
  uint64_t base;
  TRY(get_chunk(r, &p, &end, &base, count, HG_ROOT_MIN_BYTES, "roots chunk"));
  start = p;
  if (count > (uint64_t)UINT32_MAX - 1 - g->root_count) return bad(r, HG_ELIMIT, here(r), "too many roots");
  TRY(GROW(r, g->roots, r->cap_roots, (size_t)(g->root_count + count)));
  uint64_t where = 0, target = 0;
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t *row = p;
    uint64_t at = base + (uint64_t)(row - start);
    if (p >= end) return bad(r, HG_EFORMAT, at, "root row missing");
    uint8_t kb = *p++;
    uint64_t owner = HG_NO_OWNER, zw, zt;
    if ((kb & 0x0f) >= HG_ROOT_KIND_COUNT || (kb & 0xe0)) return bad(r, HG_EFORMAT, at, "root kind unknown");
    if (kb & HG_ROOT_ROW_OWNER) {
      VARINT(r, p, end, owner, base, start, "root owner");
      if (owner >= UINT32_MAX) return bad(r, HG_EFORMAT, at, "root owner out of range");
    }
    VARINT(r, p, end, zw, base, start, "root address");
    VARINT(r, p, end, zt, base, start, "root target");
    where += (uint64_t)_hg_unzigzag(zw);
    int64_t t = (int64_t)target + _hg_unzigzag(zt);
    if (t < 0 || t >= (int64_t)UINT32_MAX - 1) return bad(r, HG_EFORMAT, at, "root target out of range");
    target = (uint64_t)t;
    struct hg_root *x = &g->roots[g->root_count++];
    x->kind = kb & 0x0f;
    x->owner = (uint32_t)owner;
    x->addr = where;
    x->target = (uint32_t)target;
  }
  if (p != end) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "trailing bytes in roots chunk");
  return 0;
}

/* ---- trailer and final checks ---- */

static int rec_trailer(struct rd *r, uint64_t digest) {
  struct hg_graph *g = r->g;
  static const char *const keys[] = {
#define HG_KEY_NAME(k) #k,
      HG_TRAILER_KEYS(HG_KEY_NAME)
#undef HG_KEY_NAME
  };
  enum { NKEYS = sizeof keys / sizeof keys[0] };
  uint64_t actual[NKEYS] = {g->region_count, g->image_count, g->thread_count,
                            g->heap_count,   g->class_count, g->string_count,
                            g->node_count,   g->edge_count,  g->root_count};
  int seen[NKEYS] = {0};
  uint64_t map_at = _hg_pull_offset(&r->p);
  TRY(want(r, TOK_MAP, "trailer counts"));
  uint64_t n = r->p.tok.u;
  if (n > r->p.size) return bad(r, HG_EFORMAT, here(r), "trailer map too long");
  for (uint64_t i = 0; i < n; i++) {
    const char *key;
    uint64_t v;
    TRY(get_text(r, &key, 0, "trailer key"));
    int k = -1;
    for (int j = 0; j < NKEYS; j++)
      if (!strcmp(key, keys[j])) k = j;
    if (k < 0) {
      TRY(skip(r));
      continue;
    }
    TRY(get_uint(r, &v, key));
    if (v != actual[k])
      return bad(r, HG_EFORMAT, here(r), "trailer says %llu %s but the file holds %llu",
                 (unsigned long long)v, key, (unsigned long long)actual[k]);
    seen[k] = 1;
  }
  for (int j = 0; j < NKEYS; j++)
    if (!seen[j]) return bad(r, HG_EFORMAT, map_at, "trailer lacks the %s count", keys[j]);
  uint64_t want_digest;
  TRY(get_uint(r, &want_digest, "trailer checksum"));
  g->checksum = want_digest;
  g->checksum_ok = want_digest == digest;
  if (!g->checksum_ok && !(r->flags & HG_LOAD_ALLOW_BAD_CHECKSUM))
    return bad(r, HG_ECHECKSUM, here(r), "checksum mismatch: trailer 0x%016llx, content 0x%016llx",
               (unsigned long long)want_digest, (unsigned long long)digest);
  return 0;
}

static int final_checks(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t end = r->p.size;
  for (uint32_t i = 0; i < g->region_count; i++)
    if (g->regions[i].image != HG_NO_OWNER && g->regions[i].image >= g->image_count)
      return bad(r, HG_EFORMAT, end, "region %u refers to image %u of %u", i, g->regions[i].image,
                 g->image_count);
  for (uint32_t i = 0; i < g->node_count; i++) {
    if (g->node_class[i] > g->class_count)
      return bad(r, HG_EFORMAT, end, "node %u refers to class %u of %u", i, g->node_class[i], g->class_count);
    if (g->node_heap[i] > g->heap_count)
      return bad(r, HG_EFORMAT, end, "node %u refers to heap %u of %u", i, g->node_heap[i], g->heap_count);
  }
  for (uint32_t e = 0; e < g->edge_count; e++)
    if (g->edge_target[e] >= g->node_count || r->edge_src[e] >= g->node_count)
      return bad(r, HG_EFORMAT, end, "edge %u refers to a node beyond %u", e, g->node_count);
  for (uint32_t i = 0; i < g->named_count; i++)
    if (g->named_field[i] > g->string_count)
      return bad(r, HG_EFORMAT, end, "edge %u refers to string %u of %u", g->named_edge[i],
                 g->named_field[i], g->string_count);
  for (uint32_t i = 0; i < g->root_count; i++) {
    const struct hg_root *x = &g->roots[i];
    if (x->target >= g->node_count) return bad(r, HG_EFORMAT, end, "root %u refers to a node beyond %u", i, g->node_count);
    if (x->owner == HG_NO_OWNER) continue;
    uint32_t lim = x->kind == HG_ROOT_GLOBAL ? g->image_count : g->thread_count;
    if (x->owner >= lim) return bad(r, HG_EFORMAT, end, "root %u refers to owner %u of %u", i, x->owner, lim);
  }
  /* CSR: sources are non-decreasing, so one pass builds edge_start. */
  g->edge_start = calloc((size_t)g->node_count + 1, sizeof *g->edge_start);
  if (!g->edge_start) return bad(r, HG_ENOMEM, end, "out of memory");
  for (uint32_t e = 0; e < g->edge_count; e++) g->edge_start[r->edge_src[e] + 1]++;
  for (uint32_t n = 0; n < g->node_count; n++) g->edge_start[n + 1] += g->edge_start[n];
  return 0;
}

/* Merges repeated metadata keys (later records win) for app and capture. */
static int cmp_kv(const void *a, const void *b) {
  const struct hg_kv *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x < y ? -1 : x > y);
}
static int cmp_num(const void *a, const void *b) {
  const struct hg_num *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x < y ? -1 : x > y);
}

static void merge_meta(struct rd *r) {
  size_t k = 0;
  if (r->app_n) qsort(r->app, r->app_n, sizeof *r->app, cmp_kv);
  for (size_t i = 0; i < r->app_n; i++) {
    if (k && !strcmp(r->app[k - 1].key, r->app[i].key)) k--;
    r->app[k++] = r->app[i];
  }
  r->g->meta.app = r->app;
  r->g->meta.app_count = k;
  k = 0;
  if (r->capture_n) qsort(r->capture, r->capture_n, sizeof *r->capture, cmp_num);
  for (size_t i = 0; i < r->capture_n; i++) {
    if (k && !strcmp(r->capture[k - 1].key, r->capture[i].key)) k--;
    r->capture[k++] = r->capture[i];
  }
  r->g->meta.capture = r->capture;
  r->g->meta.capture_count = k;
}

/* ---- top level ---- */

/* A header token; a file that ends inside the header is truncated, not foreign. */
static int header_next(struct rd *r) {
  TRY(next(r));
  if (r->p.tok.type == TOK_EOF)
    return bad(r, HG_ETRUNCATED, here(r), r->p.size ? "file ends inside the snapshot header" : "empty file");
  return 0;
}

static int read_header(struct rd *r) {
  TRY(header_next(r));
  if (r->p.tok.type != TOK_TAG || r->p.tok.u != HG_SELF_DESCRIBE_TAG)
    return bad(r, HG_EVERSION, 0, "not a heapgraph snapshot (no self-described CBOR tag)");
  TRY(header_next(r));
  if (r->p.tok.type != TOK_INDEF_ARRAY)
    return bad(r, HG_EVERSION, here(r), "not a heapgraph snapshot (no record stream)");
  TRY(header_next(r));
  if (r->p.tok.type != TOK_ARRAY || r->p.tok.u < 2)
    return bad(r, HG_EVERSION, here(r), "not a heapgraph snapshot (no header)");
  uint64_t extra = r->p.tok.u - 2;
  TRY(header_next(r));
  if (r->p.tok.type != TOK_TEXT || r->p.tok.len != HG_MAGIC_TEXT_LEN ||
      memcmp(r->p.tok.ptr, HG_MAGIC_TEXT, HG_MAGIC_TEXT_LEN))
    return bad(r, HG_EVERSION, here(r), "not a heapgraph snapshot (bad magic)");
  uint64_t v;
  TRY(get_uint(r, &v, "format version"));
  if (v != HG_FORMAT_VERSION)
    return bad(r, HG_EVERSION, here(r), "unsupported format version %llu (this reader knows %u)",
               (unsigned long long)v, HG_FORMAT_VERSION);
  r->g->format_version = (uint32_t)v;
  return skip_n(r, extra);
}

/* ---- optional allocation-stack records (12-15) ---- */

static int get_payload(struct rd *r, const uint8_t **p, const uint8_t **end, uint64_t *base,
                       const char *what) {
  TRY(want(r, TOK_BYTES, what));
  if (r->p.tok.len > HG_CHUNK_MAX_BYTES)
    return bad(r, HG_ELIMIT, here(r), "%s: payload of %zu bytes exceeds %u", what, r->p.tok.len,
               HG_CHUNK_MAX_BYTES);
  *p = r->p.tok.ptr;
  *end = *p + r->p.tok.len;
  *base = _hg_pull_offset(&r->p) - r->p.tok.len;
  return 0;
}

static int rec_stack_info(struct rd *r) {
  struct hg_stack_info *x = &r->g->stack_info;
  TRY(get_u32(r, &x->max_frames, "stack info max_frames"));
  TRY(get_uint(r, &x->sample_bytes, "stack info sample_bytes"));
  TRY(get_uint(r, &x->budget_bytes, "stack info budget"));
  TRY(get_uint(r, &x->tracking_bytes, "stack info tracking bytes"));
  TRY(get_uint(r, &x->map_bytes, "stack info map bytes"));
  TRY(get_uint(r, &x->live_blocks, "stack info live blocks"));
  TRY(get_uint(r, &x->dropped, "stack info dropped"));
  TRY(get_text(r, &x->status, 0, "stack info status"));
  TRY(get_text(r, &x->unwinder, 0, "stack info unwinder"));
  r->g->has_stacks = 1;
  return 0;
}

static int rec_stack(struct rd *r) {
  struct hg_graph *g = r->g;
  TRY(rec_id(r, g->stack_count, "stack"));
  TRY(GROW(r, g->stacks, r->cap_stacks, (size_t)g->stack_count + 1));
  struct hg_stack *x = &g->stacks[g->stack_count];
  memset(x, 0, sizeof *x);
  TRY(get_uint(r, &x->count, "stack count"));
  TRY(get_uint(r, &x->bytes, "stack bytes"));
  const uint8_t *p, *end, *start;
  uint64_t base;
  TRY(get_payload(r, &p, &end, &base, "stack frames"));
  start = p;
  struct hg_stack_frame tmp[HG_STACK_MAX_FRAMES];
  uint32_t n = 0;
  while (p < end) {
    uint64_t im, off;
    if (n == HG_STACK_MAX_FRAMES)
      return bad(r, HG_ELIMIT, base + (uint64_t)(p - start), "stack: more than %u frames", HG_STACK_MAX_FRAMES);
    VARINT(r, p, end, im, base, start, "stack frame image");
    VARINT(r, p, end, off, base, start, "stack frame offset");
    if (im >= UINT32_MAX) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "stack frame: image index too large");
    tmp[n].image = im ? (uint32_t)(im - 1) : HG_NO_OWNER;
    tmp[n].offset = off;
    n++;
  }
  if (n) {
    struct hg_stack_frame *f = _hg_arena_alloc(r->pv, n * sizeof *f);
    if (!f) return bad(r, HG_ENOMEM, here(r), "out of memory");
    memcpy(f, tmp, n * sizeof *f);
    x->frames = f;
  }
  x->frame_count = n;
  g->stack_count++;
  return 0;
}

static int rec_node_stacks(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t first;
  TRY(get_uint(r, &first, "node stacks first node"));
  if (first != r->node_stack_n)
    return bad(r, HG_EFORMAT, here(r), "node stacks start at node %llu, expected %u",
               (unsigned long long)first, r->node_stack_n);
  const uint8_t *p, *end, *start;
  uint64_t base;
  TRY(get_payload(r, &p, &end, &base, "node stacks"));
  start = p;
  /* at most one id per payload byte: bounded by the bytes seen */
  if ((uint64_t)r->node_stack_n + (uint64_t)(end - p) >= UINT32_MAX)
    return bad(r, HG_ELIMIT, here(r), "too many node stacks");
  TRY(GROW(r, g->node_stack, r->cap_node_stack, (size_t)r->node_stack_n + (size_t)(end - p)));
  while (p < end) {
    uint64_t id;
    VARINT(r, p, end, id, base, start, "node stack id");
    if (id >= UINT32_MAX) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "node stack id too large");
    g->node_stack[r->node_stack_n++] = (uint32_t)id;
  }
  return 0;
}

static int rec_large(struct rd *r) {
  struct hg_graph *g = r->g;
  TRY(GROW(r, g->large, r->cap_large, (size_t)g->large_count + 1));
  struct hg_large_alloc *x = &g->large[g->large_count];
  memset(x, 0, sizeof *x);
  TRY(get_uint(r, &x->addr, "large allocation address"));
  TRY(get_uint(r, &x->size, "large allocation size"));
  TRY(get_u32(r, &x->stack, "large allocation stack"));
  TRY(get_uint(r, &x->time_ns, "large allocation time"));
  TRY(get_uint(r, &x->tid, "large allocation thread"));
  g->large_count++;
  return 0;
}

/* After the last record: stack references resolve; node_stack covers every
 * node (missing tail = 0, not recorded). */
static int stack_checks(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t end = r->p.size;
  if (!g->has_stacks && (g->stack_count || r->node_stack_n || g->large_count))
    return bad(r, HG_EFORMAT, end, "stack records without a stack info record");
  for (uint32_t i = 0; i < g->stack_count; i++)
    for (uint32_t k = 0; k < g->stacks[i].frame_count; k++)
      if (g->stacks[i].frames[k].image != HG_NO_OWNER && g->stacks[i].frames[k].image >= g->image_count)
        return bad(r, HG_EFORMAT, end, "stack %u frame %u refers to image %u of %u", i + 1, k,
                   g->stacks[i].frames[k].image, g->image_count);
  if (r->node_stack_n > g->node_count)
    return bad(r, HG_EFORMAT, end, "stack ids for %u nodes, the file has %u", r->node_stack_n, g->node_count);
  for (uint32_t n = 0; n < r->node_stack_n; n++)
    if (g->node_stack[n] > g->stack_count)
      return bad(r, HG_EFORMAT, end, "node %u refers to stack %u of %u", n, g->node_stack[n], g->stack_count);
  for (uint32_t i = 0; i < g->large_count; i++)
    if (g->large[i].stack > g->stack_count)
      return bad(r, HG_EFORMAT, end, "large allocation %u refers to stack %u of %u", i, g->large[i].stack,
                 g->stack_count);
  if (g->has_stacks && g->node_count) {
    TRY(GROW(r, g->node_stack, r->cap_node_stack, (size_t)g->node_count));
    memset(g->node_stack + r->node_stack_n, 0, (size_t)(g->node_count - r->node_stack_n) * sizeof *g->node_stack);
  }
  return 0;
}

struct rec_desc {
  unsigned fields; /* minimum elements after the type */
  int (*parse)(struct rd *);
};

static const struct rec_desc records[] = {
    [HG_REC_META] = {1, rec_meta},       [HG_REC_REGION] = {9, rec_region},
    [HG_REC_IMAGE] = {5, rec_image},     [HG_REC_THREAD] = {4, rec_thread},
    [HG_REC_HEAP] = {2, rec_heap},       [HG_REC_CLASS] = {4, rec_class},
    [HG_REC_STRING] = {2, rec_string},   [HG_REC_NODES] = {4, rec_nodes},
    [HG_REC_EDGES] = {3, rec_edges},     [HG_REC_ROOTS] = {2, rec_roots},
    [HG_REC_STACK_INFO] = {9, rec_stack_info}, [HG_REC_STACK] = {4, rec_stack},
    [HG_REC_NODE_STACKS] = {2, rec_node_stacks}, [HG_REC_LARGE] = {5, rec_large},
};

static int read_stream(struct rd *r) {
  TRY(read_header(r));
  for (;;) {
    XXH64_state_t before = r->p.hash; /* digest of everything before this record */
    TRY(next(r));
    int t = r->p.tok.type;
    if (t == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends without a trailer (truncated?)");
    if (t == TOK_BREAK) return bad(r, HG_EFORMAT, here(r), "record stream ends without a trailer");
    if (t != TOK_ARRAY || r->p.tok.u == 0) return bad(r, HG_EFORMAT, here(r), "record is not a non-empty array");
    uint64_t rec_at = here(r), n = r->p.tok.u - 1, type;
    if (n > r->p.size) return bad(r, HG_EFORMAT, rec_at, "record length exceeds the file");
    TRY(get_uint(r, &type, "record type"));
    if (type == HG_REC_TRAILER) {
      if (n < 2) return bad(r, HG_EFORMAT, rec_at, "trailer record too short");
      TRY(rec_trailer(r, XXH64_digest(&before)));
      TRY(skip_n(r, n - 2));
      r->p.hashing = 0;
      TRY(next(r));
      if (r->p.tok.type == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends before the final break");
      if (r->p.tok.type != TOK_BREAK) return bad(r, HG_EFORMAT, here(r), "data after the trailer");
      if (_hg_pull_offset(&r->p) != r->p.size)
        return bad(r, HG_EFORMAT, _hg_pull_offset(&r->p), "%llu trailing bytes after the snapshot",
                   (unsigned long long)(r->p.size - _hg_pull_offset(&r->p)));
      return 0;
    }
    if (type >= sizeof records / sizeof records[0] || !records[type].parse ||
        (type > HG_REC_TRAILER && (r->flags & HG_LOAD_SKIP_OPTIONAL))) {
      TRY(skip_n(r, n)); /* unknown record type: forward compatible */
      continue;
    }
    if (n < records[type].fields)
      return bad(r, HG_EFORMAT, rec_at, "record type %llu has %llu fields, needs %u",
                 (unsigned long long)type, (unsigned long long)n, records[type].fields);
    TRY(records[type].parse(r));
    TRY(skip_n(r, n - records[type].fields));
  }
}

static struct hg_graph *load(struct rd *r, uint64_t size, struct hg_load_error *err) {
  struct hg_load_error dummy;
  r->err = err ? err : &dummy;
  memset(r->err, 0, sizeof *r->err);
  r->g = _hg_graph_alloc();
  if (!r->g) {
    bad(r, HG_ENOMEM, 0, "out of memory");
    return NULL;
  }
  r->pv = r->g->priv;
  r->g->file_size = size;
  int rc = read_stream(r);
  if (!rc) rc = final_checks(r);
  if (!rc) rc = stack_checks(r);
  merge_meta(r);
  free(r->edge_src);
  r->edge_src = NULL;
  if (rc) {
    hg_graph_free(r->g);
    return NULL;
  }
  return r->g;
}

struct hg_graph *hg_graph_load_mem(const void *data, size_t size, struct hg_load_error *err) {
  struct rd r;
  memset(&r, 0, sizeof r);
  _hg_pull_open_mem(&r.p, data, size);
  return load(&r, size, err);
}

struct hg_graph *hg_graph_load(const char *path, struct hg_load_error *err) {
  return hg_graph_load_flags(path, 0, err);
}

struct hg_graph *hg_graph_load_flags(const char *path, unsigned flags, struct hg_load_error *err) {
  struct rd r;
  memset(&r, 0, sizeof r);
  r.flags = flags;
  struct hg_load_error dummy;
  if (!err) err = &dummy;
  memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    err->code = fd < 0 && (errno == EACCES || errno == EPERM) ? HG_EPERM : HG_EIO;
    snprintf(err->message, sizeof err->message, "%s: %s", path,
             fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (_hg_pull_open_fd(&r.p, fd, (uint64_t)st.st_size)) {
    err->code = HG_ENOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    close(fd);
    return NULL;
  }
  struct hg_graph *g = load(&r, (uint64_t)st.st_size, err);
  _hg_pull_close(&r.p);
  close(fd);
  return g;
}
