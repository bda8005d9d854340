/*
 * session.c — who may read (docs/serve.md section 4): a read key as
 * `Authorization: Bearer` (API clients), or a browser session. POST /login
 * (with X-Hg-Login: 1, which no other site's form can send) takes a read
 * key once and sets an HttpOnly SameSite=Strict cookie
 * holding a random 128-bit session token; the table of sessions (token ->
 * apps, expiry) lives in memory (a restart logs browsers out). Tokens are
 * compared in constant time. Upload keys cannot read.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server/read.h"

#define SESSIONS 256
#define TOKEN_HEX 32

struct session {
  char token[TOKEN_HEX + 1];
  time_t expires;
  int napps;
  char apps[SRV_SESSION_APPS][SRV_APP_MAX];
};

static struct session table[SESSIONS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The app of a valid read key, or -1. */
static int key_app(struct srv *s, const char *key, char app[SRV_APP_MAX]) {
  char id[SRV_KEYID_MAX];
  const char *secret;
  struct srv_key k;
  if (!key || srv_key_parse(key, id, &secret) || srv_store_key_find(s->store, id, &k)) return -1;
  if (k.revoked || !k.read || !srv_key_verify(secret, k.hash)) return -1;
  snprintf(app, SRV_APP_MAX, "%s", k.app);
  return 0;
}

/* The live session of the request's cookie, or NULL (lock held). */
static struct session *find(struct web_req *r) {
  const char *c = web_cookie(r, SRV_SESSION_COOKIE);
  if (!c || strlen(c) != TOKEN_HEX) return NULL;
  time_t now = time(NULL);
  struct session *hit = NULL;
  for (int i = 0; i < SESSIONS; i++) /* no early exit: same time for every token */
    if (table[i].expires > now && web_same(c, table[i].token)) hit = &table[i];
  return hit;
}

int srv_read_apps(struct srv *s, struct web_req *r, char apps[][SRV_APP_MAX], int max) {
  const char *auth = web_header(r, "Authorization");
  if (auth) {
    if (max < 1 || key_app(s, srv_bearer(auth), apps[0])) return -1;
    return 1;
  }
  pthread_mutex_lock(&lock);
  struct session *se = find(r);
  int n = 0;
  for (; se && n < se->napps && n < max; n++) memcpy(apps[n], se->apps[n], SRV_APP_MAX);
  pthread_mutex_unlock(&lock);
  return n;
}

int srv_read_check(struct srv *s, struct web_req *r, const char *app) {
  char apps[SRV_SESSION_APPS][SRV_APP_MAX];
  int n = srv_read_apps(s, r, apps, SRV_SESSION_APPS);
  if (n <= 0) {
    web_add_header(r, "WWW-Authenticate", "Bearer");
    web_reply(r, 401, "application/json", "{\"error\":\"unauthorized\"}", 24);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (!strcmp(apps[i], app)) return 0;
  web_reply(r, 403, "application/json", "{\"error\":\"forbidden\"}", 21);
  return -1;
}

/* Adds app to the request's session, or makes a new one; fills token. */
static int session_add(struct web_req *r, const char *app, char token[TOKEN_HEX + 1]) {
  unsigned char rnd[TOKEN_HEX / 2];
  pthread_mutex_lock(&lock);
  struct session *se = find(r);
  if (!se) {
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
      pthread_mutex_unlock(&lock);
      return -1;
    }
    se = &table[0]; /* a free or expired slot, else the one expiring first */
    for (int i = 1; i < SESSIONS && se->expires > time(NULL); i++)
      if (table[i].expires < se->expires) se = &table[i];
    memset(se, 0, sizeof *se);
    for (size_t i = 0; i < sizeof rnd; i++) snprintf(se->token + 2 * i, 3, "%02x", rnd[i]);
  }
  se->expires = time(NULL) + SRV_SESSION_SECONDS;
  int have = 0;
  for (int i = 0; i < se->napps; i++) have |= !strcmp(se->apps[i], app);
  if (!have && se->napps < SRV_SESSION_APPS) snprintf(se->apps[se->napps++], SRV_APP_MAX, "%s", app);
  memcpy(token, se->token, TOKEN_HEX + 1);
  pthread_mutex_unlock(&lock);
  return 0;
}

