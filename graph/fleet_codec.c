/*
 * fleet_codec.c — the summary's serialised form (docs/fleet.md, "Summary
 * format"): one CBOR array
 *   ["heapgraph-summary", 1, {meta}, [strings], [classes], [signatures], dropped]
 * class = [name sid, count, bytes, retained]
 * sig   = [kind, algo, hash, bytes, count, [step sid …]]
 * written with libcbor's encoders, at most HG_FLEET_SUMMARY_MAX bytes, and
 * read by a bounded cursor that treats every byte as hostile: no recursion,
 * every length checked against the bytes left before anything is allocated,
 * every string id, kind and count checked, errors with their byte offset.
 * Also the summary files (atomic write, bounded read) and the snapshot key.
 */
#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/fleet.h"
#include "graph/utf8.h"

#define MAGIC "heapgraph-summary"

/* The metadata fields, in the order written: key, offset, 1 = text. */
#define META_FIELDS(X)                                                                   \
  X(app, 1) X(app_version, 1) X(build, 1) X(os_version, 1) X(device_model, 1)          \
  X(device_id, 1) X(session_id, 1) X(trigger, 1) X(platform, 1) X(process, 1)          \
  X(snapshot, 1) X(time_ns, 0) X(footprint, 0) X(limit, 0) X(checksum, 0)              \
  X(file_size, 0) X(nodes, 0) X(edges, 0) X(heap_bytes, 0) X(reachable_bytes, 0)       \
  X(leaked_bytes, 0)
struct meta_field { const char *key; size_t off; int is_text; };
static const struct meta_field meta_fields[] = {
#define X(name, t) {#name, offsetof(struct hg_fleet_summary, name), t},
    META_FIELDS(X)
#undef X
};
#define META_COUNT (sizeof meta_fields / sizeof meta_fields[0])

/* ---- Writer ---- */

struct enc {
  uint8_t *buf;
  size_t len, cap;
  int err;
};

static uint8_t *room(struct enc *e, size_t n) {
  if (e->err) return NULL;
  if (e->len + n > e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 16384;
    while (cap < e->len + n) cap *= 2;
    uint8_t *b = realloc(e->buf, cap);
    if (!b) {
      e->err = HG_ENOMEM;
      return NULL;
    }
    e->buf = b;
    e->cap = cap;
  }
  return e->buf + e->len;
}

#define ENC(e, call)                                            \
  do {                                                          \
    uint8_t *p_ = room(e, 9);                                   \
    if (p_) (e)->len += call;                                   \
  } while (0)

static void enc_uint(struct enc *e, uint64_t v) { ENC(e, cbor_encode_uint(v, p_, 9)); }
static void enc_array(struct enc *e, size_t n) { ENC(e, cbor_encode_array_start(n, p_, 9)); }
static void enc_map(struct enc *e, size_t n) { ENC(e, cbor_encode_map_start(n, p_, 9)); }
static void enc_text(struct enc *e, const char *s) {
  size_t n = strlen(s);
  ENC(e, cbor_encode_string_start(n, p_, 9));
  uint8_t *p = room(e, n);
  if (p) {
    memcpy(p, s, n);
    e->len += n;
  }
}

/* A string table: ids of distinct strings, in first-use order. */
struct strtab {
  const char **s;
  uint32_t n, cap;
  uint32_t *slot, slots;
};

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static int str_id(struct strtab *t, const char *s, uint32_t *id) {
  if (!s) s = "";
  if (t->n * 2 >= t->slots) {
    uint32_t slots = t->slots ? t->slots * 2 : 1024;
    uint32_t *sl = malloc((size_t)slots * sizeof *sl);
    const char **ss = realloc(t->s, (size_t)slots / 2 * sizeof *ss);
    if (!sl || !ss) {
      free(sl);
      if (ss) t->s = ss;
      return HG_ENOMEM;
    }
    t->s = ss;
    memset(sl, 0xff, (size_t)slots * sizeof *sl);
    for (uint32_t i = 0; i < t->n; i++) {
      uint32_t h = hash_str(t->s[i]) & (slots - 1);
      while (sl[h] != UINT32_MAX) h = (h + 1) & (slots - 1);
      sl[h] = i;
    }
    free(t->slot);
    t->slot = sl;
    t->slots = slots;
  }
  uint32_t h = hash_str(s) & (t->slots - 1);
  for (; t->slot[h] != UINT32_MAX; h = (h + 1) & (t->slots - 1))
    if (!strcmp(t->s[t->slot[h]], s)) {
      *id = t->slot[h];
      return 0;
    }
  t->slot[h] = t->n;
  t->s[t->n] = s;
  *id = t->n++;
  return 0;
}

