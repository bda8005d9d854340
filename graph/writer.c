/*
 * writer.c — the streaming snapshot writer (format v1, see format.h).
 *
 * Owns: the temporary file, its atomic rename into place, the output buffer,
 * the three open chunks (nodes, edges, roots) and the running xxh64.
 * Memory: one mmap'd block obtained in hg_writer_open(); after that it never
 * calls malloc, so it can run while the heap is frozen or in a forked child.
 * CBOR heads are written with libcbor's encoding functions into the buffer;
 * chunk payloads are LEB128 rows (docs/snapshot-format.md).
 */
#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "graph/format.h"
#include "graph/utf8.h"
#include "heapgraph.h"

#define OUT_CAP (512u * 1024u)
#define GROUP_ROWS 4096u /* staged edge rows; 4096 * EDGE_ROW_MAX < chunk */
#define NODE_ROW_MAX 31u
#define EDGE_ROW_MAX 25u
#define ROOT_ROW_MAX 26u

struct grow {
  uint64_t off, zz;
  uint32_t field, code;
};

struct chunk {
  uint8_t *buf;
  size_t len;
  uint64_t count;
  uint64_t first;  /* first node index / first source                     */
  uint64_t base;   /* nodes: address of the first node                    */
  uint64_t prev_a; /* nodes: end of previous node; edges: last source;
                      roots: previous where                               */
  uint64_t prev_b; /* nodes: current heap; edges: last offset;
                      roots: previous target                              */
};

struct hg_writer {
  int fd;
  int failed;      /* first error code, sticky                           */
  int finished;
  int hashing;
  size_t map_size;
  XXH64_state_t hash;
  uint8_t *out;
  size_t out_len;
  uint64_t bytes;  /* bytes handed to write() so far                     */

  struct chunk nodes, edges, roots;
  /* Current edge group (one source), staged raw until it is closed, when
   * its row count and whether all offset deltas are whole words are known. */
  struct grow *group;
  size_t group_n;
  uint64_t group_src;

  /* ordering state and counts */
  uint64_t node_count, node_end;
  uint64_t edge_count, last_src, last_off;
  int have_edge;
  uint64_t root_count;
  uint32_t region_count, image_count, thread_count;
  uint32_t heap_count, class_count, string_count;
  uint32_t stack_count, node_stacks_next; /* optional stack records */
  /* maxima checked at finish */
  uint64_t max_target, max_class, max_heap, max_field;
  uint64_t max_region_image, max_thread_owner, max_image_owner;
  int any_target, any_region_image, any_thread_owner, any_image_owner;

  char path[PATH_MAX];
  char tmp[PATH_MAX];
  char msg[2 * PATH_MAX + 160];
};

/* ---- errors ---- */

static int fail(struct hg_writer *w, int code, const char *what, int err) {
  if (!w->failed) {
    w->failed = code;
    if (err) /* name the target; the temporary is an implementation detail */
      snprintf(w->msg, sizeof w->msg, "%s %s: %s (temporary %s)", what, w->path, strerror(err),
               w->tmp);
    else
      snprintf(w->msg, sizeof w->msg, "%s", what);
  }
  return w->failed;
}

static int io_code(int err) {
  return (err == ENOSPC || err == EDQUOT || err == EFBIG) ? HG_ENOSPC : HG_EIO;
}

/* ---- raw output ---- */

/* write() everything, with SIGXFSZ blocked so an RLIMIT_FSIZE overrun is an
 * EFBIG error instead of killing the host process (a pending SIGXFSZ is
 * consumed before the mask is restored). */
static int write_all(struct hg_writer *w, const uint8_t *p, size_t n) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int err = 0;
  while (n > 0) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (k == 0) {
      err = ENOSPC;
      break;
    }
    p += k;
    n -= (size_t)k;
    w->bytes += (uint64_t)k;
  }
  if (err == EFBIG) {
    /* Consume the SIGXFSZ the failed write raised (plain POSIX: sigwait
     * returns at once because the signal is pending). */
    sigset_t pending;
    int sig;
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1 &&
           sigwait(&block, &sig) == 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) return fail(w, io_code(err), "write", err);
  return 0;
}

static int flush_out(struct hg_writer *w) {
  if (w->failed) return w->failed;
  if (w->out_len == 0) return 0;
  if (w->hashing) XXH64_update(&w->hash, w->out, w->out_len);
  int rc = write_all(w, w->out, w->out_len);
  w->out_len = 0;
  return rc;
}

