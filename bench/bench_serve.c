/* bench/bench_serve.c — the store's half of `make bench-serve`
 * (bench/bench_serve.sh runs the rest):
 *   bench_serve issues DATA_DIR [postgres://…] N QUERIES
 * fills the store with N synthetic summaries of one app (3 versions, 2,000
 * devices, 24 retention signatures + a leak and 20 classes each; bulk
 * insert, 5,000 rows per transaction), prints rows and bytes per snapshot,
 * then times srv_issues_get: the first (cold) answer, then QUERIES answers
 * while new summaries keep arriving through the real job path (one before
 * every 10th query, so the cache is stale that often), p50/p95/p99, and how
 * long a fresh answer takes after the last change. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph/fleet.h"
#include "server/store_priv.h"

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t seed = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
  seed ^= seed >> 12;
  seed ^= seed << 25;
  seed ^= seed >> 27;
  return seed * 0x2545f4914f6cdd1dull;
}

/* One synthetic summary, encoded (malloc'd). */
static uint8_t *make_summary(uint32_t s, size_t *len, const char **version, char *device) {
  static char cls[200][20];
  static const char *steps[200][3];
  static int init;
  if (!init) {
    for (int i = 0; i < 200; i++) {
      snprintf(cls[i], sizeof cls[i], "Holder%03d", i);
      steps[i][0] = "global:bench";
      steps[i][1] = cls[i / 10];
      steps[i][2] = cls[i];
    }
    init = 1;
  }
  static const char *versions[] = {"3.0", "3.1", "4.0"};
  static const char *leak[] = {"cycle", "Conn", "Handler"};
  struct hg_fleet_sig sig[25];
  struct hg_fleet_class klass[20];
  char id[20];
  uint32_t v = s % 3, first = (uint32_t)(rnd() % 176);
  snprintf(id, sizeof id, "%016" PRIx64, (uint64_t)(s * 0x9e3779b97f4a7c15ull));
  snprintf(device, 24, "dev-%04u", (unsigned)(rnd() % 2000));
  for (uint32_t k = 0; k < 24; k++) {
    uint64_t bytes = 32768 + rnd() % (1u << 19) + (v == 2 && first + k < 12 ? 1u << 19 : 0);
    sig[k] = (struct hg_fleet_sig){_hg_fleet_hash(HG_FLEET_RETENTION, HG_FLEET_ALGO, steps[first + k], 3), bytes, 1,
                                   HG_FLEET_RETENTION, HG_FLEET_ALGO, 3, steps[first + k]};
  }
  sig[24] = (struct hg_fleet_sig){_hg_fleet_hash(HG_FLEET_LEAK, HG_FLEET_ALGO, leak, 3), 2048 + rnd() % 8192, 1,
                                  HG_FLEET_LEAK, HG_FLEET_ALGO, 3, leak};
  for (uint32_t k = 0; k < 20; k++) klass[k] = (struct hg_fleet_class){cls[(first + 3 * k) % 200], 10, rnd() % 65536, 0};
  struct hg_fleet_summary sum = {.format = HG_FLEET_SUMMARY_FORMAT, .app = "bench", .app_version = versions[v],
                                 .device_id = device, .snapshot = id, .checksum = (uint64_t)s, .sigs = sig,
                                 .sig_count = 25, .classes = klass, .class_count = 20};
  uint8_t *buf = NULL;
  if (hg_fleet_summary_encode(&sum, &buf, len)) return NULL;
  *version = versions[v];
  return buf;
}

