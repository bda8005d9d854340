/*
 * api_read.c — the read API of `heapgraph serve` (docs/serve.md section 4),
 * GET only, for a read key or a browser session (session.c):
 *   /v1/apps                                the apps this caller may read
 *   /v1/apps/{app}/versions                 versions with snapshot and device counts
 *   /v1/apps/{app}/issues?version=&baseline=&kind=&status=&floor=
 *                                           {"issues":[the objects of `heapgraph fleet --json`], …}
 *   /v1/apps/{app}/issues/{signature}?version=&baseline=
 *                                           one issue, its history per version, its exemplars
 *   /v1/apps/{app}/growth?version=&baseline=&n=   `heapgraph fleet --growth --json`
 *   /v1/apps/{app}/tree?version=            `heapgraph fleet --tree` (the merged retention tree)
 *   /v1/apps/{app}/snapshots/{id}           a snapshot's record; /summary its summary;
 *                                           /view/… the snapshot viewer on it (snap_view.c)
 * Every fleet object is written by the library's one writer for it
 * (graph/fleet_json.c), the same bytes as the CLI prints.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "server/read.h"
#include "tools/cli_util.h"

static int to_file(void *ctx, const void *p, size_t n) { return fwrite(p, 1, n, ctx) == n ? 0 : -1; }

static int err(struct web_req *r, unsigned status, const char *msg) {
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  fputs("{\"error\":", f);
  cli_json_str(f, msg);
  fputc('}', f);
  return web_reply_json(r, status, f);
}

static int store_err(struct web_req *r, int rc) {
  if (rc == SRV_EUNAVAIL) return err(r, 503, "database unavailable");
  if (rc == SRV_ENOTFOUND) return err(r, 404, "not found");
  return err(r, 500, srv_store_error());
}

/* The answer when srv_fleet_with failed: hg_rc is the library's error met
 * inside the callback (0: none; the callback then returns SRV_EERR, as the
 * library's and the store's codes overlap), else rc is the store's. */
static int fleet_fail(struct web_req *r, FILE *f, int hg_rc, int rc, const char *notfound) {
  fclose(f);
  if (hg_rc == HG_ENOTFOUND || (!hg_rc && rc == SRV_ENOTFOUND)) return err(r, 404, notfound);
  if (hg_rc) return err(r, 500, hg_error_string(hg_rc));
  return store_err(r, rc);
}

static const char *arg(struct web_req *r, const char *k) {
  const char *v = web_arg(r, k);
  return v && *v ? v : NULL;
}

static int status_parse(const char *s) {
  for (uint32_t i = 0; i < 4; i++)
    if (!strcmp(s, hg_fleet_status_name(i))) return (int)i;
  return -1;
}

/* ---- /v1/apps ---- */
static int apps(struct srv *s, struct web_req *r) {
  char a[SRV_SESSION_APPS][SRV_APP_MAX];
  int n = srv_read_apps(s, r, a, SRV_SESSION_APPS);
  if (n <= 0) {
    web_add_header(r, "WWW-Authenticate", "Bearer");
    return err(r, 401, "unauthorized");
  }
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  fputs("{\"apps\":[", f);
  for (int i = 0; i < n; i++) {
    struct srv_counts c = {0};
    srv_store_counts(s->store, a[i], &c);
    fputs(i ? ",{\"app\":" : "{\"app\":", f);
    cli_json_str(f, a[i]);
    fprintf(f, ",\"snapshots\":%" PRIu64 ",\"queued\":%" PRIu64 ",\"quarantined\":%" PRIu64 "}",
            c.done + c.queued + c.leased + c.quarantined, c.queued + c.leased, c.quarantined);
  }
  fputs("]}", f);
  return web_reply_json(r, 200, f);
}

