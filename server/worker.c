/* server/worker.c — analysis workers (server/store.h): threads that lease a
 * job, refuse a snapshot over the node/edge budget (read from its trailer),
 * compute its fleet summary (hg_fleet_summarize, frames named as
 * `heapgraph fleet` names them) and write it with srv_store_job_finish —
 * one transaction, only while the lease is ours.
 *
 * Each analysis runs in a freshly executed child (`serve --analyse-child`,
 * never a bare fork of this multithreaded process) whose RLIMIT_DATA allows
 * mem_limit bytes more than the memory it starts with; it
 * sends the encoded summary back through a pipe: a snapshot that crashes
 * the analysis or exhausts its memory kills only the child; the thread sees
 * the signal / exit status and fails the job as a crash (twice:
 * quarantined). While the child runs the thread renews the lease every
 * third of its length, and kills the child when the lease is lost or the
 * analysis passes max_seconds. A worker process killed outright (kill -9)
 * loses nothing: its leases expire and another worker takes the jobs.
 * (in_process = 1 analyses in the thread itself: no protection, for the
 * bench's comparison and sanitizer builds.) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/store_priv.h"
#include "tools/symbolize.h"

#define EXIT_UNREADABLE 2  /* the child could not load the snapshot  */
#define EXIT_NOMEM 3       /* exhausted its memory budget             */

/* ---- the budget: counts from the trailer, without loading ---- */

/* Reads the unsigned CBOR integer at p (end e); -1 when it is not one. */
static int64_t cbor_uint(const uint8_t *p, const uint8_t *e) {
  if (p >= e || (p[0] >> 5) != 0) return -1;
  unsigned ai = p[0] & 31;
  if (ai < 24) return ai;
  int n = ai == 24 ? 1 : ai == 25 ? 2 : ai == 26 ? 4 : ai == 27 ? 8 : 0;
  if (!n || p + 1 + n > e) return -1;
  uint64_t v = 0;
  for (int i = 1; i <= n; i++) v = v << 8 | p[i];
  return v > INT64_MAX ? -1 : (int64_t)v;
}

static int64_t count_after(const uint8_t *buf, size_t n, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = n - kl - 1; i-- > 0;)
    if (buf[i] == (0x60 | kl) && !memcmp(buf + i + 1, key, kl)) return cbor_uint(buf + i + 1 + kl, buf + n);
  return -1;
}

/* The trailer's node and edge counts (the intake verified the file). */
static int trailer_counts(const char *path, int64_t *nodes, int64_t *edges) {
  uint8_t buf[512];
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  long back = sizeof buf;
  if (fseek(f, -back, SEEK_END)) {
    rewind(f);
  }
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (n < 32) return -1;
  *nodes = count_after(buf, n, "nodes");
  *edges = count_after(buf, n, "edges");
  return *nodes < 0 || *edges < 0 ? -1 : 0;
}

/* ---- the analysis ---- */

static const char *frame_name(void *ctx, const struct hg_graph *g, const struct hg_stack_frame *f) {
  (void)g;
  struct sym_frame out;
  sym_resolve(ctx, f, &out);
  return out.function;
}

/* Loads path and summarises it; *buf is the encoded summary (malloc'd).
 * 0, or an exit code (EXIT_UNREADABLE, EXIT_NOMEM, 1) with *why. */
static int analyse(const char *path, const char *id, uint8_t **buf, size_t *len, char *why, size_t wn) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  if (!g) {
    snprintf(why, wn, "unreadable: at byte %" PRIu64 ": %s", err.offset, err.message);
    return err.code == HG_ENOMEM ? EXIT_NOMEM : EXIT_UNREADABLE;
  }
  const char *fault = getenv("HG_SERVE_TEST_CRASH"); /* tests: the analysis of this id crashes */
  if (fault && *fault && !strcmp(fault, id)) abort();
  struct symbolizer *sym = g->has_stacks ? sym_new(g) : NULL;
  struct hg_fleet_summary_options so = {sym ? frame_name : NULL, sym, id};
  struct hg_fleet_summary *s = NULL;
  int rc = hg_fleet_summarize(g, &so, &s);
  if (!rc) rc = hg_fleet_summary_encode(s, buf, len);
  hg_fleet_summary_free(s);
  sym_free(sym);
  hg_graph_free(g);
  if (rc) {
    snprintf(why, wn, "summary: %s", hg_error_string(rc));
    return rc == HG_ENOMEM ? EXIT_NOMEM : 1;
  }
  return 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* AddressSanitizer maps terabytes of shadow: no memory limit there. */
