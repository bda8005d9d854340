/*
 * view_http.c — the viewer's routes on the shared HTTP layer (web/http.c):
 * /api/… answered by view_api, everything else from the page files built
 * into the binary. One thread answers in turn (the symbolizer is not
 * shared); every request needs the session token and a Host naming this
 * server (both checked by web/http.c).
 */
#include <stdlib.h>
#include <string.h>

#include "web/http.h"
#include "web/view.h"

struct view_server {
  struct web_server *w;
  const struct view *v;
};

static const char *query_arg(void *ctx, const char *key) { return web_arg(ctx, key); }

static int api(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  const struct view_server *s = app;
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  unsigned st = (unsigned)view_api(s->v, web_path(r) + 5, query_arg, r, f);
  return web_reply_json(r, st, f);
}

static int asset(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)app, (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  const struct view_asset *a = view_asset_find(web_path(r));
  if (!a) return web_reply_text(r, 404, "not found\n");
  return web_reply_static(r, 200, a->type, a->data, a->size);
}

static const struct web_route routes[] = {
    {"GET", "/api/", WEB_ROUTE_SESSION, api},
    {"GET", "/", WEB_ROUTE_SESSION, asset},
};

struct view_server *view_serve(const struct view *v, const char *host, unsigned port, char *url,
                               size_t url_size) {
  struct view_server *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->v = v;
  struct web_config cfg = {.name = "heapgraph view",
                           .host = host,
                           .port = port,
                           .routes = routes,
                           .route_count = sizeof routes / sizeof routes[0],
                           .app = s,
                           .session = 1,
                           .cookie_prefix = "hg_view_",
                           .host_check = 1};
  s->w = web_start(&cfg, url, url_size);
  if (!s->w) {
    free(s);
    return NULL;
  }
  return s;
}

void view_server_stop(struct view_server *s) {
  if (!s) return;
  web_stop(s->w);
  free(s);
}
