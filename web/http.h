/*
 * http.h — the HTTP layer shared by `heapgraph view` and `heapgraph serve`
 * (GNU libmicrohttpd): listening (IPv4/IPv6, port 0, optional TLS), the
 * connection, header and request deadlines, the header-size limit, the
 * Host check (DNS rebinding), the security headers on every answer, the
 * token -> cookie browser session, a routing table, reply helpers and a
 * streaming request body for uploads.
 */
#ifndef HG_WEB_HTTP_H
#define HG_WEB_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct web_server;
struct web_req;

/* Handler phases. A route's handler is called once with WEB_BEGIN (the
 * headers are read); a handler that wants the body returns WEB_MORE and is
 * then called with WEB_DATA for each piece of it and once with WEB_END.
 * Every other return ends the request: the handler has queued an answer
 * with one of the web_reply* calls (or it returns WEB_CLOSE to drop the
 * connection). WEB_DONE is called once for every request whose handler
 * ran, when the connection is finished with it (answer sent, client gone
 * or timed out): the place to free per-request state. */
enum { WEB_BEGIN, WEB_DATA, WEB_END, WEB_DONE };
enum { WEB_REPLIED = 0, WEB_MORE = 1, WEB_CLOSE = 2 };

typedef int (*web_fn)(void *app, struct web_req *r, int phase, const char *data, size_t size);

enum {
  WEB_ROUTE_SESSION = 1, /* needs the session token (?token= or the cookie)   */
  WEB_ROUTE_EXACT = 2    /* path must equal prefix (else: starts with it)     */
};

struct web_route {
  const char *method; /* "GET" (HEAD too), "POST"; NULL: any             */
  const char *prefix;
  unsigned flags;
  web_fn fn;
};

struct web_config {
  const char *name;        /* for messages: "heapgraph view"                 */
  const char *host;        /* IP literal or "localhost"                      */
  unsigned port;           /* 0: chosen by the OS                            */
  const char *tls_cert, *tls_key; /* PEM files; both or neither              */
  const struct web_route *routes;
  size_t route_count;
  void *app;               /* handed to every handler                        */
  int session;             /* make a random session token (view)             */
  const char *cookie_prefix; /* session cookie name = prefix + port           */
  int threads;             /* 0: one thread answers in turn; else a thread
                              per connection                                 */
  unsigned max_connections;
  unsigned idle_timeout_s; /* no byte for that long: dropped (0: 60)          */
  unsigned header_timeout_s; /* headers not complete after that: dropped (0: off) */
  unsigned request_timeout_s; /* request not answered after that: dropped (0: off) */
  size_t header_limit;     /* bytes for request line + headers (0: 32 KiB)    */
  int host_check;          /* refuse a Host that is not this server's        */
  void (*dropped)(void *app); /* a connection dropped by a deadline          */
};

/* Starts the server; fills url ("http[s]://host:port/", plus "?token=…" with
 * a session). NULL on failure (reason on stderr). */
struct web_server *web_start(const struct web_config *cfg, char *url, size_t url_size);
void web_stop(struct web_server *s);
/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (call it before
 * any thread starts, so they inherit it) and fills set for sigwait. */
void web_block_signals(sigset_t *set);
unsigned web_port(const struct web_server *s);

/* Request. */
const char *web_method(const struct web_req *r);
const char *web_path(const struct web_req *r);
const char *web_header(const struct web_req *r, const char *name);
const char *web_arg(const struct web_req *r, const char *key);
const char *web_cookie(const struct web_req *r, const char *name);
void *web_state(const struct web_req *r);
void web_set_state(struct web_req *r, void *state);
/* Seconds since the request started (its first byte). */
double web_elapsed(const struct web_req *r);
/* Constant time in b's length; 0 when a is NULL. */
int web_same(const char *a, const char *b);

/* Answers. Extra headers (Retry-After, Set-Cookie, …) are added before the
 * reply call and go out with it. */
int web_add_header(struct web_req *r, const char *name, const char *value);
int web_reply(struct web_req *r, unsigned status, const char *type, const void *data, size_t size);
int web_reply_text(struct web_req *r, unsigned status, const char *text);
/* Takes buf (malloc'd, e.g. from open_memstream). */
int web_reply_owned(struct web_req *r, unsigned status, const char *type, char *buf, size_t size);
/* Static data that outlives the server (built-in page files). */
int web_reply_static(struct web_req *r, unsigned status, const char *type, const void *data, size_t size);
/* JSON from a FILE* memstream: f was opened by web_json_open. */
FILE *web_json_open(struct web_req *r);
int web_reply_json(struct web_req *r, unsigned status, FILE *f);
/* The same with another Content-Type. */
int web_reply_stream(struct web_req *r, unsigned status, const char *type, FILE *f);

#endif
