/*
 * intake.c — POST /v1/snapshots of `heapgraph serve`. Before the body:
 * the Bearer key (an upload key of an app, not revoked), Content-Length
 * against the app's maximum (413), the key's rate (429 + Retry-After), the
 * Content-Encoding. The body streams through decode.c into a temporary
 * file under the decompressed-size limit; then the library's streaming
 * verifier (hg_snapshot_verify: the reader's rules in memory independent
 * of the upload's size) checks it whole (format, bounds, checksum: 422
 * with its reason and byte offset), it becomes its content-addressed blob (blobs.c) and its row
 * (srv_store_snapshot_put): 201 {"id"} when new, 200 with the same id for
 * a duplicate. A store that cannot be reached is 503 and a full disk 507,
 * with nothing half-written. Each request counts exactly one outcome.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "server/serve.h"
#include "tools/cli_util.h"
#include "web/http.h"

struct upload {
  char app[SRV_APP_MAX], key_id[SRV_KEYID_MAX];
  int counted, failed, fd, enc;
  int outcome;
  unsigned status;
  char reason[256];
  uint64_t raw;
  struct srv_decoder *dec;
  char tmp[PATH_MAX];
};

static void drop_temp(struct upload *u) {
  if (u->fd >= 0) close(u->fd);
  u->fd = -1;
  if (u->tmp[0]) unlink(u->tmp);
  u->tmp[0] = 0;
  srv_decoder_free(u->dec);
  u->dec = NULL;
}

/* Counts the outcome and answers {"error": outcome, "reason": …[, "offset": N]}
 * or {"id": …}. */
static int answer(struct srv *s, struct web_req *r, struct upload *u, int outcome, unsigned status,
                  const char *id, const char *reason, int64_t offset) {
  if (!u->counted) {
    u->counted = 1;
    srv_metrics_count(s->metrics, u->app, outcome, status, u->key_id, u->raw, web_elapsed(r), reason);
  }
  if (status == 401) web_add_header(r, "WWW-Authenticate", "Bearer");
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  if (id) {
    fprintf(f, "{\"id\":\"%s\"}\n", id);
  } else {
    fprintf(f, "{\"error\":\"%s\",\"reason\":", srv_outcome_name(outcome));
    cli_json_str(f, reason ? reason : "");
    if (offset >= 0) fprintf(f, ",\"offset\":%lld", (long long)offset);
    fputs("}\n", f);
  }
  return web_reply_json(r, status, f);
}

/* A failure in the body: the rest of it is read and discarded (the
 * connection's protocol needs it), the answer goes at its end. */
static void fail(struct upload *u, int outcome, unsigned status, const char *reason) {
  u->failed = 1;
  u->outcome = outcome;
  u->status = status;
  snprintf(u->reason, sizeof u->reason, "%s", reason);
  drop_temp(u);
}

static int disk_full(int err) { return err == ENOSPC || err == EDQUOT; }

static int store_refusal(struct srv *s, struct web_req *r, struct upload *u, int rc) {
  if (rc == SRV_EUNAVAIL) {
    web_add_header(r, "Retry-After", "30");
    return answer(s, r, u, SRV_UNAVAILABLE, 503, NULL, "the database is unavailable", -1);
  }
  struct statvfs vfs;
  if (strstr(srv_store_error(), "full") ||
      (!statvfs(s->data_dir, &vfs) && (uint64_t)vfs.f_bavail * vfs.f_frsize < (1u << 20)))
    return answer(s, r, u, SRV_INSUFFICIENT_STORAGE, 507, NULL, "the data directory is full", -1);
  return answer(s, r, u, SRV_SERVER_ERROR, 500, NULL, srv_store_error(), -1);
}

