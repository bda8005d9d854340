/* server/store.h — the store of `heapgraph serve`: one small interface over
 * two SQL engines (SQLite in WAL mode at DIR/heapgraph.db, PostgreSQL via
 * libpq) with one schema, one set of query texts (server/store_sql.c) and
 * versioned migrations applied on open; the job queue with leases; the
 * issues cache (server/issues_cache.c); workers (server/worker.c) and
 * retention (server/retention.c). docs/serve.md section 3.
 *
 * Every function is thread-safe: the handle keeps a small pool of
 * connections (one per concurrent caller, opened on demand).
 * Return values: 0 ok, SRV_EUNAVAIL (database unreachable: the intake
 * answers 503), SRV_ENOTFOUND, SRV_ELOST (a lease that is no longer ours),
 * SRV_EFULL (disk full: 507), SRV_EERR (any other error); the message of the last error of the calling
 * thread is srv_store_error(). */
#ifndef HG_SERVER_STORE_H
#define HG_SERVER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "heapgraph.h"

#define SRV_EERR (-1)
#define SRV_EUNAVAIL (-2)
#define SRV_ENOTFOUND (-3)
#define SRV_ELOST (-4)
#define SRV_EFULL (-5)        /* the database's disk is full (507)        */

#define SRV_APP_MAX 128       /* bytes of an app name, NUL included       */
#define SRV_KEYID_MAX 64
#define SRV_HASH_MAX 192
#define SRV_ID_LEN 16         /* snapshot id: 16 lowercase hex digits     */
#define SRV_TEXT_MAX 256      /* version, device strings, blob names      */

struct srv_store;

/* Opens db_url ("postgres://…" or "postgresql://…") when not NULL, else
 * SQLite at data_dir/heapgraph.db; applies the migrations. 0, SRV_EUNAVAIL,
 * SRV_EERR. */
int srv_store_open(const char *data_dir, const char *db_url, struct srv_store **out);
void srv_store_close(struct srv_store *s);
/* "sqlite" or "postgres". */
const char *srv_store_engine(const struct srv_store *s);
/* The schema version after the migrations. */
int srv_store_schema_version(struct srv_store *s);
/* The calling thread's last error message ("" when none). */
const char *srv_store_error(void);

/* ---- keys: "hgk_<key_id>_<secret>"; the store keeps key_id and the hash ---- */
struct srv_key {
  char key_id[SRV_KEYID_MAX];
  char app[SRV_APP_MAX];
  char hash[SRV_HASH_MAX];    /* whatever the caller stored (salt + digest) */
  int read;                   /* 1: read key, 0: upload key                 */
  int revoked;
  int64_t created;            /* unix seconds                               */
};
int srv_store_key_add(struct srv_store *s, const char *app, int read, const char *key_id,
                      const char *key_hash);
int srv_store_key_revoke(struct srv_store *s, const char *key_id);   /* SRV_ENOTFOUND */
typedef int (*srv_key_fn)(void *ctx, const struct srv_key *k);       /* nonzero stops */
int srv_store_key_list(struct srv_store *s, srv_key_fn cb, void *ctx);
int srv_store_key_find(struct srv_store *s, const char *key_id, struct srv_key *out);

/* ---- app settings: 0 in a field = the server's default ---- */
struct srv_app_settings {
  int64_t max_upload_bytes;
  int64_t rate_per_minute;    /* uploads per key                            */
  int64_t quota_bytes;        /* blob bytes kept for the app                */
  int64_t retention_days;     /* full files of non-exemplars dropped after  */
};
/* Unknown app: 0 with every field 0. */
int srv_store_app_get(struct srv_store *s, const char *app, struct srv_app_settings *out);
int srv_store_app_set(struct srv_store *s, const char *app, const struct srv_app_settings *in);
typedef int (*srv_app_fn)(void *ctx, const char *app);
int srv_store_apps(struct srv_store *s, srv_app_fn cb, void *ctx);
/* Bumped by every finished analysis of the app (the issues cache's key). */
int srv_store_app_generation(struct srv_store *s, const char *app, int64_t *gen);

/* ---- snapshots ---- */
struct srv_snapshot_meta {
  const char *app;
  const char *id;             /* 16 lowercase hex digits (trailer xxh64)    */
  uint64_t size;
  const char *blob;           /* relative to the data dir: blobs/ab/<id>-<size>.hgsnap */
  const char *version;        /* may be NULL (the worker fills it in)       */
  const char *device_model;   /* may be NULL                                */
  const char *device_id;      /* install id, may be NULL                    */
  int64_t received;           /* unix seconds                               */
};
/* Inserts the snapshot and enqueues its analysis job in ONE transaction.
 * *is_new = 0 for a duplicate (app, id): nothing changes. */
int srv_store_snapshot_put(struct srv_store *s, const struct srv_snapshot_meta *m, int *is_new);

