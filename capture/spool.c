/*
 * spool.c — the spool directory (public hg_spool_*): where finished
 * snapshots wait for the uploader, under a byte budget, a file-count budget
 * and a free-disk guard (oldest dropped first, counted for the next
 * snapshot's metadata), and the per-install id.
 *
 * Names: a capture is written as NAME.hgsnap (hg_capture: temporary
 * .NAME.tmp.PID.NSEC, then rename); hg_spool_add tags it with the
 * snapshot's checksum, NAME.HHHHHHHHHHHHHHHH.hgsnap.gz (gzip, temp +
 * rename, then the untagged file goes) or .hgsnap (compression off). Only
 * tagged names are queued, so a file that is being written, or was left
 * half-written by a killed process, is never sent: open() removes
 * temporaries whose writer is gone and adds untagged snapshots that a
 * killed process finished but had not added.
 *
 * Runs outside any freeze (watcher, uploader and app threads).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <stdlib.h> /* arc4random_buf */
#else
#include <sys/random.h>
#endif

#include "capture/spool.h"

void hg_spool_limits_init(struct hg_spool_limits *l) {
  if (!l) return;
  memset(l, 0, sizeof *l);
  l->version = HG_SPOOL_LIMITS_VERSION;
  l->max_files = 8;
  l->max_bytes = 64ull << 20;
  l->min_free_bytes = 200000000ull;
  l->compress = 1;
  l->level = 1;
  l->backoff_ms = 30000;
  l->max_tries = 10;
}

const char *hg_spool_dir(const struct hg_spool *s) { return s ? s->dir : NULL; }
const char *hg_spool_install_id(const struct hg_spool *s) { return s ? s->install_id : NULL; }

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && !memcmp(s + n - k, suf, k);
}

int _hg_spool_tagged(const char *name, char *hex) {
  if (name[0] == '.') return 0;
  size_t n = strlen(name);
  size_t end = ends_with(name, ".hgsnap.gz") ? n - 10 : ends_with(name, ".hgsnap") ? n - 7 : 0;
  if (end < 18 || name[end - 17] != '.') return 0;
  for (size_t i = end - 16; i < end; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
  if (hex) {
    memcpy(hex, name + end - 16, 16);
    hex[16] = 0;
  }
  return 1;
}

uint64_t _hg_spool_free_bytes(const struct hg_spool *s) {
  struct statvfs v;
  if (statvfs(s->dir, &v) != 0) return UINT64_MAX;
  return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

/* ---------------------------------------------------------------- checksum */

/* CBOR unsigned integer at b[*i] (major type 0); advances *i. */
static int cbor_uint(const uint8_t *b, size_t n, size_t *i, uint64_t *v) {
  if (*i >= n || b[*i] >> 5) return -1;
  uint8_t ai = b[*i] & 31;
  size_t len = ai < 24 ? 0 : ai == 24 ? 1 : ai == 25 ? 2 : ai == 26 ? 4 : ai == 27 ? 8 : 9;
  if (len == 9 || *i + 1 + len > n) return -1;
  uint64_t x = ai < 24 ? ai : 0;
  for (size_t k = 0; k < len; k++) x = x << 8 | b[*i + 1 + k];
  *i += 1 + len;
  *v = x;
  return 0;
}

/* The trailer [11, {9 text keys: uint}, xxh64] and the break end the file
 * (docs/snapshot-format.md 2.8); its start is found from the end and the
 * whole tail must parse up to the last byte. */
int _hg_snapshot_checksum(int fd, uint64_t *sum) {
  uint8_t b[512];
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 16) return HG_EFORMAT;
  size_t n = st.st_size < (off_t)sizeof b ? (size_t)st.st_size : sizeof b;
  if (pread(fd, b, n, st.st_size - (off_t)n) != (ssize_t)n || b[n - 1] != 0xff) return HG_EFORMAT;
  for (size_t start = n - 1; start-- > 0;) {
    if (b[start] != 0x83 || start + 3 > n || b[start + 1] != 0x0b || b[start + 2] != 0xa9) continue;
    size_t i = start + 3;
    int ok = 1;
    uint64_t v;
    for (int k = 0; k < 9 && ok; k++) {
      if (i >= n || (b[i] & 0xe0) != 0x60 || (b[i] & 31) > 23) ok = 0;
      else i += 1 + (b[i] & 31);
      if (ok && cbor_uint(b, n, &i, &v) != 0) ok = 0;
    }
    if (ok && cbor_uint(b, n, &i, &v) == 0 && i == n - 1) {
      *sum = v;
      return 0;
    }
  }
  return HG_EFORMAT;
}

/* ------------------------------------------------------------------ listing */

static int cmp_entry(const void *a, const void *b) {
  const struct _hg_spool_entry *x = a, *y = b;
  if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
  return strcmp(x->name, y->name);
}

int _hg_spool_list(struct hg_spool *s, struct _hg_spool_entry **out) {
  *out = NULL;
  DIR *d = opendir(s->dir);
  if (!d) return HG_EIO;
  size_t n = 0, cap = 0;
  struct _hg_spool_entry *v = NULL;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!_hg_spool_tagged(e->d_name, NULL) || strlen(e->d_name) >= sizeof v->name) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      struct _hg_spool_entry *nv = n < 100000 ? realloc(v, nc * sizeof *v) : NULL;
      if (!nv) {
        rc = HG_ENOMEM;
        break;
      }
      v = nv;
      cap = nc;
    }
    snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
    v[n].bytes = (uint64_t)st.st_size;
