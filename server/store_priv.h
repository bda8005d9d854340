/* server/store_priv.h — what the store's shared logic (store_sql.c) needs
 * from an SQL engine (store_sqlite.c, store_pg.c): connect, run one
 * statement with $1…$n parameters and stream its rows, run a script; and
 * the handle's connection pool and issues cache state. */
#ifndef HG_SERVER_STORE_PRIV_H
#define HG_SERVER_STORE_PRIV_H

#include <pthread.h>
#include <string.h>

#include "server/store.h"

enum srv_vtype { SRV_NULL = 0, SRV_INT = 1, SRV_TEXT = 2, SRV_BLOB = 3 };
struct srv_val {
  int type;
  int64_t i;
  const char *p;     /* text (NUL-terminated) or blob bytes */
  size_t len;
};
#define V_INT(x) ((struct srv_val){SRV_INT, (int64_t)(x), NULL, 0})
static inline struct srv_val _srv_text(const char *x) {
  struct srv_val v = {x ? SRV_TEXT : SRV_NULL, 0, x, x ? strlen(x) : 0};
  return v;
}
#define V_TEXT(x) _srv_text(x)
#define V_BLOB(x, n) ((struct srv_val){SRV_BLOB, 0, (const char *)(x), (n)})

/* One row; nonzero stops (returned by exec). */
typedef int (*srv_row_fn)(void *ctx, int ncols, const struct srv_val *cols);

struct srv_conn;
struct srv_engine {
  const char *name;
  const char *begin_write;      /* "BEGIN IMMEDIATE" / "BEGIN"                 */
  int one_writer;               /* 1: write transactions take the process's
                                   writer lock first (SQLite: one writer per
                                   file; waiting on the lock wakes at once,
                                   where SQLite's busy handler sleeps up to
                                   100 ms a try)                              */
  const char *lease_pick;       /* SRV_LEASE_PICK, plus the engine's row lock */
  const char *migrate_lock;     /* statement run first in the migration tx, or NULL */
  const char *serial_pk;        /* replaces @SERIAL@ in the schema            */
  const char *blob_type;        /* replaces @BLOB@                            */
  int (*connect)(struct srv_store *s, struct srv_conn **out);
  void (*disconnect)(struct srv_conn *c);
  /* 0, or SRV_E*; the message through _srv_err. *changes: rows affected. */
  int (*exec)(struct srv_conn *c, const char *sql, int n, const struct srv_val *params, srv_row_fn cb,
              void *ctx, int64_t *changes);
  int (*script)(struct srv_conn *c, const char *sql);
  int (*broken)(struct srv_conn *c);  /* 1: drop it instead of reusing      */
};
extern const struct srv_engine _srv_sqlite, _srv_pg;

struct srv_issues_cache;  /* server/issues_cache.c */

/* The lease's SELECT, the same on both engines; PostgreSQL appends
 * FOR UPDATE SKIP LOCKED (SQLite's BEGIN IMMEDIATE already serialises). */
#define SRV_LEASE_PICK                                                   \
  "SELECT seq, state, attempts, app, id, blob, size, token FROM jobs " \
  "WHERE state < 2 AND (state = 0 OR lease_until < $1) ORDER BY seq LIMIT 1"

#define SRV_POOL_MAX 16
struct srv_store {
  const struct srv_engine *e;
  char *path;               /* SQLite file or PostgreSQL URL               */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t writer;   /* engine->one_writer: held from BEGIN to its end */
  struct srv_conn *idle[SRV_POOL_MAX];
  int nidle, nopen;
  int schema;
  struct srv_issues_cache *ic;
};

/* Sets the calling thread's error message; returns rc. */
int _srv_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies a text/NULL column into buf. */
void _srv_col_text(const struct srv_val *v, char *buf, size_t n);

/* Connection pool. */
int _srv_conn_get(struct srv_store *s, struct srv_conn **c);
void _srv_conn_put(struct srv_store *s, struct srv_conn *c);
/* exec on a pooled connection outside a transaction. */
int _srv_exec1(struct srv_store *s, const char *sql, int n, const struct srv_val *p, srv_row_fn cb, void *ctx,
               int64_t *changes);

struct srv_issues_cache *_srv_issues_cache_new(void);
void _srv_issues_cache_free(struct srv_issues_cache *ic);

#endif /* HG_SERVER_STORE_PRIV_H */
