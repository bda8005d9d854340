/* tests/serve/store_suite.c — the store test suite of `heapgraph serve`
 * (server/store.h), run by tests/serve/store_both.sh once on SQLite and once
 * on PostgreSQL:
 *   store_suite SNAPGEN WORKDIR [postgres://…]
 * Migrations, keys and app settings with hostile strings, snapshots and
 * duplicates, the job queue (lease, renew, finish only with our lease,
 * expiry = a crash, quarantine after two, refused at once), concurrent
 * workers finishing every job exactly once, real workers (forked children)
 * on generated snapshots, the node budget, a crashing and a memory-
 * exhausting analysis quarantined, the issues cache against the library's
 * own answer (and dumped for the CLI comparison), stale answers with
 * "pending", retention by age and by quota. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hg_test.h"
#include "server/serve.h"
#include "server/store.h"

static const char *snapgen, *work, *pgurl;
static char data[4096];
static struct srv_store *st;

/* ---- helpers ---- */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Generates a snapshot and "takes it in" like the intake: into the blob
 * dir by its checksum, then srv_store_snapshot_put. id gets the id. */
static int ingest(const char *app, const char *version, const char *device, int seed, int nodes, char *id,
                  int *is_new) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s/gen.hgsnap", work);
  if (sh("%s %s '%s' '%s' '%s' %d %d", snapgen, tmp, app, version, device, seed, nodes)) return -1;
  uint64_t ck, size;
  if (hg_fleet_snapshot_key(tmp, &ck, &size)) return -1;
  snprintf(id, SRV_ID_LEN + 1, "%016" PRIx64, ck);
  char blob[256], path[4400];
  snprintf(blob, sizeof blob, "blobs/%.2s/%s-%" PRIu64 ".hgsnap", id, id, size);
  snprintf(path, sizeof path, "%s/blobs/%.2s", data, id);
  sh("mkdir -p %s %s/byid", path, work);
  snprintf(path, sizeof path, "%s/%s", data, blob);
  if (sh("cp %s %s && cp %s %s/byid/%s", tmp, path, tmp, work, id)) return -1;
  struct srv_snapshot_meta m = {app, id, size, blob, NULL, NULL, NULL, 0};
  return srv_store_snapshot_put(st, &m, is_new);
}

static struct srv_worker_config wcfg(void) {
  struct srv_worker_config c = {0};
  c.data_dir = data;
  c.threads = 2;
  c.lease_seconds = 30;
  c.mem_limit = 1ull << 30;
  c.name = "suite";
  return c;
}

/* Runs workers until the app has no queued or leased job (at most 120 s). */
static void drain(const struct srv_worker_config *c, const char *app) {
  struct srv_workers *w = NULL;
  if (srv_workers_start(st, c, &w)) return;
  for (int i = 0; i < 1200; i++) {
    struct srv_counts k;
    if (!srv_store_counts(st, app, &k) && !k.queued && !k.leased) break;
    usleep(100000);
  }
  srv_workers_stop(w);
}

struct membuf { char *p; size_t len; };
static int mem_write(void *ctx, const void *d, size_t n) {
  struct membuf *m = ctx;
  char *p = realloc(m->p, m->len + n + 1);
  if (!p) return -1;
  memcpy(p + m->len, d, n);
  m->p = p;
  m->len += n;
  p[m->len] = 0;
  return 0;
}

/* ---- tests ---- */

static void test_migrations(void) {
  CHECK_EQ_U(srv_store_schema_version(st), 2);
  struct srv_store *again = NULL;
  REQUIRE(srv_store_open(data, pgurl, &again) == 0); /* applied once: opening again changes nothing */
  CHECK_EQ_U(srv_store_schema_version(again), 2);
  srv_store_close(again);
}

static const char *const hostile[] = {"a'b", "x\"; DROP TABLE keys; --", "ctl\x01\x1f\x7f", "üñí €", "$1 ? %s",
                                      "back\\slash"};

static int count_snap(void *ctx, const struct srv_snapshot *sn) {
  (void)sn;
  (*(int *)ctx)++;
  return 0;
}

static int count_key(void *ctx, const struct srv_key *k) {
  (void)k;
  (*(int *)ctx)++;
  return 0;
}