static int begin(struct srv *s, struct web_req *r, struct upload *u) {
  const char *secret, *key = srv_bearer(web_header(r, "Authorization"));
  struct srv_key k;
  if (!key || srv_key_parse(key, u->key_id, &secret)) {
    u->key_id[0] = 0;
    return answer(s, r, u, SRV_UNAUTHORIZED, 401, NULL, "no valid Bearer key", -1);
  }
  int rc = srv_store_key_find(s->store, u->key_id, &k);
  if (rc == SRV_ENOTFOUND || (!rc && !srv_key_verify(secret, k.hash)))
    return answer(s, r, u, SRV_UNAUTHORIZED, 401, NULL, "unknown key", -1);
  if (rc) return store_refusal(s, r, u, rc);
  snprintf(u->app, sizeof u->app, "%s", k.app);
  if (k.revoked) return answer(s, r, u, SRV_UNAUTHORIZED, 401, NULL, "key revoked", -1);
  if (k.read) return answer(s, r, u, SRV_UNAUTHORIZED, 403, NULL, "a read key cannot upload", -1);
  const char *claimed = web_header(r, "X-Heapgraph-App");
  if (claimed && strcmp(claimed, k.app))
    return answer(s, r, u, SRV_UNAUTHORIZED, 403, NULL, "the key is for another app", -1);

  struct srv_app_settings as;
  if ((rc = srv_store_app_get(s->store, k.app, &as))) return store_refusal(s, r, u, rc);
  uint64_t max = as.max_upload_bytes > 0 ? (uint64_t)as.max_upload_bytes : s->lim.max_upload;
  int64_t rate = as.rate_per_minute > 0 ? as.rate_per_minute : s->lim.rate_per_minute;
  const char *cl = web_header(r, "Content-Length");
  uint64_t len;
  if (!cl || cli_parse_u64(cl, &len)) {
    char why[64];
    snprintf(why, sizeof why, "Content-Length required");
    return answer(s, r, u, SRV_INVALID, 411, NULL, why, -1);
  }
  if (len > max) {
    char why[96];
    snprintf(why, sizeof why, "Content-Length %llu is over the app's limit of %llu bytes",
             (unsigned long long)len, (unsigned long long)max);
    return answer(s, r, u, SRV_TOO_LARGE, 413, NULL, why, -1);
  }
  if ((u->enc = srv_encoding(web_header(r, "Content-Encoding"))) < 0)
    return answer(s, r, u, SRV_INVALID, 415, NULL, "Content-Encoding must be gzip, zstd or identity", -1);
  unsigned wait = srv_limiter_take(s->limiter, u->key_id, rate);
  if (wait) {
    char ra[16];
    snprintf(ra, sizeof ra, "%u", wait);
    web_add_header(r, "Retry-After", ra);
    return answer(s, r, u, SRV_RATE_LIMITED, 429, NULL, "too many uploads for this key", -1);
  }
  if ((u->fd = srv_blob_temp(s->data_dir, u->tmp, sizeof u->tmp)) < 0) {
    int err = errno;
    u->tmp[0] = 0;
    if (disk_full(err)) return answer(s, r, u, SRV_INSUFFICIENT_STORAGE, 507, NULL, "the data directory is full", -1);
    return answer(s, r, u, SRV_SERVER_ERROR, 500, NULL, strerror(err), -1);
  }
  if (!(u->dec = srv_decoder_new(u->enc, u->fd, s->lim.max_decoded))) {
    drop_temp(u);
    return answer(s, r, u, SRV_SERVER_ERROR, 500, NULL, "out of memory", -1);
  }
  return WEB_MORE;
}

static void data(struct srv *s, struct upload *u, const char *buf, size_t n) {
  u->raw += n;
  if (u->failed) return;
  int rc = srv_decoder_feed(u->dec, buf, n);
  if (rc == SRV_DEC_LIMIT) {
    char why[96];
    snprintf(why, sizeof why, "the snapshot decompresses to more than %llu bytes",
             (unsigned long long)s->lim.max_decoded);
    fail(u, SRV_TOO_LARGE, 413, why);
  } else if (rc == SRV_DEC_BAD) {
    char why[160];
    snprintf(why, sizeof why, "Content-Encoding: %s", srv_decoder_reason(u->dec));
    fail(u, SRV_INVALID, 422, why);
  } else if (rc == SRV_DEC_IO) {
    int err = srv_decoder_errno(u->dec);
    if (disk_full(err))
      fail(u, SRV_INSUFFICIENT_STORAGE, 507, "the data directory is full");
    else
      fail(u, SRV_SERVER_ERROR, 500, strerror(err));
  }
}

/* The metadata the store keeps, copied out of the verified snapshot's. */
struct meta {
  char version[SRV_TEXT_MAX], model[SRV_TEXT_MAX], install[SRV_TEXT_MAX];
};

static void meta_get(const struct hg_meta *sm, struct meta *m) {
  memset(m, 0, sizeof *m);
  for (size_t i = 0; i < sm->app_count; i++) {
    const struct hg_kv *kv = &sm->app[i];
    if (!kv->key || !kv->value) continue;
    char *dst = !strcmp(kv->key, "app.version")          ? m->version
                : !strcmp(kv->key, "device.model")      ? m->model
                : !strcmp(kv->key, "device.install_id") ? m->install
                                                        : NULL;
    if (dst) snprintf(dst, SRV_TEXT_MAX, "%s", kv->value);
  }
}

