/*
 * test_watch.c — the memory-pressure watcher: the policy with a fake clock,
 * the watcher thread with a fake probe and a fake capture (callback gets
 * the path, min interval respected, memory-warning requests), the Linux
 * probe's parsers (statm, PSI), and the real Linux watcher end to end
 * (RSS threshold -> hg_capture -> a loadable snapshot at the callback's path).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/platform.h"
#include "capture/watch.h"
#include "hg_test.h"

static struct hg_watch_options opts(void) {
  struct hg_watch_options o;
  hg_watch_options_init(&o);
  o.dir = "/tmp";
  return o;
}

static void test_policy(void) {
  struct hg_watch_options o = opts();
  o.footprint_threshold = 1000;
  o.min_interval_ms = 10;
  o.max_captures = 3;
  struct hg_watch_policy p;
  _hg_watch_policy_init(&p, &o);
  struct hg_watch_sample low = {999, 0, 0, 0, 0, 0, 0}, high = {1000, 0, 0, 0, 0, 0, 0}, press = {10, 1, 0, 0, 0, 0, 0};
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &low, 0), HG_WATCH_NONE);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &high, 0), HG_WATCH_FOOTPRINT);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &press, 0), HG_WATCH_PRESSURE);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &press, 1), HG_WATCH_WARNING);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &low, 1), HG_WATCH_WARNING);
  _hg_watch_record(&p, 5000000);                       /* t = 5 ms */
  CHECK_EQ_U(_hg_watch_decide(&p, 14999999, &high, 1), HG_WATCH_NONE); /* 9.99 ms later */
  CHECK_EQ_U(_hg_watch_decide(&p, 15000000, &high, 0), HG_WATCH_FOOTPRINT);
  _hg_watch_record(&p, 15000000);
  _hg_watch_record(&p, 30000000);
  CHECK_EQ_U(p.captures, 3);
  CHECK_EQ_U(_hg_watch_decide(&p, 1000000000, &high, 1), HG_WATCH_NONE); /* limit */
  /* pressure ignored when off; threshold 0 never fires */
  o.on_pressure = 0;
  o.footprint_threshold = 0;
  _hg_watch_policy_init(&p, &o);
  struct hg_watch_sample huge = {UINT64_MAX, 1, 0, 0, 0, 0, 0};
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &huge, 0), HG_WATCH_NONE);
  CHECK(!strcmp(_hg_watch_trigger_name(HG_WATCH_WARNING), "memory-warning"));
  char buf[64];
  CHECK(_hg_watch_path(buf, sizeof buf, "/d", "hg", 42, 1700000000123ull, 7) == 0);
  CHECK(!strcmp(buf, "/d/hg-42-1700000000123-7.hgsnap"));
  CHECK(_hg_watch_path(buf, 10, "/d", "hg", 42, 1, 1) == HG_ELIMIT);
}