#if defined(__SANITIZE_ADDRESS__)
#define SRV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SRV_ASAN 1
#endif
#endif
#ifndef SRV_ASAN
#define SRV_ASAN 0
#endif

/* This process's private writable memory in bytes (VmData of
 * /proc/self/status: what RLIMIT_DATA counts), 0 if unknown. */
static __attribute__((unused)) uint64_t data_size(void) {
  char line[128];
  unsigned long kb = 0;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmData: %lu kB", &kb) == 1) break;
  if (f) fclose(f);
  return (uint64_t)kb * 1024;
}

/* The outcome of one analysis. */
enum { A_OK, A_CRASH, A_REFUSED, A_ERROR, A_LOST };

/* ---- the analysing child: a freshly executed process ---- */

/* The child is `EXE serve --analyse-child PATH ID MEM_LIMIT`, its answer on
 * fd 3: a status byte, then the encoded summary or the message. It is
 * executed, not forked: a fork of the multithreaded server copies locks
 * (malloc's, the sanitizers', libpq's) held by other threads at that moment
 * and the child can wait on them forever; an exec'd process starts clean,
 * and starts small, so MEM_LIMIT is nearly all it may use. */
#define CHILD_FD 3

int srv_worker_child_main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[0], "serve") || strcmp(argv[1], "--analyse-child")) return -1;
  if (argc != 5) {
    fprintf(stderr, "heapgraph serve --analyse-child PATH ID MEM_LIMIT: internal, run by the workers\n");
    return 2;
  }
  char *end;
  unsigned long long mem = strtoull(argv[4], &end, 10);
  if (*end || fcntl(CHILD_FD, F_GETFD) < 0) return 2;
#if !SRV_ASAN
  if (mem) {
    /* RLIMIT_DATA, not RLIMIT_AS: it also counts a malloc arena's reserved
     * heap when it is made writable (a thread's arena reserves 64 MiB that
     * RLIMIT_AS never sees again). */
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = data_size() + mem;
    if (setrlimit(RLIMIT_DATA, &rl)) return 1;
  }
#else
  (void)mem;
#endif
  uint8_t *out = NULL;
  size_t n = 0;
  char msg[256] = "";
  int rc = analyse(argv[2], argv[3], &out, &n, msg, sizeof msg);
  uint8_t st = (uint8_t)rc;
  if (write_all(CHILD_FD, &st, 1)) return 1;
  if (!rc) write_all(CHILD_FD, out, n);
  else write_all(CHILD_FD, msg, strlen(msg));
  free(out);
  return rc;
}