static void test_keys(void) {
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    char id[64];
    snprintf(id, sizeof id, "k%zu'%s", i, i % 2 ? "--" : ";");
    CHECK(srv_store_key_add(st, hostile[i], (int)(i % 2), id, hostile[i]) == 0);
    struct srv_key k;
    REQUIRE(srv_store_key_find(st, id, &k) == 0);
    CHECK(!strcmp(k.app, hostile[i]));
    CHECK(!strcmp(k.hash, hostile[i]));
    CHECK(k.read == (int)(i % 2) && !k.revoked);
  }
  CHECK(srv_store_key_add(st, "a", 0, "k0';", "dup") == SRV_EERR); /* key ids are unique */
  int n = 0;
  CHECK(srv_store_key_list(st, count_key, &n) == 0);
  CHECK_EQ_U(n, sizeof hostile / sizeof *hostile);
  CHECK(srv_store_key_revoke(st, "k1'--") == 0);
  CHECK(srv_store_key_revoke(st, "k1'--") == SRV_ENOTFOUND);
  struct srv_key k;
  CHECK(srv_store_key_find(st, "k1'--", &k) == 0 && k.revoked);
  CHECK(srv_store_key_find(st, "nope", &k) == SRV_ENOTFOUND);
}

static void test_apps(void) {
  struct srv_app_settings a = {1000, 5, 1 << 20, 7}, b;
  CHECK(srv_store_app_set(st, "x\"; DROP TABLE apps; --", &a) == 0);
  CHECK(srv_store_app_get(st, "x\"; DROP TABLE apps; --", &b) == 0);
  CHECK(!memcmp(&a, &b, sizeof a));
  CHECK(srv_store_app_get(st, "unknown", &b) == 0 && b.max_upload_bytes == 0 && b.quota_bytes == 0);
}

static void test_snapshots(void) {
  char id[SRV_ID_LEN + 1], id2[SRV_ID_LEN + 1];
  int is_new = -1;
  REQUIRE(ingest("snapapp", "1.0", "dev\"1", 1, 200, id, &is_new) == 0);
  CHECK(is_new == 1);
  REQUIRE(ingest("snapapp", "1.0", "dev\"1", 1, 200, id2, &is_new) == 0); /* the same bytes again */
  CHECK(is_new == 0 && !strcmp(id, id2));
  REQUIRE(ingest("snapapp2", "1.0", "dev\"1", 1, 200, id2, &is_new) == 0); /* another app: its own row */
  CHECK(is_new == 1);
  struct srv_snapshot sn;
  REQUIRE(srv_store_snapshot_get(st, "snapapp", id, &sn) == 0);
  CHECK(sn.state == SRV_QUEUED && sn.blob_kept && sn.attempts == 0 && sn.size > 0);
  CHECK(srv_store_snapshot_get(st, "snapapp", "0000000000000000", &sn) == SRV_ENOTFOUND);
  struct srv_counts k;
  CHECK(srv_store_counts(st, "snapapp", &k) == 0 && k.queued == 1 && k.summaries == 0);
}

/* A job's whole life on a fake summary (the queue does not decode it). */
static void test_leases(void) {
  char id[SRV_ID_LEN + 1];
  int is_new;
  REQUIRE(ingest("leaseapp", "1.0", "d", 2, 200, id, &is_new) == 0);
  struct srv_job a, b;
  /* app snapapp has older jobs: lease until ours comes */
  REQUIRE(srv_store_job_lease(st, "w1", -10, &a) == 0); /* already expired */
  while (strcmp(a.app, "leaseapp")) {
    REQUIRE(srv_store_job_fail(st, &a, "skip", SRV_FAIL_REFUSED) == 0);
    REQUIRE(srv_store_job_lease(st, "w1", -10, &a) == 0);
  }
  CHECK(a.attempts == 0);
  REQUIRE(srv_store_job_lease(st, "w2", 60, &b) == 0); /* the expired lease is taken over: one crash */
  CHECK(b.seq == a.seq && b.token != a.token && b.attempts == 1);
  struct srv_summary_row row = {"fake", 4, "1.0", "m", "d", 1, 2, 3, 4};
  CHECK(srv_store_job_finish(st, &a, "w1", &row) == SRV_ELOST); /* the old lease writes nothing */
  CHECK(srv_store_job_renew(st, &a, 60) == SRV_ELOST);
  CHECK(srv_store_job_renew(st, &b, 60) == 0);
  int64_t g0 = -1, g1 = -1;
  CHECK(srv_store_app_generation(st, "leaseapp", &g0) == 0);
  CHECK(srv_store_job_finish(st, &b, "w2", &row) == 0);
  CHECK(srv_store_job_finish(st, &b, "w2", &row) == SRV_ELOST); /* once */
  CHECK(srv_store_app_generation(st, "leaseapp", &g1) == 0 && g1 == g0 + 1);
  struct srv_snapshot sn;
  CHECK(srv_store_snapshot_get(st, "leaseapp", id, &sn) == 0 && sn.state == SRV_DONE && !strcmp(sn.version, "1.0"));
  void *cb = NULL;
  size_t len = 0;
  CHECK(srv_store_summary_get(st, "leaseapp", id, &cb, &len) == 0 && len == 4 && !memcmp(cb, "fake", 4));
  free(cb);

  /* two expired leases: quarantined, never leased again */
  REQUIRE(ingest("leaseapp", "1.0", "d", 3, 200, id, &is_new) == 0);
  REQUIRE(srv_store_job_lease(st, "w1", -10, &a) == 0 && !strcmp(a.id, id));
  REQUIRE(srv_store_job_lease(st, "w2", -10, &b) == 0 && b.seq == a.seq);
  CHECK(srv_store_job_lease(st, "w3", 60, &b) == SRV_ENOTFOUND);
  CHECK(srv_store_snapshot_get(st, "leaseapp", id, &sn) == 0 && sn.state == SRV_QUARANTINED &&
        strstr(sn.reason, "lease expired") && sn.attempts == 2);

  /* a crash, then a crash: quarantined; a refusal: at once */
  REQUIRE(ingest("leaseapp", "1.0", "d", 4, 200, id, &is_new) == 0);
  REQUIRE(srv_store_job_lease(st, "w1", 60, &a) == 0);
  CHECK(srv_store_job_fail(st, &a, "crash one", SRV_FAIL_CRASH) == 0);
  CHECK(srv_store_snapshot_get(st, "leaseapp", id, &sn) == 0 && sn.state == SRV_QUEUED && sn.attempts == 1);
  REQUIRE(srv_store_job_lease(st, "w1", 60, &a) == 0);
  CHECK(srv_store_job_fail(st, &a, "crash two", SRV_FAIL_CRASH) == 0);
  CHECK(srv_store_snapshot_get(st, "leaseapp", id, &sn) == 0 && sn.state == SRV_QUARANTINED &&
        !strcmp(sn.reason, "crash two"));
  REQUIRE(ingest("leaseapp", "1.0", "d", 5, 200, id, &is_new) == 0);
  REQUIRE(srv_store_job_lease(st, "w1", 60, &a) == 0);
  CHECK(srv_store_job_fail(st, &a, "budget: too big", SRV_FAIL_REFUSED) == 0);
  CHECK(srv_store_snapshot_get(st, "leaseapp", id, &sn) == 0 && sn.state == SRV_QUARANTINED);
  int nq = 0;
  CHECK(srv_store_quarantine_list(st, "leaseapp", count_snap, &nq) == 0 && nq == 3);
}