/* Encodes s keeping nclass census rows and the signatures flagged in keep. */
static int encode_once(const struct hg_fleet_summary *s, uint32_t nclass, const uint8_t *keep,
                       uint32_t dropped, struct enc *e) {
  struct strtab t = {0};
  uint32_t id, nsig = 0;
  int rc = 0;
  for (uint32_t i = 0; i < nclass && !rc; i++) rc = str_id(&t, s->classes[i].name, &id);
  for (uint32_t i = 0; i < s->sig_count && !rc; i++)
    if (keep[i]) {
      nsig++;
      for (uint32_t j = 0; j < s->sigs[i].step_count && !rc; j++) rc = str_id(&t, s->sigs[i].steps[j], &id);
    }
  if (rc) goto out;
  e->len = 0;
  enc_array(e, 7);
  enc_text(e, MAGIC);
  enc_uint(e, HG_FLEET_SUMMARY_FORMAT);
  uint32_t nm = 0;
  for (size_t i = 0; i < META_COUNT; i++) {
    const char *base = (const char *)s + meta_fields[i].off;
    nm += meta_fields[i].is_text ? *(const char *const *)base != NULL : *(const uint64_t *)base != 0;
  }
  enc_map(e, nm);
  for (size_t i = 0; i < META_COUNT; i++) {
    const char *base = (const char *)s + meta_fields[i].off;
    if (meta_fields[i].is_text ? !*(const char *const *)base : !*(const uint64_t *)base) continue;
    enc_text(e, meta_fields[i].key);
    if (meta_fields[i].is_text) enc_text(e, *(const char *const *)base);
    else enc_uint(e, *(const uint64_t *)base);
  }
  enc_array(e, t.n);
  for (uint32_t i = 0; i < t.n; i++) enc_text(e, t.s[i]);
  enc_array(e, nclass);
  for (uint32_t i = 0; i < nclass; i++) {
    const struct hg_fleet_class *c = &s->classes[i];
    str_id(&t, c->name, &id);
    enc_array(e, 4);
    enc_uint(e, id);
    enc_uint(e, c->count);
    enc_uint(e, c->bytes);
    enc_uint(e, c->retained);
  }
  enc_array(e, nsig);
  for (uint32_t i = 0; i < s->sig_count; i++) {
    if (!keep[i]) continue;
    const struct hg_fleet_sig *g = &s->sigs[i];
    enc_array(e, 6);
    enc_uint(e, g->kind);
    enc_uint(e, g->algo);
    enc_uint(e, g->hash);
    enc_uint(e, g->bytes);
    enc_uint(e, g->count);
    enc_array(e, g->step_count);
    for (uint32_t j = 0; j < g->step_count; j++) {
      str_id(&t, g->steps[j], &id);
      enc_uint(e, id);
    }
  }
  enc_uint(e, dropped);
  rc = e->err;
out:
  free(t.s);
  free(t.slot);
  return rc;
}

