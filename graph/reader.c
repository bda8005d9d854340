/*
 * reader.c — the validating snapshot loader: CBOR tokens (pull.c) → records
 * → struct hg_graph (CSR edges).
 *
 * Treats its input as hostile. Every error names what is wrong and the byte
 * offset. Allocation is proportional to what the file holds: counts are
 * checked against the bytes that carry them before anything is reserved,
 * strings are copied only after their bytes were read. No recursion; every
 * loop consumes input.
 *
 * Two ways through the same record parsers and chunk decoders: load_fast,
 * the usual one for a file or buffer in memory, sizes the node and edge
 * arrays once from the trailer's counts (read first from the file's end,
 * bounded by what the file size allows) and decodes the nodes and edges
 * chunks on two threads after the records were read in order; load, the
 * sequential reader, grows arrays by doubling and decodes each chunk as it
 * comes. Anything load_fast cannot vouch for (no trailer, counts that do not
 * match, any error) goes to load, so errors are always the sequential
 * reader's. edge_start is built as the edges arrive (sources never
 * decrease), with no per-edge source array.
 *
 * A third way, verify (hg_snapshot_verify), runs the same sequential reader
 * with nothing kept that grows with the file: one scratch element per small
 * record, the chunk decoders checking rows without storing them, text copied
 * only for the metadata (bounded), a fixed read window; the checks after
 * the last record work from counts and maxima (verify_checks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* madvise */
#include <sys/stat.h>
#include <unistd.h>

#include "graph/analysis.h"
#include "graph/format.h"
#include "graph/graph_priv.h"
#include "graph/pull.h"
#include "graph/utf8.h"
#include "heapgraph.h"

/* ---- errors ---- */

/* Records the first error only (its code, byte offset and message). */
static int vfail(struct hg_load_error *e, int code, uint64_t off, const char *fmt, va_list ap) {
  if (e && e->code == 0) {
    e->code = code;
    e->offset = off;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
  }
  return code;
}

static int efail(struct hg_load_error *e, int code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int efail(struct hg_load_error *e, int code, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(e, code, off, fmt, ap);
  va_end(ap);
  return code;
}

/* One-byte varints (most of them) are decoded inline; the rest, and every
 * error, go through _hg_get_varint. E: the struct hg_load_error to fill. */
#define VARINT(E, p, end, v, base, start, what)                                                \
  do {                                                                                         \
    if ((p) < (end) && !(*(p) & 0x80))                                                         \
      (v) = *(p)++;                                                                            \
    else if (_hg_get_varint(&(p), (end), &(v)))                                                \
      return efail((E), HG_EFORMAT, (base) + (uint64_t)((p) - (start)), "%s: bad varint", what); \
  } while (0)

/* ---- chunk decoding state (sequential load and two-thread load) ---- */

/* Named edges: (edge index, string id), in edge order. */
struct named {
  uint32_t *edge, *field;
  size_t n, cap;
};

/* Node rows: the end of the previous node (when prev) and the largest class
 * and heap ids seen (checked against the counts once they are known). */
struct nstate {
  uint64_t node_end;
  int prev;
  uint32_t max_class, max_heap;
  int heap_zeroed; /* node_heap starts zeroed: zero ids are not written */
};

/* Edge rows. The order check compares with (last_src, last_off) when
 * have_edge. edge_start is built as rows arrive (sources never decrease):
 * es[x] = the first edge whose source is >= x, set for every x < filled;
 * es has es_cap entries, and a source that would not leave room for
 * es[node_count] can belong to no node: bad_src_e keeps the first such
 * edge. fresh: a chunk decoded on its own (two-thread load): its first
 * edge's predecessor is unknown, so it skips the order check and the fill
 * below it, and records (first_src, first_off) for the merge. */
struct estate {
  uint64_t last_src, last_off;
  int have_edge, fresh;
  uint64_t filled;
  uint32_t *es;
  uint64_t es_cap;
  uint32_t bad_src_e;   /* UINT32_MAX: none */
  uint32_t max_target;
  uint64_t first_src, first_off;
  struct named *named;  /* NULL (verify): named edges are not kept       */
  uint64_t max_field;   /* largest field id (verify's final check)      */
};

/* A queued nodes or edges chunk (two-thread load), with what its decoding
 * left for the merge. */
struct chunk {
  int is_edges;
  const uint8_t *p, *end;
  uint64_t base;          /* payload's file offset                        */
  uint64_t addr_or_src;   /* nodes: base address; edges: first source     */
  uint32_t first, count;  /* first node / edge index, rows                */
  struct nstate ns;
  struct estate es;
};

/* Verify mode: the references the loader checks after the last record, as
 * maxima. Fields marked +1 hold value + 1 (0 = none), so every check is
 * "maximum > count". */
struct vmax {
  uint64_t region_image;  /* +1 */
  uint64_t root_target;   /* +1 */
  uint64_t root_image;    /* +1, global roots' owners */
  uint64_t root_thread;   /* +1, other roots' owners */
  uint64_t frame_image;   /* +1 */
  uint64_t node_stack, large_stack;
};

static void vmax_up(uint64_t *m, uint64_t v) {
  if (v > *m) *m = v;
}

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
  struct nstate ns;         /* node rows: state across chunks             */
  struct estate es;         /* edge rows: state across chunks, edge_start */
  struct named named;       /* named edges, handed to the graph at the end */
  /* The two-thread load (load_fast): arrays sized once from the trailer's
   * counts (hint_*), chunks queued here and decoded after the last record. */
  int fast;
  uint64_t hint_nodes, hint_edges;
  struct chunk *chunks;
  size_t chunk_n, chunk_cap;
  size_t cap_stacks, cap_node_stack, cap_large;
  uint32_t node_stack_n;    /* node stacks read so far (records 14)      */
  /* Verify mode (hg_snapshot_verify): records are checked, not kept. */
  int verify;
  int keep_text;            /* get_text copies (always when loading)     */
  uint64_t meta_bytes;      /* verify: metadata text kept so far         */
  union {
    struct hg_region region; struct hg_image image; struct hg_thread thread;
    struct hg_class cls; struct hg_stack stack; struct hg_large_alloc large;
    struct hg_root root; const char *text;
  } one;                    /* verify: the record being read             */
  struct vmax vm;
};

