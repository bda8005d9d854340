/*
 * cmd_serve.c — `heapgraph serve`: the command front-end of the backend
 * (server/). Parses the options, opens the store and the blob directory,
 * starts the workers and the HTTP server (web/http.c) with the intake,
 * /metrics and the routes of the read side, prints the URL as the first
 * line of stdout and serves until SIGINT/SIGTERM. `serve key add|revoke|
 * list` manages the keys, `serve app set|show` an app's own limits.
 * docs/serve.md.
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/read.h"
#include "server/serve.h"
#include "tools/cli_opts.h"
#include "tools/commands.h"
#include "web/http.h"

static const char about[] =
    "  Runs the backend on the data directory DIR (blobs/, and SQLite at\n"
    "  DIR/heapgraph.db unless --db names a PostgreSQL database): POST\n"
    "  /v1/snapshots takes uploads (Bearer upload keys), GET /metrics counts\n"
    "  the outcomes, workers analyse what was accepted. Prints the URL as the\n"
    "  first line and serves until interrupted. Keys:\n"
    "    heapgraph serve key add APP [--read] --data DIR   (the key: last line)\n"
    "    heapgraph serve key revoke KEYID --data DIR\n"
    "    heapgraph serve key list --data DIR\n"
    "  An app's own limits (0: the server's default):\n"
    "    heapgraph serve app set APP [--max-upload B] [--rate N] [--quota B]\n"
    "                            [--retention-days N] --data DIR\n"
    "    heapgraph serve app show APP --data DIR\n"
    "  docs/serve.md.\n";

/* Routes of the read side (server/api_read.c) join this table. */
static const struct web_route routes[] = {
    {"POST", "/v1/snapshots", WEB_ROUTE_EXACT, srv_intake},
    {"GET", "/metrics", WEB_ROUTE_EXACT, srv_metrics_route},
    SRV_READ_ROUTES,
};

static int app_name_ok(const char *a) {
  size_t n = strlen(a);
  if (!n || n >= 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)a[i]) && !strchr("._-", a[i])) return 0;
  return 1;
}

static int open_store(const char *cmd, const char *data, const char *db, struct srv_store **st) {
  if (srv_blobs_init(data)) {
    fprintf(stderr, "heapgraph %s: cannot use the data directory %s\n", cmd, data);
    return 1;
  }
  int rc = srv_store_open(data, db, st);
  if (rc) {
    fprintf(stderr, "heapgraph %s: cannot open the store: %s\n", cmd, srv_store_error());
    return 1;
  }
  return 0;
}

static int print_key(void *ctx, const struct srv_key *k) {
  (void)ctx;
  printf("%s\t%s\t%s\t%s\n", k->key_id, k->app, k->read ? "read" : "upload", k->revoked ? "revoked" : "active");
  return 0;
}