/* Concurrent leasers: every job finished exactly once. */
#define CONC_JOBS 60
static int conc_done[CONC_JOBS + 1];
static pthread_mutex_t conc_mu = PTHREAD_MUTEX_INITIALIZER;
static void *conc_worker(void *arg) {
  char name[32];
  snprintf(name, sizeof name, "conc%ld", (long)(intptr_t)arg);
  struct srv_summary_row row = {"x", 1, "1.0", NULL, NULL, 0, 0, 0, 0};
  for (;;) {
    struct srv_job j;
    int rc = srv_store_job_lease(st, name, 60, &j);
    if (rc == SRV_ENOTFOUND) break;
    if (rc) continue;
    if (srv_store_job_finish(st, &j, name, &row) == 0) {
      int k = atoi(j.id + 12);
      pthread_mutex_lock(&conc_mu);
      if (k >= 0 && k <= CONC_JOBS) conc_done[k]++;
      pthread_mutex_unlock(&conc_mu);
    }
  }
  return NULL;
}

static void test_concurrent_leases(void) {
  for (int i = 1; i <= CONC_JOBS; i++) {
    char id[SRV_ID_LEN + 1], blob[64];
    snprintf(id, sizeof id, "c00000000000%04u", (unsigned)i % 10000u);
    snprintf(blob, sizeof blob, "blobs/none/%s", id);
    struct srv_snapshot_meta m = {"concapp", id, 1, blob, NULL, NULL, NULL, 0};
    int is_new;
    REQUIRE(srv_store_snapshot_put(st, &m, &is_new) == 0 && is_new);
  }
  pthread_t t[6];
  for (intptr_t i = 0; i < 6; i++) pthread_create(&t[i], NULL, conc_worker, (void *)i);
  for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
  int once = 1;
  for (int i = 1; i <= CONC_JOBS; i++) once &= conc_done[i] == 1;
  CHECK(once);
  struct srv_counts k;
  CHECK(srv_store_counts(st, "concapp", &k) == 0 && k.done == CONC_JOBS && k.summaries == CONC_JOBS &&
        k.queued == 0 && k.leased == 0);
}

/* The ids of the app's summaries in the store's order (ties between
 * exemplars go to the first added, in the library as in the CLI). */
static int add_id(void *ctx, int64_t seq, const char *id, const void *cbor, size_t len) {
  (void)seq;
  (void)cbor;
  (void)len;
  FILE *f = ctx;
  fprintf(f, "%s\n", id);
  return 0;
}

