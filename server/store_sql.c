/* server/store_sql.c — the store's logic written once for both engines
 * (server/store.h): the schema and its versioned migrations, every query
 * text ($1 … parameters, SQL that SQLite 3.35+ and PostgreSQL 15 both
 * accept), the connection pool, transactions, keys, apps, snapshots, the
 * job queue with leases and quarantine, summaries and retention's queries.
 * The engines (store_sqlite.c, store_pg.c) only run statements. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/store_priv.h"

/* ---- errors ---- */

static _Thread_local char last_error[512];

int _srv_err(int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return rc;
}

const char *srv_store_error(void) { return last_error; }

void _srv_col_text(const struct srv_val *v, char *buf, size_t n) {
  if (!n) return;
  size_t k = 0;
  if (v->type == SRV_TEXT || v->type == SRV_BLOB) {
    k = v->len < n - 1 ? v->len : n - 1;
    memcpy(buf, v->p, k);
  } else if (v->type == SRV_INT) {
    k = (size_t)snprintf(buf, n, "%lld", (long long)v->i);
    if (k >= n) k = n - 1;
  }
  buf[k] = 0;
}

static int64_t now_s(void) { return (int64_t)time(NULL); }

const char *srv_state_name(int state) {
  static const char *names[] = {"queued", "leased", "done", "quarantined"};
  return state >= 0 && state < 4 ? names[state] : "?";
}

/* ---- the schema: migrations in order, applied once each ---- */

static const char *const migrations[] = {
    /* 1: apps, keys, snapshots, the job queue, summaries */
    "CREATE TABLE apps (app TEXT PRIMARY KEY, max_upload_bytes BIGINT NOT NULL DEFAULT 0,"
    " rate_per_minute BIGINT NOT NULL DEFAULT 0, quota_bytes BIGINT NOT NULL DEFAULT 0,"
    " retention_days BIGINT NOT NULL DEFAULT 0, generation BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE keys (key_id TEXT PRIMARY KEY, app TEXT NOT NULL, can_read INTEGER NOT NULL,"
    " hash TEXT NOT NULL, created BIGINT NOT NULL, revoked BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE snapshots (app TEXT NOT NULL, id TEXT NOT NULL, size BIGINT NOT NULL, blob TEXT NOT NULL,"
    " version TEXT, device_model TEXT, device_id TEXT, received BIGINT NOT NULL,"
    " analysed BIGINT NOT NULL DEFAULT 0, blob_kept INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (app, id));"
    "CREATE INDEX snapshots_blob ON snapshots (blob);"
    "CREATE INDEX snapshots_app_received ON snapshots (app, received);"
    "CREATE TABLE jobs (seq @SERIAL@, app TEXT NOT NULL, id TEXT NOT NULL, blob TEXT NOT NULL,"
    " size BIGINT NOT NULL, state INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,"
    " token BIGINT NOT NULL DEFAULT 0, worker TEXT, lease_until BIGINT NOT NULL DEFAULT 0, reason TEXT,"
    " finished BIGINT NOT NULL DEFAULT 0, UNIQUE (app, id));"
    "CREATE INDEX jobs_open ON jobs (seq) WHERE state < 2;"
    "CREATE TABLE summaries (seq @SERIAL@, app TEXT NOT NULL, id TEXT NOT NULL, version TEXT NOT NULL,"
    " device_id TEXT, worker TEXT NOT NULL, analysed BIGINT NOT NULL, nodes BIGINT NOT NULL,"
    " edges BIGINT NOT NULL, heap_bytes BIGINT NOT NULL, leaked_bytes BIGINT NOT NULL,"
    " cbor @BLOB@ NOT NULL, UNIQUE (app, id));"
    "CREATE INDEX summaries_app_seq ON summaries (app, seq);"
    "CREATE INDEX summaries_app_version ON summaries (app, version);",
    /* 2: retention's exemplar marks (each issue's exemplars per version) */
    "CREATE TABLE exemplars (app TEXT NOT NULL, id TEXT NOT NULL, marked BIGINT NOT NULL,"
    " PRIMARY KEY (app, id));",
};
#define MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

static char *schema_text(const struct srv_engine *e, const char *t) {
  size_t n = strlen(t) * 2 + 64;
  char *o = malloc(n), *w = o;
  if (!o) return NULL;
  while (*t) {
    if (!strncmp(t, "@SERIAL@", 8)) {
      w += sprintf(w, "%s", e->serial_pk);
      t += 8;
    } else if (!strncmp(t, "@BLOB@", 6)) {
      w += sprintf(w, "%s", e->blob_type);
      t += 6;
    } else {
      *w++ = *t++;
    }
  }
  *w = 0;
  return o;
}

