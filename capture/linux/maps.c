/*
 * maps.c — VM regions from /proc/self/smaps: range, protection, path or
 * pseudo-name, Rss, dirty and swapped bytes; marks heapgraph's own memory
 * and links regions to their image. In fork mode the ranges come first from
 * /proc/self/maps and the figures after the heap walk, from the smaps text
 * the helper read during it (prefault.c).
 *
 * Runs while the heap is frozen: raw open/read into capture scratch, no
 * malloc, no stdio. Dirty = Private_Dirty + Shared_Dirty (in fork mode the
 * child shares every dirty page with its parent, so the split is
 * meaningless there; the sum is the same in both modes).
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "capture/stacks/alloc_record.h"
#include "capture/linux/linux.h"
#include "capture/platform.h"

#define BUF_BYTES (256u * 1024u)

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

static const char *parse_hex(const char *p, const char *end, uint64_t *out) {
  uint64_t v = 0;
  int any = 0;
  while (p < end && hexval(*p) >= 0) {
    v = v * 16 + (uint64_t)hexval(*p++);
    any = 1;
  }
  *out = v;
  return any ? p : NULL;
}

static const char *skip_field(const char *p, const char *end) {
  while (p < end && *p != ' ') p++;
  while (p < end && *p == ' ') p++;
  return p;
}

static uint64_t parse_kb(const char *p, const char *end) {
  while (p < end && (*p < '0' || *p > '9')) p++;
  uint64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
  return v * 1024;
}

static int starts(const char *p, const char *end, const char *key) {
  size_t n = strlen(key);
  return (size_t)(end - p) >= n && !memcmp(p, key, n);
}

/* One line (without newline). */
static int line(struct hg_cap *c, const char *p, const char *end) {
  size_t n = _hg_vec_len(&c->regions);
  struct hg_cregion *cur = n ? _hg_vec_at(&c->regions, n - 1) : NULL;
  uint64_t lo, hi;
  const char *q = parse_hex(p, end, &lo);
  if (q && q < end && *q == '-' && (q = parse_hex(q + 1, end, &hi)) && q < end && *q == ' ') {
    struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
    if (!r) return HG_ENOMEM;
    r->start = lo;
    r->end = hi;
    r->image = HG_NO_OWNER;
    q++;
    if (end - q >= 4) {
      r->prot = (q[0] == 'r' ? HG_PROT_READ : 0) | (q[1] == 'w' ? HG_PROT_WRITE : 0) |
                (q[2] == 'x' ? HG_PROT_EXEC : 0) | (q[3] == 's' ? HG_PROT_SHARED : 0);
    }
    q = skip_field(q, end); /* perms  */
    q = skip_field(q, end); /* offset */
    q = skip_field(q, end); /* dev    */
    q = skip_field(q, end); /* inode  */
    if (q < end) {
      r->name = _hg_str_add(&c->strings, q, (size_t)(end - q));
      if (!r->name) return HG_ENOMEM;
    }
    if (!r->name || (end - q >= 6 && memcmp(q, "[anon:", 6) == 0)) r->flags |= HG_RF_ANON;
    return 0;
  }
  if (!cur) return 0;
  if (starts(p, end, "Rss:")) cur->rss = parse_kb(p, end);
  else if (starts(p, end, "Private_Dirty:") || starts(p, end, "Shared_Dirty:"))
    cur->dirty += parse_kb(p, end);
  else if (starts(p, end, "Swap:")) cur->swap = parse_kb(p, end);
  return 0;
}

static void classify(struct hg_cap *c) {
  uint64_t slo, shi;
  _hg_linux_slots_range(&slo, &shi);
  size_t n = _hg_vec_len(&c->regions), ni = _hg_vec_len(&c->images);
  for (size_t i = 0; i < n; i++) {
    struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (_hg_scratch_owns(&c->scratch, r->start, r->end) || (slo && r->start < shi && r->end > slo) ||
        _hg_rec_owns(r->start, r->end)) { /* ours: capture scratch, signal slots, the recorder's tables */
      r->kind = HG_RK_OWN;
      continue;
    }
    for (uint32_t k = 0; k < c->own_count; k++)
      if (r->start == c->own_lo[k]) r->kind = HG_RK_OWN;
    if (r->kind == HG_RK_OWN) continue;
    for (size_t k = 0; k < ni && r->name; k++) {
      const struct hg_cimage *im = _hg_vec_at(&c->images, k);
      if (r->start < im->load_addr + im->size && r->end > im->load_addr) {
        r->image = (uint32_t)k;
        r->kind = HG_RK_IMAGE;
        break;
      }
    }
  }
}

/* ---- the region figures (smaps), apart from the ranges ---- */

static struct {
  struct hg_vec buf;   /* fork mode: smaps as the helper read it            */
  int deferred;        /* the figures are still to come (after the walk)     */
  long cur;            /* stats_line: region the lines are about, or -1      */
  size_t matched;
} st; /* one capture at a time (capture lock) */

/* A line of smaps for regions already known (from maps): a header selects
 * the region with the same range (none: an area mapped since, e.g. the
 * helper's stack), its figure lines fill it in. */