enum srv_state { SRV_QUEUED = 0, SRV_LEASED = 1, SRV_DONE = 2, SRV_QUARANTINED = 3 };
const char *srv_state_name(int state);   /* "queued" … "quarantined"     */

struct srv_snapshot {
  char app[SRV_APP_MAX];
  char id[SRV_ID_LEN + 1];
  uint64_t size;
  char blob[SRV_TEXT_MAX];
  char version[SRV_TEXT_MAX];
  char device_model[SRV_TEXT_MAX];
  char device_id[SRV_TEXT_MAX];
  int64_t received, analysed; /* unix seconds (analysed 0: not yet)         */
  int state;                  /* enum srv_state                             */
  int attempts;               /* failed or crashed analyses                 */
  char reason[SRV_TEXT_MAX];  /* why quarantined                            */
  int blob_kept;              /* 0: the full file was dropped by retention  */
};
int srv_store_snapshot_get(struct srv_store *s, const char *app, const char *id,
                           struct srv_snapshot *out);              /* SRV_ENOTFOUND */
typedef int (*srv_snapshot_fn)(void *ctx, const struct srv_snapshot *sn);
/* app NULL: every app. Newest first. */
int srv_store_snapshot_list(struct srv_store *s, const char *app, srv_snapshot_fn cb, void *ctx);
int srv_store_quarantine_list(struct srv_store *s, const char *app, srv_snapshot_fn cb, void *ctx);

struct srv_version_row {
  const char *version;
  uint64_t snapshots;         /* analysed (with a summary)                  */
  uint64_t devices;           /* distinct device ids                        */
};
typedef int (*srv_version_fn)(void *ctx, const struct srv_version_row *v);
int srv_store_versions(struct srv_store *s, const char *app, srv_version_fn cb, void *ctx);

/* Counts over every app (metrics): jobs by state and summaries. */
struct srv_counts { uint64_t queued, leased, done, quarantined, summaries, blob_bytes; };
int srv_store_counts(struct srv_store *s, const char *app, struct srv_counts *out);

/* ---- summaries (the CBOR of hg_fleet_summary_encode) ---- */
/* seq: increasing insertion order (the issues cache reads only new rows). */
typedef int (*srv_summary_fn)(void *ctx, int64_t seq, const char *id, const void *cbor, size_t len);
/* Summaries of app with seq > after_seq, in seq order. */
int srv_store_summaries(struct srv_store *s, const char *app, int64_t after_seq, srv_summary_fn cb,
                        void *ctx);
int srv_store_summary_get(struct srv_store *s, const char *app, const char *id, void **cbor,
                          size_t *len);                           /* malloc'd */

/* ---- jobs ---- */
struct srv_job {
  int64_t seq;
  int64_t token;              /* the lease: finish/fail only with this one  */
  char app[SRV_APP_MAX];
  char id[SRV_ID_LEN + 1];
  char blob[SRV_TEXT_MAX];
  uint64_t size;
  int attempts;
};
/* Leases the oldest queued job (or one whose lease expired: that counts as a
 * crash, and a second one quarantines it with reason "lease expired").
 * PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED; SQLite: BEGIN IMMEDIATE.
 * 0 with *job, SRV_ENOTFOUND when there is nothing to do. */
int srv_store_job_lease(struct srv_store *s, const char *worker, int lease_seconds, struct srv_job *job);
/* Extends our lease. SRV_ELOST when it is no longer ours. */
int srv_store_job_renew(struct srv_store *s, const struct srv_job *job, int lease_seconds);

struct srv_summary_row {
  const void *cbor;
  size_t len;
  const char *version, *device_model, *device_id;  /* from the summary      */
  uint64_t nodes, edges, heap_bytes, leaked_bytes;
};
/* Writes the summary, marks the job done, bumps the app's generation — one
 * transaction, only while the lease is ours (else SRV_ELOST, nothing written). */
int srv_store_job_finish(struct srv_store *s, const struct srv_job *job, const char *worker,
                         const struct srv_summary_row *row);
enum srv_fail {
  SRV_FAIL_ERROR = 0,         /* counts as an attempt                       */
  SRV_FAIL_CRASH = 1,         /* crashed / exhausted the worker: an attempt */
  SRV_FAIL_REFUSED = 2        /* quarantined now (budget, unreadable blob)  */
};
/* attempts+1; quarantined after 2 failed attempts or when refused. */
int srv_store_job_fail(struct srv_store *s, const struct srv_job *job, const char *reason, int how);

/* ---- retention (server/retention.c uses these) ---- */
/* Marks the snapshot's full file dropped; *blob_unused = 1 when no other
 * row keeps the same blob (then the caller deletes the file). */
int srv_store_blob_drop(struct srv_store *s, const char *app, const char *id, int *blob_unused);
/* Replaces the app's exemplar marks (ids of snapshots whose full files
 * retention keeps). */