/* The app-limit trigger: capture when less than N bytes remain. */
static void test_available(void) {
  struct hg_watch_options o = opts();
  o.available_threshold = 200u << 20; /* 200 MiB */
  o.on_pressure = 0;
  struct hg_watch_policy p;
  _hg_watch_policy_init(&p, &o);
  struct hg_watch_sample s;
  memset(&s, 0, sizeof s);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE); /* unknown: never fires */
  /* os_proc_available_memory wins when it answers */
  uint64_t lim = 0;
  s.footprint = 100u << 20;
  _hg_watch_set_available(&s, &lim, 1, 150u << 20, 1, 900u << 20);
  CHECK(s.have_available);
  CHECK_EQ_U(s.available, 150u << 20);
  CHECK_EQ_U(lim, 250u << 20); /* the limit it shows: footprint + remaining */
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_LIMIT);
  _hg_watch_set_available(&s, &lim, 1, 300u << 20, 1, 10);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE);
  /* 0 from os_proc: TASK_VM_INFO decides when it says more */
  _hg_watch_set_available(&s, &lim, 1, 0, 1, 199u << 20);
  CHECK_EQ_U(s.available, 199u << 20);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_LIMIT);
  /* both 0 after a limit was seen: over it */
  _hg_watch_set_available(&s, &lim, 1, 0, 1, 0);
  CHECK(s.have_available);
  CHECK_EQ_U(s.available, 0);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_LIMIT);
  /* both 0 and no limit ever seen (xnu memorystatus_available_memory_internal
   * on macOS without memlimit, not an app, or already over at the first
   * sample): unknown, never "0 bytes left" */
  lim = 0;
  _hg_watch_set_available(&s, &lim, 1, 0, 1, 0);
  CHECK(!s.have_available);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE);
  _hg_watch_set_available(&s, &lim, 0, 0, 1, 0); /* macOS: TASK_VM_INFO alone */
  CHECK(!s.have_available);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE);
  CHECK_EQ_U(lim, 0);
  _hg_watch_set_available(&s, &lim, 0, 0, 0, 0); /* macOS without revision 4, Linux */
  CHECK(!s.have_available);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE);
  /* the footprint trigger comes first; off when the threshold is 0 */
  o.footprint_threshold = 10;
  _hg_watch_policy_init(&p, &o);
  _hg_watch_set_available(&s, &lim, 1, 1, 0, 0);
  s.footprint = 11;
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_FOOTPRINT);
  o.footprint_threshold = 0;
  o.available_threshold = 0;
  _hg_watch_policy_init(&p, &o);
  CHECK_EQ_U(_hg_watch_decide(&p, 0, &s, 0), HG_WATCH_NONE);
  CHECK(!strcmp(_hg_watch_trigger_name(HG_WATCH_LIMIT), "memory-limit"));
}

static void test_parsers(void) {
  uint64_t pages = 0;
  const char *statm = "12345 678 90 1 0 300 0\n";
  CHECK(_hg_statm_resident_pages(statm, strlen(statm), &pages) == 0);
  CHECK_EQ_U(pages, 678);
  CHECK(_hg_statm_resident_pages("12345", 5, &pages) == -1);
  CHECK(_hg_statm_resident_pages("x 1", 3, &pages) == -1);
  CHECK(_hg_statm_resident_pages("1  ", 3, &pages) == -1);
  uint32_t centi = 0;
  const char *psi = "some avg10=12.34 avg60=1.00 avg300=0.50 total=123456\n"
                    "full avg10=99.00 avg60=0.00 avg300=0.00 total=1\n";
  CHECK(_hg_psi_some_avg10(psi, strlen(psi), &centi) == 0);
  CHECK_EQ_U(centi, 1234);
  CHECK(_hg_psi_some_avg10("some avg10=0.5 x", 16, &centi) == 0);
  CHECK_EQ_U(centi, 50);
  CHECK(_hg_psi_some_avg10("some avg10=7", 12, &centi) == 0);
  CHECK_EQ_U(centi, 700);
  CHECK(_hg_psi_some_avg10("full avg10=1.00\n", 16, &centi) == -1);
  CHECK(_hg_psi_some_avg10("some avg10=", 11, &centi) == -1);
  CHECK(_hg_psi_some_avg10("xsome avg10=1.0", 15, &centi) == -1);
}

/* ---- fake probe and capture ---- */

static _Atomic uint64_t fake_now, fake_footprint;
static _Atomic int fake_pressure, fake_samples, fake_opened, fake_closed;
static int f_open(void *ctx, const struct hg_watch_options *o) { (void)ctx; (void)o; fake_opened++; return 0; }
static void f_close(void *ctx) { (void)ctx; fake_closed++; }
static uint64_t f_now(void *ctx) { (void)ctx; return atomic_load(&fake_now); }
static int f_sample(void *ctx, struct hg_watch_sample *s) {
  (void)ctx;
  s->footprint = atomic_load(&fake_footprint);
  s->pressure = atomic_exchange(&fake_pressure, 0);
  fake_samples++;
  return 0;
}
static const struct hg_watch_probe fake_probe = {f_open, f_close, f_now, f_sample, NULL};

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static int cb_count, cb_last_rc;
static uint32_t cb_last_trigger;
static char cb_last_path[4096];
static char cap_last_trigger[64];

