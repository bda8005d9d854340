/*
 * http.c — the HTTP layer of `heapgraph view` and `heapgraph serve` (GNU
 * libmicrohttpd). Owns the listening socket (IPv4/IPv6, TLS through MHD's
 * GnuTLS), the limits every connection gets (idle timeout, header-size
 * limit, and a watchdog thread that shuts down connections whose headers or
 * whole request take longer than their deadline, so a client sending one
 * byte at a time cannot hold a thread), the Host check against DNS
 * rebinding, the session token (?token= once, then a SameSite=Strict
 * HttpOnly cookie), the security headers on every answer, routing and the
 * request-body phases handed to a route's handler.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "web/http.h"

/* A connection as the watchdog sees it. */
struct conn {
  struct conn *prev, *next;
  int fd;
  int in_request;     /* headers read, request not answered yet     */
  double since;       /* start of the current phase                 */
};

struct web_server {
  struct MHD_Daemon *d;
  struct web_config cfg;
  char token[33];
  char cookie[48];
  char host[64];      /* the address as given (for the Host check)  */
  int any_ip;         /* bound to a wildcard address                */
  size_t header_limit; /* request line + headers (cfg's, or 32 KiB)  */
  unsigned port;
  char *tls_cert, *tls_key;
  pthread_mutex_t lock;
  struct conn conns;  /* list head                                  */
  pthread_t watchdog;
  int watching, stopping;
};

#define WEB_MAX_EXTRA 6
struct web_req {
  struct web_server *s;
  struct MHD_Connection *c;
  const struct web_route *route;
  const char *method, *path;
  void *state;
  double start;
  int body;           /* handler asked for the body             */
  int replied;
  int heading;        /* in the headers' call (no body read yet) */
  struct MHD_Response *pending; /* an early answer held until the body is read */
  unsigned pending_status;
  int by_query;       /* session token came in the URL          */
  char *json_buf;
  size_t json_size;
  size_t extra_count;
  char *extra[WEB_MAX_EXTRA][2];
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int web_same(const char *a, const char *b) {
  size_t n = strlen(b), m = a ? strlen(a) : 0;
  unsigned diff = (unsigned)(n ^ m);
  for (size_t i = 0; i < n; i++) diff |= (unsigned)(unsigned char)b[i] ^ (i < m ? (unsigned char)a[i] : 0u);
  return a && !diff;
}

/* Host must be HOST:PORT for a loopback name, the bound address, or (when
 * bound to a wildcard) an IP literal: never a DNS name an attacker controls. */
static int host_ok(const struct web_server *s, const char *h) {
  if (!h) return 0;
  const char *colon = strrchr(h, ':');
  if (!colon || colon == h || strtoul(colon + 1, NULL, 10) != s->port) return 0;
  char port[16];
  snprintf(port, sizeof port, ":%u", s->port);
  if (strcmp(colon, port)) return 0;
  size_t n = (size_t)(colon - h);
  const char *ok[] = {"127.0.0.1", "localhost", "[::1]", s->host};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strlen(ok[i]) == n && !strncmp(h, ok[i], n)) return 1;
  if (!s->any_ip) return 0;
  if (h[0] == '[') return h[n - 1] == ']';
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789.", h[i])) return 0;
  return 1;
}

static void secure_headers(struct MHD_Response *r) {
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
}

/* An answer given before a request's body was read (a refusal: 401, 413,
 * 429 …) is held until the body has been read and discarded when the body
 * is at most WEB_DRAIN_MAX bytes: closing with unread bytes makes the
 * kernel reset the connection, and a client still sending (one that sent no
 * "Expect: 100-continue", as curl does not below 1 MiB) then loses the
 * answer. A larger body is answered at once, as before. */
#define WEB_DRAIN_MAX ((uint64_t)4 << 20)

static int body_to_drain(struct web_req *r) {
  if (!r->heading) return 0;
  const char *cl = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  char *end;
  unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
  return cl && *cl && !*end && n > 0 && n <= WEB_DRAIN_MAX;
}

static int queue(struct web_req *r, unsigned status, const char *type, struct MHD_Response *resp) {
  if (!resp) return WEB_CLOSE;
  MHD_add_response_header(resp, "Content-Type", type);
  secure_headers(resp);
  for (size_t i = 0; i < r->extra_count; i++) MHD_add_response_header(resp, r->extra[i][0], r->extra[i][1]);
  if (r->by_query) {
    char cookie[128];
    snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict", r->s->cookie, r->s->token);
    MHD_add_response_header(resp, "Set-Cookie", cookie);
  }
  r->replied = 1;
  if (body_to_drain(r)) {
    r->pending = resp;
    r->pending_status = status;
    return WEB_REPLIED;
  }
  enum MHD_Result ok = MHD_queue_response(r->c, status, resp);
  MHD_destroy_response(resp);
  return ok == MHD_YES ? WEB_REPLIED : WEB_CLOSE;
}