#define LOGIN_BODY_MAX 512

struct login {
  size_t n;
  char body[LOGIN_BODY_MAX + 1];
};

/* GET /login?key=KEY (a link): never logs in by itself — another site
 * could send a browser there with its own key (login CSRF) — but opens the
 * dashboard's login form with the key filled in, in the address's fragment
 * (which no server or proxy log sees); the page drops it from the address
 * bar and the user's click posts it. Only a well-formed key is passed on. */
static int login_link(struct web_req *r, const char *key) {
  char id[SRV_KEYID_MAX], loc[SRV_KEY_MAX + 32];
  const char *secret;
  int ok = key && !srv_key_parse(key, id, &secret) && strlen(key) < SRV_KEY_MAX;
  for (const char *p = ok ? secret : ""; *p; p++) ok &= !!strchr("0123456789abcdef", *p);
  snprintf(loc, sizeof loc, "/#/login%s%s", ok ? "?key=" : "", ok ? key : "");
  web_add_header(r, "Location", loc);
  web_add_header(r, "Referrer-Policy", "no-referrer");
  return web_reply_text(r, 303, "log in on the page\n");
}

static int login_done(struct srv *s, struct web_req *r, const char *key) {
  char app[SRV_APP_MAX], token[TOKEN_HEX + 1], cookie[128], hdr[64];
  if (key_app(s, key, app)) return web_reply(r, 401, "application/json", "{\"error\":\"not a read key\"}", 26);
  if (session_add(r, app, token)) return web_reply_text(r, 500, "no random bytes\n");
  snprintf(cookie, sizeof cookie, SRV_SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", token,
           SRV_SESSION_SECONDS);
  web_add_header(r, "Set-Cookie", cookie);
  FILE *f = web_json_open(r);
  if (!f) return web_reply_text(r, 500, "out of memory\n");
  snprintf(hdr, sizeof hdr, "{\"app\":");
  fputs(hdr, f);
  fputc('"', f);
  for (const char *p = app; *p; p++) /* app names are checked by the store; escape anyway */
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if ((unsigned char)*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  fputs("\"}", f);
  return web_reply_json(r, 200, f);
}

int srv_login_route(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  struct srv *s = app;
  struct login *l = web_state(r);
  if (phase == WEB_DONE) {
    free(l);
    return WEB_REPLIED;
  }
  if (!strcmp(web_method(r), "GET") || !strcmp(web_method(r), "HEAD")) {
    if (phase != WEB_BEGIN) return WEB_REPLIED;
    return login_link(r, web_arg(r, "key"));
  }
  if (strcmp(web_method(r), "POST")) return web_reply_text(r, 405, "method not allowed\n");
  if (phase == WEB_BEGIN) {
    const char *x = web_header(r, "X-Hg-Login");
    if (!x || strcmp(x, "1")) return web_reply_text(r, 403, "forbidden: X-Hg-Login header missing\n");
    if (!(l = calloc(1, sizeof *l))) return web_reply_text(r, 500, "out of memory\n");
    web_set_state(r, l);
    return WEB_MORE;
  }
  if (phase == WEB_DATA) {
    if (l->n + size > LOGIN_BODY_MAX) return web_reply_text(r, 413, "too large\n");
    memcpy(l->body + l->n, data, size);
    l->n += size;
    return WEB_MORE;
  }
  l->body[l->n] = 0;
  while (l->n && (l->body[l->n - 1] == '\n' || l->body[l->n - 1] == '\r' || l->body[l->n - 1] == ' '))
    l->body[--l->n] = 0;
  return login_done(s, r, l->body);
}

int srv_logout_route(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)app, (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  pthread_mutex_lock(&lock);
  struct session *se = find(r);
  if (se) memset(se, 0, sizeof *se);
  pthread_mutex_unlock(&lock);
  web_add_header(r, "Set-Cookie", SRV_SESSION_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  web_add_header(r, "Location", "/");
  return web_reply_text(r, 303, "logged out\n");
}