/* ---- the pool ---- */

int _srv_conn_get(struct srv_store *s, struct srv_conn **c) {
  pthread_mutex_lock(&s->mu);
  while (!s->nidle && s->nopen >= SRV_POOL_MAX) pthread_cond_wait(&s->cv, &s->mu);
  if (s->nidle) {
    *c = s->idle[--s->nidle];
    pthread_mutex_unlock(&s->mu);
    return 0;
  }
  s->nopen++;
  pthread_mutex_unlock(&s->mu);
  int rc = s->e->connect(s, c);
  if (rc) {
    pthread_mutex_lock(&s->mu);
    s->nopen--;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
  return rc;
}

void _srv_conn_put(struct srv_store *s, struct srv_conn *c) {
  int drop = s->e->broken(c);
  if (drop) s->e->disconnect(c);
  pthread_mutex_lock(&s->mu);
  if (drop) s->nopen--;
  else s->idle[s->nidle++] = c;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

int _srv_exec1(struct srv_store *s, const char *sql, int n, const struct srv_val *p, srv_row_fn cb, void *ctx,
               int64_t *changes) {
  struct srv_conn *c;
  int rc = _srv_conn_get(s, &c);
  if (rc) return rc;
  rc = s->e->exec(c, sql, n, p, cb, ctx, changes);
  _srv_conn_put(s, c);
  return rc;
}

/* A write transaction. The writer lock is taken after the connection (a
 * thread holding it never waits for the pool while others wait for it). */
static int tx_begin(struct srv_store *s, struct srv_conn **c) {
  int rc = _srv_conn_get(s, c);
  if (rc) return rc;
  if (s->e->one_writer) pthread_mutex_lock(&s->writer);
  rc = s->e->exec(*c, s->e->begin_write, 0, NULL, NULL, NULL, NULL);
  if (rc) {
    if (s->e->one_writer) pthread_mutex_unlock(&s->writer);
    _srv_conn_put(s, *c);
  }
  return rc;
}

static int tx_end(struct srv_store *s, struct srv_conn *c, int rc) {
  if (!rc) rc = s->e->exec(c, "COMMIT", 0, NULL, NULL, NULL, NULL);
  if (rc) {
    char keep[sizeof last_error];
    memcpy(keep, last_error, sizeof keep);
    s->e->exec(c, "ROLLBACK", 0, NULL, NULL, NULL, NULL);
    memcpy(last_error, keep, sizeof keep);
  }
  if (s->e->one_writer) pthread_mutex_unlock(&s->writer);
  _srv_conn_put(s, c);
  return rc;
}

/* Row callbacks for one integer / one text. */
static int row_int(void *ctx, int n, const struct srv_val *v) {
  if (n > 0) *(int64_t *)ctx = v[0].i;
  return 0;
}

/* ---- open / close ---- */

static int migrate(struct srv_store *s) {
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  if (s->e->migrate_lock) rc = s->e->exec(c, s->e->migrate_lock, 0, NULL, NULL, NULL, NULL);
  if (!rc) rc = s->e->exec(c, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied BIGINT NOT NULL)",
                           0, NULL, NULL, NULL, NULL);
  int64_t have = 0;
  if (!rc) rc = s->e->exec(c, "SELECT COALESCE(MAX(version), 0) FROM schema_version", 0, NULL, row_int, &have, NULL);
  for (int v = (int)have + 1; !rc && v <= MIGRATIONS; v++) {
    char *t = schema_text(s->e, migrations[v - 1]);
    rc = t ? s->e->script(c, t) : _srv_err(SRV_EERR, "out of memory");
    free(t);
    struct srv_val p[2] = {V_INT(v), V_INT(now_s())};
    if (!rc) rc = s->e->exec(c, "INSERT INTO schema_version (version, applied) VALUES ($1, $2)", 2, p, NULL, NULL, NULL);
  }
  if (!rc && have > MIGRATIONS)
    rc = _srv_err(SRV_EERR, "the database's schema version %lld is newer than this server's %d", (long long)have,
                  MIGRATIONS);
  s->schema = (int)(have > MIGRATIONS ? have : MIGRATIONS);
  return tx_end(s, c, rc);
}

int srv_store_open(const char *data_dir, const char *db_url, struct srv_store **out) {
  *out = NULL;
  struct srv_store *s = calloc(1, sizeof *s);
  if (!s) return _srv_err(SRV_EERR, "out of memory");
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->writer, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (db_url && *db_url) {
    if (strncmp(db_url, "postgres://", 11) && strncmp(db_url, "postgresql://", 13)) {
      free(s);
      return _srv_err(SRV_EERR, "--db: a postgres:// or postgresql:// URL");
    }
    s->e = &_srv_pg;
    s->path = strdup(db_url);
  } else {
    if (!data_dir) {
      free(s);
      return _srv_err(SRV_EERR, "no data directory");
    }
    if (mkdir(data_dir, 0750) && errno != EEXIST) {
      free(s);
      return _srv_err(SRV_EUNAVAIL, "cannot create %s: %s", data_dir, strerror(errno));
    }
    s->e = &_srv_sqlite;
    size_t n = strlen(data_dir) + 32;
    s->path = malloc(n);
    if (s->path) snprintf(s->path, n, "%s/heapgraph.db", data_dir);
  }
  int rc = s->path ? migrate(s) : _srv_err(SRV_EERR, "out of memory");
  if (rc) {
    srv_store_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

void srv_store_close(struct srv_store *s) {
  if (!s) return;
  _srv_issues_cache_free(s->ic);
  for (int i = 0; i < s->nidle; i++) s->e->disconnect(s->idle[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->writer);
  pthread_cond_destroy(&s->cv);
  free(s->path);
  free(s);
}

const char *srv_store_engine(const struct srv_store *s) { return s->e->name; }
int srv_store_schema_version(struct srv_store *s) { return s->schema; }

/* ---- keys ---- */

static const char q_app_ensure[] = "INSERT INTO apps (app) VALUES ($1) ON CONFLICT DO NOTHING";

int srv_store_key_add(struct srv_store *s, const char *app, int read, const char *key_id, const char *key_hash) {
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  struct srv_val p[5] = {V_TEXT(key_id), V_TEXT(app), V_INT(read ? 1 : 0), V_TEXT(key_hash), V_INT(now_s())};
  rc = s->e->exec(c, q_app_ensure, 1, &p[1], NULL, NULL, NULL);
  if (!rc)
    rc = s->e->exec(c, "INSERT INTO keys (key_id, app, can_read, hash, created) VALUES ($1, $2, $3, $4, $5)", 5, p,
                    NULL, NULL, NULL);
  return tx_end(s, c, rc);
}

int srv_store_key_revoke(struct srv_store *s, const char *key_id) {
  struct srv_val p[2] = {V_TEXT(key_id), V_INT(now_s())};
  int64_t n = 0;
  int rc = _srv_exec1(s, "UPDATE keys SET revoked = $2 WHERE key_id = $1 AND revoked = 0", 2, p, NULL, NULL, &n);
  if (!rc && n != 1) rc = _srv_err(SRV_ENOTFOUND, "no such key (or already revoked)");
  return rc;
}

static const char q_key_cols[] = "SELECT key_id, app, can_read, hash, revoked, created FROM keys";

static void key_from(const struct srv_val *v, struct srv_key *k) {
  memset(k, 0, sizeof *k);
  _srv_col_text(&v[0], k->key_id, sizeof k->key_id);
  _srv_col_text(&v[1], k->app, sizeof k->app);
  k->read = v[2].i != 0;
  _srv_col_text(&v[3], k->hash, sizeof k->hash);
  k->revoked = v[4].i != 0;
  k->created = v[5].i;
}

struct key_cb { srv_key_fn cb; void *ctx; struct srv_key *one; int found; };
static int row_key(void *ctx, int n, const struct srv_val *v) {
  struct key_cb *k = ctx;
  if (n < 6) return 0;
  struct srv_key tmp, *dst = k->one ? k->one : &tmp;
  key_from(v, dst);
  k->found = 1;
  return k->cb ? k->cb(k->ctx, dst) : 0;
}

int srv_store_key_list(struct srv_store *s, srv_key_fn cb, void *ctx) {
  static const char q[] = "SELECT key_id, app, can_read, hash, revoked, created FROM keys ORDER BY created, key_id";
  struct key_cb k = {cb, ctx, NULL, 0};
  int rc = _srv_exec1(s, q, 0, NULL, row_key, &k, NULL);
  return rc > 0 ? 0 : rc;
}

int srv_store_key_find(struct srv_store *s, const char *key_id, struct srv_key *out) {
  static const char q[] = "SELECT key_id, app, can_read, hash, revoked, created FROM keys WHERE key_id = $1";
  (void)q_key_cols;
  struct key_cb k = {NULL, NULL, out, 0};
  struct srv_val p[1] = {V_TEXT(key_id)};
  int rc = _srv_exec1(s, q, 1, p, row_key, &k, NULL);
  if (!rc && !k.found) rc = _srv_err(SRV_ENOTFOUND, "no such key");
  return rc;
}

/* ---- apps ---- */

static int row_app_settings(void *ctx, int n, const struct srv_val *v) {
  struct srv_app_settings *a = ctx;
  if (n >= 4) {
    a->max_upload_bytes = v[0].i;
    a->rate_per_minute = v[1].i;
    a->quota_bytes = v[2].i;
    a->retention_days = v[3].i;
  }
  return 0;
}

int srv_store_app_get(struct srv_store *s, const char *app, struct srv_app_settings *out) {
  memset(out, 0, sizeof *out);
  struct srv_val p[1] = {V_TEXT(app)};
  return _srv_exec1(s, "SELECT max_upload_bytes, rate_per_minute, quota_bytes, retention_days FROM apps WHERE app = $1",
                    1, p, row_app_settings, out, NULL);
}

int srv_store_app_set(struct srv_store *s, const char *app, const struct srv_app_settings *in) {
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  struct srv_val p[5] = {V_TEXT(app), V_INT(in->max_upload_bytes), V_INT(in->rate_per_minute),
                         V_INT(in->quota_bytes), V_INT(in->retention_days)};
  rc = s->e->exec(c, q_app_ensure, 1, p, NULL, NULL, NULL);
  if (!rc)
    rc = s->e->exec(c, "UPDATE apps SET max_upload_bytes = $2, rate_per_minute = $3, quota_bytes = $4,"
                       " retention_days = $5 WHERE app = $1", 5, p, NULL, NULL, NULL);
  return tx_end(s, c, rc);
}

struct app_cb { srv_app_fn cb; void *ctx; };
static int row_app(void *ctx, int n, const struct srv_val *v) {
  struct app_cb *a = ctx;
  char name[SRV_TEXT_MAX]; /* app names, and blob names (srv_store_blobs_kept) */
  if (n < 1) return 0;
  _srv_col_text(&v[0], name, sizeof name);
  return a->cb(a->ctx, name);
}

int srv_store_apps(struct srv_store *s, srv_app_fn cb, void *ctx) {
  struct app_cb a = {cb, ctx};
  int rc = _srv_exec1(s, "SELECT app FROM apps ORDER BY app", 0, NULL, row_app, &a, NULL);
  return rc > 0 ? 0 : rc;
}

int srv_store_app_generation(struct srv_store *s, const char *app, int64_t *gen) {
  *gen = -1;
  struct srv_val p[1] = {V_TEXT(app)};
  int rc = _srv_exec1(s, "SELECT generation FROM apps WHERE app = $1", 1, p, row_int, gen, NULL);
  if (!rc && *gen < 0) rc = _srv_err(SRV_ENOTFOUND, "no such app");
  return rc;
}

/* ---- snapshots ---- */

int srv_store_snapshot_put(struct srv_store *s, const struct srv_snapshot_meta *m, int *is_new) {
  *is_new = 0;
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  int64_t n = 0;
  struct srv_val p[8] = {V_TEXT(m->app), V_TEXT(m->id), V_INT(m->size), V_TEXT(m->blob),
                         V_TEXT(m->version), V_TEXT(m->device_model), V_TEXT(m->device_id),
                         V_INT(m->received ? m->received : now_s())};
  rc = s->e->exec(c, q_app_ensure, 1, p, NULL, NULL, NULL);
  if (!rc)
    rc = s->e->exec(c, "INSERT INTO snapshots (app, id, size, blob, version, device_model, device_id, received)"
                       " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING", 8, p, NULL, NULL, &n);
  if (!rc && n == 1) {
    rc = s->e->exec(c, "INSERT INTO jobs (app, id, blob, size) VALUES ($1, $2, $4, $3)", 4, p, NULL, NULL, NULL);
    *is_new = !rc;
  }
  return tx_end(s, c, rc);
}

#define SNAP_COLS                                                                                          \
  "SELECT s.app, s.id, s.size, s.blob, s.version, s.device_model, s.device_id, s.received, s.analysed,"    \
  " s.blob_kept, j.state, j.attempts, j.reason FROM snapshots s JOIN jobs j ON j.app = s.app AND j.id = s.id"

struct snap_cb { srv_snapshot_fn cb; void *ctx; struct srv_snapshot *one; int found; };
static int row_snap(void *ctx, int n, const struct srv_val *v) {
  struct snap_cb *k = ctx;
  if (n < 13) return 0;
  struct srv_snapshot tmp, *d = k->one ? k->one : &tmp;
  memset(d, 0, sizeof *d);
  _srv_col_text(&v[0], d->app, sizeof d->app);
  _srv_col_text(&v[1], d->id, sizeof d->id);
  d->size = (uint64_t)v[2].i;
  _srv_col_text(&v[3], d->blob, sizeof d->blob);
  _srv_col_text(&v[4], d->version, sizeof d->version);
  _srv_col_text(&v[5], d->device_model, sizeof d->device_model);
  _srv_col_text(&v[6], d->device_id, sizeof d->device_id);
  d->received = v[7].i;
  d->analysed = v[8].i;
  d->blob_kept = v[9].i != 0;
  d->state = (int)v[10].i;
  d->attempts = (int)v[11].i;
  _srv_col_text(&v[12], d->reason, sizeof d->reason);
  k->found = 1;
  return k->cb ? k->cb(k->ctx, d) : 0;
}

int srv_store_snapshot_get(struct srv_store *s, const char *app, const char *id, struct srv_snapshot *out) {
  struct snap_cb k = {NULL, NULL, out, 0};
  struct srv_val p[2] = {V_TEXT(app), V_TEXT(id)};
  int rc = _srv_exec1(s, SNAP_COLS " WHERE s.app = $1 AND s.id = $2", 2, p, row_snap, &k, NULL);
  if (!rc && !k.found) rc = _srv_err(SRV_ENOTFOUND, "no such snapshot");
  return rc;
}

int srv_store_snapshot_list(struct srv_store *s, const char *app, srv_snapshot_fn cb, void *ctx) {
  struct snap_cb k = {cb, ctx, NULL, 0};
  struct srv_val p[1] = {V_TEXT(app)};
  int rc = _srv_exec1(s, SNAP_COLS " WHERE (CAST($1 AS TEXT) IS NULL OR s.app = $1) ORDER BY s.received DESC, s.id",
                      1, p, row_snap, &k, NULL);
  return rc > 0 ? 0 : rc;
}

int srv_store_quarantine_list(struct srv_store *s, const char *app, srv_snapshot_fn cb, void *ctx) {
  struct snap_cb k = {cb, ctx, NULL, 0};
  struct srv_val p[1] = {V_TEXT(app)};
  int rc = _srv_exec1(s, SNAP_COLS " WHERE (CAST($1 AS TEXT) IS NULL OR s.app = $1) AND j.state = 3"
                      " ORDER BY s.received DESC, s.id", 1, p, row_snap, &k, NULL);
  return rc > 0 ? 0 : rc;
}

struct ver_acc { struct srv_version_row *rows; char **names; size_t n, cap; };
static int row_ver(void *ctx, int n, const struct srv_val *v) {
  struct ver_acc *a = ctx;
  if (n < 3) return 0;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    void *r = realloc(a->rows, cap * sizeof *a->rows), *m = r ? realloc(a->names, cap * sizeof *a->names) : NULL;
    if (r) a->rows = r;
    if (!m) return SRV_EERR;
    a->names = m;
    a->cap = cap;
  }
  char buf[SRV_TEXT_MAX];
  _srv_col_text(&v[0], buf, sizeof buf);
  a->names[a->n] = strdup(buf);
  a->rows[a->n].snapshots = (uint64_t)v[1].i;
  a->rows[a->n].devices = (uint64_t)v[2].i;
  a->n++;
  return 0;
}

int _hg_fleet_vercmp(const char *a, const char *b); /* graph/fleet.h */
static int ver_order(const void *a, const void *b) {
  return _hg_fleet_vercmp(*(char *const *)a, *(char *const *)b);
}

int srv_store_versions(struct srv_store *s, const char *app, srv_version_fn cb, void *ctx) {
  struct ver_acc a = {0};
  struct srv_val p[1] = {V_TEXT(app)};
  int rc = _srv_exec1(s, "SELECT version, COUNT(*), COUNT(DISTINCT device_id) FROM summaries WHERE app = $1"
                         " GROUP BY version", 1, p, row_ver, &a, NULL);
  if (rc > 0) rc = _srv_err(SRV_EERR, "out of memory");
  /* numeric-aware order as the fleet set's ("8.10" after "8.9") */
  char **keys = a.n ? malloc(a.n * sizeof *keys) : NULL;
  if (!rc && a.n && !keys) rc = _srv_err(SRV_EERR, "out of memory");
  if (!rc && a.n) {
    memcpy(keys, a.names, a.n * sizeof *keys);
    qsort(keys, a.n, sizeof *keys, ver_order);
    for (size_t i = 0; i < a.n; i++) {
      size_t j = 0;
      while (a.names[j] != keys[i]) j++;
      struct srv_version_row r = a.rows[j];
      r.version = a.names[j];
      if (cb(ctx, &r)) break;
    }
  }
  for (size_t i = 0; i < a.n; i++) free(a.names[i]);
  free(a.names);
  free(a.rows);
  free(keys);
  return rc;
}

static int row_state_count(void *ctx, int n, const struct srv_val *v) {
  struct srv_counts *c = ctx;
  if (n < 2) return 0;
  uint64_t k = (uint64_t)v[1].i;
  switch (v[0].i) {
    case 0: c->queued = k; break;
    case 1: c->leased = k; break;
    case 2: c->done = k; break;
    case 3: c->quarantined = k; break;
  }
  return 0;
}

int srv_store_counts(struct srv_store *s, const char *app, struct srv_counts *out) {
  memset(out, 0, sizeof *out);
  struct srv_val p[1] = {V_TEXT(app)};
  int64_t v = 0;
  int rc = _srv_exec1(s, "SELECT state, COUNT(*) FROM jobs WHERE (CAST($1 AS TEXT) IS NULL OR app = $1) GROUP BY state",
                      1, p, row_state_count, out, NULL);
  if (!rc)
    rc = _srv_exec1(s, "SELECT COUNT(*) FROM summaries WHERE (CAST($1 AS TEXT) IS NULL OR app = $1)", 1, p, row_int,
                    &v, NULL);
  out->summaries = (uint64_t)v;
  v = 0;
  if (!rc)
    rc = _srv_exec1(s, "SELECT COALESCE(SUM(size), 0) FROM snapshots WHERE (CAST($1 AS TEXT) IS NULL OR app = $1)"
                       " AND blob_kept = 1", 1, p, row_int, &v, NULL);
  out->blob_bytes = (uint64_t)v;
  return rc;
}

/* ---- summaries ---- */

struct sum_cb { srv_summary_fn cb; void *ctx; void **one; size_t *len; };
static int row_sum(void *ctx, int n, const struct srv_val *v) {
  struct sum_cb *k = ctx;
  if (n < 3) return 0;
  if (k->one) {
    *k->one = malloc(v[2].len ? v[2].len : 1);
    if (!*k->one) return SRV_EERR;
    memcpy(*k->one, v[2].p, v[2].len);
    *k->len = v[2].len;
    return 0;
  }
  char id[SRV_ID_LEN + 1];
  _srv_col_text(&v[1], id, sizeof id);
  return k->cb(k->ctx, v[0].i, id, v[2].p, v[2].len);
}

int srv_store_summaries(struct srv_store *s, const char *app, int64_t after_seq, srv_summary_fn cb, void *ctx) {
  struct sum_cb k = {cb, ctx, NULL, NULL};
  struct srv_val p[2] = {V_TEXT(app), V_INT(after_seq)};
  int rc = _srv_exec1(s, "SELECT seq, id, cbor FROM summaries WHERE app = $1 AND seq > $2 ORDER BY seq", 2, p,
                      row_sum, &k, NULL);
  return rc;
}

int srv_store_summary_get(struct srv_store *s, const char *app, const char *id, void **cbor, size_t *len) {
  *cbor = NULL;
  *len = 0;
  struct sum_cb k = {NULL, NULL, cbor, len};
  struct srv_val p[2] = {V_TEXT(app), V_TEXT(id)};
  int rc = _srv_exec1(s, "SELECT seq, id, cbor FROM summaries WHERE app = $1 AND id = $2", 2, p, row_sum, &k, NULL);
  if (rc > 0) rc = _srv_err(SRV_EERR, "out of memory");
  if (!rc && !*cbor) rc = _srv_err(SRV_ENOTFOUND, "no summary (not analysed yet)");
  return rc;
}

/* ---- jobs ---- */

struct pick { int found; int64_t seq, state, attempts, size, token; char app[SRV_APP_MAX], id[SRV_ID_LEN + 1],
              blob[SRV_TEXT_MAX]; };
static int row_pick(void *ctx, int n, const struct srv_val *v) {
  struct pick *k = ctx;
  if (n < 8) return 0;
  k->found = 1;
  k->seq = v[0].i;
  k->state = v[1].i;
  k->attempts = v[2].i;
  _srv_col_text(&v[3], k->app, sizeof k->app);
  _srv_col_text(&v[4], k->id, sizeof k->id);
  _srv_col_text(&v[5], k->blob, sizeof k->blob);
  k->size = v[6].i;
  k->token = v[7].i;
  return 0;
}

#define SRV_MAX_ATTEMPTS 2

int srv_store_job_lease(struct srv_store *s, const char *worker, int lease_seconds, struct srv_job *job) {
  for (;;) {
    struct srv_conn *c;
    int rc = tx_begin(s, &c);
    if (rc) return rc;
    int64_t now = now_s();
    struct pick k = {0};
    struct srv_val p0[1] = {V_INT(now)};
    rc = s->e->exec(c, s->e->lease_pick, 1, p0, row_pick, &k, NULL);
    if (!rc && !k.found) rc = _srv_err(SRV_ENOTFOUND, "no job");
    int retry = 0;
    if (!rc) {
      int attempts = (int)k.attempts + (k.state == 1); /* an expired lease: the worker died */
      if (attempts >= SRV_MAX_ATTEMPTS) {
        struct srv_val p[3] = {V_INT(k.seq), V_INT(attempts), V_TEXT("lease expired twice (worker died or hung)")};
        rc = s->e->exec(c, "UPDATE jobs SET state = 3, attempts = $2, reason = $3, lease_until = 0 WHERE seq = $1", 3,
                        p, NULL, NULL, NULL);
        retry = 1;
      } else {
        struct srv_val p[5] = {V_INT(k.seq), V_INT(attempts), V_INT(k.token + 1), V_TEXT(worker),
                               V_INT(now + lease_seconds)};
        rc = s->e->exec(c, "UPDATE jobs SET state = 1, attempts = $2, token = $3, worker = $4, lease_until = $5"
                           " WHERE seq = $1", 5, p, NULL, NULL, NULL);
        if (!rc) {
          memset(job, 0, sizeof *job);
          job->seq = k.seq;
          job->token = k.token + 1;
          memcpy(job->app, k.app, sizeof job->app);
          memcpy(job->id, k.id, sizeof job->id);
          memcpy(job->blob, k.blob, sizeof job->blob);
          job->size = (uint64_t)k.size;
          job->attempts = attempts;
        }
      }
    }
    rc = tx_end(s, c, rc);
    if (rc || !retry) return rc;
  }
}

int srv_store_job_renew(struct srv_store *s, const struct srv_job *job, int lease_seconds) {
  struct srv_val p[3] = {V_INT(job->seq), V_INT(job->token), V_INT(now_s() + lease_seconds)};
  int64_t n = 0;
  int rc = _srv_exec1(s, "UPDATE jobs SET lease_until = $3 WHERE seq = $1 AND token = $2 AND state = 1", 3, p, NULL,
                      NULL, &n);
  if (!rc && n != 1) rc = _srv_err(SRV_ELOST, "the lease is no longer ours");
  return rc;
}

int srv_store_job_finish(struct srv_store *s, const struct srv_job *job, const char *worker,
                         const struct srv_summary_row *row) {
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  int64_t now = now_s(), n = 0;
  struct srv_val pj[4] = {V_INT(job->seq), V_INT(job->token), V_INT(now), V_TEXT(worker)};
  rc = s->e->exec(c, "UPDATE jobs SET state = 2, finished = $3, worker = $4, lease_until = 0"
                     " WHERE seq = $1 AND token = $2 AND state = 1", 4, pj, NULL, NULL, &n);
  if (!rc && n != 1) rc = _srv_err(SRV_ELOST, "the lease is no longer ours");
  const char *version = row->version && *row->version ? row->version : "unknown";
  struct srv_val ps[12] = {V_TEXT(job->app), V_TEXT(job->id), V_TEXT(version), V_TEXT(row->device_id),
                           V_TEXT(worker), V_INT(now), V_INT(row->nodes), V_INT(row->edges),
                           V_INT(row->heap_bytes), V_INT(row->leaked_bytes), V_BLOB(row->cbor, row->len),
                           V_TEXT(row->device_model)};
  if (!rc)
    rc = s->e->exec(c, "INSERT INTO summaries (app, id, version, device_id, worker, analysed, nodes, edges,"
                       " heap_bytes, leaked_bytes, cbor) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    11, ps, NULL, NULL, NULL);
  if (!rc)
    rc = s->e->exec(c, "UPDATE snapshots SET version = $3, device_id = COALESCE($4, device_id),"
                       " device_model = COALESCE($12, device_model), analysed = $6 WHERE app = $1 AND id = $2",
                    12, ps, NULL, NULL, NULL);
  if (!rc)
    rc = s->e->exec(c, "UPDATE apps SET generation = generation + 1 WHERE app = $1", 1, ps, NULL, NULL, NULL);
  return tx_end(s, c, rc);
}

int srv_store_job_fail(struct srv_store *s, const struct srv_job *job, const char *reason, int how) {
  struct srv_val p[5] = {V_INT(job->seq), V_INT(job->token), V_INT(job->attempts + 1), V_TEXT(reason),
                         V_INT(how == SRV_FAIL_REFUSED || job->attempts + 1 >= SRV_MAX_ATTEMPTS ? 3 : 0)};
  int64_t n = 0;
  int rc = _srv_exec1(s, "UPDATE jobs SET state = $5, attempts = $3, reason = $4, lease_until = 0"
                         " WHERE seq = $1 AND token = $2 AND state = 1", 5, p, NULL, NULL, &n);
  if (!rc && n != 1) rc = _srv_err(SRV_ELOST, "the lease is no longer ours");
  return rc;
}

/* ---- retention's queries ---- */

int srv_store_blob_drop(struct srv_store *s, const char *app, const char *id, int *blob_unused) {
  *blob_unused = 0;
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  struct srv_val p[2] = {V_TEXT(app), V_TEXT(id)};
  char blob[SRV_TEXT_MAX] = "";
  struct srv_snapshot sn;
  struct snap_cb k = {NULL, NULL, &sn, 0};
  rc = s->e->exec(c, SNAP_COLS " WHERE s.app = $1 AND s.id = $2", 2, p, row_snap, &k, NULL);
  if (!rc && !k.found) rc = _srv_err(SRV_ENOTFOUND, "no such snapshot");
  if (!rc) {
    memcpy(blob, sn.blob, sizeof blob);
    rc = s->e->exec(c, "UPDATE snapshots SET blob_kept = 0 WHERE app = $1 AND id = $2", 2, p, NULL, NULL, NULL);
  }
  int64_t users = 1;
  struct srv_val pb[1] = {V_TEXT(blob)};
  if (!rc)
    rc = s->e->exec(c, "SELECT COUNT(*) FROM snapshots WHERE blob = $1 AND blob_kept = 1", 1, pb, row_int, &users,
                    NULL);
  rc = tx_end(s, c, rc);
  if (!rc) *blob_unused = users == 0;
  return rc;
}

int srv_store_blobs_kept(struct srv_store *s, const char *dir, srv_app_fn cb, void *ctx) {
  char like[SRV_TEXT_MAX];
  if (strpbrk(dir, "%_\\") || (size_t)snprintf(like, sizeof like, "%s/%%", dir) >= sizeof like)
    return _srv_err(SRV_EERR, "bad blob directory");
  struct app_cb a = {cb, ctx};
  struct srv_val p[1] = {V_TEXT(like)};
  int rc = _srv_exec1(s, "SELECT DISTINCT blob FROM snapshots WHERE blob LIKE $1 AND blob_kept = 1", 1, p, row_app, &a,
                      NULL);
  return rc > 0 ? 0 : rc;
}

int srv_store_blob_bytes(struct srv_store *s, const char *app, uint64_t *bytes) {
  int64_t v = 0;
  struct srv_val p[1] = {V_TEXT(app)};
  int rc = _srv_exec1(s, "SELECT COALESCE(SUM(size), 0) FROM snapshots WHERE app = $1 AND blob_kept = 1", 1, p,
                      row_int, &v, NULL);
  *bytes = (uint64_t)v;
  return rc;
}

int srv_store_exemplars_set(struct srv_store *s, const char *app, char *const *ids, size_t n) {
  struct srv_conn *c;
  int rc = tx_begin(s, &c);
  if (rc) return rc;
  struct srv_val p[3] = {V_TEXT(app), V_TEXT(NULL), V_INT(now_s())};
  rc = s->e->exec(c, "DELETE FROM exemplars WHERE app = $1", 1, p, NULL, NULL, NULL);
  for (size_t i = 0; i < n && !rc; i++) {
    p[1] = V_TEXT(ids[i]);
    rc = s->e->exec(c, "INSERT INTO exemplars (app, id, marked) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", 3, p,
                    NULL, NULL, NULL);
  }
  return tx_end(s, c, rc);
}

int srv_store_exemplar_is(struct srv_store *s, const char *app, const char *id, int *is) {
  int64_t v = 0;
  struct srv_val p[2] = {V_TEXT(app), V_TEXT(id)};
  int rc = _srv_exec1(s, "SELECT COUNT(*) FROM exemplars WHERE app = $1 AND id = $2", 2, p, row_int, &v, NULL);
  *is = v > 0;
  return rc;
}