/* ---- versions ---- */
struct vctx {
  FILE *f;
  int n;
};
static int version_row(void *ctx, const struct srv_version_row *v) {
  struct vctx *c = ctx;
  fputs(c->n++ ? ",{\"version\":" : "{\"version\":", c->f);
  cli_json_str(c->f, v->version);
  fprintf(c->f, ",\"snapshots\":%" PRIu64 ",\"devices\":%" PRIu64 "}", v->snapshots, v->devices);
  return 0;
}
static int versions(struct srv *s, struct web_req *r, const char *app) {
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  struct vctx c = {f, 0};
  fputs("{\"versions\":[", f);
  int rc = srv_store_versions(s->store, app, version_row, &c);
  fputs("]}", f);
  if (rc) {
    fclose(f);
    return store_err(r, rc);
  }
  return web_reply_json(r, 200, f);
}

/* ---- issues ---- */
/* srv_issues_get's answer (issues_cache.c: cached per query and the app's
 * generation; "pending":1 while a refresh runs; ?fresh=1 waits for it). */
static int issues(struct srv *s, struct web_req *r, const char *app) {
  struct srv_issues_query q = {arg(r, "version"), arg(r, "baseline"), -1, -1, 0};
  const char *kind = arg(r, "kind"), *status = arg(r, "status"), *floor = arg(r, "floor");
  if (kind && (q.kind = hg_fleet_kind_parse(kind)) < 0) return err(r, 400, "kind= takes retention, leak, site or large");
  if (status && (q.status = status_parse(status)) < 0) return err(r, 400, "status= takes new, regressed, fixed or ongoing");
  if (floor && cli_parse_u64(floor, &q.floor)) return err(r, 400, "floor= takes a byte count");
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  int rc = arg(r, "fresh") ? srv_issues_get_fresh(s->store, app, &q, to_file, f)
                           : srv_issues_get(s->store, app, &q, to_file, f);
  if (rc) {
    fclose(f);
    return rc == SRV_ENOTFOUND ? err(r, 404, "no snapshots of that version") : store_err(r, rc);
  }
  return web_reply_json(r, 200, f);
}

/* One issue: the object of the issues list, its history (the same issue's
 * figures in every version, each against the version below) and its
 * exemplars' records. */
struct detail {
  struct srv *s;
  struct web_req *r;
  const char *app, *version, *baseline;
  uint64_t hash;
  FILE *f;
  int hg_rc;
};

static int find_issue(const struct hg_fleet_issues *x, uint64_t hash) {
  for (uint32_t i = 0; i < x->count; i++)
    if (x->issues[i].hash == hash) return (int)i;
  return -1;
}

