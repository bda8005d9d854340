/*
 * limits.c — the per-key upload rate limit of `heapgraph serve`: a token
 * bucket per key id (refilled at per_minute / 60 per second, holding at
 * most per_minute), in a fixed table of 1024 buckets (the least recently
 * used one is reused), so hostile key ids cannot grow it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/serve.h"

#define BUCKETS 1024

struct bucket {
  char key_id[SRV_KEYID_MAX];
  double tokens, at;
};

struct srv_limiter {
  pthread_mutex_t lock;
  struct bucket b[BUCKETS];
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct srv_limiter *srv_limiter_new(void) {
  struct srv_limiter *l = calloc(1, sizeof *l);
  if (l) pthread_mutex_init(&l->lock, NULL);
  return l;
}

void srv_limiter_free(struct srv_limiter *l) {
  if (!l) return;
  pthread_mutex_destroy(&l->lock);
  free(l);
}

unsigned srv_limiter_take(struct srv_limiter *l, const char *key_id, int64_t per_minute) {
  if (per_minute <= 0) return 0;
  double rate = (double)per_minute / 60.0, t = now_s(), cap = (double)per_minute;
  pthread_mutex_lock(&l->lock);
  struct bucket *b = NULL, *old = &l->b[0];
  for (int i = 0; i < BUCKETS && !b; i++) {
    if (!strcmp(l->b[i].key_id, key_id)) b = &l->b[i];
    else if (l->b[i].at < old->at) old = &l->b[i];
  }
  if (!b) {
    b = old;
    snprintf(b->key_id, sizeof b->key_id, "%s", key_id);
    b->tokens = cap;
    b->at = t;
  }
  b->tokens += (t - b->at) * rate;
  if (b->tokens > cap) b->tokens = cap;
  b->at = t;
  unsigned wait = 0;
  if (b->tokens >= 1.0)
    b->tokens -= 1.0;
  else
    wait = (unsigned)((1.0 - b->tokens) / rate) + 1;
  pthread_mutex_unlock(&l->lock);
  return wait;
}
