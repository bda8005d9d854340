/* server/retention.c — what is kept and for how long (server/store.h,
 * docs/serve.md 3): every summary forever; the full file of each issue's
 * exemplars in each version (marked in the exemplars table at every pass);
 * other full files of analysed snapshots dropped once older than the app's
 * retention_days, and, while the app's kept files pass its quota_bytes,
 * the oldest of them first. Queued and leased snapshots are never dropped
 * (their analysis needs the file). A blob shared by several apps is
 * deleted only when no row keeps it. Blob files no row keeps (an upload
 * whose row was never written, a re-upload of a dropped file) go once they
 * are SRV_ORPHAN_GRACE seconds old (server/blobs.c's sweep). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/serve.h"
#include "server/store_priv.h"

/* The exemplars of every issue of every version of the set. */
static int collect_exemplars(void *ctx, struct srv_fleet_set *set) {
  struct srv_strset *ex = ctx;
  const struct hg_fleet *f = srv_fleet_of(set);
  for (uint32_t v = 0; v < hg_fleet_version_count(f); v++) {
    struct hg_fleet_query q = {hg_fleet_version(f, v), NULL, -1, 0};
    const struct hg_fleet_issues *r = NULL; /* remembered until the summaries change */
    if (srv_fleet_issues_memo(set, &q, &r)) continue;
    for (uint32_t i = 0; i < r->count; i++)
      for (uint32_t k = 0; k < r->issues[i].exemplar_count; k++)
        if (r->issues[i].exemplars[k] && srv_strset_add(ex, r->issues[i].exemplars[k]))
          return _srv_err(SRV_EERR, "out of memory");
  }
  return 0;
}

struct cand { char id[SRV_ID_LEN + 1]; char blob[SRV_TEXT_MAX]; uint64_t size; int64_t received; int exemplar; };
struct cands { struct cand *v; size_t n, cap; uint64_t kept_bytes; const struct srv_strset *ex; };

static int add_cand(void *ctx, const struct srv_snapshot *sn) {
  struct cands *c = ctx;
  if (!sn->blob_kept) return 0;
  c->kept_bytes += sn->size;
  if (sn->state != SRV_DONE && sn->state != SRV_QUARANTINED) return 0;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 256;
    struct cand *p = realloc(c->v, cap * sizeof *p);
    if (!p) return SRV_EERR;
    c->v = p;
    c->cap = cap;
  }
  struct cand *d = &c->v[c->n++];
  memcpy(d->id, sn->id, sizeof d->id);
  memcpy(d->blob, sn->blob, sizeof d->blob);
  d->size = sn->size;
  d->received = sn->received;
  d->exemplar = srv_strset_has(c->ex, sn->id);
  return 0;
}

static int drop(struct srv_store *s, const char *data_dir, const char *app, const struct cand *c, int64_t now,
                struct srv_retention_stats *st) {
  int unused = 0;
  int rc = srv_store_blob_drop(s, app, c->id, &unused);
  if (rc) return rc;
  /* a fresh file (an upload of the same content on its way) stays: the
   * sweep takes it later if still no row keeps it */
  if (unused && srv_blob_delete(data_dir, c->blob, now, SRV_ORPHAN_GRACE) < 0)
    fprintf(stderr, "heapgraph serve: retention: %s/%s: %s\n", data_dir, c->blob, strerror(errno));
  st->dropped++;
  st->dropped_bytes += c->size;
  return 0;
}

static int retain_app(struct srv_store *s, const char *data_dir, const char *app, int64_t now, int default_days,
                      struct srv_retention_stats *st) {
  struct srv_app_settings cfg;
  int rc = srv_store_app_get(s, app, &cfg);
  if (rc) return rc;
  int64_t days = cfg.retention_days > 0 ? cfg.retention_days : default_days;
  struct srv_strset ex = {0};
  rc = srv_fleet_with(s, app, collect_exemplars, &ex);
  if (rc == SRV_ENOTFOUND) rc = 0;
  srv_strset_seal(&ex);
  if (!rc) rc = srv_store_exemplars_set(s, app, ex.v, ex.n);
  struct cands c = {0};
  c.ex = &ex;
  if (!rc) rc = srv_store_snapshot_list(s, app, add_cand, &c);
  st->kept_exemplars += ex.n;
  /* c.v is newest first: walk it from the end (oldest first) */
  uint64_t kept = c.kept_bytes;
  for (size_t i = c.n; !rc && i-- > 0;) {
    struct cand *d = &c.v[i];
    if (d->exemplar) continue;
    int old = days > 0 && d->received < now - days * 86400;
    int over = cfg.quota_bytes > 0 && kept > (uint64_t)cfg.quota_bytes;
    if (!old && !over) continue;
    rc = drop(s, data_dir, app, d, now, st);
    if (!rc) kept -= d->size;
  }
  free(c.v);
  srv_strset_free(&ex);
  return rc;
}

struct app_list { char **v; size_t n, cap; };
static int add_app(void *ctx, const char *app) {
  struct app_list *l = ctx;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **p = realloc(l->v, cap * sizeof *p);
    if (!p) return SRV_EERR;
    l->v = p;
    l->cap = cap;
  }
  return (l->v[l->n] = strdup(app)) ? (int)(++l->n, 0) : SRV_EERR;
}

int srv_retention_run(struct srv_store *s, const char *data_dir, int64_t now, int default_days,
                      struct srv_retention_stats *st) {
  memset(st, 0, sizeof *st);
  struct app_list l = {0};
  int rc = srv_store_apps(s, add_app, &l);
  for (size_t i = 0; i < l.n && !rc; i++) rc = retain_app(s, data_dir, l.v[i], now, default_days, st);
  for (size_t i = 0; i < l.n; i++) free(l.v[i]);
  free(l.v);
  if (!rc) rc = srv_blobs_sweep(data_dir, s, now, SRV_ORPHAN_GRACE, &st->orphans);
  return rc;
}