static int detail_fn(void *ctx, struct srv_fleet_set *set) {
  struct detail *d = ctx;
  const struct hg_fleet *fl = srv_fleet_of(set);
  /* every answer is remembered per generation of the app's summaries: the
   * history's (every version against the one below, all kinds) is the same
   * for every issue of the app */
  struct hg_fleet_query q = {d->version, d->baseline, -1, 0};
  const struct hg_fleet_issues *x = NULL;
  if ((d->hg_rc = srv_fleet_issues_memo(set, &q, &x))) return SRV_EERR;
  int i = find_issue(x, d->hash);
  if (i < 0) {
    d->hg_rc = HG_ENOTFOUND;
    return SRV_EERR;
  }
  const struct hg_fleet_issue *is = &x->issues[i];
  fputs("{\"issue\":", d->f);
  hg_fleet_issue_json(x, (uint32_t)i, to_file, d->f);
  fputs(",\"history\":[", d->f);
  uint32_t nv = hg_fleet_version_count(fl), shown = 0;
  for (uint32_t v = 0; v < nv; v++) { /* each version against the one below */
    struct hg_fleet_query qv = {hg_fleet_version(fl, v), v ? hg_fleet_version(fl, v - 1) : NULL, -1, 0};
    const struct hg_fleet_issues *y = NULL;
    if (srv_fleet_issues_memo(set, &qv, &y)) continue;
    int j = find_issue(y, d->hash);
    const struct hg_fleet_issue *iy = j >= 0 && y->issues[j].status != HG_FLEET_FIXED ? &y->issues[j] : NULL;
    fputs(shown++ ? ",{\"version\":" : "{\"version\":", d->f);
    cli_json_str(d->f, qv.version);
    fprintf(d->f, ",\"version_snapshots\":%" PRIu32 ",\"snapshots\":%" PRIu32 ",\"devices\":%" PRIu32
                  ",\"bytes_median\":%" PRIu64 ",\"bytes_p90\":%" PRIu64 ",\"bytes_max\":%" PRIu64 ",\"status\":",
            y->version_snapshots, iy ? iy->snapshots : 0, iy ? iy->devices : 0, iy ? iy->bytes_median : 0,
            iy ? iy->bytes_p90 : 0, iy ? iy->bytes_max : 0);
    cli_json_str(d->f, iy ? hg_fleet_status_name(iy->status) : NULL);
    fputc('}', d->f);
  }
  fputs("],\"exemplars\":[", d->f);
  for (uint32_t k = 0; k < is->exemplar_count; k++) {
    /* the worker names a summary after its blob: <id>-<size>.hgsnap */
    char id[SRV_ID_LEN + 1];
    snprintf(id, sizeof id, "%s", is->exemplars[k]);
    struct srv_snapshot sn;
    int ok = strlen(id) == SRV_ID_LEN && !srv_store_snapshot_get(d->s->store, d->app, id, &sn);
    fputs(k ? ",{\"snapshot\":" : "{\"snapshot\":", d->f);
    cli_json_str(d->f, is->exemplars[k]);
    fprintf(d->f, ",\"bytes\":%" PRIu64 ",\"id\":", is->exemplar_bytes[k]);
    cli_json_str(d->f, ok ? sn.id : NULL);
    fputs(",\"version\":", d->f);
    cli_json_str(d->f, ok ? sn.version : NULL);
    fputs(",\"device_model\":", d->f);
    cli_json_str(d->f, ok ? sn.device_model : NULL);
    fprintf(d->f, ",\"received\":%" PRId64 ",\"file_kept\":%s}", ok ? sn.received : 0,
            ok && sn.blob_kept ? "true" : "false");
  }
  fputs("]}", d->f);
  return 0;
}

static int issue(struct srv *s, struct web_req *r, const char *app, const char *sig) {
  char *end;
  struct detail d = {s, r, app, arg(r, "version"), arg(r, "baseline"), 0, NULL, 0};
  if (strlen(sig) != 16 || (d.hash = strtoull(sig, &end, 16), *end)) return err(r, 404, "no such issue");
  if (!(d.f = web_json_open(r))) return web_reply_text(r, 500, "out of memory\n");
  int rc = srv_fleet_with(s->store, app, detail_fn, &d);
  if (rc) return fleet_fail(r, d.f, d.hg_rc, rc, "no such issue in that version");
  return web_reply_json(r, 200, d.f);
}

/* ---- growth and the merged tree ---- */
struct gctx {
  const char *version, *baseline;
  uint32_t n;
  int tree;
  FILE *f;
  int hg_rc;
};
static int growth_fn(void *ctx, struct srv_fleet_set *set) {
  struct gctx *c = ctx;
  const struct hg_fleet *fl = srv_fleet_of(set);
  int rc;
  if (c->tree) {
    struct hg_fleet_tree *t = NULL;
    rc = hg_fleet_tree(fl, c->version, &t);
    if (!rc) rc = hg_fleet_tree_json(t, to_file, c->f);
    hg_fleet_tree_free(t);
  } else {
    struct hg_fleet_growth *g = NULL;
    rc = hg_fleet_class_growth(fl, c->version, c->baseline, &g);
    if (!rc) rc = hg_fleet_growth_json(g, c->n, to_file, c->f);
    hg_fleet_growth_free(g);
  }
  c->hg_rc = rc;
  return rc ? SRV_EERR : 0;
}
static int growth(struct srv *s, struct web_req *r, const char *app, int tree) {
  uint64_t n = 30;
  const char *ns = arg(r, "n");
  if (ns && cli_parse_u64(ns, &n)) return err(r, 400, "n= takes a count");
  struct gctx c = {arg(r, "version"), arg(r, "baseline"), n > 100000 ? 100000 : (uint32_t)n, tree, web_json_open(r), 0};
  if (!c.f) return web_reply_text(r, 500, "out of memory\n");
  int rc = srv_fleet_with(s->store, app, growth_fn, &c);
  if (rc) return fleet_fail(r, c.f, c.hg_rc, rc, "no snapshots of that version");
  return web_reply_json(r, 200, c.f);
}