/* The library's own answer for the app's snapshot files (WORK/byid). */
static char *expected_issues(const char *app, const char *version, const char *baseline) {
  struct hg_fleet *f = hg_fleet_new();
  char order[4400];
  snprintf(order, sizeof order, "%s/order-%s", work, app);
  FILE *p = fopen(order, "w");
  if (p) {
    srv_store_summaries(st, app, 0, add_id, p);
    fclose(p);
  }
  p = fopen(order, "r");
  char line[256];
  while (p && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    char path[4500];
    snprintf(path, sizeof path, "%s/byid/%s", work, line);
    struct hg_graph *g = hg_graph_load(path, NULL);
    struct hg_fleet_summary *s = NULL;
    struct hg_fleet_summary_options so = {NULL, NULL, line};
    if (g && !hg_fleet_summarize(g, &so, &s)) hg_fleet_add(f, s);
    hg_fleet_summary_free(s);
    hg_graph_free(g);
  }
  if (p) fclose(p);
  struct hg_fleet_query q = {version, baseline, -1, 0};
  struct hg_fleet_issues *r = NULL;
  struct membuf m = {0};
  if (!hg_fleet_issues(f, &q, &r)) {
    mem_write(&m, "[", 1);
    for (uint32_t i = 0; i < r->count; i++) {
      if (i) mem_write(&m, ",", 1);
      hg_fleet_issue_json(r, i, mem_write, &m);
    }
    mem_write(&m, "]", 1);
  }
  hg_fleet_issues_free(r);
  hg_fleet_free(f);
  return m.p;
}

static char *issues_part(const char *json) {
  const char *a = strstr(json, "\"issues\":");
  const char *b = strstr(json, ",\"generation\":");
  if (!a || !b || b < a) return NULL;
  a += 9;
  return strndup(a, (size_t)(b - a));
}

static void test_workers_and_issues(void) {
  /* 2 versions x 5 devices x 2 sessions */
  int seed = 100;
  for (int v = 0; v < 2; v++)
    for (int d = 0; d < 5; d++)
      for (int s = 0; s < 2; s++) {
        char id[SRV_ID_LEN + 1], dev[24];
        int is_new;
        snprintf(dev, sizeof dev, "device-%d", d);
        REQUIRE(ingest("fleetapp", v ? "2.0" : "1.0", dev, seed++, 3000 + 500 * s, id, &is_new) == 0 && is_new);
      }
  struct srv_worker_config c = wcfg();
  drain(&c, "fleetapp");
  struct srv_counts k;
  CHECK(srv_store_counts(st, "fleetapp", &k) == 0 && k.done == 20 && k.summaries == 20 && k.quarantined == 0);
  struct srv_issues_query q = {"2.0", "1.0", -1, -1, 0};
  struct membuf m = {0};
  REQUIRE(srv_issues_get(st, "fleetapp", &q, mem_write, &m) == 0);
  CHECK(strstr(m.p, "\"pending\":0}") != NULL);
  char *got = issues_part(m.p), *want = expected_issues("fleetapp", "2.0", "1.0");
  REQUIRE(got && want);
  CHECK(!strcmp(got, want));
  if (strcmp(got, want)) fprintf(stderr, "got  %.600s\nwant %.600s\n", got, want);
  CHECK(strstr(got, "ImageCache") && strstr(got, "\"status\":\"new\""));
  char path[4200];
  sh("cp %s/order-fleetapp %s/order-dump", work, work);
  snprintf(path, sizeof path, "%s/issues.json", work); /* for the CLI comparison in store_both.sh */
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(m.p, f);
    fclose(f);
  }
  /* the cached answer, then a stale one while new summaries arrive */
  struct membuf m2 = {0};
  CHECK(srv_issues_get(st, "fleetapp", &q, mem_write, &m2) == 0 && !strcmp(m.p, m2.p));
  int64_t g0 = 0;
  srv_store_app_generation(st, "fleetapp", &g0);
  for (int s = 0; s < 2; s++) {
    char id[SRV_ID_LEN + 1];
    int is_new;
    REQUIRE(ingest("fleetapp", "2.0", "device-9", seed++, 3000, id, &is_new) == 0);
  }
  drain(&c, "fleetapp");
  struct membuf m3 = {0};
  CHECK(srv_issues_get(st, "fleetapp", &q, mem_write, &m3) == 0);
  CHECK(m3.p && strstr(m3.p, "\"pending\":1}")); /* stale: the old answer, a refresh under way */
  int fresh = 0;
  for (int i = 0; i < 300 && !fresh; i++) {
    struct membuf m4 = {0};
    if (!srv_issues_get(st, "fleetapp", &q, mem_write, &m4) && strstr(m4.p, "\"pending\":0}")) {
      fresh = 1;
      char *g2 = issues_part(m4.p), *w2 = expected_issues("fleetapp", "2.0", "1.0");
      CHECK(g2 && w2 && !strcmp(g2, w2));
      free(g2);
      free(w2);
    }
    free(m4.p);
    if (!fresh) usleep(20000);
  }
  CHECK(fresh);
  /* kind and status filters */
  struct srv_issues_query qk = {"2.0", "1.0", HG_FLEET_LEAK, -1, 0};
  struct membuf m5 = {0};
  CHECK(srv_issues_get(st, "fleetapp", &qk, mem_write, &m5) == 0 && m5.p && strstr(m5.p, "\"kind\":\"leak\"") &&
        !strstr(m5.p, "\"kind\":\"retention\""));
  struct srv_issues_query qs = {"2.0", "1.0", -1, HG_FLEET_NEW, 0};
  struct membuf m7 = {0};
  CHECK(srv_issues_get(st, "fleetapp", &qs, mem_write, &m7) == 0 && m7.p && strstr(m7.p, "\"status\":\"new\"") &&
        !strstr(m7.p, "\"status\":\"ongoing\""));
  free(m7.p);
  struct srv_issues_query qv = {"9.9", NULL, -1, -1, 0};
  struct membuf m6 = {0};
  CHECK(srv_issues_get(st, "fleetapp", &qv, mem_write, &m6) == SRV_ENOTFOUND);
  CHECK(srv_issues_get(st, "no-such-app", &q, mem_write, &m6) == SRV_ENOTFOUND);
  free(got);
  free(want);
  free(m.p);
  free(m2.p);
  free(m3.p);
  free(m5.p);
  free(m6.p);
}

