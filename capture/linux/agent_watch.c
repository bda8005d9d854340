/*
 * agent_watch.c — the preload agent's memory watcher and uploader
 * (agent.c calls _hg_agent_watch_init from its constructor).
 *
 * Environment (sizes take K/M/G; a bad value is reported and turns the
 * watcher off; `heapgraph run --watch` sets them):
 *   HEAPGRAPH_WATCH=1                 watch with the defaults below
 *   HEAPGRAPH_WATCH_RSS=BYTES         capture when the resident set reaches BYTES
 *   HEAPGRAPH_WATCH_LIMIT_FRACTION=F  capture when usage reaches F (0 < F <= 1)
 *                                     of the nearest limit (cgroup memory.max /
 *                                     memory.high, v1 limit, RLIMIT_AS); default
 *                                     0.9 unless only HEAPGRAPH_WATCH_RSS is set
 *   HEAPGRAPH_WATCH_MAX=N             captures per process (default 1)
 *   HEAPGRAPH_WATCH_POLL_MS=MS        sampling interval (default 200)
 *   HEAPGRAPH_WATCH_PSI=PERCENT       system PSI "some avg10" counts as pressure
 *                                     (default 0: off — it is not this process's)
 *   HEAPGRAPH_WATCH_DIR=DIR           where captures go without a spool (default .)
 *   HEAPGRAPH_SPOOL=DIR               captures go into this spool (docs/upload.md);
 *   HEAPGRAPH_SPOOL_MAX_BYTES, _MAX_FILES, _MIN_FREE, _COMPRESS=0|1, _BACKOFF_MS
 *   HEAPGRAPH_POLICY_FIRES, _WINDOW_MS, _PER_VERSION, _PERIOD_DAYS,
 *   _SAMPLE_PERMILLE                  any of these turns the capture policy on
 *                                     (the rest keep their defaults)
 *   HEAPGRAPH_APP, _APP_VERSION, _APP_BUILD   device metadata (app name
 *                                     defaults to the program's name)
 *   HEAPGRAPH_UPLOAD_URL, HEAPGRAPH_UPLOAD_KEY   with a spool: a background
 *                                     thread uploads the spool at start and
 *                                     after each capture
 *   HEAPGRAPH_UPLOAD_RATE=BYTES       per second (default 1M; 0 = no cap)
 *
 * The watcher and the uploader are two threads of their own: the capture
 * never waits for the network and the upload never runs on the capturing
 * thread. Messages go to stderr, prefixed "heapgraph:".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "capture/linux/agent_watch.h"
#include "heapgraph.h"

static struct hg_spool *spool;
static struct hg_spool_limits limits;
static struct hg_policy_options policy;
static struct hg_device_info device;
static struct hg_options capture_opt;
static struct hg_upload_options upload_opt;
static const char *up_url, *up_key;
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t up_cond = PTHREAD_COND_INITIALIZER;
static int up_kick;

/* -1: bad; 0: unset; 1: *v set. K/M/G suffixes when bytes. */
static int env_num(const char *name, int bytes, uint64_t *v) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  int shift = 0;
  if (bytes && *end && strchr("kKmMgG", *end)) shift = strchr("kK", *end) ? 10 : strchr("mM", *end) ? 20 : 30, end++;
  if (errno || end == s || *end || s[0] == '-' || (shift && x >> (64 - shift))) {
    fprintf(stderr, "heapgraph: %s='%s' is not a %s; watcher off\n", name, s, bytes ? "size" : "number");
    return -1;
  }
  *v = (uint64_t)x << shift;
  return 1;
}

static void on_capture(const char *path, int result, uint32_t trigger, void *user) {
  (void)user;
  if (result == 0 || result == HG_EUNSUPPORTED)
    fprintf(stderr, "heapgraph: watch (%s): wrote %s\n",
            trigger == HG_WATCH_LIMIT ? "memory-limit" : trigger == HG_WATCH_FOOTPRINT ? "rss-threshold" : "pressure",
            path);
  else
    fprintf(stderr, "heapgraph: watch: capture to %s failed: %s\n", path, hg_error_string(result));
  pthread_mutex_lock(&up_lock);
  up_kick = 1;
  pthread_cond_broadcast(&up_cond);
  pthread_mutex_unlock(&up_lock);
}

