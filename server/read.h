/*
 * read.h — the read side of `heapgraph serve` (docs/serve.md section 4):
 * who may read (a read key as `Authorization: Bearer`, or a browser
 * session made by /login: session.c), the JSON API under /v1/apps/
 * (api_read.c), an exemplar snapshot opened in the snapshot viewer
 * (snap_view.c) and the dashboard's page files (dash_assets.c).
 * tools/cmd_serve.c puts SRV_READ_ROUTES after its own routes (the last
 * one, "/", catches every other GET).
 */
#ifndef HG_SERVER_READ_H
#define HG_SERVER_READ_H

#include <stddef.h>

#include "server/serve.h"
#include "web/http.h"

/* ---- session.c ---- */
#define SRV_SESSION_COOKIE "hg_serve_session"
#define SRV_SESSION_APPS 16      /* apps one browser session may read      */
#define SRV_SESSION_SECONDS (12 * 3600)
/* GET /login?key=K (sets the cookie, then 303 to the dashboard) and
 * POST /login with the key as the body and the header X-Hg-Login: 1 (what
 * the dashboard's login form sends; a cross-site form cannot add it).
 * A key of another app adds that app to the same session. */
int srv_login_route(void *app, struct web_req *r, int phase, const char *data, size_t size);
/* GET /logout: forgets the session. */
int srv_logout_route(void *app, struct web_req *r, int phase, const char *data, size_t size);
/* The apps the request may read: from its Bearer read key (one app) or
 * its session cookie. Fills apps (each SRV_APP_MAX) and returns how many;
 * 0 when neither; -1 when a Bearer key was given but is not a valid read
 * key (wrong, revoked, or an upload key). */
int srv_read_apps(struct srv *s, struct web_req *r, char apps[][SRV_APP_MAX], int max);
/* 0 when the request may read app; else it has answered 401 or 403. */
int srv_read_check(struct srv *s, struct web_req *r, const char *app);

/* ---- api_read.c: GET /v1/apps[/{app}/…] ---- */
int srv_read_route(void *app, struct web_req *r, int phase, const char *data, size_t size);

/* ---- snap_view.c: /v1/apps/{app}/snapshots/{id}/view/… (called by
 * api_read.c once the app is checked; rest = the path after "view") ---- */
int srv_snap_view(struct srv *s, struct web_req *r, const char *app, const char *id, const char *rest);
void srv_snap_view_close_all(void);

/* ---- dash_assets.c: the dashboard's page files ---- */
int srv_dash_route(void *app, struct web_req *r, int phase, const char *data, size_t size);

#define SRV_READ_ROUTES                                             \
  {"GET", "/v1/apps", 0, srv_read_route},                           \
  {NULL, "/login", WEB_ROUTE_EXACT, srv_login_route},               \
  {"GET", "/logout", WEB_ROUTE_EXACT, srv_logout_route},            \
  {"GET", "/", 0, srv_dash_route}

#endif