/* The issue page holds its first memo answer while it asks one per
 * version: with more versions than the memo keeps (SRV_FLEET_MEMO), that
 * answer must stay valid until the callback returns (it was freed under
 * it: the exemplars were read from freed memory). */
#define MEMO_VERSIONS (SRV_FLEET_MEMO + 6)
struct memo_probe { int ok, asked; };
static int memo_fn(void *ctx, struct srv_fleet_set *set) {
  struct memo_probe *p = ctx;
  const struct hg_fleet *f = srv_fleet_of(set);
  struct hg_fleet_query q = {"v000", NULL, -1, 0};
  const struct hg_fleet_issues *x = NULL, *again = NULL;
  if (srv_fleet_issues_memo(set, &q, &x)) return SRV_EERR;
  uint32_t count = x->count, vs = x->version_snapshots;
  for (uint32_t v = 0; v < hg_fleet_version_count(f); v++) {
    struct hg_fleet_query qv = {hg_fleet_version(f, v), v ? hg_fleet_version(f, v - 1) : NULL, -1, 0};
    const struct hg_fleet_issues *y = NULL;
    if (!srv_fleet_issues_memo(set, &qv, &y)) p->asked++;
  }
  if (srv_fleet_issues_memo(set, &q, &again)) return SRV_EERR;
  p->ok = again == x && x->count == count && x->version_snapshots == vs && vs == 1;
  return 0;
}

static void test_memo_many_versions(void) {
  for (int v = 0; v < MEMO_VERSIONS; v++) {
    char id[SRV_ID_LEN + 1], ver[16];
    int is_new;
    snprintf(ver, sizeof ver, "v%03d", v);
    REQUIRE(ingest("memoapp", ver, "device-0", 5000 + v, 1500, id, &is_new) == 0 && is_new);
  }
  struct srv_worker_config c = wcfg();
  drain(&c, "memoapp");
  struct memo_probe p = {0, 0};
  CHECK(srv_fleet_with(st, "memoapp", memo_fn, &p) == 0);
  CHECK_EQ_U(p.asked, MEMO_VERSIONS); /* every version's issues answered */
  CHECK(p.ok); /* the first answer whole and the same after more queries than the memo keeps */
  /* the memo is trimmed once fn has returned: a second pass answers the same */
  p = (struct memo_probe){0, 0};
  CHECK(srv_fleet_with(st, "memoapp", memo_fn, &p) == 0 && p.ok);
}