static int bad(struct rd *r, int code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(struct rd *r, int code, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(r->err, code, off, fmt, ap);
  va_end(ap);
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

/* The next token: a text string (UTF-8 checked), or null when allow_null. */
static int text_tok(struct rd *r, int allow_null, const char *what) {
  TRY(next(r));
  if (r->p.tok.type == TOK_NULL && allow_null) return 0;
  if (r->p.tok.type == TOK_EOF) return bad(r, HG_ETRUNCATED, here(r), "file ends before %s", what);
  if (r->p.tok.type != TOK_TEXT) return bad(r, HG_EFORMAT, here(r), "%s: expected a text string", what);
  return check_text(r, what);
}

/* A text string (or null when allow_null), copied into the graph's arena.
 * In verify mode only the metadata is copied (keep_text), within
 * HG_VERIFY_META_MAX bytes; other texts are checked and dropped (""). */
static int get_text(struct rd *r, const char **out, int allow_null, const char *what) {
  TRY(text_tok(r, allow_null, what));
  if (r->p.tok.type == TOK_NULL) {
    *out = NULL;
    return 0;
  }
  if (!r->keep_text) {
    *out = "";
    return 0;
  }
  if (r->verify && (r->meta_bytes += r->p.tok.len + 1 + sizeof(struct hg_kv)) > HG_VERIFY_META_MAX)
    return bad(r, HG_ELIMIT, here(r), "metadata of more than %u bytes (the verifier's limit)",
               HG_VERIFY_META_MAX);
  char *s = _hg_arena_strndup(r->pv, (const char *)r->p.tok.ptr, r->p.tok.len);
  if (!s) return bad(r, HG_ENOMEM, here(r), "out of memory");
  *out = s;
  return 0;
}

/* A map key, only compared with known keys: copied into buf (size bytes;
 * cut there, longer than any known key). */
static int get_key(struct rd *r, char *buf, size_t size, const char *what) {
  TRY(text_tok(r, 0, what));
  size_t n = r->p.tok.len < size - 1 ? r->p.tok.len : size - 1;
  memcpy(buf, r->p.tok.ptr, n);
  buf[n] = 0;
  return 0;
}

/* Where the next record of a kind goes: its array grown (load), or the one
 * scratch element `member` of r->one (verify). */
#define PLACE(r, x, arr, cap, n, member)                \
  do {                                                   \
    if ((r)->verify) {                                   \
      (x) = &(r)->one.member;                            \
    } else {                                             \
      TRY(GROW((r), (arr), (cap), (size_t)(n) + 1));     \
      (x) = &(arr)[n];                                   \
    }                                                    \
  } while (0)

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
  r->keep_text = 1;
  for (uint64_t i = 0; i < n; i++) {
    char key[32];
    TRY(get_key(r, key, sizeof key, "metadata key"));
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
  r->keep_text = !r->verify;
  return 0;
}

/* ---- small records ---- */

static int rec_region(struct rd *r) {
  struct hg_region *x;
  PLACE(r, x, r->g->regions, r->cap_regions, r->g->region_count, region);
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
  if (x->image != HG_NO_OWNER) vmax_up(&r->vm.region_image, (uint64_t)x->image + 1);
  r->g->region_count++;
  return 0;
}

static int rec_image(struct rd *r) {
  struct hg_image *x;
  PLACE(r, x, r->g->images, r->cap_images, r->g->image_count, image);
  memset(x, 0, sizeof *x);
  TRY(get_text(r, &x->path, 0, "image path"));
  TRY(want(r, TOK_BYTES, "image id"));
  if (r->p.tok.len > 64) return bad(r, HG_EFORMAT, here(r), "image id longer than 64 bytes");
  x->id_len = (uint32_t)r->p.tok.len;
  if (x->id_len && !r->verify) {
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
  struct hg_thread *x;
  PLACE(r, x, r->g->threads, r->cap_threads, r->g->thread_count, thread);
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
  const char **x;
  PLACE(r, x, r->g->heaps, r->cap_heaps, r->g->heap_count, text);
  TRY(get_text(r, x, 0, "heap name"));
  r->g->heap_count++;
  return 0;
}

static int rec_string(struct rd *r) {
  TRY(rec_id(r, r->g->string_count, "string"));
  const char **x;
  PLACE(r, x, r->g->strings, r->cap_strings, r->g->string_count, text);
  TRY(get_text(r, x, 0, "string"));
  r->g->string_count++;
  return 0;
}

static int rec_class(struct rd *r) {
  TRY(rec_id(r, r->g->class_count, "class"));
  struct hg_class *x;
  PLACE(r, x, r->g->classes, r->cap_classes, r->g->class_count, cls);
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


/* Decodes the rows of one nodes chunk into g's arrays at c->first.. (the
 * arrays hold them already). Errors name the node and the byte offset. */
static inline __attribute__((always_inline)) int
dec_nodes_body(struct hg_graph *g, struct hg_load_error *err, const struct chunk *c, struct nstate *s,
               const int check_only) {
  const uint8_t *p = c->p, *end = c->end, *start = c->p;
  uint64_t base = c->base, addr = c->addr_or_src, heap = 0, node_end = s->node_end;
  uint32_t max_class = s->max_class, max_heap = s->max_heap;
  int prev = s->prev, heap_zeroed = s->heap_zeroed;
  uint64_t *naddr = g->node_addr, *nsize = g->node_size;
  uint32_t *nclass = g->node_class, *nheap = g->node_heap;
  uint8_t *nflags = g->node_flags;
  for (uint32_t i = 0; i < c->count; i++) {
    uint32_t n = c->first + i;
    uint64_t gap, size, cls, hp;
    const uint8_t *row = p;
    VARINT(err, p, end, gap, base, start, "node gap");
    VARINT(err, p, end, size, base, start, "node size");
    VARINT(err, p, end, cls, base, start, "node class");
    if (p >= end) return efail(err, HG_EFORMAT, base + (uint64_t)(p - start), "node flags missing");
    uint8_t fl = *p++;
    if (fl & HG_NODE_ROW_HEAP) {
      VARINT(err, p, end, hp, base, start, "node heap");
      heap = hp;
    }
    uint64_t at = base + (uint64_t)(row - start);
    if (fl & 0x70) return efail(err, HG_EFORMAT, at, "node %llu: unknown flag bits", (unsigned long long)n);
    if (addr + gap < addr) return efail(err, HG_EFORMAT, at, "node address overflows");
    addr += gap;
    if (size == 0 || addr + size < addr)
      return efail(err, HG_EFORMAT, at, "node %u: empty or wrapping range", n);
    if (prev && addr < node_end)
      return efail(err, HG_EFORMAT, at, "node %u at 0x%llx overlaps or precedes the previous node", n,
                   (unsigned long long)addr);
    if (cls >= UINT32_MAX || heap >= UINT32_MAX)
      return efail(err, HG_EFORMAT, at, "node %u: class or heap id too large", n);
    if (!check_only) {
      naddr[n] = addr;
      nsize[n] = size;
      nclass[n] = (uint32_t)cls;
      nflags[n] = fl & HG_NODE_FLAG_MASK;
      if (heap || !heap_zeroed) nheap[n] = (uint32_t)heap; /* zero pages stay untouched */
    }
    if (cls > max_class) max_class = (uint32_t)cls;
    if (heap > max_heap) max_heap = (uint32_t)heap;
    addr += size;
    node_end = addr;
    prev = 1;
  }
  if (p != end) return efail(err, HG_EFORMAT, base + (uint64_t)(p - start), "trailing bytes in nodes chunk");
  s->node_end = node_end;
  s->prev = prev;
  s->max_class = max_class;
  s->max_heap = max_heap;
  return 0;
}

static int named_add(struct named *s, struct hg_load_error *err, uint64_t at, uint32_t e, uint32_t f) {
  if (s->n == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 64;
    uint32_t *ne = realloc(s->edge, nc * sizeof *ne);
    if (ne) s->edge = ne;
    uint32_t *nf = ne ? realloc(s->field, nc * sizeof *nf) : NULL;
    if (!nf) return efail(err, HG_ENOMEM, at, "out of memory (%zu elements)", nc);
    s->field = nf;
    s->cap = nc;
  }
  s->edge[s->n] = e;
  s->field[s->n++] = f;
  return 0;
}

/* Decodes the rows of one edges chunk into g's arrays at c->first.., and
 * edge_start as far as its sources go (struct estate). */
static inline __attribute__((always_inline)) int
dec_edges_body(struct hg_graph *g, struct hg_load_error *err, const struct chunk *c, struct estate *s,
               const int check_only) {
  const uint8_t *p = c->p, *end = c->end, *start = c->p;
  uint64_t base = c->base, count = c->count, src = c->addr_or_src, off = 0, done = 0;
  int first_group = 1;
  /* Per-edge state in locals (stores through s or g would alias the
   * arrays); written back at the end. On error the graph is discarded. */
  uint64_t last_src = s->last_src, last_off = s->last_off, filled = s->filled;
  int have_edge = s->have_edge, fresh = s->fresh;
  uint32_t e = c->first, max_target = s->max_target, *es = s->es;
  uint64_t es_cap = s->es_cap;
  uint32_t *etarget = g->edge_target, *eoffset = g->edge_offset;
  uint8_t *ekind = g->edge_kind;
  while (done < count) {
    uint64_t sd, n;
    VARINT(err, p, end, sd, base, start, "edge group source");
    VARINT(err, p, end, n, base, start, "edge group size");
    uint64_t at = base + (uint64_t)(p - start);
    int words = (n & HG_GROUP_WORDS) != 0;
    n >>= 1;
    if (first_group && sd != 0) return efail(err, HG_EFORMAT, at, "first edge group must start at the chunk's source");
    if (n == 0 || n > count - done) return efail(err, HG_EFORMAT, at, "edge group size %llu out of range",
                                                 (unsigned long long)n);
    if (src + sd < src || src + sd >= UINT32_MAX) return efail(err, HG_EFORMAT, at, "edge source out of range");
    int absolute = first_group || sd != 0;
    src += sd;
    first_group = 0;
    if (!check_only && fresh) { /* a chunk on its own: the merge fills below its first source */
      filled = src + 1 < es_cap ? src + 1 : filled;
      s->first_src = src;
    }
    if (!check_only && src >= filled) { /* a new source: the edge_start entries up to it */
      if (src + 1 < es_cap) {
        for (uint64_t x = filled; x <= src; x++) es[x] = e;
        filled = src + 1;
      } else if (s->bad_src_e == UINT32_MAX) {
        s->bad_src_e = e; /* no room for node_count: beyond every node */
      }
    }
    for (uint64_t i = 0; i < n; i++) {
      uint64_t ok, field = 0, zz;
      const uint8_t *row = p;
      VARINT(err, p, end, ok, base, start, "edge offset");
      unsigned code = (unsigned)(ok & 7);
      if (code >= HG_KINDCODE_NAMED_BASE) VARINT(err, p, end, field, base, start, "edge field");
      VARINT(err, p, end, zz, base, start, "edge target");
      at = base + (uint64_t)(row - start);
      uint64_t q = ok >> HG_OFFKIND_SHIFT;
      if (words && q > (UINT64_MAX >> 3)) return efail(err, HG_EFORMAT, at, "edge offset overflows");
      uint64_t d = words ? q * 8 : q;
      if (absolute && i == 0) {
        off = d;
      } else {
        if (d == 0 || off + d < off) return efail(err, HG_EFORMAT, at, "edge offsets must increase");
        off += d;
      }
      if (off > UINT32_MAX) return efail(err, HG_EFORMAT, at, "edge offset beyond 4 GiB");
      if (have_edge && (src < last_src || (src == last_src && off <= last_off)))
        return efail(err, HG_EFORMAT, at, "edges out of order (source %llu offset %llu)",
                     (unsigned long long)src, (unsigned long long)off);
      if (!check_only && fresh) {
        s->first_off = off;
        fresh = 0;
      }
      int64_t dst = (int64_t)src + _hg_unzigzag(zz);
      if (dst < 0 || dst >= (int64_t)UINT32_MAX - 1) return efail(err, HG_EFORMAT, at, "edge target out of range");
      if (code >= HG_KINDCODE_NAMED_BASE && (field == 0 || field >= UINT32_MAX))
        return efail(err, HG_EFORMAT, at, "edge field id out of range");
      if (!check_only) {
        etarget[e] = (uint32_t)dst;
        if (eoffset) eoffset[e] = (uint32_t)off; /* NULL: HG_LOAD_NO_EDGE_OFFSETS (fast path) */
        ekind[e] = (uint8_t)(code >= HG_KINDCODE_NAMED_BASE ? code - HG_KINDCODE_NAMED_BASE + HG_EDGE_STRONG : code);
      }
      if ((uint32_t)dst > max_target) max_target = (uint32_t)dst;
      if (field) {
        if (!check_only && s->named && named_add(s->named, err, at, e, (uint32_t)field)) return HG_ENOMEM;
        if (field > s->max_field) s->max_field = field;
      }
      e++;
      have_edge = 1;
      last_src = src;
      last_off = off;
    }
    done += n;
  }
  if (p != end) return efail(err, HG_EFORMAT, base + (uint64_t)(p - start), "trailing bytes in edges chunk");
  s->have_edge = have_edge;
  s->fresh = fresh;
  s->last_src = last_src;
  s->last_off = last_off;
  s->filled = filled;
  s->max_target = max_target;
  return 0;
}

/* The decoders, twice: loading (rows stored, edge_start built) and
 * checking only (hg_snapshot_verify: the same checks in the same order,
 * nothing stored). Without the stores and the edge_start fill the row loop
 * keeps its state in registers: hg_snapshot_verify of a 10 MB snapshot
 * (1.45 M nodes and edges) 13.0 -> 9.9 ms. The check variants stay out of
 * line: inlined into take_chunk they spill again (15 ms). */
static int dec_nodes(struct hg_graph *g, struct hg_load_error *err, const struct chunk *c,
                     struct nstate *s) {
  return dec_nodes_body(g, err, c, s, 0);
}
static __attribute__((noinline)) int dec_nodes_check(struct hg_graph *g, struct hg_load_error *err,
                                                     const struct chunk *c, struct nstate *s) {
  return dec_nodes_body(g, err, c, s, 1);
}
static int dec_edges(struct hg_graph *g, struct hg_load_error *err, const struct chunk *c,
                     struct estate *s) {
  return dec_edges_body(g, err, c, s, 0);
}
static __attribute__((noinline)) int dec_edges_check(struct hg_graph *g, struct hg_load_error *err,
                                                     const struct chunk *c, struct estate *s) {
  return dec_edges_body(g, err, c, s, 1);
}

/* The two-thread load queues chunks instead of decoding them; their rows
 * must fit the arrays sized from the trailer (else the load starts over
 * without it: see load_fast). */
static int queue_chunk(struct rd *r, const struct chunk *c, uint64_t total, uint64_t hint) {
  if (total > hint) return bad(r, HG_EFORMAT, here(r), "more rows than the trailer says");
  if (r->chunk_n == r->chunk_cap) {
    size_t nc = r->chunk_cap ? 2 * r->chunk_cap : 256;
    struct chunk *m = realloc(r->chunks, nc * sizeof *m);
    if (!m) return bad(r, HG_ENOMEM, here(r), "out of memory");
    r->chunks = m;
    r->chunk_cap = nc;
  }
  r->chunks[r->chunk_n++] = *c;
  return 0;
}

/* After a chunk's header: queued (two-thread load), or the arrays (cols,
 * sharing *cap) grown and its rows decoded now. *total counts its rows. */
static int take_chunk(struct rd *r, struct chunk *c, uint32_t *total, uint64_t hint, size_t *cap,
                      const struct col *cols, size_t ncols) {
  if (r->fast) {
    TRY(queue_chunk(r, c, (uint64_t)*total + c->count, hint));
  } else if (r->verify) { /* nothing is stored (hg_snapshot_verify) */
    TRY(c->is_edges ? dec_edges_check(r->g, r->err, c, &r->es) : dec_nodes_check(r->g, r->err, c, &r->ns));
  } else {
    TRY(grow_cols(r, cap, (size_t)*total + c->count, cols, ncols));
    TRY(c->is_edges ? dec_edges(r->g, r->err, c, &r->es) : dec_nodes(r->g, r->err, c, &r->ns));
  }
  *total += c->count;
  return 0;
}

static int rec_nodes(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t first, count, addr;
  TRY(get_uint(r, &first, "nodes first index"));
  if (first != g->node_count)
    return bad(r, HG_EFORMAT, here(r), "nodes chunk starts at index %llu, expected %u",
               (unsigned long long)first, g->node_count);
  TRY(get_uint(r, &count, "nodes count"));
  TRY(get_uint(r, &addr, "nodes base address"));
  const uint8_t *p, *end;
  uint64_t base;
  TRY(get_chunk(r, &p, &end, &base, count, HG_NODE_MIN_BYTES, "nodes chunk"));
  if (count > (uint64_t)UINT32_MAX - 1 - g->node_count)
    return bad(r, HG_ELIMIT, here(r), "too many nodes");
  struct chunk c = {0, p, end, base, addr, g->node_count, (uint32_t)count, {0}, {0}};
  const struct col nodes[] = {COL(g->node_addr), COL(g->node_size), COL(g->node_class),
                              COL(g->node_flags), COL(g->node_heap)};
  return take_chunk(r, &c, &g->node_count, r->hint_nodes, &r->cap_nodes, nodes, 5);
}

static int rec_edges(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t first, count;
  TRY(get_uint(r, &first, "edges first source"));
  TRY(get_uint(r, &count, "edges count"));
  const uint8_t *p, *end;
  uint64_t base;
  TRY(get_chunk(r, &p, &end, &base, count, HG_EDGE_MIN_BYTES, "edges chunk"));
  if (count > (uint64_t)UINT32_MAX - 1 - g->edge_count)
    return bad(r, HG_ELIMIT, here(r), "too many edges");
  struct chunk c = {1, p, end, base, first, g->edge_count, (uint32_t)count, {0}, {0}};
  const struct col edges[] = {COL(g->edge_target), COL(g->edge_offset), COL(g->edge_kind)};
  return take_chunk(r, &c, &g->edge_count, r->hint_edges, &r->cap_edges, edges, 3);
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
  if (!r->verify) TRY(GROW(r, g->roots, r->cap_roots, (size_t)(g->root_count + count)));
  uint64_t where = 0, target = 0;
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t *row = p;
    uint64_t at = base + (uint64_t)(row - start);
    if (p >= end) return bad(r, HG_EFORMAT, at, "root row missing");
    uint8_t kb = *p++;
    uint64_t owner = HG_NO_OWNER, zw, zt;
    if ((kb & 0x0f) >= HG_ROOT_KIND_COUNT || (kb & 0xe0)) return bad(r, HG_EFORMAT, at, "root kind unknown");
    if (kb & HG_ROOT_ROW_OWNER) {
      VARINT(r->err, p, end, owner, base, start, "root owner");
      if (owner >= UINT32_MAX) return bad(r, HG_EFORMAT, at, "root owner out of range");
    }
    VARINT(r->err, p, end, zw, base, start, "root address");
    VARINT(r->err, p, end, zt, base, start, "root target");
    where += (uint64_t)_hg_unzigzag(zw);
    int64_t t = (int64_t)target + _hg_unzigzag(zt);
    if (t < 0 || t >= (int64_t)UINT32_MAX - 1) return bad(r, HG_EFORMAT, at, "root target out of range");
    target = (uint64_t)t;
    struct hg_root *x = r->verify ? &r->one.root : &g->roots[g->root_count];
    g->root_count++;
    x->kind = kb & 0x0f;
    x->owner = (uint32_t)owner;
    x->addr = where;
    x->target = (uint32_t)target;
    if (r->verify) {
      vmax_up(&r->vm.root_target, target + 1);
      if (owner != HG_NO_OWNER)
        vmax_up(x->kind == HG_ROOT_GLOBAL ? &r->vm.root_image : &r->vm.root_thread, owner + 1);
    }
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
    char key[16];
    uint64_t v;
    TRY(get_key(r, key, sizeof key, "trailer key"));
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

/* The first edge whose source or target is no node (sources never
 * decrease: es[n] is the first with a source >= n), or UINT32_MAX. */
static uint32_t first_dangling_edge(const struct rd *r, uint32_t n) {
  const struct hg_graph *g = r->g;
  uint32_t bad_e = UINT32_MAX;
  if (r->es.filled > n) bad_e = r->es.es[n];
  else if (r->es.bad_src_e != UINT32_MAX) bad_e = r->es.bad_src_e;
  if (g->edge_count && r->es.max_target >= n) /* only then look for the target */
    for (uint32_t e = 0; e < g->edge_count && e < bad_e; e++)
      if (g->edge_target[e] >= n) bad_e = e;
  return bad_e;
}

static int final_checks(struct rd *r) {
  struct hg_graph *g = r->g;
  uint64_t end = r->p.size;
  for (uint32_t i = 0; i < g->region_count; i++)
    if (g->regions[i].image != HG_NO_OWNER && g->regions[i].image >= g->image_count)
      return bad(r, HG_EFORMAT, end, "region %u refers to image %u of %u", i, g->regions[i].image,
                 g->image_count);
  if (r->ns.max_class > g->class_count || r->ns.max_heap > g->heap_count) /* find the first */
    for (uint32_t i = 0; i < g->node_count; i++) {
      if (g->node_class[i] > g->class_count)
        return bad(r, HG_EFORMAT, end, "node %u refers to class %u of %u", i, g->node_class[i], g->class_count);
      if (g->node_heap[i] > g->heap_count)
        return bad(r, HG_EFORMAT, end, "node %u refers to heap %u of %u", i, g->node_heap[i], g->heap_count);
    }
  uint32_t e = first_dangling_edge(r, g->node_count);
  if (e != UINT32_MAX)
    return bad(r, HG_EFORMAT, end, "edge %u refers to a node beyond %u", e, g->node_count);
  g->named_edge = r->named.edge;
  g->named_field = r->named.field;
  g->named_count = (uint32_t)r->named.n;
  r->named = (struct named){0};
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
  /* CSR: edge_start was filled as the edges came (every x < filled); the
   * nodes after the last source start at the end. */
  uint32_t *es = r->es.es;
  for (uint64_t x = r->es.filled; x <= g->node_count; x++) es[x] = g->edge_count;
  uint32_t *fit = realloc(es, ((size_t)g->node_count + 1) * sizeof *es);
  g->edge_start = fit ? fit : es;
  r->es.es = NULL;
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
  struct hg_stack *x;
  PLACE(r, x, g->stacks, r->cap_stacks, g->stack_count, stack);
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
    VARINT(r->err, p, end, im, base, start, "stack frame image");
    VARINT(r->err, p, end, off, base, start, "stack frame offset");
    if (im >= UINT32_MAX) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "stack frame: image index too large");
    tmp[n].image = im ? (uint32_t)(im - 1) : HG_NO_OWNER;
    tmp[n].offset = off;
    n++;
  }
  if (r->verify) {
    for (uint32_t k = 0; k < n; k++)
      if (tmp[k].image != HG_NO_OWNER) vmax_up(&r->vm.frame_image, (uint64_t)tmp[k].image + 1);
  } else if (n) {
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
  if (!r->verify) TRY(GROW(r, g->node_stack, r->cap_node_stack, (size_t)r->node_stack_n + (size_t)(end - p)));
  while (p < end) {
    uint64_t id;
    VARINT(r->err, p, end, id, base, start, "node stack id");
    if (id >= UINT32_MAX) return bad(r, HG_EFORMAT, base + (uint64_t)(p - start), "node stack id too large");
    if (r->verify)
      vmax_up(&r->vm.node_stack, id);
    else
      g->node_stack[r->node_stack_n] = (uint32_t)id;
    r->node_stack_n++;
  }
  return 0;
}

static int rec_large(struct rd *r) {
  struct hg_graph *g = r->g;
  struct hg_large_alloc *x;
  PLACE(r, x, g->large, r->cap_large, g->large_count, large);
  memset(x, 0, sizeof *x);
  TRY(get_uint(r, &x->addr, "large allocation address"));
  TRY(get_uint(r, &x->size, "large allocation size"));
  TRY(get_u32(r, &x->stack, "large allocation stack"));
  vmax_up(&r->vm.large_stack, x->stack);
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

/* Verify mode: final_checks and stack_checks in their order, from counts
 * and maxima. Same codes and offset (the file size); without the arrays a
 * message names the largest reference rather than the first record that
 * makes it. */
static int verify_checks(struct rd *r) {
  const struct hg_graph *g = r->g;
  const struct vmax *m = &r->vm;
  uint64_t end = r->p.size;
  if (m->region_image > g->image_count)
    return bad(r, HG_EFORMAT, end, "a region refers to image %llu of %u", (unsigned long long)m->region_image - 1,
               g->image_count);
  if (r->ns.max_class > g->class_count)
    return bad(r, HG_EFORMAT, end, "a node refers to class %u of %u", r->ns.max_class, g->class_count);
  if (r->ns.max_heap > g->heap_count)
    return bad(r, HG_EFORMAT, end, "a node refers to heap %u of %u", r->ns.max_heap, g->heap_count);
  if (g->edge_count && (r->es.last_src >= g->node_count || r->es.max_target >= g->node_count))
    return bad(r, HG_EFORMAT, end, "an edge refers to a node beyond %u", g->node_count);
  if (r->es.max_field > g->string_count)
    return bad(r, HG_EFORMAT, end, "an edge refers to string %llu of %u", (unsigned long long)r->es.max_field,
               g->string_count);
  if (m->root_target > g->node_count)
    return bad(r, HG_EFORMAT, end, "a root refers to a node beyond %u", g->node_count);
  if (m->root_image > g->image_count || m->root_thread > g->thread_count)
    return bad(r, HG_EFORMAT, end, "a root refers to owner %llu of %u",
               (unsigned long long)(m->root_image > g->image_count ? m->root_image : m->root_thread) - 1,
               m->root_image > g->image_count ? g->image_count : g->thread_count);
  if (!g->has_stacks && (g->stack_count || r->node_stack_n || g->large_count))
    return bad(r, HG_EFORMAT, end, "stack records without a stack info record");
  if (m->frame_image > g->image_count)
    return bad(r, HG_EFORMAT, end, "a stack frame refers to image %llu of %u",
               (unsigned long long)m->frame_image - 1, g->image_count);
  if (r->node_stack_n > g->node_count)
    return bad(r, HG_EFORMAT, end, "stack ids for %u nodes, the file has %u", r->node_stack_n, g->node_count);
  if (m->node_stack > g->stack_count)
    return bad(r, HG_EFORMAT, end, "a node refers to stack %llu of %u", (unsigned long long)m->node_stack,
               g->stack_count);
  if (m->large_stack > g->stack_count)
    return bad(r, HG_EFORMAT, end, "a large allocation refers to stack %llu of %u",
               (unsigned long long)m->large_stack, g->stack_count);
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

/* Everything after the last record, for both loads: the checks that need
 * every count, then the metadata. Frees the reader's own memory. */
static struct hg_graph *finish(struct rd *r, int rc) {
  if (!rc) rc = r->verify ? verify_checks(r) : final_checks(r);
  if (!rc && !r->verify) rc = stack_checks(r);
  merge_meta(r);
  free(r->es.es);
  free(r->named.edge);
  free(r->named.field);
  free(r->chunks);
  r->es.es = NULL;
  r->named = (struct named){0};
  r->chunks = NULL;
  if (rc) {
    hg_graph_free(r->g);
    return NULL;
  }
  return r->g;
}

static int start(struct rd *r, uint64_t size, struct hg_load_error *err) {
  r->err = err;
  memset(r->err, 0, sizeof *r->err);
  r->g = _hg_graph_alloc();
  if (!r->g) return bad(r, HG_ENOMEM, 0, "out of memory");
  r->pv = r->g->priv;
  r->g->file_size = size;
  r->es.bad_src_e = UINT32_MAX;
  r->es.named = r->verify ? NULL : &r->named;
  r->keep_text = !r->verify;
  return 0;
}

/* The sequential load: arrays grow as records arrive; edge_start has room
 * for as many nodes as the file could hold (virtual memory: only what the
 * sources reach is touched). */
static struct hg_graph *load(struct rd *r, uint64_t size, struct hg_load_error *err) {
  struct hg_load_error dummy;
  if (start(r, size, err ? err : &dummy)) return NULL;
  r->es.es_cap = size / HG_NODE_MIN_BYTES + 2;
  r->es.es = malloc((size_t)r->es.es_cap * sizeof *r->es.es);
  int rc = r->es.es ? read_stream(r) : bad(r, HG_ENOMEM, 0, "out of memory");
  return finish(r, rc);
}

/* ---- the two-thread load ---- */

/* The trailer's node and edge counts, read from the last bytes of a file
 * (`[11, {counts}, xxh64]` then the break) before anything else. 1 if found. */
static int trailer_hint(const uint8_t *data, uint64_t size, uint64_t *nodes, uint64_t *edges) {
  size_t len = size < 512 ? (size_t)size : 512;
  const uint8_t *tail = data + size - len;
  for (size_t i = len - (len > 0); i-- > 0;) {
    if (tail[i] != 0x83 || tail[i + 1] != HG_REC_TRAILER) continue;
    struct hg_pull p;
    _hg_pull_open_mem(&p, tail + i, len - i);
    p.hashing = 0;
    int got = 0, ok = !_hg_pull_next(&p) && p.tok.type == TOK_ARRAY && p.tok.u == 3 &&
                      !_hg_pull_next(&p) && p.tok.type == TOK_UINT &&
                      !_hg_pull_next(&p) && p.tok.type == TOK_MAP && p.tok.u <= 64;
    for (uint64_t j = 0, k = ok ? p.tok.u : 0; j < k && ok; j++) {
      ok = !_hg_pull_next(&p) && p.tok.type == TOK_TEXT;
      int which = ok && p.tok.len == 5 ? (!memcmp(p.tok.ptr, "nodes", 5) ? 1 : !memcmp(p.tok.ptr, "edges", 5) ? 2 : 0) : 0;
      ok = ok && !_hg_pull_next(&p) && p.tok.type == TOK_UINT;
      if (ok && which == 1) *nodes = p.tok.u;
      if (ok && which == 2) *edges = p.tok.u;
      got |= ok ? which : 0;
    }
    ok = ok && got == 3 && !_hg_pull_next(&p) && p.tok.type == TOK_UINT && !_hg_pull_next(&p) &&
         p.tok.type == TOK_BREAK && _hg_pull_offset(&p) == len - i;
    if (ok) return 1;
  }
  return 0;
}

/* A decoding thread: takes the next queued chunk until none is left or one
 * fails. Chunks are independent (struct estate, fresh); the merge checks
 * what joins them. */
struct worker {
  struct rd *r;
  struct named named;       /* this thread's named edges, in edge order */
  struct hg_load_error err; /* scratch: any failure means the slow load  */
  size_t *next;
  int *failed;
  int drop;                 /* the input is our own copy: release decoded pages */
};

static void *decode_chunks(void *arg) {
  struct worker *w = arg;
  struct rd *r = w->r;
  const uintptr_t page = 4096;
  for (;;) {
    size_t k = __atomic_fetch_add(w->next, 1, __ATOMIC_RELAXED);
    if (k >= r->chunk_n || __atomic_load_n(w->failed, __ATOMIC_RELAXED)) break;
    struct chunk *c = &r->chunks[k];
    int rc;
    if (c->is_edges) {
      c->es = (struct estate){.fresh = 1, .es = r->es.es, .es_cap = r->es.es_cap,
                              .bad_src_e = UINT32_MAX, .named = &w->named};
      rc = dec_edges(r->g, &w->err, c, &c->es);
    } else {
      c->ns = (struct nstate){.heap_zeroed = 1};
      rc = dec_nodes(r->g, &w->err, c, &c->ns);
    }
    if (rc) {
      __atomic_store_n(w->failed, 1, __ATOMIC_RELAXED);
      break;
    }
    uintptr_t lo = ((uintptr_t)c->p + page - 1) & ~(page - 1), hi = (uintptr_t)c->end & ~(page - 1);
    if (w->drop && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
  }
  return NULL;
}

/* Joins the decoded chunks in file order: what crosses a chunk boundary
 * (node overlap, edge order, edge_start below each chunk's first source),
 * the largest ids, and the two threads' named edges. 0, or 1 when the
 * sequential load must decide. */
static int merge_chunks(struct rd *r, struct worker *w) {
  struct hg_graph *g = r->g;
  struct estate *s = &r->es;
  for (size_t k = 0; k < r->chunk_n; k++) {
    const struct chunk *c = &r->chunks[k];
    if (!c->is_edges) {
      if (r->ns.prev && g->node_addr[c->first] < r->ns.node_end) return 1;
      r->ns.node_end = c->ns.node_end;
      r->ns.prev = 1;
      if (c->ns.max_class > r->ns.max_class) r->ns.max_class = c->ns.max_class;
      if (c->ns.max_heap > r->ns.max_heap) r->ns.max_heap = c->ns.max_heap;
      continue;
    }
    const struct estate *x = &c->es;
    if (x->bad_src_e != UINT32_MAX || x->first_src + 1 >= s->es_cap) return 1;
    if (s->have_edge && (x->first_src < s->last_src ||
                         (x->first_src == s->last_src && x->first_off <= s->last_off)))
      return 1;
    for (uint64_t v = s->filled; v <= x->first_src; v++) s->es[v] = c->first;
    s->filled = x->filled;
    s->last_src = x->last_src;
    s->last_off = x->last_off;
    s->have_edge = 1;
    if (x->max_target > s->max_target) s->max_target = x->max_target;
  }
  struct named *a = &w[0].named, *b = &w[1].named, *m = &r->named;
  size_t n = a->n + b->n, i = 0, j = 0;
  if (!n) return 0;
  m->edge = malloc(n * sizeof *m->edge);
  m->field = malloc(n * sizeof *m->field);
  if (!m->edge || !m->field) return 1;
  for (m->n = 0; m->n < n; m->n++) {
    int from_a = j == b->n || (i < a->n && a->edge[i] < b->edge[j]);
    m->edge[m->n] = from_a ? a->edge[i] : b->edge[j];
    m->field[m->n] = from_a ? a->field[i++] : b->field[j++];
  }
  m->cap = n;
  return 0;
}

/*
 * The usual load of a whole file in memory: the trailer's counts (read
 * first) size every array once, exactly (no doubling, no copies); the
 * records are read in order as by load() but the nodes and edges chunks
 * are only queued, then decoded on two threads, each chunk on its own, and
 * joined by merge_chunks. The counts are a hint, checked as usual when the
 * trailer is read in turn. Any failure, and any file this path cannot
 * vouch for, returns NULL with *retry set: load() then reads it again, so
 * every error is reported exactly as the sequential reader finds it.
 */
/* Test hook: 1 sends every load through load() (tests/unit/test_load_paths.c
 * compares the two). Not for use in the library. */
int _hg_load_sequential = 0;

static struct hg_graph *load_fast(const uint8_t *data, uint64_t size, unsigned flags, int drop,
                                  int *retry) {
  uint64_t hn = 0, he = 0;
  *retry = 1;
  if (_hg_load_sequential || !trailer_hint(data, size, &hn, &he) || hn > size / HG_NODE_MIN_BYTES ||
      he > size / HG_EDGE_MIN_BYTES || hn >= UINT32_MAX - 1 || he >= UINT32_MAX - 1)
    return NULL;
  struct rd r;
  memset(&r, 0, sizeof r);
  r.flags = flags;
  r.fast = 1;
  r.hint_nodes = hn;
  r.hint_edges = he;
  _hg_pull_open_mem(&r.p, data, (size_t)size);
  struct hg_load_error scratch;
  if (start(&r, size, &scratch)) return NULL;
  struct hg_graph *g = r.g;
  size_t n1 = (size_t)hn + 1, m1 = (size_t)he + 1;
  g->node_addr = _hg_malloc_big(n1 * sizeof *g->node_addr);
  g->node_size = _hg_malloc_big(n1 * sizeof *g->node_size);
  g->node_class = _hg_malloc_big(n1 * sizeof *g->node_class);
  g->node_flags = _hg_malloc_big(n1 * sizeof *g->node_flags);
  g->node_heap = calloc(n1, sizeof *g->node_heap); /* fresh zero pages: ids 0 never written */
  g->edge_target = _hg_malloc_big(m1 * sizeof *g->edge_target);
  if (!(flags & HG_LOAD_NO_EDGE_OFFSETS)) g->edge_offset = _hg_malloc_big(m1 * sizeof *g->edge_offset);
  g->edge_kind = _hg_malloc_big(m1 * sizeof *g->edge_kind);
  r.es.es_cap = n1;
  r.es.es = _hg_malloc_big(n1 * sizeof *r.es.es);
  r.cap_nodes = n1;
  r.cap_edges = m1;
  int rc = !g->node_addr || !g->node_size || !g->node_class || !g->node_flags || !g->node_heap ||
           !g->edge_target || (!g->edge_offset && !(flags & HG_LOAD_NO_EDGE_OFFSETS)) ||
           !g->edge_kind || !r.es.es;
  if (!rc) rc = read_stream(&r);
  if (!rc && (g->node_count != hn || g->edge_count != he)) rc = 1;
  if (!rc) {
    size_t next = 0;
    int failed = 0;
    struct worker w[2] = {{&r, {0}, {0}, &next, &failed, drop}, {&r, {0}, {0}, &next, &failed, drop}};
    struct _hg_job job;
    _hg_job_start(&job, decode_chunks, &w[1], r.chunk_n > 1);
    decode_chunks(&w[0]);
    _hg_job_wait(&job);
    rc = failed || merge_chunks(&r, w);
    for (int i = 0; i < 2; i++) {
      free(w[i].named.edge);
      free(w[i].named.field);
    }
  }
  g = finish(&r, rc);
  *retry = g == NULL;
  return g;
}

struct hg_graph *hg_graph_load_mem(const void *data, size_t size, struct hg_load_error *err) {
  int retry;
  struct hg_graph *g = load_fast(data, size, 0, 0, &retry);
  if (g) {
    if (err) memset(err, 0, sizeof *err);
    return g;
  }
  struct rd r;
  memset(&r, 0, sizeof r);
  _hg_pull_open_mem(&r.p, data, size);
  return load(&r, size, err);
}

struct hg_graph *hg_graph_load(const char *path, struct hg_load_error *err) {
  return hg_graph_load_flags(path, 0, err);
}

/* HG_LOAD_NO_EDGE_OFFSETS / _NAMES: what the caller will not look at goes
 * once the file is validated. */
static struct hg_graph *drop_unwanted(struct hg_graph *g, unsigned flags) {
  if (g && (flags & HG_LOAD_NO_EDGE_OFFSETS)) {
    free(g->edge_offset);
    g->edge_offset = NULL;
  }
  if (g && (flags & HG_LOAD_NO_EDGE_NAMES)) {
    free(g->named_edge);
    free(g->named_field);
    g->named_edge = g->named_field = NULL;
    g->named_count = 0;
  }
  return g;
}

/* Opens a regular file: its fd and size, or -1 with *err filled. */
static int open_snapshot(const char *path, uint64_t *size, struct hg_load_error *err) {
  memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    err->code = fd < 0 && (errno == EACCES || errno == EPERM) ? HG_EPERM : HG_EIO;
    snprintf(err->message, sizeof err->message, "%s: %s", path,
             fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return -1;
  }
  *size = (uint64_t)st.st_size;
  return fd;
}

/* One part of the file read into buf at its offset (pread: no shared file
 * position); got says how much arrived. */
struct half {
  int fd;
  uint8_t *buf;
  uint64_t off, len, got;
};

#define READ_SPLIT_MIN ((uint64_t)64 << 20) /* smaller files: one thread */

static void *read_half(void *arg) {
  struct half *h = arg;
  while (h->got < h->len) {
    uint64_t left = h->len - h->got, at = h->off + h->got;
    ssize_t k = pread(h->fd, h->buf + at, (size_t)(left < (1u << 30) ? left : (1u << 30)), (off_t)at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    h->got += (uint64_t)k;
  }
  return NULL;
}

struct hg_graph *hg_graph_load_flags(const char *path, unsigned flags, struct hg_load_error *err) {
  struct rd r;
  memset(&r, 0, sizeof r);
  r.flags = flags;
  struct hg_load_error dummy;
  if (!err) err = &dummy;
  uint64_t size;
  int fd = open_snapshot(path, &size, err);
  if (fd < 0) return NULL;
  /* The whole file read into memory (not mapped: a file cut short under a
   * mapping would raise SIGBUS) for the two-thread load, which releases
   * decoded pages as it goes. Whatever it cannot vouch for — and a file
   * that changed size meanwhile — is read again below, sequentially. */
  uint8_t *buf = size && size < SIZE_MAX ? _hg_malloc_big((size_t)size) : NULL;
  if (buf) {
    /* Two halves read at once (pread), so the fresh buffer's page faults,
     * most of a big read's time, are taken on both cores. */
    struct half h[2] = {{fd, buf, 0, size / 2, 0}, {fd, buf, size / 2, size - size / 2, 0}};
    struct _hg_job job;
    _hg_job_start(&job, read_half, &h[1], size >= READ_SPLIT_MIN);
    read_half(&h[0]);
    _hg_job_wait(&job);
    int retry;
    struct hg_graph *g = h[0].got == h[0].len && h[1].got == h[1].len
                             ? load_fast(buf, size, flags, 1, &retry)
                             : NULL;
    free(buf);
    if (g) {
      close(fd);
      return drop_unwanted(g, flags);
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
      err->code = HG_EIO;
      snprintf(err->message, sizeof err->message, "%s: %s", path, strerror(errno));
      close(fd);
      return NULL;
    }
  }
  if (_hg_pull_open_fd(&r.p, fd, size)) {
    err->code = HG_ENOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    close(fd);
    return NULL;
  }
  struct hg_graph *g = load(&r, size, err);
  _hg_pull_close(&r.p);
  close(fd);
  return drop_unwanted(g, flags);
}

/* ---- verify: the sequential reader in memory independent of the file ---- */

int hg_snapshot_verify(const char *path, unsigned flags, struct hg_verify_info *info,
                       struct hg_load_error *err) {
  struct hg_load_error dummy;
  if (!err) err = &dummy;
  memset(info, 0, sizeof *info);
  uint64_t size;
  int fd = open_snapshot(path, &size, err);
  if (fd < 0) return err->code;
  struct rd r;
  memset(&r, 0, sizeof r);
  r.flags = flags & ~(unsigned)HG_LOAD_ALLOW_BAD_CHECKSUM;
  r.verify = 1; /* the chunk decoders store nothing (dec_*_check) */
  int rc = start(&r, size, err);
  if (!rc && _hg_pull_open_fd(&r.p, fd, size)) rc = bad(&r, HG_ENOMEM, 0, "out of memory");
  r.p.max_item = HG_VERIFY_ITEM_MAX;
  if (!rc) rc = read_stream(&r);
  _hg_pull_close(&r.p);
  close(fd);
  struct hg_graph *g = r.g ? finish(&r, rc) : NULL;
  if (!g) return err->code ? err->code : HG_ENOMEM;
  *info = (struct hg_verify_info){.file_size = size, .checksum = g->checksum,
                                  .region_count = g->region_count, .image_count = g->image_count,
                                  .thread_count = g->thread_count, .heap_count = g->heap_count,
                                  .class_count = g->class_count, .string_count = g->string_count,
                                  .node_count = g->node_count, .edge_count = g->edge_count,
                                  .root_count = g->root_count, .meta = g->meta, .priv = g};
  return 0;
}

void hg_verify_info_free(struct hg_verify_info *info) {
  if (!info) return;
  hg_graph_free(info->priv);
  memset(info, 0, sizeof *info);
}
