/*
 * view_http.c — the viewer's HTTP server (GNU libmicrohttpd, one internal
 * polling thread, so requests are answered one at a time). Owns the access
 * rules: every request must carry the random token (?token= in the URL the
 * command prints, then a SameSite=Strict cookie the server sets), the Host
 * header must name this server (DNS rebinding), only the page files built
 * into the binary and /api/… are served, and every answer forbids framing,
 * sniffing, referrers and any script or connection not from this origin.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "tools/view.h"

struct view_server {
  struct MHD_Daemon *d;
  const struct view *v;
  char token[33];
  char cookie[32];       /* cookie name: hg_view_PORT                          */
  char host[64];         /* the address as given (for the Host check)          */
  int any_ip;            /* bound to a wildcard address: any IP literal Host   */
  unsigned port;
};

static int same(const char *a, const char *b) { /* constant time in b's length */
  size_t n = strlen(b), m = a ? strlen(a) : 0;
  unsigned diff = (unsigned)(n ^ m);
  for (size_t i = 0; i < n; i++) diff |= (unsigned)(unsigned char)b[i] ^ (i < m ? (unsigned char)a[i] : 0u);
  return a && !diff;
}

/* Host must be HOST:PORT for a loopback name, the bound address, or (when
 * bound to a wildcard) an IP literal: never a DNS name an attacker controls. */
static int host_ok(const struct view_server *s, const char *h) {
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

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, void *data,
                             size_t size, enum MHD_ResponseMemoryMode mode, const char *cookie) {
  struct MHD_Response *r = MHD_create_response_from_buffer(size, data, mode);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  secure_headers(r);
  if (cookie) MHD_add_response_header(r, "Set-Cookie", cookie);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *why) {
  return reply(c, status, "text/plain; charset=utf-8", (void *)why, strlen(why), MHD_RESPMEM_PERSISTENT, NULL);
}

static const char *query_arg(void *ctx, const char *key) {
  return MHD_lookup_connection_value((struct MHD_Connection *)ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state) {
  (void)version, (void)upload, (void)upload_size, (void)state;
  struct view_server *s = cls;
  if (!host_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
    return refuse(c, MHD_HTTP_FORBIDDEN, "forbidden: Host header does not name this server\n");
  const char *qt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
  int by_query = same(qt, s->token);
  if (!by_query && !same(MHD_lookup_connection_value(c, MHD_COOKIE_KIND, s->cookie), s->token))
    return refuse(c, MHD_HTTP_FORBIDDEN, "forbidden: open the URL `heapgraph view` printed (it carries the token)\n");
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
  char cookie[128];
  snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict", s->cookie, s->token);
  if (!strncmp(url, "/api/", 5)) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    unsigned st = (unsigned)view_api(s->v, url + 5, query_arg, c, f);
    if (fclose(f) || !buf) {
      free(buf);
      return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    return reply(c, st, "application/json", buf, size, MHD_RESPMEM_MUST_FREE, by_query ? cookie : NULL);
  }
  const struct view_asset *a = view_asset_find(url);
  if (!a) return refuse(c, MHD_HTTP_NOT_FOUND, "not found\n");
  return reply(c, MHD_HTTP_OK, a->type, (void *)a->data, a->size, MHD_RESPMEM_PERSISTENT,
               by_query ? cookie : NULL);
}

struct view_server *view_serve(const struct view *v, const char *host, unsigned port, char *url,
                               size_t url_size) {
  struct view_server *s = calloc(1, sizeof *s);
  struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
  unsigned char rnd[16];
  if (!s) return NULL;
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  int v6 = strchr(host, ':') != NULL;
  if (strlen(host) + 3 > sizeof s->host ||
      (v6 ? inet_pton(AF_INET6, host, &a6.sin6_addr) : inet_pton(AF_INET, host, &a4.sin_addr)) != 1) {
    fprintf(stderr, "heapgraph view: --host needs an IP address, not '%s'\n", host);
    free(s);
    return NULL;
  }
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    fprintf(stderr, "heapgraph view: no random bytes for the token\n");
    free(s);
    return NULL;
  }
  for (int i = 0; i < 16; i++) snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
  snprintf(s->host, sizeof s->host, v6 ? "[%s]" : "%s", host);
  s->any_ip = v6 ? IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr) : a4.sin_addr.s_addr == htonl(INADDR_ANY);
  s->v = v;
  s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0), (uint16_t)port, NULL, NULL,
                          handle, s, MHD_OPTION_SOCK_ADDR, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
  if (!s->d) {
    fprintf(stderr, "heapgraph view: cannot listen on %s port %u\n", s->host, port);
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info ? info->port : port;
  snprintf(s->cookie, sizeof s->cookie, "hg_view_%u", s->port);
  snprintf(url, url_size, "http://%s:%u/?token=%s", s->host, s->port, s->token);
  return s;
}

void view_server_stop(struct view_server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