static void test_budget_crash_exhaustion(void) {
  char big[SRV_ID_LEN + 1], crash[SRV_ID_LEN + 1], ok[SRV_ID_LEN + 1];
  int is_new;
  REQUIRE(ingest("faultapp", "1.0", "d", 900, 20000, big, &is_new) == 0);
  REQUIRE(ingest("faultapp", "1.0", "d", 901, 500, crash, &is_new) == 0);
  REQUIRE(ingest("faultapp", "1.0", "d", 902, 500, ok, &is_new) == 0);
  struct srv_worker_config c = wcfg();
  c.max_nodes = 10000;
  setenv("HG_SERVE_TEST_CRASH", crash, 1);
  drain(&c, "faultapp");
  unsetenv("HG_SERVE_TEST_CRASH");
  struct srv_snapshot sn;
  CHECK(srv_store_snapshot_get(st, "faultapp", big, &sn) == 0 && sn.state == SRV_QUARANTINED &&
        !strncmp(sn.reason, "budget", 6) && sn.attempts == 1);
  CHECK(srv_store_snapshot_get(st, "faultapp", crash, &sn) == 0 && sn.state == SRV_QUARANTINED &&
        strstr(sn.reason, "crashed") && sn.attempts == 2);
  CHECK(srv_store_snapshot_get(st, "faultapp", ok, &sn) == 0 && sn.state == SRV_DONE);
  if (HG_TEST_ASAN) SKIP("RLIMIT_DATA cannot bound an AddressSanitizer process (its shadow memory)");
  /* a memory budget too small for a 400,000-node snapshot: exhausted twice */
  char huge[SRV_ID_LEN + 1];
  REQUIRE(ingest("faultapp", "1.0", "d", 903, 400000, huge, &is_new) == 0);
  c.max_nodes = 0;
  c.mem_limit = 24ull << 20;
  drain(&c, "faultapp");
  CHECK(srv_store_snapshot_get(st, "faultapp", huge, &sn) == 0 && sn.state == SRV_QUARANTINED && sn.attempts == 2);
  fprintf(stderr, "exhausted: state %d attempts %d: %s\n", sn.state, sn.attempts, sn.reason);
}

static int file_exists(const char *rel) {
  char p[4400];
  snprintf(p, sizeof p, "%s/%s", data, rel);
  return access(p, F_OK) == 0;
}

static int first_snap(void *ctx, const struct srv_snapshot *sn) {
  *(struct srv_snapshot *)ctx = *sn;
  return 1;
}

struct keep_acc { int kept, dropped, exemplars_kept; };
static int check_kept(void *ctx, const struct srv_snapshot *sn) {
  struct keep_acc *a = ctx;
  int ex = 0;
  srv_store_exemplar_is(st, sn->app, sn->id, &ex);
  if (sn->blob_kept) a->kept++;
  else a->dropped++;
  if (ex && sn->blob_kept && file_exists(sn->blob)) a->exemplars_kept++;
  if (!sn->blob_kept && file_exists(sn->blob)) a->dropped = -1000; /* a dropped row's file must be gone */
  return 0;
}

static void test_retention(void) {
  struct srv_app_settings a = {0, 0, 0, 30};
  REQUIRE(srv_store_app_set(st, "fleetapp", &a) == 0);
  struct srv_retention_stats rs;
  struct srv_counts k0, k1;
  srv_store_counts(st, "fleetapp", &k0);
  /* now: nothing is 30 days old */
  CHECK(srv_retention_run(st, data, (int64_t)time(NULL), 0, &rs) == 0 && rs.dropped == 0);
  /* 31 days later: every non-exemplar file of fleetapp goes */
  CHECK(srv_retention_run(st, data, (int64_t)time(NULL) + 31 * 86400, 0, &rs) == 0);
  struct keep_acc acc = {0};
  CHECK(srv_store_snapshot_list(st, "fleetapp", check_kept, &acc) == 0);
  CHECK(acc.dropped > 0 && acc.kept > 0 && acc.exemplars_kept == acc.kept);
  srv_store_counts(st, "fleetapp", &k1);
  CHECK(k1.summaries == k0.summaries); /* every summary stays */
  /* quota: another app over its bytes loses its oldest non-exemplar files */
  struct srv_app_settings q = {0, 0, 1, 0};
  REQUIRE(srv_store_app_set(st, "snapapp2", &q) == 0);
  struct srv_worker_config c = wcfg();
  drain(&c, "snapapp2");
  CHECK(srv_retention_run(st, data, (int64_t)time(NULL), 0, &rs) == 0);
  uint64_t bytes = 1;
  CHECK(srv_store_blob_bytes(st, "snapapp2", &bytes) == 0 && bytes == 0);
  /* the same content kept by snapapp (a shared blob): its file stays */
  struct keep_acc a2 = {0};
  CHECK(srv_store_snapshot_list(st, "snapapp", check_kept, &a2) == 0 && a2.kept == 1);
  struct srv_snapshot sn;
  REQUIRE(srv_store_snapshot_list(st, "snapapp", first_snap, &sn) == 0);
  CHECK(file_exists(sn.blob));
}

static int touch_at(const char *rel, int64_t age) {
  char p[4400];
  snprintf(p, sizeof p, "%s/%s", data, rel);
  FILE *f = fopen(p, "w");
  if (!f) return -1;
  fclose(f);
  struct timespec t[2] = {{(time_t)(time(NULL) - age), 0}, {(time_t)(time(NULL) - age), 0}};
  return utimensat(AT_FDCWD, p, t, 0);
}

