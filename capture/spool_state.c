/*
 * spool_state.c — the spool's state file (DIR/state): a few "key value"
 * lines (policy counters, dropped counts, upload backoff) shared by every
 * process that uses the spool. Read and rewritten under an flock of
 * DIR/.lock, written as a temporary and renamed over the old file, so a
 * process killed at any point leaves the old or the new state, never half
 * of one. A damaged or hostile file only loses the lines that do not parse.
 *
 * Runs on the watcher or the uploader thread, never during a freeze.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "capture/spool.h"

void _hg_state_parse(struct _hg_state *st, const char *text, size_t n) {
  st->n = 0;
  size_t i = 0;
  while (i < n && st->n < HG_STATE_MAX) {
    size_t e = i;
    while (e < n && text[e] != '\n') e++;
    size_t sp = i;
    while (sp < e && text[sp] != ' ') sp++;
    size_t klen = sp - i, vlen = sp < e ? e - sp - 1 : 0;
    if (klen > 0 && sp < e && klen < sizeof st->key[0] && vlen < sizeof st->val[0]) {
      int ok = 1;
      for (size_t k = i; k < e; k++)
        if ((unsigned char)text[k] < 0x20) ok = 0;
      if (ok) {
        memcpy(st->key[st->n], text + i, klen);
        st->key[st->n][klen] = 0;
        memcpy(st->val[st->n], text + sp + 1, vlen);
        st->val[st->n][vlen] = 0;
        st->n++;
      }
    }
    i = e + 1;
  }
}

static int path_in(const struct hg_spool *s, const char *name, char *buf, size_t size) {
  int k = snprintf(buf, size, "%s/%s", s->dir, name);
  return k < 0 || (size_t)k >= size ? HG_ELIMIT : 0;
}

int _hg_state_lock(struct hg_spool *s, struct _hg_state *st) {
  char p[4200];
  st->n = 0;
  if (path_in(s, ".lock", p, sizeof p)) return HG_ELIMIT;
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return HG_EIO;
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      close(fd);
      return HG_EIO;
    }
  if (path_in(s, "state", p, sizeof p) == 0) {
    int sf = open(p, O_RDONLY | O_CLOEXEC);
    if (sf >= 0) {
      static const size_t cap = 16384;
      char *buf = malloc(cap);
      if (buf) {
        ssize_t k = read(sf, buf, cap);
        if (k > 0) _hg_state_parse(st, buf, (size_t)k);
        free(buf);
      }
      close(sf);
    }
  }
  return fd;
}

int _hg_state_save(struct hg_spool *s, const struct _hg_state *st) {
  char p[4200], t[4300];
  if (path_in(s, "state", p, sizeof p)) return HG_ELIMIT;
  snprintf(t, sizeof t, "%s/.state.tmp.%ld.w", s->dir, (long)getpid());
  FILE *f = fopen(t, "w");
  if (!f) return HG_EIO;
  for (int i = 0; i < st->n; i++) fprintf(f, "%s %s\n", st->key[i], st->val[i]);
  int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(t, p) != 0) {
    unlink(t);
    return HG_EIO;
  }
  return 0;
}

void _hg_state_unlock(int lockfd) {
  if (lockfd >= 0) close(lockfd); /* drops the flock */
}

const char *_hg_state_get(const struct _hg_state *st, const char *key) {
  for (int i = 0; i < st->n; i++)
    if (!strcmp(st->key[i], key)) return st->val[i];
  return NULL;
}

uint64_t _hg_state_u64(const struct _hg_state *st, const char *key) {
  const char *v = _hg_state_get(st, key);
  return v ? strtoull(v, NULL, 10) : 0;
}

void _hg_state_set(struct _hg_state *st, const char *key, const char *val) {
  int i = 0;
  while (i < st->n && strcmp(st->key[i], key)) i++;
  if (i == st->n) {
    if (st->n == HG_STATE_MAX) return;
    st->n++;
    snprintf(st->key[i], sizeof st->key[i], "%s", key);
  }
  snprintf(st->val[i], sizeof st->val[i], "%s", val);
  for (char *c = st->val[i]; *c; c++)
    if ((unsigned char)*c < 0x20) *c = ' ';
}

void _hg_state_set_u64(struct _hg_state *st, const char *key, uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%" PRIu64, v);
  _hg_state_set(st, key, b);
}