static int fake_capture(const char *path, const struct hg_options *o) {
  snprintf(cap_last_trigger, sizeof cap_last_trigger, "%s", o->trigger);
  return strstr(path, "/w-") ? 0 : HG_EINVAL;
}
static void cb(const char *path, int rc, uint32_t trigger, void *user) {
  pthread_mutex_lock(&cb_lock);
  cb_count++;
  cb_last_rc = rc;
  cb_last_trigger = trigger;
  snprintf(cb_last_path, sizeof cb_last_path, "%s", path);
  *(int *)user += 1;
  pthread_mutex_unlock(&cb_lock);
}
static int cb_get(void) {
  pthread_mutex_lock(&cb_lock);
  int n = cb_count;
  pthread_mutex_unlock(&cb_lock);
  return n;
}
static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}
static void wait_samples(int n) {
  int start = fake_samples;
  for (int i = 0; i < 2000 && fake_samples < start + n; i++) sleep_ms(1);
}

/* Options for a watcher over probe p with the fake capture, polling
 * every 2 ms, counting callbacks in *user. */
static struct hg_watch_options fake_watch(const struct hg_watch_probe *p, int *user) {
  _hg_watch_probe_override = p;
  _hg_watch_capture_override = fake_capture;
  struct hg_watch_options o = opts();
  o.poll_interval_ms = 2;
  o.prefix = "w";
  o.callback = cb;
  o.user = user;
  cb_count = 0;
  return o;
}

static void test_thread_fake(void) {
  int user = 0;
  struct hg_watch_options o = fake_watch(&fake_probe, &user);
  o.footprint_threshold = 1000;
  o.min_interval_ms = 100; /* 100 ms of the fake clock */
  atomic_store(&fake_now, 1000000000ull);
  atomic_store(&fake_footprint, 10);
  CHECK(hg_watch_stop() == HG_EINVAL);
  CHECK(hg_watch_memory_warning() == HG_EINVAL);
  REQUIRE(hg_watch_start(&o) == 0);
  CHECK(hg_watch_start(&o) == HG_EBUSY);
  CHECK_EQ_U(fake_opened, 1);
  wait_samples(5);
  CHECK_EQ_U(cb_get(), 0); /* below threshold */
  atomic_store(&fake_footprint, 5000);
  for (int i = 0; i < 2000 && cb_get() < 1; i++) sleep_ms(1);
  CHECK_EQ_U(cb_get(), 1);
  CHECK_EQ_U(cb_last_rc, 0);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_FOOTPRINT);
  CHECK(!strcmp(cap_last_trigger, "footprint-threshold"));
  CHECK(!strncmp(cb_last_path, "/tmp/w-", 7));
  CHECK(strstr(cb_last_path, ".hgsnap") != NULL);
  /* still above threshold, but the fake clock has not moved: no capture */
  wait_samples(20);
  CHECK_EQ_U(cb_get(), 1);
  CHECK(hg_watch_memory_warning() == 0);
  wait_samples(5);
  CHECK_EQ_U(cb_get(), 1); /* warning within the interval: dropped */
  atomic_store(&fake_now, 1000000000ull + 99000000ull);
  wait_samples(5);
  CHECK_EQ_U(cb_get(), 1);
  atomic_store(&fake_now, 1000000000ull + 101000000ull);
  for (int i = 0; i < 2000 && cb_get() < 2; i++) sleep_ms(1);
  CHECK_EQ_U(cb_get(), 2);
  /* pressure and explicit warning after the interval */
  atomic_store(&fake_footprint, 10);
  atomic_store(&fake_now, 2000000000ull);
  atomic_store(&fake_pressure, 1);
  for (int i = 0; i < 2000 && cb_get() < 3; i++) sleep_ms(1);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_PRESSURE);
  atomic_store(&fake_now, 3000000000ull);
  CHECK(hg_watch_memory_warning() == 0);
  for (int i = 0; i < 2000 && cb_get() < 4; i++) sleep_ms(1);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_WARNING);
  CHECK(!strcmp(cap_last_trigger, "memory-warning"));
  CHECK_EQ_U(hg_watch_stop(), 4);
  CHECK_EQ_U(user, 4);
  CHECK_EQ_U(fake_closed, 1);
  CHECK(hg_watch_stop() == HG_EINVAL);
  _hg_watch_probe_override = NULL;
  _hg_watch_capture_override = NULL;
}