/* Queues the answer held by queue() once the body is read. */
static enum MHD_Result send_pending(struct web_req *r) {
  struct MHD_Response *resp = r->pending;
  r->pending = NULL;
  enum MHD_Result ok = MHD_queue_response(r->c, r->pending_status, resp);
  MHD_destroy_response(resp);
  return ok;
}

int web_reply(struct web_req *r, unsigned status, const char *type, const void *data, size_t size) {
  return queue(r, status, type, MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY));
}

int web_reply_static(struct web_req *r, unsigned status, const char *type, const void *data, size_t size) {
  return queue(r, status, type, MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_PERSISTENT));
}

int web_reply_text(struct web_req *r, unsigned status, const char *text) {
  return web_reply(r, status, "text/plain; charset=utf-8", text, strlen(text));
}

int web_reply_owned(struct web_req *r, unsigned status, const char *type, char *buf, size_t size) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(size, buf, MHD_RESPMEM_MUST_FREE);
  if (!resp) free(buf);
  return queue(r, status, type, resp);
}

FILE *web_json_open(struct web_req *r) {
  free(r->json_buf);
  r->json_buf = NULL;
  r->json_size = 0;
  return open_memstream(&r->json_buf, &r->json_size);
}

int web_reply_json(struct web_req *r, unsigned status, FILE *f) {
  return web_reply_stream(r, status, "application/json", f);
}

int web_reply_stream(struct web_req *r, unsigned status, const char *type, FILE *f) {
  if (fclose(f) || !r->json_buf) {
    free(r->json_buf);
    r->json_buf = NULL;
    return web_reply_text(r, 500, "out of memory\n");
  }
  char *buf = r->json_buf;
  r->json_buf = NULL;
  return web_reply_owned(r, status, type, buf, r->json_size);
}

int web_add_header(struct web_req *r, const char *name, const char *value) {
  if (r->extra_count == WEB_MAX_EXTRA) return -1;
  char *n = strdup(name), *v = strdup(value);
  if (!n || !v) {
    free(n);
    free(v);
    return -1;
  }
  r->extra[r->extra_count][0] = n;
  r->extra[r->extra_count++][1] = v;
  return 0;
}

const char *web_method(const struct web_req *r) { return r->method; }
const char *web_path(const struct web_req *r) { return r->path; }
void *web_state(const struct web_req *r) { return r->state; }
void web_set_state(struct web_req *r, void *state) { r->state = state; }
double web_elapsed(const struct web_req *r) { return now_s() - r->start; }
unsigned web_port(const struct web_server *s) { return s->port; }

const char *web_header(const struct web_req *r, const char *name) {
  return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}
const char *web_arg(const struct web_req *r, const char *key) {
  return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, key);
}
const char *web_cookie(const struct web_req *r, const char *name) {
  return MHD_lookup_connection_value(r->c, MHD_COOKIE_KIND, name);
}

static void req_free(struct web_req *r) {
  if (r->pending) MHD_destroy_response(r->pending); /* the body never ended */
  for (size_t i = 0; i < r->extra_count; i++) free(r->extra[i][0]), free(r->extra[i][1]);
  free(r->json_buf);
  free(r);
}

static struct conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? (struct conn *)ci->socket_context : NULL;
}

static void conn_phase(struct web_server *s, struct MHD_Connection *c, int in_request) {
  if (!s->watching) return;
  pthread_mutex_lock(&s->lock);
  struct conn *k = conn_of(c);
  if (k) {
    k->in_request = in_request;
    k->since = now_s();
  }
  pthread_mutex_unlock(&s->lock);
}

static const struct web_route *route_find(const struct web_server *s, const char *method, const char *url) {
  for (size_t i = 0; i < s->cfg.route_count; i++) {
    const struct web_route *rt = &s->cfg.routes[i];
    size_t n = strlen(rt->prefix);
    if (rt->flags & WEB_ROUTE_EXACT ? strcmp(url, rt->prefix) : strncmp(url, rt->prefix, n)) continue;
    if (rt->method && strcmp(rt->method, method) && !(!strcmp(rt->method, "GET") && !strcmp(method, "HEAD")))
      continue;
    return rt;
  }
  return NULL;
}

static enum MHD_Result result(int rc) { return rc == WEB_CLOSE ? MHD_NO : MHD_YES; }

/* Bytes of a request body read at once, on top of the header limit in each
 * connection's memory (larger reads, fewer system calls). */
#define BODY_BUFFER ((size_t)256 << 10)