static int stats_line(struct hg_cap *c, const char *p, const char *end) {
  uint64_t lo, hi;
  const char *q = parse_hex(p, end, &lo);
  if (q && q < end && *q == '-' && (q = parse_hex(q + 1, end, &hi)) && q < end && *q == ' ') {
    int64_t a = _hg_region_find(c, lo);
    struct hg_cregion *r = a >= 0 ? _hg_vec_at(&c->regions, (size_t)a) : NULL;
    st.cur = -1;
    if (r && r->start == lo && r->end == hi) {
      r->rss = r->dirty = r->swap = 0;
      r->flags &= ~HG_RF_NOFIG;
      st.cur = (long)a;
      st.matched += r->kind != HG_RK_OWN;
    }
    return 0;
  }
  if (st.cur < 0) return 0;
  struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)st.cur);
  if (starts(p, end, "Rss:")) r->rss = parse_kb(p, end);
  else if (starts(p, end, "Private_Dirty:") || starts(p, end, "Shared_Dirty:")) r->dirty += parse_kb(p, end);
  else if (starts(p, end, "Swap:")) r->swap = parse_kb(p, end);
  return 0;
}

/* Calls fn on every line of text [p, p + n); the last one may lack its
 * newline. */
static int lines(struct hg_cap *c, const char *p, size_t n, int (*fn)(struct hg_cap *, const char *, const char *)) {
  size_t start = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (p[i] != '\n') continue;
    rc = fn(c, p + start, p + i);
    start = i + 1;
  }
  if (!rc && start < n) rc = fn(c, p + start, p + n);
  return rc;
}

/* Reads the file at path a buffer at a time, calling fn on each line. */
static int read_lines(struct hg_cap *c, const char *path, int (*fn)(struct hg_cap *, const char *, const char *)) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return HG_EIO;
  size_t mark = _hg_vec_len(&c->work);
  char *buf = _hg_vec_push(&c->work, BUF_BYTES / 8);
  if (!buf) {
    close(fd);
    return HG_ENOMEM;
  }
  size_t have = 0;
  int rc = 0;
  for (;;) {
    ssize_t k = read(fd, buf + have, BUF_BYTES - have);
    if (k < 0) {
      rc = HG_EIO;
      break;
    }
    have += (size_t)k;
    if (k == 0) {
      rc = lines(c, buf, have, fn);
      break;
    }
    size_t last = have; /* complete lines only; the rest waits for more */
    while (last > 0 && buf[last - 1] != '\n') last--;
    if (last == 0) {
      if (have == BUF_BYTES) have = 0; /* absurd line: drop it */
      continue;
    }
    if ((rc = lines(c, buf, last, fn))) break;
    memmove(buf, buf + last, have - last);
    have -= last;
  }
  close(fd);
  _hg_vec_truncate(&c->work, mark);
  return rc;
}

/* In fork mode, when a helper can run, the ranges come from /proc/self/maps
 * now (no page table is walked for them) and the figures from smaps, read
 * by the helper during the heap walk (prefault.c) and parsed after it
 * (_hg_plat_regions_finish); elsewhere smaps gives both at once. */
int _hg_plat_regions(struct hg_cap *c) {
  st.deferred = 0;
  int defer = c->mode == HG_MODE_FORK && c->shared && _hg_plat_helper_available(c);
  int rc = read_lines(c, defer ? "/proc/self/maps" : "/proc/self/smaps", line);
  if (rc == HG_EIO && !defer) rc = read_lines(c, "/proc/self/maps", line);
  if (rc) return rc;
  classify(c);
  if (defer) {
    for (size_t i = 0; i < _hg_vec_len(&c->regions); i++)
      ((struct hg_cregion *)_hg_vec_at(&c->regions, i))->flags |= HG_RF_NOFIG;
    /* room for ~2 KiB of smaps per region (~1 KiB is usual) */
    size_t cap = _hg_vec_len(&c->regions) * 2048 + 65536;
    char *buf = NULL;
    if (!_hg_vec_init(&c->scratch, &st.buf, 1, cap)) buf = _hg_vec_push(&st.buf, cap);
    if (buf) _hg_prefault_want_smaps(buf, cap);
    st.deferred = 1;
  }
  return 0;
}

int _hg_plat_regions_finish(struct hg_cap *c) {
  if (!st.deferred) return 0;
  st.deferred = 0;
  long n = _hg_prefault_smaps();
  size_t want = 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++)
    want += ((struct hg_cregion *)_hg_vec_at(&c->regions, i))->kind != HG_RK_OWN;
  st.cur = -1;
  st.matched = 0;
  if (n >= 0 && !lines(c, (const char *)st.buf.base, (size_t)n, stats_line) && st.matched >= want) return 0;
  /* not read, or regions that smaps showed otherwise: read it now */
  st.cur = -1;
  st.matched = 0;
  int rc = read_lines(c, "/proc/self/smaps", stats_line);
  return rc == HG_EIO ? 0 : rc; /* no figures is not an error (maps had the ranges) */
}
