/* server/store_pg.c — the PostgreSQL engine of the store (server/store.h)
 * through libpq: one connection per pooled handle (connect timeout and TCP
 * keepalives so a vanished database host is noticed), parameters in text
 * form ($1 …, blobs binary), rows streamed in single-row mode so 100,000
 * summaries never sit in one result. A lost connection or an unreachable
 * server is SRV_EUNAVAIL (the intake's 503) and the connection is dropped
 * from the pool; the next call connects again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "server/store_priv.h"

struct srv_conn {
  PGconn *pg;
  int broken;
};

static int pg_fail(struct srv_conn *c, const PGresult *res, const char *what) {
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(c->pg);
  int r = SRV_EERR;
  if (PQstatus(c->pg) != CONNECTION_OK || !state || !strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) {
    r = SRV_EUNAVAIL;
    c->broken = 1;
  } else if (!strcmp(state, "53100")) {
    r = SRV_EFULL;
  } else if (!strncmp(state, "53", 2)) {
    r = SRV_EUNAVAIL;
  }
  char line[512];
  snprintf(line, sizeof line, "%s", msg ? msg : "");
  line[strcspn(line, "\n")] = 0;
  return _srv_err(r, "postgres: %s: %s%s%s", what, line, state ? " SQLSTATE " : "", state ? state : "");
}

static void pg_disconnect(struct srv_conn *c) {
  if (!c) return;
  PQfinish(c->pg);
  free(c);
}

static void quiet(void *arg, const PGresult *res) {
  (void)arg;
  (void)res;
}

static int pg_connect(struct srv_store *s, struct srv_conn **out) {
  struct srv_conn *c = calloc(1, sizeof *c);
  if (!c) return _srv_err(SRV_EERR, "out of memory");
  const char *keys[] = {"dbname", "connect_timeout", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "application_name", NULL};
  const char *vals[] = {s->path, "5", "10", "3", "3", "heapgraph-serve", NULL};
  c->pg = PQconnectdbParams(keys, vals, 1);
  if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
    char line[512];
    snprintf(line, sizeof line, "%s", c->pg ? PQerrorMessage(c->pg) : "out of memory");
    line[strcspn(line, "\n")] = 0;
    pg_disconnect(c);
    return _srv_err(SRV_EUNAVAIL, "postgres: cannot connect: %s", line);
  }
  PQsetNoticeReceiver(c->pg, quiet, NULL);
  *out = c;
  return 0;
}

static int pg_script(struct srv_conn *c, const char *sql) {
  PGresult *res = PQexec(c->pg, sql);
  int st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  int r = 0;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) r = pg_fail(c, res, "script");
  PQclear(res);
  return r;
}

enum { OID_BYTEA = 17, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_TEXT = 25, OID_NUMERIC = 1700 };

static int pg_exec(struct srv_conn *c, const char *sql, int n, const struct srv_val *p, srv_row_fn cb, void *ctx,
                   int64_t *changes) {
  const char *vals[32];
  int lens[32], fmts[32];
  Oid types[32];
  char nums[32][24];
  if (n > 32) return _srv_err(SRV_EERR, "too many parameters");
  for (int i = 0; i < n; i++) {
    lens[i] = 0;
    fmts[i] = 0;
    /* typed: a parameter one statement does not use still needs a type */
    types[i] = p[i].type == SRV_INT ? OID_INT8 : p[i].type == SRV_BLOB ? OID_BYTEA : OID_TEXT;
    switch (p[i].type) {
      case SRV_INT:
        snprintf(nums[i], sizeof nums[i], "%lld", (long long)p[i].i);
        vals[i] = nums[i];
        break;
      case SRV_TEXT: vals[i] = p[i].p; break;
      case SRV_BLOB:
        vals[i] = p[i].p ? p[i].p : "";
        lens[i] = (int)p[i].len;
        fmts[i] = 1;
        break;
      default: vals[i] = NULL;
    }
  }
  if (!PQsendQueryParams(c->pg, sql, n, types, vals, lens, fmts, 0)) return pg_fail(c, NULL, "send");
  PQsetSingleRowMode(c->pg);
  int r = 0, stop = 0;
  PGresult *res;
  struct srv_val cols[32];
  unsigned char *unesc[32];
  while ((res = PQgetResult(c->pg))) {
    int st = PQresultStatus(res);
    if (st == PGRES_SINGLE_TUPLE && cb && !stop && !r) {
      int nc = PQnfields(res);
      if (nc > 32) nc = 32;
      for (int i = 0; i < nc; i++) {
        struct srv_val *v = &cols[i];
        memset(v, 0, sizeof *v);
        unesc[i] = NULL;
        if (PQgetisnull(res, 0, i)) continue;
        const char *t = PQgetvalue(res, 0, i);
        switch (PQftype(res, i)) {
          case OID_INT8: case OID_INT2: case OID_INT4: case OID_NUMERIC:
            v->type = SRV_INT;
            v->i = strtoll(t, NULL, 10);
            break;
          case OID_BYTEA: {
            size_t len = 0;
            unesc[i] = PQunescapeBytea((const unsigned char *)t, &len);
            v->type = SRV_BLOB;
            v->p = (const char *)unesc[i];
            v->len = len;
            break;
          }
          default:
            v->type = SRV_TEXT;
            v->p = t;
            v->len = (size_t)PQgetlength(res, 0, i);
        }
      }
      stop = cb(ctx, nc, cols);
      for (int i = 0; i < nc; i++) PQfreemem(unesc[i]);
    } else if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      if (changes) *changes = strtoll(PQcmdTuples(res), NULL, 10);
    } else if (st != PGRES_SINGLE_TUPLE && !r) {
      r = pg_fail(c, res, "query");
    }
    PQclear(res);
  }
  if (!r && PQstatus(c->pg) != CONNECTION_OK) r = pg_fail(c, NULL, "connection");
  if (stop && !r) r = stop;
  return r;
}

static int pg_broken(struct srv_conn *c) {
  return c->broken || PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE;
}

const struct srv_engine _srv_pg = {
    .name = "postgres",
    .begin_write = "BEGIN",
    .lease_pick = SRV_LEASE_PICK " FOR UPDATE SKIP LOCKED",
    .migrate_lock = "SELECT pg_advisory_xact_lock(4242029)",
    .serial_pk = "BIGSERIAL PRIMARY KEY",
    .blob_type = "BYTEA",
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .exec = pg_exec,
    .script = pg_script,
    .broken = pg_broken,
};