/* Verifies the temporary, at most verify_slots at once (each holds the
 * verifier's fixed buffers, about 1.1 MB, whatever the upload's size). */
static int verify(struct srv *s, const char *path, struct hg_verify_info *v, struct hg_load_error *err) {
  pthread_mutex_lock(&s->verify_lock);
  while (s->verifying >= s->lim.verify_slots) pthread_cond_wait(&s->verify_cond, &s->verify_lock);
  s->verifying++;
  pthread_mutex_unlock(&s->verify_lock);
  int rc = hg_snapshot_verify(path, 0, v, err);
  pthread_mutex_lock(&s->verify_lock);
  s->verifying--;
  pthread_cond_signal(&s->verify_cond);
  pthread_mutex_unlock(&s->verify_lock);
  return rc;
}

static int end(struct srv *s, struct web_req *r, struct upload *u) {
  if (!u->failed && srv_decoder_finish(u->dec)) {
    char why[160];
    snprintf(why, sizeof why, "Content-Encoding: %s", srv_decoder_reason(u->dec));
    fail(u, SRV_INVALID, 422, why);
  }
  if (u->failed) return answer(s, r, u, u->outcome, u->status, NULL, u->reason, -1);
  struct hg_load_error err;
  struct hg_verify_info v;
  if (verify(s, u->tmp, &v, &err)) {
    drop_temp(u);
    return answer(s, r, u, SRV_INVALID, 422, NULL, err.message, (int64_t)err.offset);
  }
  char id[SRV_ID_LEN + 1], rel[PATH_MAX];
  struct meta m;
  uint64_t size = v.file_size;
  snprintf(id, sizeof id, "%016llx", (unsigned long long)v.checksum);
  meta_get(&v.meta, &m);
  hg_verify_info_free(&v);
  if (srv_blob_commit(s->data_dir, u->tmp, u->fd, id, size, rel, sizeof rel)) {
    int e = errno;
    u->tmp[0] = 0;
    drop_temp(u);
    if (disk_full(e)) return answer(s, r, u, SRV_INSUFFICIENT_STORAGE, 507, NULL, "the data directory is full", -1);
    return answer(s, r, u, SRV_SERVER_ERROR, 500, NULL, strerror(e), -1);
  }
  u->tmp[0] = 0; /* renamed (or removed as a duplicate) */
  drop_temp(u);
  struct srv_snapshot_meta sm = {.app = u->app,
                                 .id = id,
                                 .size = size,
                                 .blob = rel,
                                 .version = m.version[0] ? m.version : NULL,
                                 .device_model = m.model[0] ? m.model : NULL,
                                 .device_id = m.install[0] ? m.install : NULL,
                                 .received = (int64_t)time(NULL)};
  int is_new = 0, rc = srv_store_snapshot_put(s->store, &sm, &is_new);
  if (rc) return store_refusal(s, r, u, rc);
  return is_new ? answer(s, r, u, SRV_ACCEPTED, 201, id, NULL, -1)
                : answer(s, r, u, SRV_DUPLICATE, 200, id, NULL, -1);
}

int srv_intake(void *app, struct web_req *r, int phase, const char *buf, size_t n) {
  struct srv *s = app;
  struct upload *u = web_state(r);
  switch (phase) {
    case WEB_BEGIN:
      if (!(u = calloc(1, sizeof *u))) return WEB_CLOSE;
      u->fd = -1;
      web_set_state(r, u);
      return begin(s, r, u);
    case WEB_DATA:
      data(s, u, buf, n);
      return WEB_MORE;
    case WEB_END:
      return end(s, r, u);
    default: /* WEB_DONE */
      if (!u) return WEB_REPLIED;
      if (!u->counted)
        srv_metrics_count(s->metrics, u->app, SRV_ABORTED, 0, u->key_id, u->raw, web_elapsed(r),
                          "the connection ended before an answer");
      drop_temp(u);
      free(u);
      web_set_state(r, NULL);
      return WEB_REPLIED;
  }
}

int srv_metrics_route(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  struct srv *s = app;
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  srv_metrics_write(s->metrics, f);
  return web_reply_stream(r, 200, "text/plain; version=0.0.4; charset=utf-8", f);
}
