/* server/issues_cache.c — the issues of an app, answered fast
 * (srv_issues_get, server/store.h): per app, the fleet set (hg_fleet) kept
 * in memory and brought up to date incrementally (only summaries with a
 * higher seq are read, decoded and added), and per (app, query) the JSON
 * answer with the app's generation it was computed at. A fresh entry is
 * written as is; a stale one is written with "pending":1 while one
 * background thread per app recomputes the app's stale entries; a missing
 * one is computed in the caller. The objects are those of
 * `heapgraph fleet --json` (hg_fleet_issue_json). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "server/store_priv.h"

#define MAX_ENTRIES 64

struct entry {
  struct entry *next;
  char *version, *baseline;  /* as asked (NULL: default)                */
  int kind, status;
  uint64_t floor;
  int64_t gen;               /* generation the answer was computed at    */
  char *body;                /* {"version"… "issues":[…]  (no closing)  */
  size_t len;
};

/* A remembered hg_fleet_issues answer (srv_fleet_issues_memo). */
struct memo {
  struct memo *next;
  char *version, *baseline;
  int kind;
  uint64_t floor;
  struct hg_fleet_issues *r;
};

struct srv_fleet_set {
  struct srv_fleet_set *next;
  struct memo *memo;         /* under fmu; valid for memo_gen            */
  unsigned memo_n;
  int64_t memo_gen;
  char app[SRV_APP_MAX];
  pthread_mutex_t fmu;       /* the set and its computation             */
  struct hg_fleet *f;
  int64_t last_seq, loaded_gen;
  uint64_t bad;              /* summaries that did not decode           */
  struct entry *entries;     /* under the cache's mu                    */
  int refreshing;
};

struct srv_issues_cache {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int threads;
  struct srv_fleet_set *apps;
};

struct srv_issues_cache *_srv_issues_cache_new(void) {
  struct srv_issues_cache *ic = calloc(1, sizeof *ic);
  if (!ic) return NULL;
  pthread_mutex_init(&ic->mu, NULL);
  pthread_cond_init(&ic->cv, NULL);
  return ic;
}

static void entry_free(struct entry *e) {
  if (!e) return;
  free(e->version);
  free(e->baseline);
  free(e->body);
  free(e);
}

static void memo_free(struct memo *m) {
  free(m->version);
  free(m->baseline);
  hg_fleet_issues_free(m->r);
  free(m);
}

/* Keeps the SRV_FLEET_MEMO most recent answers (caller holds a->fmu). */
static void memo_trim(struct srv_fleet_set *a) {
  if (a->memo_n <= SRV_FLEET_MEMO) return;
  struct memo *m = a->memo;
  for (unsigned i = 1; i < SRV_FLEET_MEMO; i++) m = m->next;
  for (struct memo *k = m->next, *kn; k; k = kn) {
    kn = k->next;
    memo_free(k);
  }
  m->next = NULL;
  a->memo_n = SRV_FLEET_MEMO;
}

static void memo_clear(struct srv_fleet_set *a) {
  for (struct memo *m = a->memo, *mn; m; m = mn) {
    mn = m->next;
    memo_free(m);
  }
  a->memo = NULL;
  a->memo_n = 0;
}

void _srv_issues_cache_free(struct srv_issues_cache *ic) {
  if (!ic) return;
  pthread_mutex_lock(&ic->mu);
  while (ic->threads) pthread_cond_wait(&ic->cv, &ic->mu);
  pthread_mutex_unlock(&ic->mu);
  for (struct srv_fleet_set *a = ic->apps, *an; a; a = an) {
    an = a->next;
    for (struct entry *e = a->entries, *en; e; e = en) {
      en = e->next;
      entry_free(e);
    }
    memo_clear(a);
    hg_fleet_free(a->f);
    pthread_mutex_destroy(&a->fmu);
    free(a);
  }
  pthread_mutex_destroy(&ic->mu);
  pthread_cond_destroy(&ic->cv);
  free(ic);
}

static struct srv_issues_cache *cache_of(struct srv_store *s) {
  pthread_mutex_lock(&s->mu);
  if (!s->ic) s->ic = _srv_issues_cache_new();
  pthread_mutex_unlock(&s->mu);
  return s->ic;
}