static enum MHD_Result add_len(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4; /* "k: v\r\n", "k=v&" */
  return MHD_YES;
}

/* Bytes of the request line and headers as sent (near enough: the parsed
 * values plus their separators). A connection's memory holds headers and
 * the body buffer together, so the header limit is checked here. */
static size_t header_bytes(struct MHD_Connection *c, const char *method, const char *url) {
  size_t n = strlen(method) + strlen(url) + 12; /* " HTTP/1.1\r\n", "\r\n" */
  MHD_get_connection_values(c, MHD_HEADER_KIND, add_len, &n);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_len, &n);
  return n;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state) {
  (void)version;
  struct web_server *s = cls;
  struct web_req *r = *state;
  if (!r) { /* headers read */
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    *state = r;
    r->s = s;
    r->c = c;
    r->method = method;
    r->path = url;
    r->start = now_s();
    r->heading = 1; /* until this call returns */
    conn_phase(s, c, 1);
    if (header_bytes(c, method, url) > s->header_limit)
      return result(web_reply_text(r, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "request headers too large\n"));
    if (s->cfg.host_check && !host_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
      return result(web_reply_text(r, MHD_HTTP_FORBIDDEN, "forbidden: Host header does not name this server\n"));
    const struct web_route *rt = route_find(s, method, url);
    if (s->cfg.session && (!rt || rt->flags & WEB_ROUTE_SESSION)) {
      r->by_query = web_same(web_arg(r, "token"), s->token);
      if (!r->by_query && !web_same(web_cookie(r, s->cookie), s->token)) {
        char why[160];
        snprintf(why, sizeof why, "forbidden: open the URL `%s` printed (it carries the token)\n", s->cfg.name);
        return result(web_reply_text(r, MHD_HTTP_FORBIDDEN, why));
      }
    }
    if (!rt) {
      int known = 0;
      for (size_t i = 0; i < s->cfg.route_count; i++)
        known |= !strncmp(url, s->cfg.routes[i].prefix, strlen(s->cfg.routes[i].prefix));
      return result(known ? web_reply_text(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n")
                          : web_reply_text(r, MHD_HTTP_NOT_FOUND, "not found\n"));
    }
    r->route = rt;
    int rc = rt->fn(s->cfg.app, r, WEB_BEGIN, NULL, 0);
    if (rc == WEB_MORE) r->body = 1;
    return result(rc);
  }
  r->heading = 0;
  if (r->replied) { /* answered early: the rest of the body is discarded */
    if (*upload_size) {
      *upload_size = 0;
      return MHD_YES;
    }
    return r->pending ? send_pending(r) : MHD_YES; /* the body is all read */
  }
  if (!r->route || !r->body) { /* a body nobody asked for */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    int rc = r->route->fn(s->cfg.app, r, WEB_DATA, upload, n);
    return rc == WEB_MORE ? MHD_YES : result(rc);
  }
  int rc = r->route->fn(s->cfg.app, r, WEB_END, NULL, 0);
  if (rc == WEB_MORE && !r->replied) rc = web_reply_text(r, 500, "no answer\n");
  return result(rc);
}

static void completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode toe) {
  (void)toe;
  struct web_server *s = cls;
  struct web_req *r = *state;
  conn_phase(s, c, 0);
  if (!r) return;
  if (r->route) r->route->fn(s->cfg.app, r, WEB_DONE, NULL, 0);
  req_free(r);
  *state = NULL;
}

static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
  struct web_server *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn *k = calloc(1, sizeof *k);
    if (!k) return;
    k->fd = ci ? ci->connect_fd : -1;
    k->since = now_s();
    pthread_mutex_lock(&s->lock);
    k->next = s->conns.next;
    k->prev = &s->conns;
    s->conns.next->prev = k;
    s->conns.next = k;
    pthread_mutex_unlock(&s->lock);
    *socket_context = k;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
    struct conn *k = *socket_context;
    pthread_mutex_lock(&s->lock);
    k->prev->next = k->next;
    k->next->prev = k->prev;
    pthread_mutex_unlock(&s->lock);
    free(k);
    *socket_context = NULL;
  }
}

/* Once a second: a connection past its phase's deadline is shut down
 * (its thread then sees end of file and closes it). */