/* Runs the analysis in a child with the memory budget; renews the lease. */
static int analyse_spawned(struct srv_store *s, const struct srv_worker_config *c, const struct srv_job *job,
                           const char *path, uint8_t **buf, size_t *len, char *why, size_t wn) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) {
    snprintf(why, wn, "pipe: %s", strerror(errno));
    return A_ERROR;
  }
  if (pfd[1] <= CHILD_FD) { /* dup2 onto itself would keep FD_CLOEXEC */
    int fd = fcntl(pfd[1], F_DUPFD_CLOEXEC, CHILD_FD + 1);
    close(pfd[1]);
    pfd[1] = fd;
    if (fd < 0) {
      close(pfd[0]);
      snprintf(why, wn, "pipe: %s", strerror(errno));
      return A_ERROR;
    }
  }
  char mem[32];
  snprintf(mem, sizeof mem, "%" PRIu64, c->mem_limit);
  const char *exe = "/proc/self/exe"; /* this binary: its main hands the argv to srv_worker_child_main */
  char *argv[] = {(char *)exe, "serve", "--analyse-child", (char *)path, (char *)job->id, mem, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], CHILD_FD);
  posix_spawnattr_init(&at);
  posix_spawnattr_setsigmask(&at, &none);    /* not the server thread's mask  */
  posix_spawnattr_setsigdefault(&at, &all);  /* nor its ignored SIGPIPE       */
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int err = posix_spawn(&pid, exe, &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(pfd[1]);
  if (err) {
    close(pfd[0]);
    snprintf(why, wn, "spawn %s: %s", exe, strerror(err));
    return A_ERROR;
  }
  size_t cap = HG_FLEET_SUMMARY_MAX + 512, got = 0;
  uint8_t *in = malloc(cap);
  double start = mono(), renewed = start;
  int lost = 0, timed_out = 0, status = 0;
  int step_ms = c->lease_seconds > 3 ? c->lease_seconds * 1000 / 3 : 1000;
  for (;;) {
    struct pollfd p = {pfd[0], POLLIN, 0};
    int pr = poll(&p, 1, 250);
    if (pr > 0) {
      ssize_t r = in && got < cap ? read(pfd[0], in + got, cap - got) : read(pfd[0], (char[256]){0}, 256);
      if (r == 0) break;
      if (r > 0 && in && got < cap) got += (size_t)r;
      if (r < 0 && errno != EINTR) break;
    }
    double t = mono();
    if ((t - renewed) * 1000 >= step_ms) {
      renewed = t;
      int rc = srv_store_job_renew(s, job, c->lease_seconds);
      if (rc == SRV_ELOST) lost = 1;
    }
    if (!lost && t - start > (c->max_seconds > 0 ? c->max_seconds : 600)) timed_out = 1;
    if (lost || timed_out) {
      kill(pid, SIGKILL);
      break;
    }
  }
  close(pfd[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int res;
  if (lost) {
    snprintf(why, wn, "lease lost");
    res = A_LOST;
  } else if (timed_out) {
    snprintf(why, wn, "analysis took longer than %d s", c->max_seconds > 0 ? c->max_seconds : 600);
    res = A_CRASH;
  } else if (WIFSIGNALED(status)) {
    snprintf(why, wn, "analysis crashed (signal %d%s)", WTERMSIG(status),
             WTERMSIG(status) == SIGKILL ? ", out of memory?" : "");
    res = A_CRASH;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < 1 || !in || in[0] != 0) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (in && got > 1) snprintf(why, wn, "%.*s", (int)(got - 1), (const char *)in + 1);
    else snprintf(why, wn, "analysis failed (exit %d)", code);
    if (code == EXIT_NOMEM) {
      size_t k = strlen(why);
      snprintf(why + k, wn - k, " (memory budget %" PRIu64 " bytes exhausted)", c->mem_limit);
      res = A_CRASH;
    } else {
      res = code == EXIT_UNREADABLE ? A_REFUSED : A_ERROR;
    }
  } else {
    res = A_OK;
    *len = got - 1;
    *buf = malloc(*len ? *len : 1);
    if (*buf) memcpy(*buf, in + 1, *len);
    else res = A_ERROR;
  }
  free(in);
  return res;
}

static int process(struct srv_store *s, const struct srv_worker_config *c, const char *worker,
                   const struct srv_job *job) {
  char path[4096], why[512] = "";
  snprintf(path, sizeof path, "%s/%s", c->data_dir, job->blob);
  int64_t nodes = 0, edges = 0;
  if (trailer_counts(path, &nodes, &edges))
    return srv_store_job_fail(s, job, "unreadable: no trailer counts (blob missing or damaged)", SRV_FAIL_REFUSED);
  if ((c->max_nodes && (uint64_t)nodes > c->max_nodes) || (c->max_edges && (uint64_t)edges > c->max_edges)) {
    snprintf(why, sizeof why, "budget: %" PRId64 " nodes, %" PRId64 " edges (limits %" PRIu64 ", %" PRIu64 ")",
             nodes, edges, c->max_nodes, c->max_edges);
    return srv_store_job_fail(s, job, why, SRV_FAIL_REFUSED);
  }
  uint8_t *buf = NULL;
  size_t len = 0;
  int res;
  if (c->in_process) {
    int rc = analyse(path, job->id, &buf, &len, why, sizeof why);
    res = !rc ? A_OK : rc == EXIT_UNREADABLE ? A_REFUSED : rc == EXIT_NOMEM ? A_CRASH : A_ERROR;
  } else {
    res = analyse_spawned(s, c, job, path, &buf, &len, why, sizeof why);
  }
  if (res == A_LOST) return SRV_ELOST;
  if (res != A_OK) {
    free(buf);
    return srv_store_job_fail(s, job, why, res == A_CRASH ? SRV_FAIL_CRASH : res == A_REFUSED ? SRV_FAIL_REFUSED
                                                                                               : SRV_FAIL_ERROR);
  }
  struct hg_fleet_summary *sum = NULL;
  struct hg_load_error err;
  if (hg_fleet_summary_decode(buf, len, &sum, &err)) {
    free(buf);
    return srv_store_job_fail(s, job, "the analysis sent a damaged summary", SRV_FAIL_ERROR);
  }
  struct srv_summary_row row = {buf, len, sum->app_version, sum->device_model, sum->device_id,
                                sum->nodes, sum->edges, sum->heap_bytes, sum->leaked_bytes};
  int rc = srv_store_job_finish(s, job, worker, &row);
  hg_fleet_summary_free(sum);
  free(buf);
  return rc;
}

int srv_worker_run_one(struct srv_store *s, const struct srv_worker_config *c, const char *worker) {
  struct srv_job job;
  int lease = c->lease_seconds > 0 ? c->lease_seconds : 60;
  int rc = srv_store_job_lease(s, worker, lease, &job);
  if (rc) return rc;
  struct srv_worker_config cc = *c;
  cc.lease_seconds = lease;
  rc = process(s, &cc, worker, &job);
  return rc ? rc : 0;
}

/* ---- the threads ---- */

struct srv_workers {
  struct srv_store *s;
  struct srv_worker_config c;
  char *data_dir, *name;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  int n;
  pthread_t *t;
  pthread_t ret;
  int has_ret;
};

struct targ { struct srv_workers *w; int index; };

/* Sleeps up to ms unless stopping; returns stop. */
static int nap(struct srv_workers *w, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&w->mu);
  if (!w->stop) pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  int st = w->stop;
  pthread_mutex_unlock(&w->mu);
  return st;
}