static void *upload_thread(void *arg) {
  (void)arg;
  for (;;) {
    struct hg_upload_result r;
    int rc = hg_upload_next(spool, up_url, up_key, &upload_opt, &r);
    if (rc == HG_EUNSUPPORTED) {
      fprintf(stderr, "heapgraph: upload: libcurl.so.4 not found; uploads off\n");
      return NULL;
    }
    uint64_t wait_ms = 0;
    if (rc == 0 && (r.action == HG_UPLOAD_SENT || r.action == HG_UPLOAD_DUPLICATE))
      fprintf(stderr, "heapgraph: upload: sent %s (HTTP %d)\n", r.name, r.http_status);
    else if (rc == 0 && r.action == HG_UPLOAD_DROPPED)
      fprintf(stderr, "heapgraph: upload: %s refused (HTTP %d: %s); dropped\n", r.name, r.http_status, r.message);
    else if (rc == 0 && (r.action == HG_UPLOAD_RETRY || r.action == HG_UPLOAD_WAIT))
      wait_ms = r.wait_ms ? r.wait_ms : 1000;
    else
      wait_ms = 24ull * 3600 * 1000; /* empty (or an error): until the next capture */
    if (rc == 0 && r.action == HG_UPLOAD_RETRY)
      fprintf(stderr, "heapgraph: upload: %s not accepted (HTTP %d%s%s); retry in %llu ms\n", r.name,
              r.http_status, r.message[0] ? ": " : "", r.message, (unsigned long long)wait_ms);
    if (wait_ms == 0) continue;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + wait_ms % 1000 * 1000000u;
    until.tv_sec += (time_t)(wait_ms / 1000 + ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&up_lock);
    while (!up_kick)
      if (pthread_cond_timedwait(&up_cond, &up_lock, &until) == ETIMEDOUT) break;
    up_kick = 0;
    pthread_mutex_unlock(&up_lock);
  }
  return NULL;
}

static int spool_env(void) {
  const char *dir = getenv("HEAPGRAPH_SPOOL");
  if (!dir || !*dir) return 0;
  hg_spool_limits_init(&limits);
  uint64_t v;
  int e = 0;
  if ((e = env_num("HEAPGRAPH_SPOOL_MAX_BYTES", 1, &v)) > 0) limits.max_bytes = v;
  if (e >= 0 && (e = env_num("HEAPGRAPH_SPOOL_MAX_FILES", 0, &v)) > 0) limits.max_files = (uint32_t)v;
  if (e >= 0 && (e = env_num("HEAPGRAPH_SPOOL_MIN_FREE", 1, &v)) > 0) limits.min_free_bytes = v;
  if (e >= 0 && (e = env_num("HEAPGRAPH_SPOOL_COMPRESS", 0, &v)) > 0) limits.compress = v != 0;
  if (e >= 0 && (e = env_num("HEAPGRAPH_SPOOL_BACKOFF_MS", 0, &v)) > 0) limits.backoff_ms = (uint32_t)v;
  if (e < 0) return -1;
  int rc = hg_spool_open(dir, &limits, &spool);
  if (rc) {
    fprintf(stderr, "heapgraph: spool %s: %s; watcher off\n", dir, hg_error_string(rc));
    return -1;
  }
  return 1;
}

static int policy_env(void) {
  static const char *const names[] = {"HEAPGRAPH_POLICY_FIRES", "HEAPGRAPH_POLICY_WINDOW_MS",
                                      "HEAPGRAPH_POLICY_PER_VERSION", "HEAPGRAPH_POLICY_PERIOD_DAYS",
                                      "HEAPGRAPH_POLICY_SAMPLE_PERMILLE"};
  hg_policy_options_init(&policy);
  uint32_t *fields[] = {&policy.fires, &policy.window_ms, &policy.max_per_version, &policy.period_days,
                        &policy.sample_permille};
  int any = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t v;
    int e = env_num(names[i], 0, &v);
    if (e < 0) return -1;
    if (e > 0) *fields[i] = (uint32_t)v, any = 1;
  }
  return any;
}