static int cmd_key(int argc, char **argv) {
  const char *data = NULL, *db = NULL;
  int read = 0, nargs;
  const char *sub = argc > 1 ? argv[1] : "";
  const struct cli_opt opts[] = {
      CLI_REQ_STR("--data", "DIR", &data, "the server's data directory"),
      CLI_OPT_STR("--db", "URL", &db, "postgres://… (default: SQLite in DIR)"),
      CLI_OPT_FLAG("--read", &read, "add: a read key (dashboard, read API) instead of an upload key"),
      CLI_END};
  int add = !strcmp(sub, "add"), revoke = !strcmp(sub, "revoke"), list = !strcmp(sub, "list");
  const struct cli_cmd cmd = {add ? "serve key add" : revoke ? "serve key revoke" : "serve key list",
                              add ? "APP" : revoke ? "KEYID" : "", list ? 0 : 1, list ? 0 : 1, opts,
                              "  add prints the new key on its last line (shown once: the server keeps\n"
                              "  only its hash); revoke refuses the key from then on; list shows\n"
                              "  KEYID, APP, read|upload, active|revoked.\n",
                              0};
  if (!add && !revoke && !list) {
    fprintf(stderr, "heapgraph serve key: add APP, revoke KEYID or list\n");
    return 2;
  }
  int st = cli_parse(&cmd, argc - 1, argv + 1, &nargs);
  if (st >= 0) return st;
  struct srv_store *store;
  if (open_store("serve key", data, db, &store)) return 1;
  int rc = 0;
  if (add) {
    char key[SRV_KEY_MAX], id[SRV_KEYID_MAX], hash[SRV_HASH_MAX];
    if (!app_name_ok(argv[2])) {
      fprintf(stderr, "heapgraph serve key add: an app name is 1-63 of A-Z a-z 0-9 . _ -\n");
      rc = 2;
    } else if (srv_key_new(key, id, hash)) {
      fprintf(stderr, "heapgraph serve key add: no random bytes\n");
      rc = 1;
    } else if (srv_store_key_add(store, argv[2], read, id, hash)) {
      fprintf(stderr, "heapgraph serve key add: %s\n", srv_store_error());
      rc = 1;
    } else {
      printf("%s key %s for app %s (keep it: it is not shown again)\n%s\n", read ? "read" : "upload", id,
             argv[2], key);
    }
  } else if (revoke) {
    int r = srv_store_key_revoke(store, argv[2]);
    if (r) fprintf(stderr, "heapgraph serve key revoke: %s\n", r == SRV_ENOTFOUND ? "no such key" : srv_store_error());
    else printf("revoked %s\n", argv[2]);
    rc = r ? 1 : 0;
  } else {
    rc = srv_store_key_list(store, print_key, NULL) ? 1 : 0;
  }
  srv_store_close(store);
  return rc;
}

/* `serve app set APP [limits]` changes only the limits given; `serve app
 * show APP` prints them (0 = the server's default, for every field). */
static int cmd_app(int argc, char **argv) {
  const char *data = NULL, *db = NULL;
  long max_upload = -1, rate = -1, quota = -1, days = -1;
  int nargs;
  const char *sub = argc > 1 ? argv[1] : "";
  int set = !strcmp(sub, "set"), show = !strcmp(sub, "show");
  const struct cli_opt opts[] = {
      CLI_REQ_STR("--data", "DIR", &data, "the server's data directory"),
      CLI_OPT_STR("--db", "URL", &db, "postgres://… (default: SQLite in DIR)"),
      CLI_OPT_NUM("--max-upload", "BYTES", &max_upload, 0, 1L << 40, "set: largest upload (Content-Length)"),
      CLI_OPT_NUM("--rate", "N", &rate, 0, 1000000, "set: uploads per minute per key"),
      CLI_OPT_NUM("--quota", "BYTES", &quota, 0, 1L << 50, "set: blob bytes kept for the app"),
      CLI_OPT_NUM("--retention-days", "N", &days, 0, 100000, "set: drop non-exemplar files older"),
      CLI_END};
  const struct cli_cmd cmd = {set ? "serve app set" : "serve app show", "APP", 1, 1, opts,
                              "  set changes only the limits given (0: back to the server's default);\n"
                              "  show prints max_upload_bytes, rate_per_minute, quota_bytes and\n"
                              "  retention_days, one per line (0: the server's default).\n",
                              0};
  if (!set && !show) {
    fprintf(stderr, "heapgraph serve app: set APP [limits] or show APP\n");
    return 2;
  }
  int st = cli_parse(&cmd, argc - 1, argv + 1, &nargs);
  if (st >= 0) return st;
  if (!app_name_ok(argv[2])) {
    fprintf(stderr, "heapgraph %s: an app name is 1-63 of A-Z a-z 0-9 . _ -\n", cmd.name);
    return 2;
  }
  struct srv_store *store;
  if (open_store(cmd.name, data, db, &store)) return 1;
  struct srv_app_settings as;
  int rc = srv_store_app_get(store, argv[2], &as);
  if (!rc && set) {
    if (max_upload >= 0) as.max_upload_bytes = max_upload;
    if (rate >= 0) as.rate_per_minute = rate;
    if (quota >= 0) as.quota_bytes = quota;
    if (days >= 0) as.retention_days = days;
    rc = srv_store_app_set(store, argv[2], &as);
  }
  if (rc) fprintf(stderr, "heapgraph %s: %s\n", cmd.name, srv_store_error());
  else
    printf("max_upload_bytes %lld\nrate_per_minute %lld\nquota_bytes %lld\nretention_days %lld\n",
           (long long)as.max_upload_bytes, (long long)as.rate_per_minute, (long long)as.quota_bytes,
           (long long)as.retention_days);
  srv_store_close(store);
  return rc ? 1 : 0;
}