static struct srv_fleet_set *app_of(struct srv_issues_cache *ic, const char *app) {
  pthread_mutex_lock(&ic->mu);
  struct srv_fleet_set *a = ic->apps;
  while (a && strcmp(a->app, app)) a = a->next;
  if (!a && (a = calloc(1, sizeof *a))) {
    snprintf(a->app, sizeof a->app, "%s", app);
    pthread_mutex_init(&a->fmu, NULL);
    a->next = ic->apps;
    ic->apps = a;
  }
  pthread_mutex_unlock(&ic->mu);
  return a;
}

/* ---- the set, brought up to date (caller holds a->fmu) ---- */

static int add_summary(void *ctx, int64_t seq, const char *id, const void *cbor, size_t len) {
  struct srv_fleet_set *a = ctx;
  (void)id;
  struct hg_fleet_summary *sum = NULL;
  struct hg_load_error err;
  a->last_seq = seq;
  if (hg_fleet_summary_decode(cbor, len, &sum, &err)) {
    a->bad++;
    return 0;
  }
  int rc = hg_fleet_add(a->f, sum);
  hg_fleet_summary_free(sum);
  return rc ? SRV_EERR : 0;
}

static int update_set(struct srv_store *s, struct srv_fleet_set *a, int64_t gen) {
  if (!a->f && !(a->f = hg_fleet_new())) return _srv_err(SRV_EERR, "out of memory");
  int rc = srv_store_summaries(s, a->app, a->last_seq, add_summary, a);
  if (rc > 0) rc = _srv_err(SRV_EERR, "out of memory adding a summary");
  if (!rc) a->loaded_gen = gen;
  return rc;
}

/* ---- answers ---- */

struct membuf { char *p; size_t len, cap; int err; };
static int mem_write(void *ctx, const void *data, size_t n) {
  struct membuf *m = ctx;
  if (m->len + n + 1 > m->cap) {
    size_t cap = m->cap ? m->cap : 4096;
    while (cap < m->len + n + 1) cap *= 2;
    char *p = realloc(m->p, cap);
    if (!p) {
      m->err = 1;
      return -1;
    }
    m->p = p;
    m->cap = cap;
  }
  memcpy(m->p + m->len, data, n);
  m->len += n;
  m->p[m->len] = 0;
  return 0;
}