int _hg_agent_watch_init(uint32_t mode, uint32_t omit) {
  const char *w = getenv("HEAPGRAPH_WATCH"), *frac = getenv("HEAPGRAPH_WATCH_LIMIT_FRACTION");
  uint64_t rss = 0, v;
  int on = w && *w && strcmp(w, "0") && strcasecmp(w, "no") && strcasecmp(w, "off");
  int e = env_num("HEAPGRAPH_WATCH_RSS", 1, &rss);
  if (e < 0) return -1;
  on |= e > 0 || (frac && *frac);
  up_url = getenv("HEAPGRAPH_UPLOAD_URL");
  up_key = getenv("HEAPGRAPH_UPLOAD_KEY");
  if (up_url && !*up_url) up_url = NULL;
  if (!on && !up_url) return 0;

  struct hg_watch_options o;
  hg_watch_options_init(&o);
  o.footprint_threshold = rss;
  o.limit_permille = rss && !(frac && *frac) ? 0 : 900;
  if (frac && *frac) {
    char *end;
    double f = strtod(frac, &end);
    if (end == frac || *end || !(f > 0 && f <= 1)) {
      fprintf(stderr, "heapgraph: HEAPGRAPH_WATCH_LIMIT_FRACTION='%s' is not in (0, 1]; watcher off\n", frac);
      return -1;
    }
    o.limit_permille = (uint32_t)(f * 1000 + 0.5) ? (uint32_t)(f * 1000 + 0.5) : 1;
  }
  o.max_captures = 1;
  o.poll_interval_ms = 200;
  o.psi_some_avg10 = 0;
  o.min_interval_ms = 1000;
  if ((e = env_num("HEAPGRAPH_WATCH_MAX", 0, &v)) > 0) o.max_captures = (uint32_t)v;
  if (e >= 0 && (e = env_num("HEAPGRAPH_WATCH_POLL_MS", 0, &v)) > 0) o.poll_interval_ms = (uint32_t)v;
  if (e >= 0 && (e = env_num("HEAPGRAPH_WATCH_PSI", 0, &v)) > 0) o.psi_some_avg10 = (uint32_t)v;
  if (e < 0) return -1;
  int sp = spool_env();
  if (sp < 0) return -1;
  int pe = policy_env();
  if (pe < 0) return -1;
  if (up_url && !spool) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_UPLOAD_URL needs HEAPGRAPH_SPOOL (the directory it uploads from); "
                    "uploads off\n");
    up_url = NULL;
  }
  device.version = HG_DEVICE_INFO_VERSION;
  extern char *program_invocation_short_name;
  device.app = getenv("HEAPGRAPH_APP") ? getenv("HEAPGRAPH_APP") : program_invocation_short_name;
  device.app_version = getenv("HEAPGRAPH_APP_VERSION");
  device.build = getenv("HEAPGRAPH_APP_BUILD");
  hg_options_init(&capture_opt);
  capture_opt.mode = mode;
  capture_opt.omit = omit;
  o.capture = &capture_opt;
  o.spool = spool;
  o.policy = pe > 0 ? &policy : NULL;
  o.device = &device;
  o.dir = getenv("HEAPGRAPH_WATCH_DIR") && *getenv("HEAPGRAPH_WATCH_DIR") ? getenv("HEAPGRAPH_WATCH_DIR") : ".";
  o.callback = on_capture;
  if (on) {
    int rc = hg_watch_start(&o);
    if (rc) fprintf(stderr, "heapgraph: watcher not started: %s\n", hg_error_string(rc));
  }
  if (up_url) {
    hg_upload_options_init(&upload_opt);
    if ((e = env_num("HEAPGRAPH_UPLOAD_RATE", 1, &v)) > 0) upload_opt.max_bytes_per_s = v;
    pthread_t t;
    if (e < 0 || pthread_create(&t, NULL, upload_thread, NULL) != 0)
      fprintf(stderr, "heapgraph: upload thread not started; uploads off\n");
    else
      pthread_detach(t);
  }
  return 1;
}