#if defined(__APPLE__)
    v[n].mtime_ns = (int64_t)st.st_mtimespec.tv_sec * 1000000000 + st.st_mtimespec.tv_nsec;
#else
    v[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
#endif
    n++;
  }
  closedir(d);
  if (rc) {
    free(v);
    return rc;
  }
  if (n) qsort(v, n, sizeof *v, cmp_entry);
  *out = v;
  return (int)n;
}

void _hg_spool_drop(struct hg_spool *s, const char *name, const char *why) {
  char p[4400];
  if (snprintf(p, sizeof p, "%s/%s", s->dir, name) >= (int)sizeof p || unlink(p) != 0) return; /* gone already (another process, or sent) */
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk >= 0) {
    _hg_state_set_u64(&st, "dropped", _hg_state_u64(&st, "dropped") + 1);
    _hg_state_set_u64(&st, "dropped_total", _hg_state_u64(&st, "dropped_total") + 1);
    _hg_state_set(&st, "last_drop", why);
    _hg_state_save(s, &st);
    _hg_state_unlock(lk);
  }
  fprintf(stderr, "heapgraph: spool: dropped %s (%s)\n", name, why);
}

int hg_spool_trim(struct hg_spool *s) {
  if (!s) return HG_EINVAL;
  struct _hg_spool_entry *v;
  int n = _hg_spool_list(s, &v);
  if (n < 0) return n;
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += v[i].bytes;
  int dropped = 0;
  for (int i = 0; i < n; i++) {
    uint32_t left = (uint32_t)(n - i);
    const char *why = left > s->l.max_files ? "over the file-count budget"
                      : bytes > s->l.max_bytes ? "over the byte budget"
                      : _hg_spool_free_bytes(s) < s->l.min_free_bytes ? "free disk under the guard"
                                                                      : NULL;
    if (!why) break;
    _hg_spool_drop(s, v[i].name, why);
    bytes -= v[i].bytes;
    dropped++;
  }
  free(v);
  return dropped;
}

void _hg_spool_took_dropped(struct hg_spool *s, uint64_t n) {
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return;
  uint64_t d = _hg_state_u64(&st, "dropped");
  _hg_state_set_u64(&st, "dropped", d > n ? d - n : 0);
  _hg_state_save(s, &st);
  _hg_state_unlock(lk);
}

int hg_spool_stats(struct hg_spool *s, struct hg_spool_stats *out) {
  if (!s || !out) return HG_EINVAL;
  memset(out, 0, sizeof *out);
  struct _hg_spool_entry *v;
  int n = _hg_spool_list(s, &v);
  if (n < 0) return n;
  out->files = (uint32_t)n;
  for (int i = 0; i < n; i++) out->bytes += v[i].bytes;
  free(v);
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return lk;
  out->dropped = _hg_state_u64(&st, "dropped");
  out->dropped_total = _hg_state_u64(&st, "dropped_total");
  _hg_state_unlock(lk);
  return 0;
}

/* -------------------------------------------------------------------- add */

int hg_spool_add(struct hg_spool *s, const char *path) { return _hg_spool_add(s, path, NULL, 0); }