/* The answer's body for query e on the set (caller holds a->fmu). */
static int compute(struct srv_fleet_set *a, const struct entry *e, char **body, size_t *len) {
  struct hg_fleet_query q = {e->version, e->baseline, e->kind, e->floor};
  struct hg_fleet_issues *r = NULL;
  int rc = hg_fleet_snapshot_count(a->f) ? hg_fleet_issues(a->f, &q, &r) : HG_ENOTFOUND;
  if (rc == HG_ENOTFOUND) return _srv_err(SRV_ENOTFOUND, "no snapshots of that version");
  if (rc) return _srv_err(SRV_EERR, "issues: %s", hg_error_string(rc));
  struct membuf m = {0};
  struct _hg_out *o = malloc(sizeof *o);
  if (!o) {
    hg_fleet_issues_free(r);
    return _srv_err(SRV_EERR, "out of memory");
  }
  memset(o, 0, offsetof(struct _hg_out, buf));
  o->write = mem_write;
  o->ctx = &m;
  _hg_out_str(o, "{\"version\":");
  _hg_out_json_str(o, r->version);
  _hg_out_str(o, ",\"baseline\":");
  _hg_out_json_str(o, r->baseline);
  _hg_out_printf(o, ",\"snapshots\":%" PRIu32 ",\"baseline_snapshots\":%" PRIu32 ",\"issues\":[",
                 r->version_snapshots, r->baseline_snapshots);
  _hg_out_flush(o);
  int first = 1;
  for (uint32_t i = 0; i < r->count && !m.err; i++) {
    if (e->status >= 0 && r->issues[i].status != (uint32_t)e->status) continue;
    if (!first) mem_write(&m, ",", 1);
    first = 0;
    if (hg_fleet_issue_json(r, i, mem_write, &m)) m.err = 1;
  }
  mem_write(&m, "]", 1);
  int oerr = o->err;
  free(o);
  hg_fleet_issues_free(r);
  if (m.err || oerr) {
    free(m.p);
    return _srv_err(SRV_EERR, "out of memory writing the issues");
  }
  *body = m.p;
  *len = m.len;
  return 0;
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int same_query(const struct entry *e, const struct srv_issues_query *q) {
  return same_str(e->version, q->version) && same_str(e->baseline, q->baseline) && e->kind == q->kind &&
         e->status == q->status && e->floor == q->floor;
}

static int emit(const char *body, size_t len, int64_t gen, int pending, hg_write_fn write, void *ctx) {
  char tail[64];
  int n = snprintf(tail, sizeof tail, ",\"generation\":%" PRId64 ",\"pending\":%d}", gen, pending);
  if (write(ctx, body, len) || write(ctx, tail, (size_t)n)) return _srv_err(SRV_EERR, "write failed");
  return 0;
}

/* Recomputes every stale entry of a (refresh thread). */
struct refresh_arg { struct srv_store *s; struct srv_fleet_set *a; };
static void *refresh_main(void *p) {
  struct refresh_arg *ra = p;
  struct srv_store *s = ra->s;
  struct srv_fleet_set *a = ra->a;
  struct srv_issues_cache *ic = s->ic;
  free(ra);
  int64_t gen = 0;
  pthread_mutex_lock(&a->fmu);
  int rc = srv_store_app_generation(s, a->app, &gen);
  if (!rc) rc = update_set(s, a, gen);
  while (!rc) {
    /* one stale entry at a time (the list may change while computing);
     * each one handled gets gen, so the loop ends */
    pthread_mutex_lock(&ic->mu);
    struct entry *e = a->entries;
    while (e && e->gen >= gen) e = e->next;
    struct entry probe = {0};
    if (e) {
      probe.version = e->version ? strdup(e->version) : NULL;
      probe.baseline = e->baseline ? strdup(e->baseline) : NULL;
      probe.kind = e->kind;
      probe.status = e->status;
      probe.floor = e->floor;
    }
    pthread_mutex_unlock(&ic->mu);
    if (!e) break;
    char *body = NULL;
    size_t len = 0;
    int crc = compute(a, &probe, &body, &len);
    struct srv_issues_query q = {probe.version, probe.baseline, probe.kind, probe.status, probe.floor};
    pthread_mutex_lock(&ic->mu);
    for (struct entry *x = a->entries; x; x = x->next)
      if (same_query(x, &q) && x->gen < gen) {
        if (!crc) {
          free(x->body);
          x->body = body;
          x->len = len;
          body = NULL;
        }
        x->gen = gen; /* a failing query keeps its old answer until the next change */
        break;
      }
    pthread_mutex_unlock(&ic->mu);
    free(body);
    free(probe.version);
    free(probe.baseline);
  }
  pthread_mutex_unlock(&a->fmu);
  pthread_mutex_lock(&ic->mu);
  a->refreshing = 0;
  ic->threads--;
  pthread_cond_broadcast(&ic->cv);
  pthread_mutex_unlock(&ic->mu);
  return NULL;
}

static void start_refresh(struct srv_store *s, struct srv_issues_cache *ic, struct srv_fleet_set *a) {
  /* caller holds ic->mu */
  if (a->refreshing) return;
  struct refresh_arg *ra = malloc(sizeof *ra);
  if (!ra) return;
  ra->s = s;
  ra->a = a;
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &at, refresh_main, ra) == 0) {
    a->refreshing = 1;
    ic->threads++;
  } else {
    free(ra);
  }
  pthread_attr_destroy(&at);
}

/* The cache, the app's entry and its current generation (from the store). */
static int lookup(struct srv_store *s, const char *app, struct srv_issues_cache **ic, struct srv_fleet_set **a,
                  int64_t *gen) {
  if (!(*ic = cache_of(s))) return _srv_err(SRV_EERR, "out of memory");
  int rc = srv_store_app_generation(s, app, gen);
  if (rc) return rc;
  if (!(*a = app_of(*ic, app))) return _srv_err(SRV_EERR, "out of memory");
  return 0;
}