static int bulk_fill(struct srv_store *s, uint32_t n, uint64_t *cbor_bytes) {
  struct srv_conn *c;
  int rc = _srv_conn_get(s, &c);
  if (rc) return rc;
  const struct srv_engine *e = s->e;
  struct srv_val pa[1] = {V_TEXT("bench")};
  rc = e->exec(c, "INSERT INTO apps (app) VALUES ($1) ON CONFLICT DO NOTHING", 1, pa, NULL, NULL, NULL);
  for (uint32_t i = 0; !rc && i < n; i++) {
    if (i % 5000 == 0) rc = e->exec(c, e->begin_write, 0, NULL, NULL, NULL, NULL);
    size_t len = 0;
    const char *version = NULL;
    char device[24], id[20];
    uint8_t *sum = make_summary(i, &len, &version, device);
    if (!sum) rc = SRV_EERR;
    *cbor_bytes += len;
    snprintf(id, sizeof id, "%016" PRIx64, (uint64_t)(i * 0x9e3779b97f4a7c15ull));
    struct srv_val p[5] = {V_TEXT("bench"), V_TEXT(id), V_TEXT(version), V_TEXT(device), V_INT(1700000000 + i)};
    struct srv_val pc[6] = {p[0], p[1], p[2], p[3], p[4], V_BLOB(sum, len)};
    if (!rc)
      rc = e->exec(c, "INSERT INTO summaries (app, id, version, device_id, worker, analysed, nodes, edges,"
                      " heap_bytes, leaked_bytes, cbor) VALUES ($1, $2, $3, $4, 'bulk', $5, 0, 0, 0, 0, $6)", 6, pc,
                   NULL, NULL, NULL);
    free(sum);
    if (!rc && (i % 5000 == 4999 || i + 1 == n)) {
      /* the batch's snapshot and job rows, set-based (one round trip each) */
      struct srv_val pb[3] = {V_TEXT("bench"), V_TEXT("bulk"), V_INT(1700000000 + i / 5000 * 5000)};
      rc = e->exec(c, "INSERT INTO snapshots (app, id, size, blob, version, device_id, received, analysed)"
                      " SELECT app, id, 1000, 'blobs/bulk/' || id, version, device_id, analysed, analysed"
                      " FROM summaries WHERE app = $1 AND worker = $2 AND analysed >= $3", 3, pb, NULL, NULL, NULL);
      if (!rc)
        rc = e->exec(c, "INSERT INTO jobs (app, id, blob, size, state, finished)"
                        " SELECT app, id, 'blobs/bulk/' || id, 1000, 2, analysed FROM summaries"
                        " WHERE app = $1 AND worker = $2 AND analysed >= $3", 3, pb, NULL, NULL, NULL);
      if (!rc) rc = e->exec(c, "UPDATE apps SET generation = generation + 1 WHERE app = $1", 1, pa, NULL, NULL, NULL);
      if (!rc) rc = e->exec(c, "COMMIT", 0, NULL, NULL, NULL, NULL);
    }
  }
  if (rc) fprintf(stderr, "bench_serve: fill: %s\n", srv_store_error());
  _srv_conn_put(s, c);
  return rc;
}

/* One new summary through the real path: put, lease, finish. */
static int arrive(struct srv_store *s, uint32_t i) {
  size_t len = 0;
  const char *version = NULL;
  char device[24], id[20];
  uint8_t *sum = make_summary(i, &len, &version, device);
  snprintf(id, sizeof id, "%016" PRIx64, (uint64_t)(i * 0x9e3779b97f4a7c15ull));
  struct srv_snapshot_meta m = {"bench", id, 1000, "blobs/none", version, NULL, device, 0};
  int is_new = 0, rc = srv_store_snapshot_put(s, &m, &is_new);
  struct srv_job j;
  /* other queued jobs may exist (none here): lease until ours */
  if (!rc) rc = srv_store_job_lease(s, "bench", 60, &j);
  struct srv_summary_row row = {sum, len, version, NULL, device, 0, 0, 0, 0};
  if (!rc) rc = srv_store_job_finish(s, &j, "bench", &row);
  free(sum);
  return rc;
}

static int sink(void *ctx, const void *d, size_t n) {
  (void)d;
  *(size_t *)ctx += n;
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int row_i64(void *ctx, int n, const struct srv_val *v) {
  if (n > 0) *(int64_t *)ctx = v[0].i;
  return 0;
}

/* The database's size: pg_database_size, or the SQLite file and its WAL. */
static int64_t db_bytes(struct srv_store *s, const char *dir) {
  int64_t v = 0;
  if (!strcmp(s->e->name, "postgres")) {
    _srv_exec1(s, "SELECT pg_database_size(current_database())", 0, NULL, row_i64, &v, NULL);
    return v;
  }
  const char *suffix[] = {"", "-wal"};
  for (int i = 0; i < 2; i++) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/heapgraph.db%s", dir, suffix[i]);
    if (!stat(p, &st)) v += st.st_size;
  }
  return v;
}