/* ---- snapshots ---- */
static int snapshot(struct srv *s, struct web_req *r, const char *app, const char *id, const char *rest) {
  struct srv_snapshot sn;
  if (strlen(id) != SRV_ID_LEN || strspn(id, "0123456789abcdef") != SRV_ID_LEN) return err(r, 404, "no such snapshot");
  int rc = srv_store_snapshot_get(s->store, app, id, &sn);
  if (rc) return store_err(r, rc);
  if (!strncmp(rest, "/view", 5)) return srv_snap_view(s, r, app, id, rest + 5);
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  if (!strcmp(rest, "/summary")) {
    void *cbor = NULL;
    size_t len = 0;
    struct hg_fleet_summary *sum = NULL;
    struct hg_load_error le;
    rc = srv_store_summary_get(s->store, app, id, &cbor, &len);
    if (!rc) rc = hg_fleet_summary_decode(cbor, len, &sum, &le) ? SRV_EERR : 0;
    if (!rc) hg_fleet_summary_json(sum, to_file, f);
    hg_fleet_summary_free(sum);
    free(cbor);
    if (rc) {
      fclose(f);
      return store_err(r, rc);
    }
    return web_reply_json(r, 200, f);
  }
  if (*rest) {
    fclose(f);
    return err(r, 404, "not found");
  }
  fputs("{\"id\":", f);
  cli_json_str(f, sn.id);
  fputs(",\"version\":", f);
  cli_json_str(f, *sn.version ? sn.version : NULL);
  fputs(",\"device_model\":", f);
  cli_json_str(f, *sn.device_model ? sn.device_model : NULL);
  fprintf(f, ",\"size\":%" PRIu64 ",\"received\":%" PRId64 ",\"analysed\":%" PRId64 ",\"state\":\"%s\",\"attempts\":%d,\"reason\":",
          sn.size, sn.received, sn.analysed, srv_state_name(sn.state), sn.attempts);
  cli_json_str(f, *sn.reason ? sn.reason : NULL);
  fprintf(f, ",\"file_kept\":%s}", sn.blob_kept ? "true" : "false");
  return web_reply_json(r, 200, f);
}

int srv_read_route(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  struct srv *s = app;
  const char *p = web_path(r) + strlen("/v1/apps");
  if (!*p || !strcmp(p, "/")) return apps(s, r);
  if (*p != '/') return err(r, 404, "not found");
  /* /{app}/{what}[/{arg}[/rest]] */
  char name[SRV_APP_MAX], what[16], sub[SRV_ID_LEN + 8];
  size_t n = strcspn(++p, "/");
  if (!n || n >= sizeof name) return err(r, 404, "no such app");
  memcpy(name, p, n);
  name[n] = 0;
  if (srv_read_check(s, r, name)) return WEB_REPLIED;
  p += n;
  if (*p == '/') p++;
  n = strcspn(p, "/");
  if (n >= sizeof what) return err(r, 404, "not found");
  memcpy(what, p, n);
  what[n] = 0;
  p += n;
  const char *rest = "";
  sub[0] = 0;
  if (*p == '/') {
    n = strcspn(++p, "/");
    if (n >= sizeof sub) return err(r, 404, "not found");
    memcpy(sub, p, n);
    sub[n] = 0;
    rest = p + n;
  }
  if (!strcmp(what, "versions") && !*sub) return versions(s, r, name);
  if (!strcmp(what, "issues") && !*sub) return issues(s, r, name);
  if (!strcmp(what, "issues") && !*rest) return issue(s, r, name, sub);
  if (!strcmp(what, "growth") && !*sub) return growth(s, r, name, 0);
  if (!strcmp(what, "tree") && !*sub) return growth(s, r, name, 1);
  if (!strcmp(what, "snapshots") && *sub) return snapshot(s, r, name, sub, rest);
  return err(r, 404, "not found");
}