static int reserve(struct hg_writer *w, size_t n) {
  if (w->failed) return w->failed;
  if (OUT_CAP - w->out_len < n) return flush_out(w);
  return 0;
}

static int put_bytes(struct hg_writer *w, const void *data, size_t n) {
  const uint8_t *p = data;
  while (n > 0) {
    if (w->out_len == OUT_CAP && flush_out(w)) return w->failed;
    size_t k = OUT_CAP - w->out_len;
    if (k > n) k = n;
    memcpy(w->out + w->out_len, p, k);
    w->out_len += k;
    p += k;
    n -= k;
  }
  return w->failed;
}

/* ---- CBOR items (heads via libcbor) ---- */

static int c_uint(struct hg_writer *w, uint64_t v) {
  if (reserve(w, 9)) return w->failed;
  w->out_len += cbor_encode_uint(v, w->out + w->out_len, OUT_CAP - w->out_len);
  return 0;
}

/* n unsigned items; C_UINTS(w, a, b, …) for a list of them. */
static void c_uints(struct hg_writer *w, const uint64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++) c_uint(w, v[i]);
}
#define C_UINTS(w, ...)                                       \
  c_uints((w), (const uint64_t[]){__VA_ARGS__},               \
          sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

static int c_array(struct hg_writer *w, size_t n) {
  if (reserve(w, 9)) return w->failed;
  w->out_len += cbor_encode_array_start(n, w->out + w->out_len, OUT_CAP - w->out_len);
  return 0;
}

static int c_map(struct hg_writer *w, size_t n) {
  if (reserve(w, 9)) return w->failed;
  w->out_len += cbor_encode_map_start(n, w->out + w->out_len, OUT_CAP - w->out_len);
  return 0;
}

static int c_null(struct hg_writer *w) {
  if (reserve(w, 1)) return w->failed;
  w->out_len += cbor_encode_null(w->out + w->out_len, OUT_CAP - w->out_len);
  return 0;
}

/* Text strings must be UTF-8: invalid bytes are written as '?', one for
 * one, so the length is known up front and nothing is allocated. */
static int c_text(struct hg_writer *w, const char *s) {
  if (!s) return c_null(w);
  size_t n = strlen(s);
  if (reserve(w, 9)) return w->failed;
  w->out_len += cbor_encode_string_start(n, w->out + w->out_len, OUT_CAP - w->out_len);
  const uint8_t *u = (const uint8_t *)s;
  size_t i = 0;
  while (i < n) {
    size_t ok = _hg_utf8_check(u + i, n - i);
    if (put_bytes(w, u + i, ok)) return w->failed;
    i += ok;
    if (i < n) {
      if (put_bytes(w, "?", 1)) return w->failed;
      i++;
    }
  }
  return w->failed;
}

static int c_bytes(struct hg_writer *w, const void *p, size_t n) {
  if (reserve(w, 9)) return w->failed;
  w->out_len += cbor_encode_bytestring_start(n, w->out + w->out_len, OUT_CAP - w->out_len);
  return put_bytes(w, p, n);
}

static int c_int(struct hg_writer *w, int64_t v) {
  if (reserve(w, 9)) return w->failed;
  if (v >= 0)
    w->out_len += cbor_encode_uint((uint64_t)v, w->out + w->out_len, OUT_CAP - w->out_len);
  else
    w->out_len += cbor_encode_negint((uint64_t)(-1 - v), w->out + w->out_len,
                                     OUT_CAP - w->out_len);
  return 0;
}

/* ---- open / close ---- */

/* Whether the directory part of path (its first dirlen bytes; none: ".")
 * is an existing directory. */
static int dir_exists(const char *path, size_t dirlen) {
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%.*s", dirlen ? (int)dirlen : 1, dirlen ? path : ".");
  struct stat st;
  return stat(d, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The target is replaced by rename(): only a regular file (or a symbolic
 * link, which rename replaces, never follows) may be there. A device node
 * or FIFO is refused — as root, `-o /dev/null` would otherwise replace the
 * system's device with a file. Checked at open and again before rename. */
static int target_ok(struct hg_writer *w) {
  struct stat st;
  if (lstat(w->path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return 0;
  fail(w, HG_ENOTREG, "", 0);
  snprintf(w->msg, sizeof w->msg, "%s exists and is not a regular file (%s): not replaced", w->path,
           S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a socket or special file");
  return HG_ENOTREG;
}

int hg_writer_open(struct hg_writer **out, const char *path) {
  if (out) *out = NULL; /* callers may hg_writer_close(w) whatever open returned */
  if (!out || !path || !*path) return HG_EINVAL;
  if (strlen(path) + 64 >= PATH_MAX) return HG_EINVAL;
  size_t size = sizeof(struct hg_writer) + OUT_CAP + 3 * (size_t)HG_CHUNK_MAX_BYTES +
                GROUP_ROWS * sizeof(struct grow);
  void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return HG_ENOMEM;
  struct hg_writer *w = m;
  memset(w, 0, sizeof *w);
  w->map_size = size;
  uint8_t *p = (uint8_t *)(w + 1);
  w->out = p;
  p += OUT_CAP;
  w->nodes.buf = p;
  p += HG_CHUNK_MAX_BYTES;
  w->edges.buf = p;
  p += HG_CHUNK_MAX_BYTES;
  w->roots.buf = p;
  p += HG_CHUNK_MAX_BYTES;
  w->group = (struct grow *)p;
  w->fd = -1;

  snprintf(w->path, sizeof w->path, "%s", path);
  *out = w;
  int rc = target_ok(w);
  if (rc) return rc;
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = slash ? slash + 1 : path;
  if (strlen(base) > NAME_MAX) {
    fail(w, HG_EINVAL, "", 0);
    snprintf(w->msg, sizeof w->msg, "file name longer than %d bytes: %s", NAME_MAX, base);
    return HG_EINVAL;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  /* ".BASE.tmp.PID.NSEC" with BASE cut so that the name fits NAME_MAX */
  char suffix[64];
  int sl = snprintf(suffix, sizeof suffix, ".tmp.%ld.%lx", (long)getpid(), (unsigned long)ts.tv_nsec);
  size_t keep = strlen(base), room = NAME_MAX - 1 - (size_t)sl;
  if (keep > room) keep = room;
  snprintf(w->tmp, sizeof w->tmp, "%.*s.%.*s%s", (int)dirlen, path, (int)keep, base, suffix);
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w->fd < 0) {
    int err = errno;
    int nodir = (err == ENOENT || err == ENOTDIR) && !dir_exists(path, dirlen);
    int code = err == EACCES || err == EPERM || err == EROFS ? HG_EPERM : nodir ? HG_ENOENT : io_code(err);
    fail(w, code, nodir ? "no such directory for" : "create", err);
    return code;
  }
  XXH64_reset(&w->hash, 0);
  w->hashing = 1;
  *out = w;
  /* tag 55799, indefinite array, header [magic, version] */
  if (reserve(w, 16)) return w->failed;
  w->out_len += cbor_encode_tag(HG_SELF_DESCRIBE_TAG, w->out + w->out_len, OUT_CAP - w->out_len);
  w->out_len += cbor_encode_indef_array_start(w->out + w->out_len, OUT_CAP - w->out_len);
  c_array(w, 2);
  c_text(w, HG_MAGIC_TEXT);
  c_uint(w, HG_FORMAT_VERSION);
  return w->failed;
}

void hg_writer_close(struct hg_writer *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd);
  if (!w->finished && w->tmp[0]) unlink(w->tmp);
  munmap(w, w->map_size);
}

const char *hg_writer_message(const struct hg_writer *w) {
  if (!w) return "no writer";
  if (!w->failed) return "ok";
  return w->msg;
}

uint32_t hg_writer_node_count(const struct hg_writer *w) { return (uint32_t)w->node_count; }
uint64_t hg_writer_edge_count(const struct hg_writer *w) { return w->edge_count; }
uint64_t hg_writer_bytes(const struct hg_writer *w) { return w->bytes + w->out_len; }

static int check(struct hg_writer *w) {
  if (!w) return HG_EINVAL;
  if (w->failed) return w->failed;
  if (w->finished) return fail(w, HG_EINVAL, "writer already finished", 0);
  return 0;
}

/* ---- small records ---- */

static int kv_count(const struct hg_meta *m) {
  int n = 0;
  n += m->platform != NULL;
  n += m->os_version != NULL;
  n += m->arch != NULL;
  n += m->pointer_size != 0;
  n += m->page_size != 0;
  n += m->pid != 0;
  n += m->process != NULL;
  n += m->time_ns != 0;
  n += m->trigger != NULL;
  n += m->allocator != NULL;
  n += m->heap_status != NULL;
  n += m->app_count != 0;
  n += m->capture_count != 0;
  return n;
}

static void kv_text(struct hg_writer *w, const char *k, const char *v) {
  if (v) {
    c_text(w, k);
    c_text(w, v);
  }
}

static void kv_uint(struct hg_writer *w, const char *k, uint64_t v) {
  if (v) {
    c_text(w, k);
    c_uint(w, v);
  }
}

int hg_writer_meta(struct hg_writer *w, const struct hg_meta *m) {
  int rc = check(w);
  if (rc) return rc;
  if (!m) return fail(w, HG_EINVAL, "meta: NULL", 0);
  for (size_t i = 0; i < m->app_count; i++)
    if (!m->app[i].key || !m->app[i].value) return fail(w, HG_EINVAL, "meta: NULL app key/value", 0);
  for (size_t i = 0; i < m->capture_count; i++)
    if (!m->capture[i].key) return fail(w, HG_EINVAL, "meta: NULL capture key", 0);
  c_array(w, 2);
  c_uint(w, HG_REC_META);
  c_map(w, (size_t)kv_count(m));
  kv_text(w, "platform", m->platform);
  kv_text(w, "os_version", m->os_version);
  kv_text(w, "arch", m->arch);
  kv_uint(w, "pointer_size", m->pointer_size);
  kv_uint(w, "page_size", m->page_size);
  if (m->pid) {
    c_text(w, "pid");
    c_int(w, m->pid);
  }
  kv_text(w, "process", m->process);
  kv_uint(w, "time_ns", m->time_ns);
  kv_text(w, "trigger", m->trigger);
  kv_text(w, "allocator", m->allocator);
  kv_text(w, "heap_status", m->heap_status);
  if (m->app_count) {
    c_text(w, "app");
    c_map(w, m->app_count);
    for (size_t i = 0; i < m->app_count; i++) kv_text(w, m->app[i].key, m->app[i].value);
  }
  if (m->capture_count) {
    c_text(w, "capture");
    c_map(w, m->capture_count);
    for (size_t i = 0; i < m->capture_count; i++) {
      c_text(w, m->capture[i].key);
      c_uint(w, m->capture[i].value);
    }
  }
  return w->failed;
}

static void opt_index(struct hg_writer *w, uint32_t v) {
  if (v == HG_NO_OWNER)
    c_null(w);
  else
    c_uint(w, v);
}

int hg_writer_region(struct hg_writer *w, const struct hg_region *r) {
  int rc = check(w);
  if (rc) return rc;
  if (!r || r->start + r->size < r->start) return fail(w, HG_EINVAL, "region: bad range", 0);
  if (r->image != HG_NO_OWNER) {
    if (!w->any_region_image || r->image > w->max_region_image) w->max_region_image = r->image;
    w->any_region_image = 1;
  }
  c_array(w, 10);
  C_UINTS(w, HG_REC_REGION, r->start, r->size, r->prot, r->tag);
  c_text(w, r->name);
  C_UINTS(w, r->resident, r->dirty, r->swapped);
  opt_index(w, r->image);
  if (!w->failed) w->region_count++;
  return w->failed;
}

int hg_writer_image(struct hg_writer *w, const struct hg_image *im) {
  int rc = check(w);
  if (rc) return rc;
  if (!im || !im->path || (im->id_len && !im->id)) return fail(w, HG_EINVAL, "image: bad argument", 0);
  c_array(w, 6);
  c_uint(w, HG_REC_IMAGE);
  c_text(w, im->path);
  c_bytes(w, im->id, im->id_len);
  C_UINTS(w, im->load_addr, im->slide, im->size);
  if (!w->failed) w->image_count++;
  return w->failed;
}

int hg_writer_thread(struct hg_writer *w, const struct hg_thread *t) {
  int rc = check(w);
  if (rc) return rc;
  if (!t || t->stack_lo > t->stack_hi) return fail(w, HG_EINVAL, "thread: bad stack range", 0);
  c_array(w, 5);
  C_UINTS(w, HG_REC_THREAD, t->tid);
  c_text(w, t->name);
  C_UINTS(w, t->stack_lo, t->stack_hi);
  if (!w->failed) w->thread_count++;
  return w->failed;
}

static int named(struct hg_writer *w, unsigned type, uint32_t *counter, const char *s,
                 uint32_t *id) {
  int rc = check(w);
  if (rc) return rc;
  if (!s) return fail(w, HG_EINVAL, "NULL name", 0);
  /* ids up to 2^32-3: what the reader accepts */
  if (*counter >= UINT32_MAX - 2) return fail(w, HG_ELIMIT, "too many names", 0);
  c_array(w, 3);
  c_uint(w, type);
  c_uint(w, (uint64_t)*counter + 1);
  c_text(w, s);
  if (w->failed) return w->failed;
  *counter += 1;
  if (id) *id = *counter;
  return 0;
}

int hg_writer_heap(struct hg_writer *w, const char *name, uint32_t *id) {
  return named(w, HG_REC_HEAP, w ? &w->heap_count : NULL, name, id);
}

int hg_writer_string(struct hg_writer *w, const char *s, uint32_t *id) {
  return named(w, HG_REC_STRING, w ? &w->string_count : NULL, s, id);
}

int hg_writer_class(struct hg_writer *w, const struct hg_class *c, uint32_t *id) {
  int rc = check(w);
  if (rc) return rc;
  if (!c || !c->name || c->kind > HG_CLASS_CF) return fail(w, HG_EINVAL, "class: bad argument", 0);
  if (w->class_count >= UINT32_MAX - 2) return fail(w, HG_ELIMIT, "too many classes", 0);
  c_array(w, 5);
  C_UINTS(w, HG_REC_CLASS, (uint64_t)w->class_count + 1);
  c_text(w, c->name);
  C_UINTS(w, c->kind, c->instance_size);
  if (w->failed) return w->failed;
  w->class_count++;
  if (id) *id = w->class_count;
  return 0;
}

/* ---- chunks ---- */

/* Writes chunk c, when it holds rows, as one record: the n heads (record
 * type first), then its rows as a byte string; the chunk is empty after. */
static int flush_chunk(struct hg_writer *w, struct chunk *c, const uint64_t *head, size_t n) {
  if (c->count == 0) return w->failed;
  c_array(w, n + 1);
  c_uints(w, head, n);
  c_bytes(w, c->buf, c->len);
  c->len = 0;
  c->count = 0;
  return w->failed;
}

static int flush_nodes(struct hg_writer *w) {
  const struct chunk *c = &w->nodes;
  const uint64_t head[] = {HG_REC_NODES, c->first, c->count, c->base};
  return flush_chunk(w, &w->nodes, head, 4);
}

int hg_writer_node(struct hg_writer *w, uint64_t addr, uint64_t size, uint32_t class_id,
                   uint32_t flags, uint32_t heap_id) {
  int rc = check(w);
  if (rc) return rc;
  if (size == 0 || addr + size < addr) return fail(w, HG_EINVAL, "node: empty or wrapping range", 0);
  if (w->node_count && addr < w->node_end)
    return fail(w, HG_EINVAL, "node: addresses must increase and not overlap", 0);
  if (flags & ~HG_NODE_FLAG_MASK) return fail(w, HG_EINVAL, "node: unknown flags", 0);
  if (w->node_count >= UINT32_MAX - 1) return fail(w, HG_ELIMIT, "too many nodes", 0);
  struct chunk *c = &w->nodes;
  if (c->count && c->len + NODE_ROW_MAX > HG_CHUNK_MAX_BYTES && flush_nodes(w)) return w->failed;
  if (c->count == 0) {
    c->first = w->node_count;
    c->base = addr;
    c->prev_a = addr; /* first gap is 0 */
    c->prev_b = 0;    /* current heap */
  }
  uint8_t *p = c->buf + c->len;
  p += _hg_put_varint(p, addr - c->prev_a);
  p += _hg_put_varint(p, size);
  p += _hg_put_varint(p, class_id);
  if (heap_id != c->prev_b) {
    *p++ = (uint8_t)(flags | HG_NODE_ROW_HEAP);
    p += _hg_put_varint(p, heap_id);
    c->prev_b = heap_id;
  } else {
    *p++ = (uint8_t)flags;
  }
  c->len = (size_t)(p - c->buf);
  c->count++;
  c->prev_a = addr + size;
  w->node_end = addr + size;
  w->node_count++;
  if (class_id > w->max_class) w->max_class = class_id;
  if (heap_id > w->max_heap) w->max_heap = heap_id;
  return 0;
}

static int flush_edge_chunk(struct hg_writer *w) {
  const struct chunk *c = &w->edges;
  const uint64_t head[] = {HG_REC_EDGES, c->first, c->count};
  return flush_chunk(w, &w->edges, head, 3);
}

/* Moves the staged group into the edge chunk. The first row is absolute
 * when the group starts a chunk or a new source, else a delta from the last
 * offset already in the chunk (a continuation of the same source). */
static int close_group(struct hg_writer *w) {
  if (w->group_n == 0) return w->failed;
  struct chunk *c = &w->edges;
  if (c->count && c->len + (w->group_n + 1) * EDGE_ROW_MAX > HG_CHUNK_MAX_BYTES &&
      flush_edge_chunk(w))
    return w->failed;
  int starts_chunk = c->count == 0;
  if (starts_chunk) c->first = w->group_src;
  uint64_t srcdelta = starts_chunk ? 0 : w->group_src - c->prev_a;
  uint64_t prev = (starts_chunk || srcdelta) ? 0 : c->prev_b;
  int words = 1;
  for (size_t i = 0; i < w->group_n && words; i++) {
    words = (w->group[i].off - prev) % 8 == 0;
    prev = w->group[i].off;
  }
  prev = (starts_chunk || srcdelta) ? 0 : c->prev_b;
  uint8_t *p = c->buf + c->len;
  p += _hg_put_varint(p, srcdelta);
  p += _hg_put_varint(p, ((uint64_t)w->group_n << 1) | (words ? HG_GROUP_WORDS : 0));
  for (size_t i = 0; i < w->group_n; i++) {
    const struct grow *r = &w->group[i];
    uint64_t d = r->off - prev;
    prev = r->off;
    p += _hg_put_varint(p, ((words ? d / 8 : d) << HG_OFFKIND_SHIFT) | r->code);
    if (r->field) p += _hg_put_varint(p, r->field);
    p += _hg_put_varint(p, r->zz);
  }
  c->len = (size_t)(p - c->buf);
  c->count += w->group_n;
  c->prev_a = w->group_src; /* last source in chunk */
  c->prev_b = prev;         /* last offset in chunk */
  w->group_n = 0;
  return w->failed;
}

int hg_writer_edge(struct hg_writer *w, uint32_t src, uint64_t offset, uint32_t dst,
                   uint32_t kind, uint32_t field_id) {
  int rc = check(w);
  if (rc) return rc;
  if (kind >= HG_EDGE_KIND_COUNT) return fail(w, HG_EINVAL, "edge: unknown kind", 0);
  if (field_id && kind < HG_EDGE_STRONG)
    return fail(w, HG_EINVAL, "edge: field names need a strong/weak/unowned kind", 0);
  if (offset > UINT32_MAX) return fail(w, HG_ELIMIT, "edge: offset beyond 4 GiB", 0);
  if (src == UINT32_MAX || dst == UINT32_MAX) return fail(w, HG_EINVAL, "edge: bad node index", 0);
  if (w->have_edge && (src < w->last_src || (src == w->last_src && offset <= w->last_off)))
    return fail(w, HG_EINVAL, "edge: must be sorted by source, then offset", 0);
  if (w->edge_count >= UINT32_MAX - 1) return fail(w, HG_ELIMIT, "too many edges", 0);

  if (w->group_n && (src != w->group_src || w->group_n == GROUP_ROWS) && close_group(w))
    return w->failed;
  w->group_src = src;
  struct grow *r = &w->group[w->group_n++];
  r->off = offset;
  r->zz = _hg_zigzag((int64_t)dst - (int64_t)src);
  r->field = field_id;
  r->code = field_id ? HG_KINDCODE_NAMED_BASE + (kind - HG_EDGE_STRONG) : kind;

  w->have_edge = 1;
  w->last_src = src;
  w->last_off = offset;
  w->edge_count++;
  if (!w->any_target || dst > w->max_target) w->max_target = dst;
  if (src > w->max_target) w->max_target = src;
  w->any_target = 1;
  if (field_id > w->max_field) w->max_field = field_id;
  return 0;
}

static int flush_roots(struct hg_writer *w) {
  const uint64_t head[] = {HG_REC_ROOTS, w->roots.count};
  return flush_chunk(w, &w->roots, head, 2);
}

int hg_writer_root(struct hg_writer *w, const struct hg_root *r) {
  int rc = check(w);
  if (rc) return rc;
  if (!r || r->kind >= HG_ROOT_KIND_COUNT || r->target == UINT32_MAX)
    return fail(w, HG_EINVAL, "root: bad argument", 0);
  if (w->root_count >= UINT32_MAX - 1) return fail(w, HG_ELIMIT, "too many roots", 0);
  struct chunk *c = &w->roots;
  if (c->count && c->len + ROOT_ROW_MAX > HG_CHUNK_MAX_BYTES && flush_roots(w)) return w->failed;
  if (c->count == 0) c->prev_a = c->prev_b = 0;
  uint8_t *p = c->buf + c->len;
  if (r->owner != HG_NO_OWNER) {
    *p++ = (uint8_t)(r->kind | HG_ROOT_ROW_OWNER);
    p += _hg_put_varint(p, r->owner);
    uint64_t *mx = r->kind == HG_ROOT_GLOBAL ? &w->max_image_owner : &w->max_thread_owner;
    int *any = r->kind == HG_ROOT_GLOBAL ? &w->any_image_owner : &w->any_thread_owner;
    if (!*any || r->owner > *mx) *mx = r->owner;
    *any = 1;
  } else {
    *p++ = (uint8_t)r->kind;
  }
  p += _hg_put_varint(p, _hg_zigzag((int64_t)(r->addr - c->prev_a)));
  p += _hg_put_varint(p, _hg_zigzag((int64_t)r->target - (int64_t)c->prev_b));
  c->prev_a = r->addr;
  c->prev_b = r->target;
  c->len = (size_t)(p - c->buf);
  c->count++;
  w->root_count++;
  if (!w->any_target || r->target > w->max_target) w->max_target = r->target;
  w->any_target = 1;
  return 0;
}

/* ---- optional allocation-stack records (12-15) ---- */

int hg_writer_stack_info(struct hg_writer *w, const struct hg_stack_info *si) {
  int rc = check(w);
  if (rc) return rc;
  if (!si) return fail(w, HG_EINVAL, "stack info: NULL", 0);
  c_array(w, 10);
  C_UINTS(w, HG_REC_STACK_INFO, si->max_frames, si->sample_bytes, si->budget_bytes,
          si->tracking_bytes, si->map_bytes, si->live_blocks, si->dropped);
  c_text(w, si->status ? si->status : "ok");
  c_text(w, si->unwinder ? si->unwinder : "");
  return w->failed;
}

int hg_writer_stack(struct hg_writer *w, const struct hg_stack *st) {
  int rc = check(w);
  if (rc) return rc;
  if (!st || (st->frame_count && !st->frames) || st->frame_count > HG_STACK_MAX_FRAMES)
    return fail(w, HG_EINVAL, "stack: bad argument", 0);
  uint8_t buf[HG_STACK_MAX_FRAMES * 15];
  size_t n = 0;
  for (uint32_t i = 0; i < st->frame_count; i++) {
    const struct hg_stack_frame *f = &st->frames[i];
    if (f->image != HG_NO_OWNER && f->image >= w->image_count)
      return fail(w, HG_EINVAL, "stack frame refers to an image not written yet", 0);
    n += _hg_put_varint(buf + n, f->image == HG_NO_OWNER ? 0 : (uint64_t)f->image + 1);
    n += _hg_put_varint(buf + n, f->offset);
  }
  c_array(w, 5);
  C_UINTS(w, HG_REC_STACK, (uint64_t)w->stack_count + 1, st->count, st->bytes);
  c_bytes(w, buf, n);
  if (!w->failed) w->stack_count++;
  return w->failed;
}

int hg_writer_node_stacks(struct hg_writer *w, uint32_t first, uint32_t n, const uint32_t *ids) {
  int rc = check(w);
  if (rc) return rc;
  if (n && !ids) return fail(w, HG_EINVAL, "node stacks: NULL", 0);
  if (first != w->node_stacks_next) return fail(w, HG_EINVAL, "node stacks out of order", 0);
  enum { PER = 16384 }; /* 3-byte varints: 48 KiB per record, under the chunk cap */
  uint8_t buf[PER * 4];
  for (uint32_t at = 0; at < n;) {
    uint32_t k = n - at < PER ? n - at : PER;
    size_t len = 0;
    for (uint32_t i = 0; i < k; i++) {
      if (ids[at + i] > w->stack_count) return fail(w, HG_EINVAL, "node refers to an unwritten stack", 0);
      len += _hg_put_varint(buf + len, ids[at + i]);
    }
    c_array(w, 3);
    c_uint(w, HG_REC_NODE_STACKS);
    c_uint(w, (uint64_t)first + at);
    c_bytes(w, buf, len);
    if (w->failed) return w->failed;
    at += k;
  }
  w->node_stacks_next = first + n;
  return 0;
}

int hg_writer_large_alloc(struct hg_writer *w, const struct hg_large_alloc *la) {
  int rc = check(w);
  if (rc) return rc;
  if (!la || la->stack > w->stack_count) return fail(w, HG_EINVAL, "large allocation: bad stack", 0);
  c_array(w, 6);
  C_UINTS(w, HG_REC_LARGE, la->addr, la->size, la->stack, la->time_ns, la->tid);
  return w->failed;
}

/* ---- finish ---- */

static int validate(struct hg_writer *w) {
  char buf[160];
  if (w->any_target && w->max_target >= w->node_count) {
    snprintf(buf, sizeof buf, "edge or root refers to node %llu but only %llu nodes were written",
             (unsigned long long)w->max_target, (unsigned long long)w->node_count);
    return fail(w, HG_EINVAL, buf, 0);
  }
  if (w->max_class > w->class_count) return fail(w, HG_EINVAL, "node refers to an undefined class", 0);
  if (w->max_heap > w->heap_count) return fail(w, HG_EINVAL, "node refers to an undefined heap", 0);
  if (w->max_field > w->string_count) return fail(w, HG_EINVAL, "edge refers to an undefined string", 0);
  if (w->any_region_image && w->max_region_image >= w->image_count)
    return fail(w, HG_EINVAL, "region refers to an undefined image", 0);
  if (w->any_image_owner && w->max_image_owner >= w->image_count)
    return fail(w, HG_EINVAL, "global root refers to an undefined image", 0);
  if (w->any_thread_owner && w->max_thread_owner >= w->thread_count)
    return fail(w, HG_EINVAL, "root refers to an undefined thread", 0);
  if (w->node_stacks_next > w->node_count)
    return fail(w, HG_EINVAL, "node stacks for more nodes than were written", 0);
  return 0;
}

static void fsync_dir(const char *path) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

int hg_writer_finish(struct hg_writer *w) {
  int rc = check(w);
  if (rc) goto out;
  flush_nodes(w);
  close_group(w);
  flush_edge_chunk(w);
  flush_roots(w);
  if ((rc = w->failed) || (rc = validate(w))) goto out;
  if ((rc = flush_out(w))) goto out;
  uint64_t digest = XXH64_digest(&w->hash);
  w->hashing = 0;
  c_array(w, 3);
  c_uint(w, HG_REC_TRAILER);
  c_map(w, 9);
  uint64_t counts[9] = {w->region_count, w->image_count, w->thread_count,
                        w->heap_count,   w->class_count, w->string_count,
                        w->node_count,   w->edge_count,  w->root_count};
  static const char *const keys[9] = {
#define HG_KEY_NAME(k) #k,
      HG_TRAILER_KEYS(HG_KEY_NAME)
#undef HG_KEY_NAME
  };
  for (int i = 0; i < 9; i++) {
    c_text(w, keys[i]);
    c_uint(w, counts[i]);
  }
  c_uint(w, digest);
  if (reserve(w, 1) == 0) w->out_len += cbor_encode_break(w->out + w->out_len, OUT_CAP - w->out_len);
  if ((rc = flush_out(w))) goto out;
  if (fsync(w->fd) != 0) {
    rc = fail(w, io_code(errno), "fsync", errno);
    goto out;
  }
  if (close(w->fd) != 0) {
    w->fd = -1;
    rc = fail(w, io_code(errno), "close", errno);
    goto out;
  }
  w->fd = -1;
  if ((rc = target_ok(w))) goto out;
  if (rename(w->tmp, w->path) != 0) {
    rc = fail(w, io_code(errno), "rename", errno);
    goto out;
  }
  w->finished = 1;
  fsync_dir(w->path);
  return 0;
out:
  if (!w) return HG_EINVAL;
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
  }
  if (w->tmp[0]) unlink(w->tmp);
  return rc ? rc : w->failed;
}
