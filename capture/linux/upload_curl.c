/*
 * upload_curl.c — hg_upload_next on Linux: POSTs the spool's next file with
 * libcurl. libcurl is loaded with dlopen("libcurl.so.4") on first use, so
 * libheapgraph has no link dependency on it (a program that never uploads,
 * and the glibc matrix roots, need no libcurl; without it the call is
 * HG_EUNSUPPORTED). TLS is verified (CURLOPT_SSL_VERIFYPEER/HOST) unless
 * the options say insecure; HTTP/2 over TLS where the server offers it; only
 * http and https; no redirects; no signals (CURLOPT_NOSIGNAL: it runs on a
 * background thread of someone else's process); bounded time and send rate.
 * One uploader per spool at a time (flock of DIR/.upload, not blocking).
 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "capture/spool.h"
#include "capture/upload.h"

static struct {
  CURL *(*init)(void);
  CURLcode (*setopt)(CURL *, CURLoption, ...);
  CURLcode (*perform)(CURL *);
  CURLcode (*getinfo)(CURL *, CURLINFO, ...);
  void (*cleanup)(CURL *);
  struct curl_slist *(*append)(struct curl_slist *, const char *);
  void (*slist_free)(struct curl_slist *);
  const char *(*strerror)(CURLcode);
  CURLcode (*global_init)(long);
  int ok;
} C;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void load_curl(void) {
  void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
#define SYM(field, name) *(void **)(&C.field) = dlsym(h, name)
  SYM(init, "curl_easy_init");
  SYM(setopt, "curl_easy_setopt");
  SYM(perform, "curl_easy_perform");
  SYM(getinfo, "curl_easy_getinfo");
  SYM(cleanup, "curl_easy_cleanup");
  SYM(append, "curl_slist_append");
  SYM(slist_free, "curl_slist_free_all");
  SYM(strerror, "curl_easy_strerror");
  SYM(global_init, "curl_global_init");
#undef SYM
  C.ok = C.init && C.setopt && C.perform && C.getinfo && C.cleanup && C.append && C.slist_free && C.strerror &&
         C.global_init && C.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

struct xfer {
  int fd;
  uint32_t retry_after;
  char body[256];
  size_t body_len;
};

static size_t on_read(char *buf, size_t size, size_t n, void *ud) {
  struct xfer *x = ud;
  ssize_t k;
  while ((k = read(x->fd, buf, size * n)) < 0 && errno == EINTR) {
  }
  return k < 0 ? CURL_READFUNC_ABORT : (size_t)k;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
  struct xfer *x = ud;
  uint32_t ra = _hg_retry_after(buf, size * n);
  if (ra) x->retry_after = ra;
  return size * n;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud) {
  struct xfer *x = ud;
  size_t k = size * n, room = sizeof x->body - 1 - x->body_len;
  memcpy(x->body + x->body_len, buf, k < room ? k : room);
  x->body_len += k < room ? k : room;
  x->body[x->body_len] = 0;
  return k; /* the rest is read and ignored: the answer is bounded here */
}

int hg_upload_next(struct hg_spool *s, const char *url, const char *key, const struct hg_upload_options *o,
                   struct hg_upload_result *r) {
  if (!s || !url || !r || (o && o->version != HG_UPLOAD_OPTIONS_VERSION)) return HG_EINVAL;
  if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) return HG_EINVAL;
  memset(r, 0, sizeof *r);
  struct hg_upload_options def;
  if (!o) {
    hg_upload_options_init(&def);
    o = &def;
  }
  pthread_once(&curl_once, load_curl);
  if (!C.ok) return HG_EUNSUPPORTED;

  char lp[4200];
  if (snprintf(lp, sizeof lp, "%s/.upload", hg_spool_dir(s)) >= (int)sizeof lp) return HG_ELIMIT;
  int lock = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return HG_EIO;
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) { /* another process is uploading */
    close(lock);
    r->action = HG_UPLOAD_WAIT;
    r->wait_ms = 1000;
    return 0;
  }
  struct hg_upload_item it;
  uint64_t wait = 0;
  int rc = hg_upload_peek(s, &it, &wait);
  if (rc == HG_ENOTFOUND || rc == HG_EBUSY) {
    r->action = rc == HG_EBUSY ? HG_UPLOAD_WAIT : HG_UPLOAD_EMPTY;
    r->wait_ms = wait;
    close(lock);
    return 0;
  }
  if (rc) {
    close(lock);
    return rc;
  }
  snprintf(r->name, sizeof r->name, "%s", it.name);
  struct xfer x = {.fd = open(it.path, O_RDONLY | O_CLOEXEC)};
  if (x.fd < 0) { /* trimmed away meanwhile */
    close(lock);
    r->action = HG_UPLOAD_EMPTY;
    return 0;
  }
  CURL *c = C.init();
  struct curl_slist *h = NULL;
  char line[300];
  for (uint32_t i = 0; i < it.header_count; i++) h = C.append(h, it.headers[i]);
  if (key && *key) {
    snprintf(line, sizeof line, "Authorization: Bearer %.256s", key);
    h = C.append(h, line);
  }
  h = C.append(h, "Expect:"); /* no 100-continue round trip */
  long status = 0;
  CURLcode cc = CURLE_FAILED_INIT;
  if (c && h) {
    C.setopt(c, CURLOPT_URL, url);
    C.setopt(c, CURLOPT_POST, 1L);
    C.setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it.bytes);
    C.setopt(c, CURLOPT_READFUNCTION, on_read);
    C.setopt(c, CURLOPT_READDATA, &x);
    C.setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    C.setopt(c, CURLOPT_HEADERDATA, &x);
    C.setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    C.setopt(c, CURLOPT_WRITEDATA, &x);
    C.setopt(c, CURLOPT_HTTPHEADER, h);
    C.setopt(c, CURLOPT_NOSIGNAL, 1L);
    C.setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the bitmask option is deprecated */
    C.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else /* Debian 11's 7.74 */
    C.setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    C.setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    C.setopt(c, CURLOPT_SSL_VERIFYPEER, o->insecure ? 0L : 1L);
    C.setopt(c, CURLOPT_SSL_VERIFYHOST, o->insecure ? 0L : 2L);
    C.setopt(c, CURLOPT_TIMEOUT_MS, (long)(o->timeout_ms ? o->timeout_ms : 120000));
    C.setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 15000L);
    if (o->max_bytes_per_s) C.setopt(c, CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)o->max_bytes_per_s);
    cc = C.perform(c);
    if (cc == CURLE_OK) C.getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  }
  if (c) C.cleanup(c);
  if (h) C.slist_free(h);
  close(x.fd);
  const char *msg = cc == CURLE_OK ? x.body : C.strerror(cc);
  r->http_status = (int)status;
  snprintf(r->message, sizeof r->message, "%s", msg);
  r->action = _hg_upload_settle(s, &it, (int)status, x.retry_after, msg, &r->wait_ms);
  close(lock);
  return r->action < 0 ? r->action : 0;
}