struct ranked { uint64_t bytes; uint32_t idx; };
static int by_bytes_idx(const void *x, const void *y) {
  const struct ranked *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int hg_fleet_summary_encode(const struct hg_fleet_summary *s, uint8_t **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  struct enc e = {0};
  uint32_t nsig = s->sig_count, nclass = s->class_count, dropped = s->dropped;
  uint8_t *keep = malloc(nsig + 1);
  struct ranked *order = malloc(((size_t)nsig + 1) * sizeof *order);
  int rc = (!keep || !order) ? HG_ENOMEM : 0;
  if (!rc) {
    for (uint32_t i = 0; i < nsig; i++) order[i] = (struct ranked){s->sigs[i].bytes, i};
    qsort(order, nsig, sizeof *order, by_bytes_idx);
  }
  uint32_t kept = nsig;
  while (!rc) {
    memset(keep, 0, nsig + 1);
    for (uint32_t i = 0; i < kept; i++) keep[order[i].idx] = 1;
    rc = encode_once(s, nclass, keep, dropped + (s->class_count - nclass) + (nsig - kept), &e);
    if (rc || e.len <= HG_FLEET_SUMMARY_MAX) break;
    /* Too big: a quarter fewer census rows (down to 16), then signatures. */
    if (nclass > 16) nclass -= (nclass - 16 + 3) / 4;
    else if (kept) kept -= (kept + 3) / 4;
    else {
      rc = HG_ELIMIT; /* metadata alone over the bound: cannot happen with capped texts */
      break;
    }
  }
  free(keep);
  free(order);
  if (rc) {
    free(e.buf);
    return rc;
  }
  *buf = e.buf;
  *len = e.len;
  return 0;
}

/* ---- Reader ---- */

struct cur {
  const uint8_t *base, *p, *end;
  struct hg_load_error *err;
  int rc;
};

static int fail(struct cur *c, int code, const uint8_t *at, const char *what) {
  if (c->rc) return c->rc;
  c->rc = code;
  if (c->err) {
    c->err->code = code;
    c->err->offset = (uint64_t)(at - c->base);
    snprintf(c->err->message, sizeof c->err->message, "summary: %s", what);
  }
  return code;
}

/* One head of a definite item: its major type and argument. */
static int head(struct cur *c, int *major, uint64_t *arg) {
  if (c->rc) return c->rc;
  const uint8_t *at = c->p;
  if (c->p >= c->end) return fail(c, HG_ETRUNCATED, at, "ends inside an item");
  uint8_t b = *c->p++;
  *major = b >> 5;
  uint8_t ai = b & 31;
  if (ai < 24) {
    *arg = ai;
    return 0;
  }
  if (ai > 27) return fail(c, HG_EFORMAT, at, "indefinite or reserved item");
  size_t n = (size_t)1 << (ai - 24);
  if ((size_t)(c->end - c->p) < n) return fail(c, HG_ETRUNCATED, at, "ends inside an item head");
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | *c->p++;
  *arg = v;
  return 0;
}

static int get_uint(struct cur *c, uint64_t *v) {
  const uint8_t *at = c->p;
  int major;
  if (head(c, &major, v)) return c->rc;
  if (major != 0) return fail(c, HG_EFORMAT, at, "expected an unsigned integer");
  return 0;
}

static int get_u32(struct cur *c, uint32_t *v, uint32_t max, const char *what) {
  const uint8_t *at = c->p;
  uint64_t x;
  if (get_uint(c, &x)) return c->rc;
  if (x > max) return fail(c, HG_EFORMAT, at, what);
  *v = (uint32_t)x;
  return 0;
}

/* An array head; its length is bounded by the bytes left (min_bytes each). */
static int get_array(struct cur *c, uint32_t *n, size_t min_bytes) {
  const uint8_t *at = c->p;
  int major;
  uint64_t v;
  if (head(c, &major, &v)) return c->rc;
  if (major != 4) return fail(c, HG_EFORMAT, at, "expected an array");
  if (v > (uint64_t)(c->end - c->p) / min_bytes) return fail(c, HG_ELIMIT, at, "array longer than the bytes left");
  *n = (uint32_t)v;
  return 0;
}

/* A text string: valid UTF-8, no NUL, at most HG_FLEET_MAX_TEXT bytes. */
static int get_text(struct cur *c, const char **s, size_t *len) {
  const uint8_t *at = c->p;
  int major;
  uint64_t v;
  if (head(c, &major, &v)) return c->rc;
  if (major != 3) return fail(c, HG_EFORMAT, at, "expected a text string");
  if (v > (uint64_t)(c->end - c->p)) return fail(c, HG_ETRUNCATED, at, "ends inside a text string");
  if (v > HG_FLEET_MAX_TEXT + 32) return fail(c, HG_ELIMIT, at, "text string too long");
  if (_hg_utf8_check(c->p, (size_t)v) != v || memchr(c->p, 0, (size_t)v))
    return fail(c, HG_EFORMAT, at, "text string is not valid UTF-8 (or holds NUL)");
  *s = (const char *)c->p;
  *len = (size_t)v;
  c->p += v;
  return 0;
}

static int decode(struct cur *c, struct _hg_arena *a, struct hg_fleet_summary *s) {
  uint32_t n, ns;
  const char *t;
  size_t tl;
  const uint8_t *at = c->p;
  if (get_array(c, &n, 1)) return c->rc;
  if (n < 7) return fail(c, HG_EFORMAT, at, "fewer than 7 fields");
  at = c->p;
  if (get_text(c, &t, &tl)) return c->rc;
  if (tl != sizeof MAGIC - 1 || memcmp(t, MAGIC, tl)) return fail(c, HG_EVERSION, at, "not a heapgraph summary");
  at = c->p;
  if (get_u32(c, &s->format, UINT32_MAX, "bad format")) return c->rc;
  if (s->format != HG_FLEET_SUMMARY_FORMAT) return fail(c, HG_EVERSION, at, "unknown summary format version");
  /* metadata */
  at = c->p;
  int major;
  uint64_t nm;
  if (head(c, &major, &nm)) return c->rc;
  if (major != 5) return fail(c, HG_EFORMAT, at, "expected the metadata map");
  if (nm > (uint64_t)(c->end - c->p) / 2) return fail(c, HG_ELIMIT, at, "map longer than the bytes left");
  for (uint64_t i = 0; i < nm; i++) {
    at = c->p;
    if (get_text(c, &t, &tl)) return c->rc;
    const struct meta_field *f = NULL;
    for (size_t k = 0; k < META_COUNT && !f; k++)
      if (strlen(meta_fields[k].key) == tl && !memcmp(meta_fields[k].key, t, tl)) f = &meta_fields[k];
    const uint8_t *vat = c->p;
    uint64_t v;
    if (head(c, &major, &v)) return c->rc;
    c->p = vat;
    if (major == 3) {
      if (get_text(c, &t, &tl)) return c->rc;
      if (f && !f->is_text) return fail(c, HG_EFORMAT, vat, "metadata value should be a number");
      if (f && !(*(const char **)((char *)s + f->off) = _hg_fa_strndup(a, t, tl)))
        return fail(c, HG_ENOMEM, vat, "out of memory");
    } else if (major == 0) {
      if (get_uint(c, &v)) return c->rc;
      if (f && f->is_text) return fail(c, HG_EFORMAT, vat, "metadata value should be text");
      if (f) *(uint64_t *)((char *)s + f->off) = v;
    } else {
      return fail(c, HG_EFORMAT, vat, "metadata value is neither text nor a number");
    }
  }
  /* strings */
  if (get_array(c, &ns, 1)) return c->rc;
  const char **str = _hg_fa_alloc(a, (size_t)(ns ? ns : 1) * sizeof *str);
  if (!str) return fail(c, HG_ENOMEM, c->p, "out of memory");
  for (uint32_t i = 0; i < ns; i++) {
    if (get_text(c, &t, &tl)) return c->rc;
    if (!(str[i] = _hg_fa_strndup(a, t, tl))) return fail(c, HG_ENOMEM, c->p, "out of memory");
  }
  /* classes */
  if (get_array(c, &n, 5)) return c->rc;
  s->classes = _hg_fa_alloc(a, (size_t)(n ? n : 1) * sizeof *s->classes);
  if (!s->classes) return fail(c, HG_ENOMEM, c->p, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t k, sid;
    struct hg_fleet_class *r = &s->classes[i];
    at = c->p;
    if (get_array(c, &k, 1)) return c->rc;
    if (k != 4) return fail(c, HG_EFORMAT, at, "a class row has 4 fields");
    at = c->p;
    if (get_u32(c, &sid, UINT32_MAX, "bad string id")) return c->rc;
    if (sid >= ns) return fail(c, HG_EFORMAT, at, "string id out of range");
    r->name = str[sid];
    if (get_uint(c, &r->count) || get_uint(c, &r->bytes) || get_uint(c, &r->retained)) return c->rc;
  }
  s->class_count = n;
  /* signatures */
  if (get_array(c, &n, 7)) return c->rc;
  s->sigs = _hg_fa_alloc(a, (size_t)(n ? n : 1) * sizeof *s->sigs);
  if (!s->sigs) return fail(c, HG_ENOMEM, c->p, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t k;
    struct hg_fleet_sig *g = &s->sigs[i];
    at = c->p;
    if (get_array(c, &k, 1)) return c->rc;
    if (k != 6) return fail(c, HG_EFORMAT, at, "a signature has 6 fields");
    if (get_u32(c, &g->kind, HG_FLEET_KIND_COUNT - 1, "unknown signature kind") ||
        get_u32(c, &g->algo, UINT32_MAX, "bad algorithm version") || get_uint(c, &g->hash) ||
        get_uint(c, &g->bytes) || get_uint(c, &g->count))
      return c->rc;
    at = c->p;
    if (get_array(c, &g->step_count, 1)) return c->rc;
    if (g->step_count > HG_FLEET_MAX_STEPS + 2) return fail(c, HG_ELIMIT, at, "too many steps");
    g->steps = _hg_fa_alloc(a, (size_t)(g->step_count ? g->step_count : 1) * sizeof *g->steps);
    if (!g->steps) return fail(c, HG_ENOMEM, at, "out of memory");
    for (uint32_t j = 0; j < g->step_count; j++) {
      uint32_t sid;
      at = c->p;
      if (get_u32(c, &sid, UINT32_MAX, "bad string id")) return c->rc;
      if (sid >= ns) return fail(c, HG_EFORMAT, at, "string id out of range");
      g->steps[j] = str[sid];
    }
  }
  s->sig_count = n;
  if (get_u32(c, &s->dropped, UINT32_MAX, "bad dropped count")) return c->rc;
  if (c->p != c->end) return fail(c, HG_EFORMAT, c->p, "bytes after the summary");
  return 0;
}

int hg_fleet_summary_decode(const void *buf, size_t len, struct hg_fleet_summary **out,
                            struct hg_load_error *err) {
  *out = NULL;
  struct cur c = {buf, buf, (const uint8_t *)buf + len, err, 0};
  if (err) memset(err, 0, sizeof *err);
  if (len > HG_FLEET_SUMMARY_MAX) return fail(&c, HG_ELIMIT, c.base, "larger than the 64 KiB bound");
  struct _hg_arena a = {0};
  struct hg_fleet_summary *s = _hg_fa_result(&a, sizeof *s);
  if (!s) return fail(&c, HG_ENOMEM, c.base, "out of memory");
  if (decode(&c, &a, s)) {
    _hg_fa_free(&a);
    return c.rc;
  }
  s->priv = _hg_fa_keep(&a, s, sizeof *s);
  *out = s;
  return 0;
}

/* ---- Files ---- */

int hg_fleet_summary_save(const struct hg_fleet_summary *s, const char *path) {
  uint8_t *buf;
  size_t len;
  int rc = hg_fleet_summary_encode(s, &buf, &len);
  if (rc) return rc;
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 32);
  if (!tmp) {
    free(buf);
    return HG_ENOMEM;
  }
  snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  rc = fd < 0 ? HG_EIO : 0;
  for (size_t off = 0; !rc && off < len;) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) rc = errno == ENOSPC ? HG_ENOSPC : HG_EIO;
    else off += (size_t)w;
  }
  if (fd >= 0 && close(fd) && !rc) rc = HG_EIO;
  if (!rc && rename(tmp, path)) rc = HG_EIO;
  if (rc && fd >= 0) unlink(tmp);
  free(tmp);
  free(buf);
  return rc;
}