/* This host's name as temporaries carry it (blobs.c: '.' and '/' as '_'),
 * and the pid of a process that has exited. */
static pid_t host_and_dead_pid(char *host, size_t n) {
  snprintf(host, n, "host");
  gethostname(host, n - 1);
  host[n - 1] = 0;
  for (char *q = host; *q; q++)
    if (*q == '.' || *q == '/') *q = '_';
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, NULL, 0);
  return dead;
}

/* The blob directory's housekeeping: the sweep of files no row keeps, and
 * the temporaries a start removes (several servers may share the mount). */
static void test_blob_dir(void) {
  struct srv_snapshot sn;
  REQUIRE(srv_store_snapshot_list(st, "snapapp", first_snap, &sn) == 0 && sn.blob_kept);
  mkdir(strcat(strcpy((char[4400]){0}, data), "/blobs/ee"), 0755);
  REQUIRE(touch_at("blobs/ee/eeee000000000001-10.hgsnap", 2 * 3600) == 0);  /* no row, old   */
  REQUIRE(touch_at("blobs/ee/eeee000000000002-10.hgsnap", 60) == 0);        /* no row, fresh */
  REQUIRE(touch_at("blobs/ee/notes.txt", 2 * 3600) == 0);                   /* not a blob    */
  struct srv_retention_stats rs;
  CHECK(srv_retention_run(st, data, (int64_t)time(NULL), 0, &rs) == 0 && rs.orphans == 1);
  CHECK(!file_exists("blobs/ee/eeee000000000001-10.hgsnap"));
  CHECK(file_exists("blobs/ee/eeee000000000002-10.hgsnap"));
  CHECK(file_exists("blobs/ee/notes.txt"));
  CHECK(file_exists(sn.blob)); /* kept by its row, however old */
  /* temporaries: this host's of a dead process go, of a live one stay,
   * another host's stay unless a day old */
  char host[128], t1[300], t2[300], t3[300], t4[300], live[64];
  pid_t dead = host_and_dead_pid(host, sizeof host);
  snprintf(t1, sizeof t1, "blobs/tmp/up.%d.%s.aaaaaa", (int)dead, host);
  snprintf(live, sizeof live, "%d", (int)getppid());
  snprintf(t2, sizeof t2, "blobs/tmp/up.%s.%s.bbbbbb", live, host);
  snprintf(t3, sizeof t3, "blobs/tmp/up.%d.otherhost.cccccc", (int)dead);
  snprintf(t4, sizeof t4, "blobs/tmp/up.%d.otherhost.dddddd", (int)dead);
  REQUIRE(srv_blobs_init(data) == 0);
  REQUIRE(touch_at(t1, 0) == 0 && touch_at(t2, 0) == 0 && touch_at(t3, 0) == 0 && touch_at(t4, 2 * 86400) == 0);
  CHECK(srv_blobs_init(data) == 0);
  CHECK(!file_exists(t1));
  CHECK(file_exists(t2));
  CHECK(file_exists(t3));
  CHECK(!file_exists(t4));
}

static int64_t age_of(const char *rel) {
  char p[4400];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", data, rel);
  return stat(p, &sb) ? -1 : (int64_t)time(NULL) - (int64_t)sb.st_mtime;
}

static int tmp_has(const char *prefix) {
  char p[4400];
  snprintf(p, sizeof p, "%s/blobs/tmp", data);
  DIR *d = opendir(p);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += !strncmp(e->d_name, prefix, strlen(prefix));
  if (d) closedir(d);
  return n;
}

