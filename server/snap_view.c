/*
 * snap_view.c — an exemplar "opened": the snapshot viewer of `heapgraph
 * view` (web/view_*.c, viewer/) on a stored snapshot, under
 * /v1/apps/{app}/snapshots/{id}/view/ (the page's own files and its
 * /api/… relative to that). The viewer's analyses are computed once per
 * snapshot; the last VIEWS opened stay in memory. One lock serialises every
 * viewer answer (the viewer's state and symbolizer are single-threaded).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/read.h"
#include "web/view.h"

#define VIEWS 2

struct open_view {
  char id[SRV_ID_LEN + 1];
  unsigned long used;
  struct view v;
};

static struct open_view views[VIEWS];
static unsigned long clock_;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const char *query_arg(void *ctx, const char *key) { return web_arg(ctx, key); }

/* The view of snapshot id, opened from its blob when needed (lock held). */
static struct view *get(struct srv *s, const struct srv_snapshot *sn) {
  struct open_view *slot = &views[0];
  for (int i = 0; i < VIEWS; i++) {
    if (views[i].used && !strcmp(views[i].id, sn->id)) {
      views[i].used = ++clock_;
      return &views[i].v;
    }
    if (views[i].used < slot->used) slot = &views[i];
  }
  if (slot->used) {
    char *old = (char *)slot->v.path;
    view_close(&slot->v);
    free(old);
  }
  memset(slot, 0, sizeof *slot);
  char *path = malloc(strlen(s->data_dir) + strlen(sn->blob) + 2);
  if (!path) return NULL;
  sprintf(path, "%s/%s", s->data_dir, sn->blob);
  if (view_open(&slot->v, path, NULL)) {
    free(path);
    memset(slot, 0, sizeof *slot);
    return NULL;
  }
  /* the answers name the snapshot by its id, not by where the server keeps it */
  char *name = malloc(strlen(sn->app) + SRV_ID_LEN + 2);
  if (name) {
    sprintf(name, "%s/%s", sn->app, sn->id);
    free(path);
    slot->v.path = name;
  }
  snprintf(slot->id, sizeof slot->id, "%s", sn->id);
  slot->used = ++clock_;
  return &slot->v;
}

int srv_snap_view(struct srv *s, struct web_req *r, const char *app, const char *id, const char *rest) {
  struct srv_snapshot sn;
  int rc = srv_store_snapshot_get(s->store, app, id, &sn);
  if (rc) return web_reply_text(r, rc == SRV_ENOTFOUND ? 404 : 503, "no such snapshot\n");
  if (!sn.blob_kept) return web_reply_text(r, 410, "the snapshot's file is no longer kept (retention)\n");
  if (!*rest) { /* the page's relative URLs need the trailing slash */
    char loc[SRV_APP_MAX * 3 + 64];
    snprintf(loc, sizeof loc, "%s/", web_path(r));
    web_add_header(r, "Location", loc);
    return web_reply_text(r, 303, "see the viewer\n");
  }
  if (strncmp(rest, "/api/", 5)) {
    const struct view_asset *a = view_asset_find(rest);
    if (!a) return web_reply_text(r, 404, "not found\n");
    return web_reply_static(r, 200, a->type, a->data, a->size);
  }
  pthread_mutex_lock(&lock);
  struct view *v = get(s, &sn);
  if (!v) {
    pthread_mutex_unlock(&lock);
    return web_reply_text(r, 500, "the snapshot could not be opened\n");
  }
  FILE *f = web_json_open(r);
  unsigned st = f ? (unsigned)view_api(v, rest + 5, query_arg, r, f) : 500;
  pthread_mutex_unlock(&lock);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  return web_reply_json(r, st, f);
}

void srv_snap_view_close_all(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < VIEWS; i++) {
    if (views[i].used) {
      char *p = (char *)views[i].v.path;
      view_close(&views[i].v);
      free(p);
    }
    memset(&views[i], 0, sizeof views[i]);
  }
  pthread_mutex_unlock(&lock);
}