int srv_store_exemplars_set(struct srv_store *s, const char *app, char *const *ids, size_t n);
/* 1 in *is when (app, id) is marked. */
int srv_store_exemplar_is(struct srv_store *s, const char *app, const char *id, int *is);
/* Calls cb with each blob name under dir ("blobs/ab") that some row keeps. */
int srv_store_blobs_kept(struct srv_store *s, const char *dir, srv_app_fn cb, void *ctx);
/* Sum of the kept blobs' sizes of the app. */
int srv_store_blob_bytes(struct srv_store *s, const char *app, uint64_t *bytes);

/* ---- issues (server/issues_cache.c) ---- */
struct srv_issues_query {
  const char *version;        /* NULL: the highest version                  */
  const char *baseline;       /* NULL: the one below                        */
  int kind;                   /* enum hg_fleet_kind, or -1                  */
  int status;                 /* enum hg_fleet_status, or -1                */
  uint64_t floor;
};
/* Writes {"issues":[…the objects of `heapgraph fleet --json`…],
 * "version":…, "baseline":…, "snapshots":N, "generation":G, "pending":0|1}
 * through write. Cached per (app, query) with the app's generation; a stale
 * entry is answered with "pending":1 while a refresh runs in the background.
 * 0, SRV_ENOTFOUND (no such app / version), SRV_EUNAVAIL, SRV_EERR. */
int srv_issues_get(struct srv_store *s, const char *app, const struct srv_issues_query *q,
                   hg_write_fn write, void *ctx);
/* Same, waiting for the fresh answer (never "pending":1). */
int srv_issues_get_fresh(struct srv_store *s, const char *app, const struct srv_issues_query *q,
                         hg_write_fn write, void *ctx);
/* Runs fn on the app's fleet set (up to date with the store), under the
 * set's lock: for the growth, tree and issue-detail views and retention. */
struct srv_fleet_set;
typedef int (*srv_fleet_fn)(void *ctx, struct srv_fleet_set *set);
int srv_fleet_with(struct srv_store *s, const char *app, srv_fleet_fn fn, void *ctx);
/* Inside fn only: the set's fleet. */
const struct hg_fleet *srv_fleet_of(const struct srv_fleet_set *set);
/* Inside fn only: hg_fleet_issues(fleet, q) remembered with the set's
 * generation (the last SRV_FLEET_MEMO queries of the app), so an issue
 * page's history (every version against the one below) and retention's
 * exemplars are computed once per change of the app's summaries, not per
 * request. *out stays owned by the set and valid until fn returns (the
 * memo drops its least recent answers only then). The library's HG_* code. */
#define SRV_FLEET_MEMO 64
int srv_fleet_issues_memo(struct srv_fleet_set *set, const struct hg_fleet_query *q,
                          const struct hg_fleet_issues **out);

/* ---- workers (server/worker.c) ---- */
struct srv_worker_config {
  const char *data_dir;       /* where blobs/ is                            */
  int threads;                /* --workers N                                */
  int lease_seconds;          /* default 60                                 */
  uint64_t max_nodes, max_edges;  /* budget from the trailer (0: none)      */
  uint64_t mem_limit;         /* RLIMIT_DATA budget of the analysing child (0: none) */
  int in_process;             /* 1: analyse in the thread (no child)        */
  const char *name;           /* worker id prefix (default host:pid)        */
  int retention_seconds;      /* retention pass period (0: none)            */
  int retention_days;         /* for apps without their own (0: keep)       */
  int max_seconds;            /* one analysis at most (default 600): crash  */
};
struct srv_workers;
int srv_workers_start(struct srv_store *s, const struct srv_worker_config *c,
                      struct srv_workers **out);
/* Stops after the current jobs. */
void srv_workers_stop(struct srv_workers *w);
/* The analysing child's entry: argv[0] "serve", argv[1] "--analyse-child";
 * returns its exit status, or -1 when argv is not a child's (so every main
 * that links the workers starts with it). */
int srv_worker_child_main(int argc, char **argv);
/* One job in the calling thread (tests): 0 done, SRV_ENOTFOUND none, else error. */
int srv_worker_run_one(struct srv_store *s, const struct srv_worker_config *c, const char *worker);

struct srv_retention_stats { uint64_t dropped, dropped_bytes, kept_exemplars, orphans; };
#define SRV_ORPHAN_GRACE 3600 /* seconds before a blob file no row keeps is removed */
/* One pass over every app: keeps each issue's exemplars per version, drops
 * other full files older than the app's retention_days (default_days when
 * 0) and, over the quota, the oldest non-exemplars first. */
int srv_retention_run(struct srv_store *s, const char *data_dir, int64_t now, int default_days,
                      struct srv_retention_stats *st);

#endif /* HG_SERVER_STORE_H */