int _hg_spool_add(struct hg_spool *s, const char *path, char *out, size_t out_size) {
  if (!s || !path) return HG_EINVAL;
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  if (!ends_with(name, ".hgsnap") || _hg_spool_tagged(name, NULL) || strlen(name) > 200) return HG_EINVAL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? HG_ENOENT : HG_EIO;
  uint64_t sum;
  int rc = _hg_snapshot_checksum(fd, &sum);
  close(fd);
  if (rc) { /* not a finished snapshot: never queued */
    unlink(path);
    return rc;
  }
  char dst[4400];
  snprintf(dst, sizeof dst, "%s/%.*s.%016" PRIx64 ".hgsnap%s", s->dir, (int)(strlen(name) - 7), name, sum,
           s->l.compress ? ".gz" : "");
  if (s->l.compress) {
    rc = _hg_gzip_file(path, dst, (int)s->l.level);
    if (rc == 0) unlink(path);
  } else {
    rc = rename(path, dst) == 0 ? 0 : HG_EIO;
  }
  if (rc == 0 && out) snprintf(out, out_size, "%s", dst);
  if (rc == 0) hg_spool_trim(s);
  return rc;
}

/* ------------------------------------------------------------------- open */

/* ".NAME.tmp.PID.X": 1 when its writer is gone or it is a day old. */
static int stale_tmp(const char *name, const struct stat *st) {
  const char *t = strstr(name, ".tmp.");
  if (name[0] != '.' || !t) return 0;
  long pid = strtol(t + 5, NULL, 10);
  if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
  return time(NULL) - st->st_mtime > 86400;
}

static void load_install_id(struct hg_spool *s) {
  char p[4300], t[4400];
  snprintf(p, sizeof p, "%s/install-id", s->dir);
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char b[33];
      ssize_t k = read(fd, b, 32);
      close(fd);
      int ok = k == 32;
      for (int i = 0; ok && i < 32; i++) ok = (b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'f');
      if (ok) {
        memcpy(s->install_id, b, 32);
        s->install_id[32] = 0;
        return;
      }
      unlink(p); /* damaged: a new id */
    }
    uint8_t r[16];
#if defined(__APPLE__)
    arc4random_buf(r, sizeof r);
#else
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_sec;
      for (int i = 0; i < 16; i++) r[i] = (uint8_t)((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    }
#endif
    char hex[33];
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
    snprintf(t, sizeof t, "%s/.install-id.tmp.%ld.w", s->dir, (long)getpid());
    fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) break;
    int ok = write(fd, hex, 32) == 32 && fsync(fd) == 0;
    close(fd);
    /* link() fails when another process made one first: read theirs */
    if (ok && link(t, p) != 0 && errno != EEXIST) ok = 0;
    unlink(t);
    if (!ok) break;
  }
  snprintf(s->install_id, sizeof s->install_id, "%s", "00000000000000000000000000000000");
}

int hg_spool_open(const char *dir, const struct hg_spool_limits *l, struct hg_spool **out) {
  if (!dir || !*dir || !out || (l && l->version != HG_SPOOL_LIMITS_VERSION) || strlen(dir) > 3800) return HG_EINVAL;
  *out = NULL;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return errno == ENOENT ? HG_ENOENT : HG_EIO;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return HG_ENOTREG;
  struct hg_spool *s = calloc(1, sizeof *s);
  if (!s || !(s->dir = strdup(dir))) {
    free(s);
    return HG_ENOMEM;
  }
  if (l) s->l = *l;
  else hg_spool_limits_init(&s->l);
  if (!s->l.level || s->l.level > 9) s->l.level = 1;
  if (!s->l.backoff_ms) s->l.backoff_ms = 30000;
  if (!s->l.max_tries) s->l.max_tries = 10;
  load_install_id(s);
  /* temporaries of writers that are gone; untagged snapshots not added */
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char names[64][256];
    int nu = 0;
    while ((e = readdir(d))) {
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      if (stale_tmp(e->d_name, &st)) unlinkat(dirfd(d), e->d_name, 0);
      else if (e->d_name[0] != '.' && ends_with(e->d_name, ".hgsnap") && !_hg_spool_tagged(e->d_name, NULL) &&
               strlen(e->d_name) < 200 && nu < 64)
        snprintf(names[nu++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 0; i < nu; i++) {
      char p[4400];
      if (snprintf(p, sizeof p, "%s/%s", dir, names[i]) < (int)sizeof p) hg_spool_add(s, p);
    }
  }
  hg_spool_trim(s);
  *out = s;
  return 0;
}

void hg_spool_close(struct hg_spool *s) {
  if (!s) return;
  free(s->dir);
  free(s);
}