static void dropped(void *app) { srv_metrics_dropped(((struct srv *)app)->metrics); }

int cmd_serve(int argc, char **argv) {
  int child = srv_worker_child_main(argc, argv); /* a worker's analysing child */
  if (child >= 0) return child;
  if (argc > 1 && !strcmp(argv[1], "key")) return cmd_key(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "app")) return cmd_app(argc - 1, argv + 1);
  const char *data = NULL, *db = NULL, *host = "127.0.0.1", *cert = NULL, *key = NULL;
  long port = 0, workers = 2, max_upload = 256L << 20, max_decoded = 1L << 30, rate = 60, idle = 30,
       header_to = 10, request_to = 600, max_conn = 256, header_limit = 16384, verify_slots = 2,
       max_nodes = 0, max_edges = 0, lease = 60, retention_days = 0, worker_mem = 0;
  int worker_only = 0, nargs;
  const struct cli_opt opts[] = {
      CLI_REQ_STR("--data", "DIR", &data, "data directory (blobs, and the SQLite database)"),
      CLI_OPT_STR("--db", "URL", &db, "PostgreSQL database (postgres://…) instead of SQLite"),
      CLI_OPT_STR("--host", "ADDR", &host, "IP address to listen on (default 127.0.0.1)"),
      CLI_OPT_NUM("--port", "N", &port, 0, 65535, "port (default: one the system picks)"),
      CLI_OPT_STR("--tls-cert", "FILE", &cert, "PEM certificate: serve HTTPS (with --tls-key)"),
      CLI_OPT_STR("--tls-key", "FILE", &key, "PEM private key of --tls-cert"),
      CLI_OPT_NUM("--workers", "N", &workers, 0, 256, "analysis worker threads (default 2)"),
      CLI_OPT_FLAG("--worker-only", &worker_only, "only analyse (no HTTP): another machine's workers"),
      CLI_OPT_NUM("--worker-max-nodes", "N", &max_nodes, 0, 1L << 40, "refuse to analyse bigger snapshots"),
      CLI_OPT_NUM("--worker-max-edges", "N", &max_edges, 0, 1L << 40, "refuse to analyse bigger snapshots"),
      CLI_OPT_NUM("--worker-mem", "BYTES", &worker_mem, 0, 1L << 50, "memory one analysis may add (0: no limit)"),
      CLI_OPT_NUM("--worker-lease", "S", &lease, 2, 86400, "a job's lease; a dead worker's jobs wait that long (60)"),
      CLI_OPT_NUM("--retention-days", "N", &retention_days, 0, 100000, "drop non-exemplar files older (0: keep)"),
      CLI_OPT_NUM("--max-upload", "BYTES", &max_upload, 1, 1L << 40, "default per-app upload limit (256 MiB)"),
      CLI_OPT_NUM("--max-decoded", "BYTES", &max_decoded, 1, 1L << 40, "decompressed size limit (1 GiB)"),
      CLI_OPT_NUM("--rate", "N", &rate, 0, 1000000, "default uploads per minute per key (60; 0: none)"),
      CLI_OPT_NUM("--idle-timeout", "S", &idle, 1, 3600, "drop a connection silent that long (30)"),
      CLI_OPT_NUM("--header-timeout", "S", &header_to, 1, 3600, "drop a request whose headers take longer (10)"),
      CLI_OPT_NUM("--request-timeout", "S", &request_to, 1, 86400, "drop a request not done in that time (600)"),
      CLI_OPT_NUM("--max-connections", "N", &max_conn, 1, 100000, "connections at once (256)"),
      CLI_OPT_NUM("--header-limit", "BYTES", &header_limit, 1024, 1L << 20, "request line and headers (16384)"),
      CLI_OPT_NUM("--verify-slots", "N", &verify_slots, 1, 64, "snapshots verified at once (2)"),
      CLI_END};
  const struct cli_cmd cmd = {"serve", "", 0, 0, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  if (!!cert != !!key) {
    fprintf(stderr, "heapgraph serve: --tls-cert and --tls-key go together\n");
    return 2;
  }
  struct srv s = {.data_dir = data,
                  .lim = {(uint64_t)max_upload, (uint64_t)max_decoded, rate, (unsigned)verify_slots}};
  pthread_mutex_init(&s.verify_lock, NULL);
  pthread_cond_init(&s.verify_cond, NULL);
  if (open_store("serve", data, db, &s.store)) return 1;
  s.metrics = srv_metrics_new(stderr);
  s.limiter = srv_limiter_new();
  if (!s.metrics || !s.limiter) {
    srv_store_close(s.store);
    return 1;
  }
  sigset_t set;
  web_block_signals(&set); /* before any thread starts */
  signal(SIGPIPE, SIG_IGN);
  struct srv_workers *w = NULL;
  if (workers > 0 || worker_only) {
    struct srv_worker_config wc = {.data_dir = data,
                                   .threads = workers > 0 ? (int)workers : 1,
                                   .lease_seconds = (int)lease,
                                   .mem_limit = (uint64_t)worker_mem,
                                   .retention_days = (int)retention_days,
                                   .max_nodes = (uint64_t)max_nodes,
                                   .max_edges = (uint64_t)max_edges,
                                   .retention_seconds = 3600};
    if (srv_workers_start(s.store, &wc, &w)) {
      fprintf(stderr, "heapgraph serve: cannot start the workers: %s\n", srv_store_error());
      srv_store_close(s.store);
      return 1;
    }
  }
  struct web_server *web = NULL;
  if (!worker_only) {
    struct web_config wc = {.name = "heapgraph serve",
                            .host = host,
                            .port = (unsigned)port,
                            .tls_cert = cert,
                            .tls_key = key,
                            .routes = routes,
                            .route_count = sizeof routes / sizeof routes[0],
                            .app = &s,
                            .threads = 1,
                            .max_connections = (unsigned)max_conn,
                            .idle_timeout_s = (unsigned)idle,
                            .header_timeout_s = (unsigned)header_to,
                            .request_timeout_s = (unsigned)request_to,
                            .header_limit = (size_t)header_limit,
                            .dropped = dropped};
    char url[160];
    if (!(web = web_start(&wc, url, sizeof url))) {
      srv_workers_stop(w);
      srv_store_close(s.store);
      return 1;
    }
    printf("%s\n", url);
  } else {
    printf("worker-only\n");
  }
  fflush(stdout);
  fprintf(stderr, "heapgraph serve: %s store, data in %s, %ld workers; serving until interrupted\n",
          srv_store_engine(s.store), data, worker_only || workers ? (workers ? workers : 1) : 0);
  int sig = 0;
  sigwait(&set, &sig);
  web_stop(web);
  srv_snap_view_close_all();
  srv_workers_stop(w);
  srv_snap_view_close_all();
  srv_store_close(s.store);
  srv_limiter_free(s.limiter);
  srv_metrics_free(s.metrics);
  return 0;
}