/* Keeps the last bytes of an answer ("pending" is its last field). */
struct tail { char t[64]; };
static int keep_tail(void *ctx, const void *d, size_t n) {
  struct tail *tb = ctx;
  size_t have = strlen(tb->t), cap = sizeof tb->t - 1;
  const char *p = d;
  if (n >= cap) {
    memcpy(tb->t, p + n - cap, cap);
    tb->t[cap] = 0;
    return 0;
  }
  if (have + n > cap) {
    memmove(tb->t, tb->t + (have + n - cap), cap - n);
    have = cap - n;
  }
  memcpy(tb->t + have, p, n);
  tb->t[have + n] = 0;
  return 0;
}

static int issues(const char *dir, const char *url, uint32_t n, uint32_t queries) {
  struct srv_store *s = NULL;
  if (srv_store_open(dir, url, &s)) {
    fprintf(stderr, "bench_serve: %s\n", srv_store_error());
    return 1;
  }
  const char *engine = srv_store_engine(s);
  int64_t before = db_bytes(s, dir);
  uint64_t cbor = 0;
  double t0 = mono();
  if (bulk_fill(s, n, &cbor)) return 1;
  double fill = mono() - t0;
  int64_t after = db_bytes(s, dir);
  printf("store %s: %u summaries bulk-inserted in %.1f s (%.0f snapshots/s); 3 rows per snapshot (snapshots, jobs, "
         "summaries); summary CBOR %.0f bytes; database %.0f bytes per snapshot with indexes\n",
         engine, n, fill, n / fill, (double)cbor / n, (double)(after - before) / n);
  struct srv_issues_query q = {NULL, NULL, -1, -1, 0};
  size_t out = 0;
  t0 = mono();
  int rc = srv_issues_get(s, "bench", &q, sink, &out);
  double cold = mono() - t0;
  if (rc) {
    fprintf(stderr, "bench_serve: issues: %s\n", srv_store_error());
    return 1;
  }
  double *lat = calloc(queries, sizeof *lat), t_arrive = 0;
  uint32_t stale = 0, arrived = 0;
  if (!lat) return 1;
  for (uint32_t i = 0; i < queries; i++) {
    if (i % 10 == 5) {
      double a = mono();
      if (arrive(s, n + arrived++)) {
        fprintf(stderr, "bench_serve: arrive: %s\n", srv_store_error());
        return 1;
      }
      t_arrive += mono() - a;
    }
    t0 = mono();
    rc = srv_issues_get(s, "bench", &q, sink, &out);
    lat[i] = mono() - t0;
    if (rc) return 1;
    usleep(5000);
  }
  /* how long until the answer includes the last arrival */
  t0 = mono();
  for (;;) {
    struct tail tb = {{0}};
    if (srv_issues_get(s, "bench", &q, keep_tail, &tb)) return 1;
    if (strstr(tb.t, "\"pending\":0")) break;
    stale++;
    usleep(10000);
  }
  double fresh = mono() - t0;
  qsort(lat, queries, sizeof *lat, cmp_d);
  printf("issues query %s, %u summaries: cold %.2f s (read + decode + add + issues); %u queries while %u more "
         "arrived (every 10th query after a new summary): p50 %.2f ms, p95 %.2f ms (goal <= 100), p99 %.2f ms, "
         "max %.2f ms; a fresh answer %.2f s after the last change; one arrival (put + lease + finish) %.1f ms\n",
         engine, n, cold, queries, arrived, lat[queries / 2] * 1e3, lat[queries * 95 / 100] * 1e3,
         lat[queries * 99 / 100] * 1e3, lat[queries - 1] * 1e3, fresh, t_arrive / (arrived ? arrived : 1) * 1e3);
  free(lat);
  srv_store_close(s);
  return 0;
}

int main(int argc, char **argv) {
  int child = argc > 1 ? srv_worker_child_main(argc - 1, argv + 1) : -1; /* a worker's analysing child */
  if (child >= 0) return child;
  if (argc >= 5 && !strcmp(argv[1], "issues")) {
    int pg = argc >= 6;
    return issues(argv[2], pg ? argv[3] : NULL, (uint32_t)atoi(argv[pg ? 4 : 3]), (uint32_t)atoi(argv[pg ? 5 : 4]));
  }
  fprintf(stderr, "usage: bench_serve issues DATA_DIR [postgres://…] N QUERIES\n");
  return 2;
}
