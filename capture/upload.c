/*
 * upload.c — the uploader's portable half (public hg_upload_peek,
 * hg_upload_report, hg_upload_options_init): which spooled file goes next
 * (the oldest), the headers to send it with, and what an answer means —
 * 201/200 remove it, 413/422 and other 4xx drop it with the reason logged,
 * 429 (Retry-After), 408, 5xx and no answer keep it and back off
 * exponentially with jitter. The backoff and the head file's try count are
 * in the spool's state file, so a restart resumes where the last process
 * stopped. On Darwin the app sends (URLSession) and reports; on Linux
 * hg_upload_next (capture/linux/upload_curl.c) does both.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "capture/spool.h"
#include "capture/upload.h"

void hg_upload_options_init(struct hg_upload_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->version = HG_UPLOAD_OPTIONS_VERSION;
  o->timeout_ms = 120000;
  o->max_bytes_per_s = 1000000;
}

uint64_t _hg_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int _hg_upload_classify(int status) {
  if (status == 201) return HG_UPLOAD_SENT;
  if (status == 200) return HG_UPLOAD_DUPLICATE;
  /* 401/403: the key or the account, not the file: keep it */
  if (status == 401 || status == 403 || status == 408 || status == 429 || status == 0 || status >= 500)
    return HG_UPLOAD_RETRY;
  return HG_UPLOAD_DROPPED; /* 413, 422, other 4xx; 1xx/3xx/other 2xx: not an answer we can use */
}

uint64_t _hg_upload_backoff_ms(uint32_t base_ms, uint32_t tries, uint64_t rnd) {
  uint64_t d = base_ms ? base_ms : 1;
  for (uint32_t i = 1; i < tries && d < 3600000u; i++) d *= 2;
  if (d > 3600000u) d = 3600000u;
  return d / 2 + rnd % (d / 2 + 1); /* [d/2, d] */
}

static uint64_t rnd64(void) {
  static uint64_t x;
  if (!x) x = _hg_unix_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&x;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

int hg_upload_peek(struct hg_spool *s, struct hg_upload_item *it, uint64_t *wait_ms) {
  if (!s || !it) return HG_EINVAL;
  if (wait_ms) *wait_ms = 0;
  memset(it, 0, sizeof *it);
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return lk;
  uint64_t nb = _hg_state_u64(&st, "up.not_before_ms");
  _hg_state_unlock(lk);
  uint64_t now = _hg_unix_ms();
  struct _hg_spool_entry *v;
  int n = _hg_spool_list(s, &v);
  if (n < 0) return n;
  if (n == 0) {
    free(v);
    return HG_ENOTFOUND;
  }
  if (nb > now) {
    free(v);
    if (wait_ms) *wait_ms = nb - now;
    return HG_EBUSY;
  }
  snprintf(it->name, sizeof it->name, "%s", v[0].name);
  it->bytes = v[0].bytes;
  free(v);
  if (snprintf(it->path, sizeof it->path, "%s/%s", s->dir, it->name) >= (int)sizeof it->path) return HG_ELIMIT;
  _hg_spool_tagged(it->name, it->checksum);
  size_t nl = strlen(it->name);
  int gz = nl > 3 && !strcmp(it->name + nl - 3, ".gz");
  snprintf(it->headers[it->header_count++], sizeof it->headers[0], "Content-Type: application/vnd.heapgraph.snapshot");
  if (gz) snprintf(it->headers[it->header_count++], sizeof it->headers[0], "Content-Encoding: gzip");
  snprintf(it->headers[it->header_count++], sizeof it->headers[0], "X-Heapgraph-Checksum: %s", it->checksum);
  snprintf(it->headers[it->header_count++], sizeof it->headers[0], "Idempotency-Key: %s", it->checksum);
  return 0;
}

int _hg_upload_settle(struct hg_spool *s, const struct hg_upload_item *it, int status, uint32_t retry_after_s,
                      const char *msg, uint64_t *wait_ms) {
  int action = _hg_upload_classify(status);
  uint64_t wait = 0;
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return lk;
  if (action == HG_UPLOAD_RETRY) {
    const char *head = _hg_state_get(&st, "up.name");
    uint64_t tries = head && !strcmp(head, it->name) ? _hg_state_u64(&st, "up.tries") + 1 : 1;
    if (tries >= s->l.max_tries) {
      action = HG_UPLOAD_DROPPED;
      msg = "too many tries";
    } else {
      wait = _hg_upload_backoff_ms(s->l.backoff_ms, (uint32_t)tries, rnd64());
      if (retry_after_s) wait = (uint64_t)(retry_after_s > 86400 ? 86400 : retry_after_s) * 1000u;
      _hg_state_set(&st, "up.name", it->name);
      _hg_state_set_u64(&st, "up.tries", tries);
      _hg_state_set_u64(&st, "up.not_before_ms", _hg_unix_ms() + wait);
    }
  }
  if (action != HG_UPLOAD_RETRY) { /* settled: the next file starts afresh */
    _hg_state_set(&st, "up.name", "");
    _hg_state_set_u64(&st, "up.tries", 0);
    _hg_state_set_u64(&st, "up.not_before_ms", 0);
    if (action == HG_UPLOAD_SENT || action == HG_UPLOAD_DUPLICATE)
      _hg_state_set_u64(&st, "up.sent_total", _hg_state_u64(&st, "up.sent_total") + 1);
  }
  _hg_state_save(s, &st);
  _hg_state_unlock(lk);
  if (action == HG_UPLOAD_SENT || action == HG_UPLOAD_DUPLICATE) {
    unlink(it->path);
  } else if (action == HG_UPLOAD_DROPPED) {
    char why[320];
    snprintf(why, sizeof why, "upload refused: HTTP %d%s%.200s", status, msg && *msg ? ": " : "", msg ? msg : "");
    _hg_spool_drop(s, it->name, why);
  }
  if (wait_ms) *wait_ms = wait;
  return action;
}

int hg_upload_report(struct hg_spool *s, const struct hg_upload_item *it, int http_status, uint32_t retry_after_s) {
  if (!s || !it || !it->name[0] || strchr(it->name, '/')) return HG_EINVAL;
  return _hg_upload_settle(s, it, http_status, retry_after_s, NULL, NULL);
}

#if !defined(__linux__)
/* Darwin: the app owns the network (hg_upload_peek / hg_upload_report). */
int hg_upload_next(struct hg_spool *s, const char *url, const char *key, const struct hg_upload_options *o,
                   struct hg_upload_result *r) {
  (void)s, (void)url, (void)key, (void)o, (void)r;
  return HG_EUNSUPPORTED;
}
#endif

uint32_t _hg_retry_after(const char *line, size_t n) {
  static const char key[] = "retry-after:";
  size_t k = sizeof key - 1;
  if (n < k || strncasecmp(line, key, k)) return 0;
  size_t i = k;
  while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
  uint64_t v = 0;
  size_t start = i;
  while (i < n && line[i] >= '0' && line[i] <= '9' && v < 86400u * 365) v = v * 10 + (uint64_t)(line[i++] - '0');
  if (i == start) return 0;
  return v > 86400 ? 86400 : (uint32_t)v;
}
