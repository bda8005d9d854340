/* server/store_sqlite.c — the SQLite engine of the store (server/store.h):
 * one connection per pooled handle on DIR/heapgraph.db in WAL mode with
 * synchronous=FULL (a committed upload survives a power cut), a busy
 * handler that waits (10 s) instead of failing on a writer's lock, the
 * process's write transactions queued on one lock, prepared statements cached
 * per connection by query text. "$1" … are named parameters here, bound by
 * their index (sqlite3_bind_parameter_index). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "server/store_priv.h"

#define STMT_CACHE 48

struct srv_conn {
  sqlite3 *db;
  struct { const char *sql; sqlite3_stmt *st; } cache[STMT_CACHE];
  int ncache;
  int broken;
};

static int map_rc(sqlite3 *db, int rc, const char *what) {
  int code = rc & 0xff;
  int r = SRV_EERR;
  if (code == SQLITE_FULL) r = SRV_EFULL;
  else if (code == SQLITE_CANTOPEN || code == SQLITE_BUSY || code == SQLITE_LOCKED || code == SQLITE_IOERR ||
           code == SQLITE_NOTADB || code == SQLITE_CORRUPT || code == SQLITE_READONLY)
    r = SRV_EUNAVAIL;
  return _srv_err(r, "sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static void lite_disconnect(struct srv_conn *c) {
  if (!c) return;
  for (int i = 0; i < c->ncache; i++) sqlite3_finalize(c->cache[i].st);
  sqlite3_close(c->db);
  free(c);
}

static int lite_script(struct srv_conn *c, const char *sql) {
  char *msg = NULL;
  int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK) {
    int r = map_rc(c->db, rc, msg ? msg : "script");
    sqlite3_free(msg);
    return r;
  }
  return 0;
}

/* Waits for another connection's write lock: up to BUSY_WAIT_MS, trying
 * every half millisecond. SQLite's own busy timeout sleeps 1, 2, 5 … 100 ms
 * between tries, so a writer queued behind a commit of 2 ms could sleep for
 * 50 ms with the lock free (with 8 uploads at once a row waited up to 82 ms
 * so). Write transactions of this process queue on the writer lock
 * (store_sql.c) and do not get here; autocommit updates and other
 * processes on the same file do. */
#define BUSY_WAIT_MS 10000
static int lite_busy(void *ctx, int tries) {
  (void)ctx;
  if (tries >= BUSY_WAIT_MS * 2) return 0;
  struct timespec t = {0, 500000};
  nanosleep(&t, NULL);
  return 1;
}

static int lite_connect(struct srv_store *s, struct srv_conn **out) {
  struct srv_conn *c = calloc(1, sizeof *c);
  if (!c) return _srv_err(SRV_EERR, "out of memory");
  int rc = sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    int r = map_rc(c->db, rc, s->path);
    lite_disconnect(c);
    return r;
  }
  sqlite3_busy_handler(c->db, lite_busy, NULL);
  rc = lite_script(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;");
  if (rc) {
    lite_disconnect(c);
    return rc;
  }
  *out = c;
  return 0;
}

static sqlite3_stmt *prepare(struct srv_conn *c, const char *sql, int *rc) {
  for (int i = 0; i < c->ncache; i++)
    if (c->cache[i].sql == sql) {
      sqlite3_reset(c->cache[i].st);
      sqlite3_clear_bindings(c->cache[i].st);
      return c->cache[i].st;
    }
  sqlite3_stmt *st = NULL;
  *rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
  if (*rc != SQLITE_OK) return NULL;
  if (c->ncache < STMT_CACHE) {
    c->cache[c->ncache].sql = sql;
    c->cache[c->ncache++].st = st;
  }
  return st;
}

static int cached(struct srv_conn *c, sqlite3_stmt *st) {
  for (int i = 0; i < c->ncache; i++)
    if (c->cache[i].st == st) return 1;
  return 0;
}

static int lite_exec(struct srv_conn *c, const char *sql, int n, const struct srv_val *p, srv_row_fn cb, void *ctx,
                     int64_t *changes) {
  int rc = SQLITE_OK;
  sqlite3_stmt *st = prepare(c, sql, &rc);
  if (!st) return map_rc(c->db, rc, "prepare");
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "$%d", i + 1);
    int k = sqlite3_bind_parameter_index(st, name);
    if (!k) continue; /* a parameter the text does not use */
    switch (p[i].type) {
      case SRV_INT: rc = sqlite3_bind_int64(st, k, p[i].i); break;
      case SRV_TEXT: rc = sqlite3_bind_text(st, k, p[i].p, (int)p[i].len, SQLITE_STATIC); break;
      case SRV_BLOB: rc = sqlite3_bind_blob(st, k, p[i].p, (int)p[i].len, SQLITE_STATIC); break;
      default: rc = sqlite3_bind_null(st, k);
    }
    if (rc != SQLITE_OK) break;
  }
  int r = 0, stop = 0;
  if (rc == SQLITE_OK) {
    struct srv_val cols[32];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (!cb || stop) continue;
      int nc = sqlite3_column_count(st);
      if (nc > 32) nc = 32;
      for (int i = 0; i < nc; i++) {
        struct srv_val *v = &cols[i];
        memset(v, 0, sizeof *v);
        switch (sqlite3_column_type(st, i)) {
          case SQLITE_INTEGER: v->type = SRV_INT; v->i = sqlite3_column_int64(st, i); break;
          case SQLITE_FLOAT: v->type = SRV_INT; v->i = (int64_t)sqlite3_column_double(st, i); break;
          case SQLITE_TEXT:
            v->type = SRV_TEXT;
            v->p = (const char *)sqlite3_column_text(st, i);
            v->len = (size_t)sqlite3_column_bytes(st, i);
            break;
          case SQLITE_BLOB:
            v->type = SRV_BLOB;
            v->p = sqlite3_column_blob(st, i);
            v->len = (size_t)sqlite3_column_bytes(st, i);
            break;
          default: v->type = SRV_NULL;
        }
      }
      stop = cb(ctx, nc, cols);
    }
  }
  if (rc != SQLITE_DONE) r = map_rc(c->db, rc, "step");
  else if (changes) *changes = sqlite3_changes(c->db);
  if (stop && !r) r = stop;
  if (cached(c, st)) sqlite3_reset(st);
  else sqlite3_finalize(st);
  return r;
}

static int lite_broken(struct srv_conn *c) { return c->broken; }

const struct srv_engine _srv_sqlite = {
    .name = "sqlite",
    .begin_write = "BEGIN IMMEDIATE",
    .one_writer = 1,
    .lease_pick = SRV_LEASE_PICK,
    .migrate_lock = NULL,
    .serial_pk = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .blob_type = "BLOB",
    .connect = lite_connect,
    .disconnect = lite_disconnect,
    .exec = lite_exec,
    .script = lite_script,
    .broken = lite_broken,
};