static void *worker_main(void *p) {
  struct targ *a = p;
  struct srv_workers *w = a->w;
  char name[256];
  snprintf(name, sizeof name, "%s/%d", w->name, a->index);
  free(a);
  int idle_ms = 100;
  while (!nap(w, 0)) {
    int rc = srv_worker_run_one(w->s, &w->c, name);
    if (rc == 0 || rc == SRV_ELOST) {
      idle_ms = 100;
      continue;
    }
    if (rc != SRV_ENOTFOUND)
      fprintf(stderr, "heapgraph serve: worker %s: %s\n", name, srv_store_error());
    if (nap(w, idle_ms)) break;
    if (idle_ms < 1000) idle_ms *= 2; /* polling backs off to 1 s when idle */
  }
  return NULL;
}

static void *retention_main(void *p) {
  struct srv_workers *w = p;
  while (!nap(w, w->c.retention_seconds * 1000)) {
    struct srv_retention_stats st;
    if (srv_retention_run(w->s, w->c.data_dir, (int64_t)time(NULL), w->c.retention_days, &st))
      fprintf(stderr, "heapgraph serve: retention: %s\n", srv_store_error());
    else if (st.dropped || st.orphans)
      fprintf(stderr, "heapgraph serve: retention: %" PRIu64 " files dropped (%" PRIu64 " bytes), %" PRIu64
              " unkept files removed\n", st.dropped, st.dropped_bytes, st.orphans);
  }
  return NULL;
}

int srv_workers_start(struct srv_store *s, const struct srv_worker_config *c, struct srv_workers **out) {
  *out = NULL;
  struct srv_workers *w = calloc(1, sizeof *w);
  if (!w) return _srv_err(SRV_EERR, "out of memory");
  w->s = s;
  w->c = *c;
  if (w->c.lease_seconds <= 0) w->c.lease_seconds = 60;
  w->data_dir = strdup(c->data_dir ? c->data_dir : ".");
  char host[128] = "host";
  gethostname(host, sizeof host - 1);
  char dflt[200];
  snprintf(dflt, sizeof dflt, "%s:%d", host, (int)getpid());
  w->name = strdup(c->name && *c->name ? c->name : dflt);
  w->c.data_dir = w->data_dir;
  w->c.name = w->name;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->t = calloc((size_t)(c->threads > 0 ? c->threads : 1), sizeof *w->t);
  if (!w->t || !w->data_dir || !w->name) {
    srv_workers_stop(w);
    return _srv_err(SRV_EERR, "out of memory");
  }
  for (int i = 0; i < (c->threads > 0 ? c->threads : 1); i++) {
    struct targ *a = malloc(sizeof *a);
    if (!a) break;
    a->w = w;
    a->index = i;
    if (pthread_create(&w->t[w->n], NULL, worker_main, a)) {
      free(a);
      break;
    }
    w->n++;
  }
  if (c->retention_seconds > 0 && !pthread_create(&w->ret, NULL, retention_main, w)) w->has_ret = 1;
  *out = w;
  return 0;
}

void srv_workers_stop(struct srv_workers *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < w->n; i++) pthread_join(w->t[i], NULL);
  if (w->has_ret) pthread_join(w->ret, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w->t);
  free(w->data_dir);
  free(w->name);
  free(w);
}