static int issues_get(struct srv_store *s, const char *app, const struct srv_issues_query *q, int fresh,
                      hg_write_fn write, void *ctx) {
  struct srv_issues_cache *ic;
  struct srv_fleet_set *a;
  int64_t gen = 0;
  int rc = lookup(s, app, &ic, &a, &gen);
  if (rc) return rc;
  if (!fresh) {
    pthread_mutex_lock(&ic->mu);
    for (struct entry *e = a->entries; e; e = e->next)
      if (same_query(e, q)) {
        int stale = e->gen < gen;
        if (stale) start_refresh(s, ic, a);
        rc = emit(e->body, e->len, e->gen, stale, write, ctx);
        pthread_mutex_unlock(&ic->mu);
        return rc;
      }
    pthread_mutex_unlock(&ic->mu);
  }
  /* not cached (or asked fresh): compute here */
  pthread_mutex_lock(&a->fmu);
  if (a->loaded_gen < gen || !a->f) rc = update_set(s, a, gen);
  struct entry *e = calloc(1, sizeof *e);
  if (!rc && !e) rc = _srv_err(SRV_EERR, "out of memory");
  if (!rc) {
    e->version = q->version ? strdup(q->version) : NULL;
    e->baseline = q->baseline ? strdup(q->baseline) : NULL;
    e->kind = q->kind;
    e->status = q->status;
    e->floor = q->floor;
    e->gen = a->loaded_gen;
    rc = compute(a, e, &e->body, &e->len);
  }
  pthread_mutex_unlock(&a->fmu);
  if (!rc) rc = emit(e->body, e->len, e->gen, 0, write, ctx);
  if (rc) {
    entry_free(e);
    return rc;
  }
  /* keep it: replace an older answer to the same query, bound the list */
  pthread_mutex_lock(&ic->mu);
  struct entry **pp = &a->entries;
  int n = 0;
  while (*pp) {
    if (same_query(*pp, q) || ++n >= MAX_ENTRIES) {
      struct entry *x = *pp;
      *pp = x->next;
      entry_free(x);
      continue;
    }
    pp = &(*pp)->next;
  }
  e->next = a->entries;
  a->entries = e;
  pthread_mutex_unlock(&ic->mu);
  return 0;
}

int srv_issues_get(struct srv_store *s, const char *app, const struct srv_issues_query *q, hg_write_fn write,
                   void *ctx) {
  return issues_get(s, app, q, 0, write, ctx);
}

int srv_issues_get_fresh(struct srv_store *s, const char *app, const struct srv_issues_query *q,
                         hg_write_fn write, void *ctx) {
  return issues_get(s, app, q, 1, write, ctx);
}

int srv_fleet_with(struct srv_store *s, const char *app, srv_fleet_fn fn, void *ctx) {
  struct srv_issues_cache *ic;
  struct srv_fleet_set *a;
  int64_t gen = 0;
  int rc = lookup(s, app, &ic, &a, &gen);
  if (rc) return rc;
  pthread_mutex_lock(&a->fmu);
  if (a->loaded_gen < gen || !a->f) rc = update_set(s, a, gen);
  if (!rc) rc = fn(ctx, a);
  memo_trim(a); /* after fn: what the memo handed it stays valid until it returns */
  pthread_mutex_unlock(&a->fmu);
  return rc;
}

const struct hg_fleet *srv_fleet_of(const struct srv_fleet_set *a) { return a->f; }

int srv_fleet_issues_memo(struct srv_fleet_set *a, const struct hg_fleet_query *q,
                          const struct hg_fleet_issues **out) {
  *out = NULL; /* a's fmu is held by our caller (srv_fleet_with) */
  struct hg_fleet_issues *r = NULL;
  if (a->memo_gen != a->loaded_gen) {
    memo_clear(a);
    a->memo_gen = a->loaded_gen;
  }
  struct memo **pm = &a->memo;
  for (struct memo *m; (m = *pm); pm = &m->next)
    if (same_str(m->version, q->version) && same_str(m->baseline, q->baseline) && m->kind == q->kind &&
        m->floor == q->floor) {
      *pm = m->next; /* to the front: most recent first */
      m->next = a->memo;
      a->memo = m;
      *out = m->r;
      return 0;
    }
  int rc = hg_fleet_issues(a->f, q, &r);
  if (rc) return rc;
  struct memo *m = calloc(1, sizeof *m);
  if (m) m->r = r;
  if (!m || (q->version && !(m->version = strdup(q->version))) || (q->baseline && !(m->baseline = strdup(q->baseline)))) {
    if (m) memo_free(m);
    else hg_fleet_issues_free(r);
    return HG_ENOMEM;
  }
  m->kind = q->kind;
  m->floor = q->floor;
  m->next = a->memo;
  a->memo = m;
  a->memo_n++;
  *out = r;
  return 0;
}
