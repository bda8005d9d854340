/*
 * serve.h — the internals of `heapgraph serve` that the intake side shares:
 * the server's configuration and state (store, blob directory, limits,
 * metrics), keys (keys.c), the blob directory (blobs.c), the per-key rate
 * limiter (limits.c), the streaming decoder (decode.c), the outcome
 * counters and request log (metrics.c) and POST /v1/snapshots (intake.c).
 * docs/serve.md sections 1-2.
 */
#ifndef HG_SERVER_SERVE_H
#define HG_SERVER_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "server/store.h"

struct web_req;

/* ---- outcomes (metric heapgraph_serve_requests_total{app,outcome}) ---- */
enum srv_outcome {
  SRV_ACCEPTED,
  SRV_DUPLICATE,
  SRV_TOO_LARGE,
  SRV_RATE_LIMITED,
  SRV_INVALID,
  SRV_UNAUTHORIZED,
  SRV_SERVER_ERROR,
  SRV_UNAVAILABLE,          /* 503: the database is unreachable          */
  SRV_INSUFFICIENT_STORAGE, /* 507: the data directory is full           */
  SRV_ABORTED,              /* the client went away or hit a deadline    */
  SRV_OUTCOMES
};
const char *srv_outcome_name(int outcome);

/* ---- metrics.c ---- */
struct srv_metrics;
struct srv_metrics *srv_metrics_new(FILE *log);
void srv_metrics_free(struct srv_metrics *m);
/* Counts one request's outcome for app ("-": no valid key) and writes its
 * log line. */
void srv_metrics_count(struct srv_metrics *m, const char *app, int outcome, unsigned status,
                       const char *key_id, uint64_t bytes, double seconds, const char *reason);
void srv_metrics_dropped(struct srv_metrics *m); /* a connection cut by a deadline */
/* Prometheus text exposition. */
void srv_metrics_write(struct srv_metrics *m, FILE *f);

/* ---- keys.c: "hgk_<key_id>_<secret>" ---- */
#define SRV_KEY_MAX 128
/* New key for app: fills key (the whole secret text, shown once), key_id
 * and hash (what the store keeps). 0 or -1 (no random bytes). */
int srv_key_new(char key[SRV_KEY_MAX], char key_id[SRV_KEYID_MAX], char hash[SRV_HASH_MAX]);
/* Splits key into key_id and secret; 0 or -1 when it is not a key. */
int srv_key_parse(const char *key, char key_id[SRV_KEYID_MAX], const char **secret);
/* 1 when secret matches the stored hash (constant time). */
int srv_key_verify(const char *secret, const char *hash);
/* Bearer key from an Authorization header value, or NULL. */
const char *srv_bearer(const char *authorization);

/* ---- blobs.c: DATA/blobs/ab/<id>-<size>.hgsnap, DATA/blobs/tmp/ ---- */
/* Creates the directories and removes what a killed server of this host
 * left in tmp/ (and anything there a day old). */
int srv_blobs_init(const char *data_dir);
/* A new temporary file in DATA/blobs/tmp: its fd, path filled. -1 + errno. */
int srv_blob_temp(const char *data_dir, char *path, size_t path_size);
/* Makes tmp_path (fd open on it) the blob of id/size: fsync, rename to its
 * content-addressed name, fsync of the directories. An existing blob of the
 * same name stays, marked fresh (the temporary is removed). Fills rel (relative to data
 * dir). 0 or -1 + errno (the temporary is removed either way). */
int srv_blob_commit(const char *data_dir, const char *tmp_path, int fd, const char *id, uint64_t size,
                    char *rel, size_t rel_size);

/* Deletes the blob file at rel ("blobs/ab/<id>-<size>.hgsnap") unless it
 * was written or marked by an upload less than grace_seconds before now
 * (the protocol in blobs.c: safe against uploads on other hosts). 1 when
 * deleted, 0 when absent or fresh (kept), -1 + errno. */
int srv_blob_delete(const char *data_dir, const char *rel, int64_t now, int grace_seconds);
/* Removes the blob files no row of s keeps (srv_store_blobs_kept) once
 * grace_seconds old (by mtime); *removed counts them. 0 or the store's error. */
int srv_blobs_sweep(const char *data_dir, struct srv_store *s, int64_t now, int grace_seconds, uint64_t *removed);

/* ---- strset.c: a sorted set of strings ---- */
struct srv_strset { char **v; size_t n, cap; };
/* Appends a copy (duplicates too: seal drops them). 0, or -1 out of memory. */
int srv_strset_add(struct srv_strset *s, const char *v);
/* Sorts and keeps each string once; lookups after this. */
void srv_strset_seal(struct srv_strset *s);
int srv_strset_has(const struct srv_strset *s, const char *v);
void srv_strset_free(struct srv_strset *s);

/* ---- limits.c: per-key token bucket ---- */
struct srv_limiter;
struct srv_limiter *srv_limiter_new(void);
void srv_limiter_free(struct srv_limiter *l);
/* Takes one upload from key_id's bucket (per_minute uploads, burst the same).
 * 0 when allowed, else the seconds to wait (>= 1). */
unsigned srv_limiter_take(struct srv_limiter *l, const char *key_id, int64_t per_minute);

/* ---- decode.c: Content-Encoding identity/gzip/zstd into a file ---- */
enum { SRV_ENC_IDENTITY, SRV_ENC_GZIP, SRV_ENC_ZSTD };
enum { SRV_DEC_OK = 0, SRV_DEC_LIMIT = 1, SRV_DEC_BAD = 2, SRV_DEC_IO = 3 };
struct srv_decoder;
/* -1: unknown encoding name. */
int srv_encoding(const char *content_encoding);
struct srv_decoder *srv_decoder_new(int encoding, int fd, uint64_t limit);
/* Decodes n bytes, writing the output to fd; stops at the limit without
 * writing past it. SRV_DEC_*; errno kept for SRV_DEC_IO; a reason for BAD. */
int srv_decoder_feed(struct srv_decoder *d, const void *in, size_t n);
/* End of input: SRV_DEC_BAD when the compressed stream is not complete. */
int srv_decoder_finish(struct srv_decoder *d);
uint64_t srv_decoder_out(const struct srv_decoder *d);
const char *srv_decoder_reason(const struct srv_decoder *d);
int srv_decoder_errno(const struct srv_decoder *d);
void srv_decoder_free(struct srv_decoder *d);

/* ---- the server ---- */
struct srv_limits {
  uint64_t max_upload;       /* default per app (bytes on the wire)          */
  uint64_t max_decoded;      /* decompressed bytes                           */
  int64_t rate_per_minute;   /* default per key                              */
  unsigned verify_slots;     /* snapshots verified at once (CPU bound)       */
};

struct srv {
  const char *data_dir;
  struct srv_store *store;
  struct srv_limits lim;
  struct srv_metrics *metrics;
  struct srv_limiter *limiter;
  pthread_mutex_t verify_lock;
  pthread_cond_t verify_cond;
  unsigned verifying;
};

/* intake.c: the route handler of POST /v1/snapshots. */
int srv_intake(void *app, struct web_req *r, int phase, const char *data, size_t size);
/* GET /metrics. */
int srv_metrics_route(void *app, struct web_req *r, int phase, const char *data, size_t size);

#endif