int hg_fleet_summary_load(const char *path, struct hg_fleet_summary **out,
                          struct hg_load_error *err) {
  *out = NULL;
  if (err) memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  int rc = 0;
  uint8_t *buf = NULL;
  if (fd < 0 || fstat(fd, &st)) rc = HG_EIO;
  else if (!S_ISREG(st.st_mode) || st.st_size > (off_t)HG_FLEET_SUMMARY_MAX) rc = HG_ELIMIT;
  else if (!(buf = malloc((size_t)st.st_size + 1))) rc = HG_ENOMEM;
  size_t got = 0;
  while (!rc && got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) rc = HG_EIO;
    else got += (size_t)r;
  }
  if (fd >= 0) close(fd);
  if (rc) {
    if (err) {
      err->code = rc;
      snprintf(err->message, sizeof err->message, "summary: %s",
               rc == HG_ELIMIT ? "not a regular file of at most 64 KiB" : "cannot read");
    }
    free(buf);
    return rc;
  }
  rc = hg_fleet_summary_decode(buf, got, out, err);
  free(buf);
  return rc;
}

int hg_fleet_snapshot_key(const char *path, uint64_t *checksum, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  uint8_t t[16];
  if (fd < 0) return HG_EIO;
  if (fstat(fd, &st) || st.st_size < 64 || pread(fd, t, sizeof t, st.st_size - 16) != (ssize_t)sizeof t) {
    close(fd);
    return fd < 0 ? HG_EIO : HG_EFORMAT;
  }
  close(fd);
  /* ... [11, {counts}, xxh64] 0xff: the checksum is the last item before
   * the break, in its shortest head (docs/snapshot-format.md 2.8). */
  if (t[15] != 0xff) return HG_EFORMAT;
  uint64_t v = 0;
  if (t[6] == 0x1b) {
    for (int i = 7; i < 15; i++) v = v << 8 | t[i];
  } else if (t[10] == 0x1a) {
    for (int i = 11; i < 15; i++) v = v << 8 | t[i];
  } else {
    return HG_EFORMAT; /* a checksum below 2^32: read the whole file instead */
  }
  *checksum = v;
  *size = (uint64_t)st.st_size;
  return 0;
}