/* A probe answering like xnu's memorystatus_available_memory_internal
 * (bsd/kern/kern_memorystatus.c; os_proc_available_memory and TASK_VM_INFO
 * limit_bytes_remaining both return it): 0 when there is no limit
 * (XNU_TARGET_OS_OSX with p_memstat_memlimit <= 0) or the footprint is
 * over it, else limit - footprint. avail_limit 0 = no limit. */
static _Atomic uint64_t avail_limit;
static uint64_t avail_seen; /* the probe's kept limit (watch_darwin.c DP.limit) */
static int fa_sample(void *ctx, struct hg_watch_sample *s) {
  (void)ctx;
  s->footprint = atomic_load(&fake_footprint);
  uint64_t lim = atomic_load(&avail_limit);
  uint64_t rem = lim && lim > s->footprint ? lim - s->footprint : 0;
  _hg_watch_set_available(s, &avail_seen, 1, rem, 1, rem);
  fake_samples++;
  return 0;
}
static const struct hg_watch_probe avail_probe = {f_open, f_close, f_now, fa_sample, NULL};

/* available_threshold where the OS reports no limit: no capture at all
 * (before: 0 read as "0 bytes left" fired at the first sample, and again
 * after every interval); with a limit, it fires below the threshold and
 * once over the limit. */
static void test_thread_no_limit(void) {
  int user = 0;
  struct hg_watch_options o = fake_watch(&avail_probe, &user);
  o.available_threshold = 200u << 20;
  o.on_pressure = 0;
  o.min_interval_ms = 1; /* 1 ms of the fake clock */
  avail_seen = 0;
  atomic_store(&avail_limit, 0);
  atomic_store(&fake_footprint, 900u << 20);
  atomic_store(&fake_now, 1000000000ull);
  REQUIRE(hg_watch_start(&o) == 0);
  for (int i = 0; i < 20; i++) { /* 20 intervals of the fake clock */
    wait_samples(1);
    atomic_fetch_add(&fake_now, 2000000ull);
  }
  CHECK_EQ_U(cb_get(), 0);
  /* an app with a 1 GiB limit: 124 MiB left fires */
  atomic_store(&avail_limit, 1024u << 20);
  for (int i = 0; i < 2000 && cb_get() < 1; i++) sleep_ms(1);
  CHECK_EQ_U(cb_get(), 1);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_LIMIT);
  /* over the limit (the OS says 0 again): still fires, the limit is known */
  atomic_store(&fake_footprint, 1100u << 20);
  atomic_fetch_add(&fake_now, 2000000ull);
  for (int i = 0; i < 2000 && cb_get() < 2; i++) sleep_ms(1);
  CHECK_EQ_U(cb_get(), 2);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_LIMIT);
  CHECK_EQ_U(avail_seen, 1024u << 20);
  CHECK_EQ_U(hg_watch_stop(), 2);
  _hg_watch_probe_override = NULL;
  _hg_watch_capture_override = NULL;
}