static void *watchdog(void *arg) {
  struct web_server *s = arg;
  for (;;) {
    struct timespec ts = {0, 250 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->lock);
    if (s->stopping) {
      pthread_mutex_unlock(&s->lock);
      return NULL;
    }
    double t = now_s();
    unsigned drops = 0;
    for (struct conn *k = s->conns.next; k != &s->conns; k = k->next) {
      unsigned limit = k->in_request ? s->cfg.request_timeout_s : s->cfg.header_timeout_s;
      if (limit && k->fd >= 0 && t - k->since > limit) {
        shutdown(k->fd, SHUT_RDWR);
        k->fd = -1;
        drops++;
      }
    }
    pthread_mutex_unlock(&s->lock);
    while (drops-- && s->cfg.dropped) s->cfg.dropped(s->cfg.app);
  }
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t size = 0, n;
  char chunk[4096];
  FILE *m = open_memstream(&buf, &size);
  while (m && (n = fread(chunk, 1, sizeof chunk, f)) > 0 && size < (1u << 20)) fwrite(chunk, 1, n, m);
  int bad = ferror(f);
  fclose(f);
  if (!m || fclose(m) || bad || size >= (1u << 20)) {
    free(buf);
    return NULL;
  }
  return buf;
}

static void server_free(struct web_server *s) {
  free(s->tls_cert);
  free(s->tls_key);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

struct web_server *web_start(const struct web_config *cfg, char *url, size_t url_size) {
  struct web_server *s = calloc(1, sizeof *s);
  struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)cfg->port)};
  unsigned char rnd[16];
  const char *host = cfg->host;
  if (!s) return NULL;
  s->cfg = *cfg;
  pthread_mutex_init(&s->lock, NULL);
  s->conns.next = s->conns.prev = &s->conns;
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  int v6 = strchr(host, ':') != NULL;
  if (strlen(host) + 3 > sizeof s->host ||
      (v6 ? inet_pton(AF_INET6, host, &a6.sin6_addr) : inet_pton(AF_INET, host, &a4.sin_addr)) != 1) {
    fprintf(stderr, "%s: --host needs an IP address, not '%s'\n", cfg->name, host);
    server_free(s);
    return NULL;
  }
  if (cfg->session) {
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
      fprintf(stderr, "%s: no random bytes for the token\n", cfg->name);
      server_free(s);
      return NULL;
    }
    for (int i = 0; i < 16; i++) snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
  }
  if (!!cfg->tls_cert != !!cfg->tls_key) {
    fprintf(stderr, "%s: --tls-cert and --tls-key go together\n", cfg->name);
    server_free(s);
    return NULL;
  }
  if (cfg->tls_cert && (!(s->tls_cert = slurp(cfg->tls_cert)) || !(s->tls_key = slurp(cfg->tls_key)))) {
    fprintf(stderr, "%s: cannot read %s\n", cfg->name, s->tls_cert ? cfg->tls_key : cfg->tls_cert);
    server_free(s);
    return NULL;
  }
  snprintf(s->host, sizeof s->host, v6 ? "[%s]" : "%s", host);
  s->any_ip = v6 ? IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr) : a4.sin_addr.s_addr == htonl(INADDR_ANY);
  s->header_limit = cfg->header_limit ? cfg->header_limit : (size_t)32768;
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0) | (s->tls_cert ? MHD_USE_TLS : 0);
  if (cfg->threads) flags = (flags & ~(unsigned)MHD_USE_AUTO_INTERNAL_THREAD) | MHD_USE_THREAD_PER_CONNECTION |
                            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
  struct MHD_OptionItem tls[] = {
      {s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
      {MHD_OPTION_END, 0, NULL},
  };
  s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                          v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4, MHD_OPTION_CONNECTION_TIMEOUT,
                          cfg->idle_timeout_s ? cfg->idle_timeout_s : 60u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                          s->header_limit + BODY_BUFFER,
                          MHD_OPTION_CONNECTION_LIMIT,
                          cfg->max_connections ? cfg->max_connections : 256u, MHD_OPTION_NOTIFY_COMPLETED,
                          completed, s, MHD_OPTION_NOTIFY_CONNECTION, notify_conn, s, MHD_OPTION_ARRAY, tls,
                          MHD_OPTION_END);
  if (!s->d) {
    fprintf(stderr, "%s: cannot listen on %s port %u%s\n", cfg->name, s->host, cfg->port,
            s->tls_cert ? " (or the TLS certificate/key is not usable)" : "");
    server_free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info ? info->port : cfg->port;
  snprintf(s->cookie, sizeof s->cookie, "%s%u", cfg->cookie_prefix ? cfg->cookie_prefix : "hg_", s->port);
  if (cfg->header_timeout_s || cfg->request_timeout_s) {
    s->watching = 1;
    if (pthread_create(&s->watchdog, NULL, watchdog, s)) s->watching = 0;
  }
  snprintf(url, url_size, "%s://%s:%u/%s%s", s->tls_cert ? "https" : "http", s->host, s->port,
           cfg->session ? "?token=" : "", cfg->session ? s->token : "");
  return s;
}

void web_block_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, set, NULL);
}

void web_stop(struct web_server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  if (s->watching) {
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->watchdog, NULL);
  }
  server_free(s);
}
