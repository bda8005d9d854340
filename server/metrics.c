/*
 * metrics.c — what `heapgraph serve` counts and logs: one outcome per
 * upload request, counted per app (heapgraph_serve_requests_total{app,
 * outcome} in the Prometheus text format, GET /metrics) and written as one
 * log line (time, app, key id, outcome, status, bytes, seconds, reason);
 * connections cut by a deadline before a request (heapgraph_serve_
 * connections_dropped_total). App names come from the key store, never
 * from the request; they are escaped for both formats anyway.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/serve.h"

static const char *const names[SRV_OUTCOMES] = {
    "accepted", "duplicate", "too_large", "rate_limited", "invalid", "unauthorized", "server_error",
    "unavailable", "insufficient_storage", "aborted"};

const char *srv_outcome_name(int o) { return o >= 0 && o < SRV_OUTCOMES ? names[o] : "server_error"; }

struct app_count {
  char app[SRV_APP_MAX];
  uint64_t n[SRV_OUTCOMES];
};

struct srv_metrics {
  pthread_mutex_t lock;
  FILE *log;
  struct app_count *apps;
  size_t count, cap;
  uint64_t dropped;
};

struct srv_metrics *srv_metrics_new(FILE *log) {
  struct srv_metrics *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  pthread_mutex_init(&m->lock, NULL);
  m->log = log;
  return m;
}

void srv_metrics_free(struct srv_metrics *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->lock);
  free(m->apps);
  free(m);
}

/* Printable ASCII only; quote and backslash escaped. */
static void escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\x%02x", *p);
    else
      fputc(*p, f);
  }
}

void srv_metrics_count(struct srv_metrics *m, const char *app, int outcome, unsigned status,
                       const char *key_id, uint64_t bytes, double seconds, const char *reason) {
  if (outcome < 0 || outcome >= SRV_OUTCOMES) outcome = SRV_SERVER_ERROR;
  if (!app || !*app) app = "-";
  pthread_mutex_lock(&m->lock);
  size_t i = 0;
  while (i < m->count && strcmp(m->apps[i].app, app)) i++;
  if (i == m->count && m->count == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    struct app_count *a = realloc(m->apps, cap * sizeof *a);
    if (a) m->apps = a, m->cap = cap;
  }
  if (i == m->count && m->count < m->cap) {
    memset(&m->apps[i], 0, sizeof m->apps[i]);
    snprintf(m->apps[i].app, sizeof m->apps[i].app, "%s", app);
    m->count++;
  }
  if (i < m->count) m->apps[i].n[outcome]++;
  if (m->log) {
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    fprintf(m->log, "%s intake app=\"", when);
    escaped(m->log, app);
    fprintf(m->log, "\" key=%s outcome=%s status=%u bytes=%llu seconds=%.3f reason=\"", key_id && *key_id ? key_id : "-",
            names[outcome], status, (unsigned long long)bytes, seconds);
    escaped(m->log, reason ? reason : "");
    fputs("\"\n", m->log);
    fflush(m->log);
  }
  pthread_mutex_unlock(&m->lock);
}

void srv_metrics_dropped(struct srv_metrics *m) {
  pthread_mutex_lock(&m->lock);
  m->dropped++;
  pthread_mutex_unlock(&m->lock);
}

void srv_metrics_write(struct srv_metrics *m, FILE *f) {
  pthread_mutex_lock(&m->lock);
  fputs("# HELP heapgraph_serve_requests_total Upload requests by app and outcome.\n"
        "# TYPE heapgraph_serve_requests_total counter\n",
        f);
  for (size_t i = 0; i < m->count; i++)
    for (int o = 0; o < SRV_OUTCOMES; o++) {
      fputs("heapgraph_serve_requests_total{app=\"", f);
      escaped(f, m->apps[i].app);
      fprintf(f, "\",outcome=\"%s\"} %llu\n", names[o], (unsigned long long)m->apps[i].n[o]);
    }
  fprintf(f,
          "# HELP heapgraph_serve_connections_dropped_total Connections cut by the header or request deadline.\n"
          "# TYPE heapgraph_serve_connections_dropped_total counter\n"
          "heapgraph_serve_connections_dropped_total %llu\n",
          (unsigned long long)m->dropped);
  pthread_mutex_unlock(&m->lock);
}