static void test_bad_options(void) {
  struct hg_watch_options o = opts();
  o.dir = NULL;
  CHECK(hg_watch_start(&o) == HG_EINVAL);
  o = opts();
  o.version = 99;
  CHECK(hg_watch_start(&o) == HG_EINVAL);
  CHECK(hg_watch_start(NULL) == HG_EINVAL);
}

/* ---- the real Linux watcher ---- */

static void test_linux_rss_capture(void) {
#if HG_TEST_ASAN
  /* A real capture under ASan takes minutes here (test_capture too): this
   * end-to-end check runs in the plain build only. */
  SKIP("end-to-end capture not run under ASan (plain build only)");
#endif
  char dir[] = "/tmp/hg_watch_XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  struct hg_watch_options o = opts();
  int user = 0;
  o.dir = dir;
  o.footprint_threshold = 1; /* our RSS is surely above 1 byte */
  o.min_interval_ms = 60000; /* so exactly one capture in this test */
  o.poll_interval_ms = 20;
  o.psi_some_avg10 = 0;
  o.callback = cb;
  o.user = &user;
  cb_count = 0;
  REQUIRE(hg_watch_start(&o) == 0);
  for (int i = 0; i < 30000 && cb_get() < 1; i++) sleep_ms(1);
  sleep_ms(300); /* ~15 more samples: the interval must hold them back */
  int attempts = hg_watch_stop();
  CHECK_EQ_U(attempts, 1);
  CHECK_EQ_U(cb_get(), 1);
  CHECK_EQ_U(cb_last_trigger, HG_WATCH_FOOTPRINT);
  CHECK(!strncmp(cb_last_path, dir, strlen(dir)));
  fprintf(stderr, "watch: capture rc=%d (%s) path=%s\n", cb_last_rc, hg_error_string(cb_last_rc),
          cb_last_path);
  CHECK(cb_last_rc == 0 || cb_last_rc == HG_EUNSUPPORTED); /* EUNSUPPORTED: file without heap */
  struct stat st;
  CHECK(stat(cb_last_path, &st) == 0 && st.st_size > 0);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(cb_last_path, &err);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->meta.trigger && !strcmp(g->meta.trigger, "footprint-threshold"));
    hg_graph_free(g);
  } else {
    fprintf(stderr, "load: %s\n", err.message);
  }
  unlink(cb_last_path);
  rmdir(dir);
}

static void test_linux_probe_live(void) {
  /* The real probe reports this process's RSS; PSI is read when present. */
  const struct hg_watch_probe *p = _hg_watch_plat_probe();
  struct hg_watch_options o = opts();
  o.psi_some_avg10 = 0;
  REQUIRE(p->open(p->ctx, &o) == 0);
  struct hg_watch_sample s = {0, 0, 0, 0, 0, 0, 0};
  p->sample(p->ctx, &s);
  CHECK(s.footprint > 100 * 1024);
  CHECK(s.footprint < (uint64_t)64 << 30);
  CHECK_EQ_U(s.pressure, 0); /* PSI off */
  uint64_t t1 = p->now_ns(p->ctx);
  sleep_ms(2);
  CHECK(p->now_ns(p->ctx) > t1);
  if (access("/proc/pressure/memory", R_OK) == 0) {
    /* the live file parses */
    char buf[512];
    FILE *f = fopen("/proc/pressure/memory", "r");
    size_t k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    uint32_t centi = 0;
    CHECK(k == 0 || _hg_psi_some_avg10(buf, k, &centi) == 0);
    fprintf(stderr, "watch: PSI present, some avg10 = %u.%02u%%\n", centi / 100, centi % 100);
  } else {
    fprintf(stderr, "watch: no /proc/pressure/memory here: PSI path not exercised live\n");
  }
}

int main(void) {
  RUN(test_policy);
  RUN(test_available);
  RUN(test_parsers);
  RUN(test_bad_options);
  RUN(test_thread_fake);
  RUN(test_thread_no_limit);
  RUN(test_linux_probe_live);
  RUN(test_linux_rss_capture);
  return hg_test_done();
}