/* A temporary of 10 bytes (an upload's), its fd and path. */
static int temp10(char *path, size_t n) {
  int fd = srv_blob_temp(data, path, n);
  if (fd >= 0 && write(fd, "0123456789", 10) != 10) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Deleting a blob never takes one an upload of the same content is about
 * to acknowledge (server/blobs.c's protocol), each interleaving of the two
 * made by hand. */
static void test_blob_delete(void) {
  const char *old = "blobs/ef/ef00000000000001-10.hgsnap", *id = "ef00000000000001";
  char dirp[4400];
  mkdir(strcat(strcpy(dirp, data), "/blobs/ef"), 0755);
  int64_t now = (int64_t)time(NULL);
  /* an old file goes, a fresh one stays, nothing is left in tmp/ */
  REQUIRE(touch_at(old, 2 * 3600) == 0);
  CHECK(srv_blob_delete(data, old, now, SRV_ORPHAN_GRACE) == 1 && !file_exists(old));
  REQUIRE(touch_at(old, 60) == 0);
  CHECK(srv_blob_delete(data, old, now, SRV_ORPHAN_GRACE) == 0 && file_exists(old));
  CHECK(srv_blob_delete(data, "blobs/ef/ef00000000000009-10.hgsnap", now, SRV_ORPHAN_GRACE) == 0); /* absent */
  CHECK(tmp_has("del.") == 0);
  /* not a blob path: refused */
  errno = 0;
  CHECK(srv_blob_delete(data, "blobs/ef/../../heapgraph.db", now, 0) == -1 && errno == EINVAL);
  CHECK(srv_blob_delete(data, "blobs/ee/notes.txt", now, 0) == -1 && file_exists("blobs/ee/notes.txt"));
  /* an upload of content that is there, old: the file is marked fresh, so a
   * deleter that comes before the upload's row keeps it */
  char tmp[4400], rel[4400];
  REQUIRE(touch_at(old, 2 * 3600) == 0 && truncate(strcat(strcat(strcpy(dirp, data), "/"), old), 10) == 0);
  struct timespec back[2] = {{(time_t)(now - 7200), 0}, {(time_t)(now - 7200), 0}};
  REQUIRE(utimensat(AT_FDCWD, dirp, back, 0) == 0 && age_of(old) >= 7000);
  int fd = temp10(tmp, sizeof tmp);
  REQUIRE(fd >= 0);
  CHECK(srv_blob_commit(data, tmp, fd, id, 10, rel, sizeof rel) == 0 && !strcmp(rel, old));
  close(fd);
  CHECK(access(tmp, F_OK) != 0);          /* the temporary is gone */
  CHECK(age_of(old) >= 0 && age_of(old) < 60); /* marked fresh */
  CHECK(srv_blob_delete(data, old, (int64_t)time(NULL), SRV_ORPHAN_GRACE) == 0 && file_exists(old));
  /* a deleter that moved the file away first: the upload's mark fails and
   * its own copy takes the place */
  char away[4400];
  snprintf(away, sizeof away, "%s/blobs/tmp/del.%d.elsewhere.%s-10.hgsnap", data, (int)getpid(), id);
  REQUIRE(rename(dirp, away) == 0);
  fd = temp10(tmp, sizeof tmp);
  REQUIRE(fd >= 0);
  CHECK(srv_blob_commit(data, tmp, fd, id, 10, rel, sizeof rel) == 0);
  close(fd);
  struct stat sb;
  CHECK(stat(dirp, &sb) == 0 && sb.st_size == 10);
  unlink(away);
  /* a deleter killed while holding a fresh file (tmp/del.<pid>.<host>.*):
   * the next start puts it back; an old one is removed */
  char host[128], fresh[4400], stale[4400];
  pid_t dead = host_and_dead_pid(host, sizeof host);
  snprintf(fresh, sizeof fresh, "%s/blobs/tmp/del.%d.%s.%s-10.hgsnap", data, (int)dead, host, id);
  snprintf(stale, sizeof stale, "%s/blobs/tmp/del.%d.%s.ef00000000000002-10.hgsnap", data, (int)dead, host);
  REQUIRE(rename(dirp, fresh) == 0 && !file_exists(old));
  REQUIRE(touch_at(stale + strlen(data) + 1, 2 * 3600) == 0);
  CHECK(srv_blobs_init(data) == 0);
  CHECK(file_exists(old) && access(fresh, F_OK) != 0);
  CHECK(access(stale, F_OK) != 0 && !file_exists("blobs/ef/ef00000000000002-10.hgsnap"));
  CHECK(tmp_has("del.") == 0);
}

int main(int argc, char **argv) {
  int child = argc > 1 ? srv_worker_child_main(argc - 1, argv + 1) : -1; /* a worker's analysing child */
  if (child >= 0) return child;
  if (argc < 3) {
    fprintf(stderr, "usage: store_suite SNAPGEN WORKDIR [postgres://…]\n");
    return 2;
  }
  snapgen = argv[1];
  work = argv[2];
  pgurl = argc > 3 ? argv[3] : NULL;
  snprintf(data, sizeof data, "%s/data", work);
  mkdir(work, 0755);
  mkdir(data, 0755);
  int rc = srv_store_open(data, pgurl, &st);
  if (rc) {
    fprintf(stderr, "store_suite: open: %s\n", srv_store_error());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  fprintf(stderr, "store_suite: engine %s\n", srv_store_engine(st));
  RUN(test_migrations);
  RUN(test_keys);
  RUN(test_apps);
  RUN(test_snapshots);
  RUN(test_leases);
  RUN(test_concurrent_leases);
  RUN(test_workers_and_issues);
  RUN(test_memo_many_versions);
  RUN(test_budget_crash_exhaustion);
  RUN(test_retention);
  RUN(test_blob_dir);
  RUN(test_blob_delete);
  srv_store_close(st);
  printf("%s: ", pgurl ? "store_postgres" : "store_sqlite");
  return hg_test_done();
}
