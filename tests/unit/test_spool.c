/*
 * test_spool.c — the device half of the upload (docs/upload.md): the spool
 * under budget pressure (file count, bytes, free-disk guard; oldest first;
 * the dropped count), crash leftovers (temporaries of dead writers removed,
 * a half-written snapshot never queued, a finished untagged one added on
 * open), the snapshot checksum taken from the trailer, the state file
 * against hostile text, the capture policy (K fires in a window, one per
 * session, N per version per period across restarts, sampling, battery),
 * the uploader's portable half (statuses, backoff with jitter, Retry-After,
 * backoff kept across a restart), the cgroup/memory.events parsers, and the
 * device metadata with and without HG_OMIT_DEVICE.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/spool.h"
#include "capture/upload.h"
#include "capture/watch.h"
#include "hg_test.h"

static char root[256];

static void fresh_dir(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", root, name);
  mkdir(out, 0700);
}

/* A real snapshot of this process at dir/name.hgsnap. */
static int snap(const char *dir, const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s.hgsnap", dir, name);
  struct hg_options o;
  hg_options_init(&o);
  int rc = hg_capture(p, &o);
  return rc == 0 || rc == HG_EUNSUPPORTED ? 0 : rc;
}

/* Default limits without the free-disk guard (the test machine's disk may be full). */
static struct hg_spool_limits test_limits(void) {
  struct hg_spool_limits l;
  hg_spool_limits_init(&l);
  l.min_free_bytes = 0;
  return l;
}

static int count_names(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += strstr(e->d_name, needle) != NULL;
  if (d) closedir(d);
  return n;
}

static void test_budget(void) {
  char dir[300];
  fresh_dir(dir, sizeof dir, "budget");
  struct hg_spool_limits l = test_limits();
  l.max_files = 3;
  struct hg_spool *s;
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  CHECK(strlen(hg_spool_install_id(s)) == 32);
  char names[5][16];
  for (int i = 0; i < 5; i++) {
    snprintf(names[i], sizeof names[i], "s%d", i);
    REQUIRE(snap(dir, names[i]) == 0);
    char p[512];
    snprintf(p, sizeof p, "%s/%s.hgsnap", dir, names[i]);
    CHECK(hg_spool_add(s, p) == 0);
    usleep(20000); /* distinct mtimes: oldest first */
  }
  struct hg_spool_stats st;
  REQUIRE(hg_spool_stats(s, &st) == 0);
  CHECK_EQ_U(st.files, 3);
  CHECK_EQ_U(st.dropped, 2);
  CHECK_EQ_U(st.dropped_total, 2);
  CHECK(count_names(dir, "s0.") == 0 && count_names(dir, "s1.") == 0); /* the oldest went */
  CHECK(count_names(dir, "s4.") == 1 && count_names(dir, ".hgsnap.gz") == 3);
  /* the snapshot took the count: the next one starts from 0 */
  _hg_spool_took_dropped(s, 2);
  REQUIRE(hg_spool_stats(s, &st) == 0);
  CHECK_EQ_U(st.dropped, 0);
  CHECK_EQ_U(st.dropped_total, 2);
  /* byte budget: one byte short, the oldest goes */
  s->l.max_bytes = st.bytes - 1;
  CHECK(hg_spool_trim(s) == 1);
  REQUIRE(hg_spool_stats(s, &st) == 0);
  CHECK_EQ_U(st.files, 2);
  CHECK(count_names(dir, "s2.") == 0 && count_names(dir, "s4.") == 1);
  /* free-disk guard: everything goes */
  s->l.max_bytes = UINT64_MAX;
  s->l.min_free_bytes = UINT64_MAX;
  CHECK(hg_spool_trim(s) == 2);
  REQUIRE(hg_spool_stats(s, &st) == 0);
  CHECK_EQ_U(st.files, 0);
  CHECK_EQ_U(st.dropped_total, 5);
  hg_spool_close(s);
  /* same install id after a restart */
  char id[33];
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  snprintf(id, sizeof id, "%s", hg_spool_install_id(s));
  hg_spool_close(s);
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  CHECK(!strcmp(id, hg_spool_install_id(s)));
  hg_spool_close(s);
}

/* What a process killed at each step leaves behind. */
static void test_crash_leftovers(void) {
  char dir[300], p[512];
  fresh_dir(dir, sizeof dir, "crash");
  REQUIRE(snap(dir, "done") == 0);   /* finished, killed before hg_spool_add */
  REQUIRE(snap(dir, "half") == 0);   /* then cut: a capture killed mid-write */
  snprintf(p, sizeof p, "%s/half.hgsnap", dir);
  struct stat st;
  REQUIRE(stat(p, &st) == 0);
  REQUIRE(truncate(p, st.st_size / 2) == 0);
  /* temporaries of a dead writer (pid 2^22 + 1 does not exist; pid_max is
   * at most 2^22) and of a live one (us: kept) */
  const char *tmps[] = {".x.hgsnap.tmp.4194305.123", ".y.hgsnap.tmp.4194305.gz", ".state.tmp.4194305.w"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, tmps[i]);
    close(open(p, O_WRONLY | O_CREAT, 0600));
  }
  char live[128];
  snprintf(live, sizeof live, ".z.hgsnap.tmp.%ld.1", (long)getpid());
  snprintf(p, sizeof p, "%s/%s", dir, live);
  close(open(p, O_WRONLY | O_CREAT, 0600));
  struct hg_spool_limits l = test_limits();
  struct hg_spool *s;
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  CHECK(count_names(dir, "4194305") == 0);
  CHECK(count_names(dir, live) == 1);
  CHECK(count_names(dir, "half") == 0); /* not a whole snapshot: removed, never queued */
  CHECK(count_names(dir, "done.") == 1 && count_names(dir, "done.hgsnap") == 0);
  struct hg_upload_item it;
  uint64_t wait;
  REQUIRE(hg_upload_peek(s, &it, &wait) == 0);
  CHECK(!strncmp(it.name, "done.", 5));
  /* the name's tag is the trailer's checksum of the uncompressed file */
  REQUIRE(snap(dir, "again") == 0);
  snprintf(p, sizeof p, "%s/again.hgsnap", dir);
  int fd = open(p, O_RDONLY);
  uint64_t sum = 0;
  CHECK(_hg_snapshot_checksum(fd, &sum) == 0);
  close(fd);
  struct hg_load_error le;
  struct hg_graph *g = hg_graph_load(p, &le);
  CHECK(g != NULL); /* the reader agrees the file is whole */
  hg_graph_free(g);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)sum);
  char out[4400];
  CHECK(_hg_spool_add(s, p, out, sizeof out) == 0);
  CHECK(strstr(out, hex) != NULL);
  hg_spool_close(s);
  /* a file that ends in anything but a trailer has no checksum */
  snprintf(p, sizeof p, "%s/junk", dir);
  FILE *f = fopen(p, "w");
  fputs("\x83\x0b\xa9 not a trailer at all, just text that ends here\xff", f);
  fclose(f);
  fd = open(p, O_RDONLY);
  CHECK(_hg_snapshot_checksum(fd, &sum) == HG_EFORMAT);
  close(fd);
}

static void test_state_hostile(void) {
  struct _hg_state st;
  const char text[] = "a 1\nnospace\n\n b\nkey\x01 x\nlong " /* control char: skipped */
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789\n"
                      "c 3";
  _hg_state_parse(&st, text, sizeof text - 1);
  CHECK(_hg_state_u64(&st, "a") == 1 && _hg_state_u64(&st, "c") == 3);
  CHECK(_hg_state_get(&st, "long") == NULL); /* a value over 207 bytes: the line is skipped */
  CHECK(_hg_state_get(&st, "key\x01") == NULL && _hg_state_get(&st, "nospace") == NULL);
  char big[20000];
  memset(big, 'k', sizeof big);
  for (size_t i = 0; i < sizeof big; i += 7) big[i] = i % 2 ? ' ' : '\n';
  _hg_state_parse(&st, big, sizeof big);
  CHECK(st.n <= HG_STATE_MAX);
  _hg_state_set(&st, "z", "multi\nline"); /* never a second line */
  CHECK(strchr(_hg_state_get(&st, "z") ? _hg_state_get(&st, "z") : "\n", '\n') == NULL || st.n == HG_STATE_MAX);
}

static void test_policy(void) {
  struct hg_policy_options o;
  hg_policy_options_init(&o);
  CHECK(o.fires == 3 && o.window_ms == 60000 && o.max_per_version == 5 && o.period_days == 15);
  struct _hg_policy p;
  _hg_policy_init(&p, &o);
  const uint64_t s = 1000000000ull;
  /* K = 3 fires within 60 s; fires older than the window do not count */
  CHECK(_hg_policy_fire(&p, 0, 0, 1, -1, 0) == HG_POLICY_WAIT_FIRES);
  CHECK(_hg_policy_fire(&p, 10 * s, 0, 1, -1, 0) == HG_POLICY_WAIT_FIRES);
  CHECK(_hg_policy_fire(&p, 65 * s, 0, 1, -1, 0) == HG_POLICY_WAIT_FIRES); /* the first is out */
  CHECK(_hg_policy_fire(&p, 66 * s, 0, 1, -1, 0) == HG_POLICY_CAPTURE);
  /* once per session */
  for (int i = 0; i < 4; i++) CHECK(_hg_policy_fire(&p, (67 + i) * s, 0, 1, -1, 0) == HG_POLICY_SESSION);
  o.once_per_session = 0;
  o.fires = 1;
  _hg_policy_init(&p, &o);
  CHECK(_hg_policy_fire(&p, 0, 4, 1, -1, 0) == HG_POLICY_CAPTURE);
  CHECK(_hg_policy_fire(&p, 0, 5, 1, -1, 0) == HG_POLICY_QUOTA);
  CHECK(_hg_policy_fire(&p, 0, 0, 0, -1, 0) == HG_POLICY_NOT_SAMPLED);
  CHECK(_hg_policy_fire(&p, 0, 0, 1, 19, 0) == HG_POLICY_BATTERY);
  CHECK(_hg_policy_fire(&p, 0, 0, 1, 19, 1) == HG_POLICY_CAPTURE); /* charging */
  CHECK(_hg_policy_fire(&p, 0, 0, 1, 20, 0) == HG_POLICY_CAPTURE);
  /* sampling: stable per id, about the fraction over many ids */
  int in = 0;
  for (int i = 0; i < 4000; i++) {
    char id[40];
    snprintf(id, sizeof id, "%032x", i * 2654435761u);
    int a = _hg_policy_sampled(id, 100);
    CHECK(a == _hg_policy_sampled(id, 100));
    in += a;
  }
  CHECK(in > 300 && in < 500); /* 10 % of 4000 = 400 */
  CHECK(_hg_policy_sampled("x", 1000) == 1 && _hg_policy_sampled("x", 0) == 0);
}

/* N per version per period, counted in the spool's state: a restart (a
 * new spool handle, a new _hg_policy) does not reset it. */
static void test_policy_restart(void) {
  char dir[300];
  fresh_dir(dir, sizeof dir, "policy");
  struct hg_spool *s;
  REQUIRE(hg_spool_open(dir, NULL, &s) == 0);
  const uint64_t day = 86400, t0 = 1800000000;
  for (int i = 0; i < 5; i++) CHECK(_hg_policy_record(s, "1.2 (34)", 15, t0 + (uint64_t)i * day) == 0);
  hg_spool_close(s);
  REQUIRE(hg_spool_open(dir, NULL, &s) == 0);
  struct hg_policy_options o;
  hg_policy_options_init(&o);
  o.fires = 1;
  struct _hg_policy p;
  _hg_policy_init(&p, &o);
  uint32_t used = _hg_policy_count(s, "1.2 (34)", 15, t0 + 5 * day);
  CHECK_EQ_U(used, 5);
  CHECK(_hg_policy_fire(&p, 0, used, 1, -1, 0) == HG_POLICY_QUOTA);
  CHECK_EQ_U(_hg_policy_count(s, "1.3", 15, t0 + 5 * day), 0); /* a new version starts afresh */
  /* 16 days after the second capture, only 3 are inside the period */
  CHECK_EQ_U(_hg_policy_count(s, "1.2 (34)", 15, t0 + 16 * day + 1), 3);
  CHECK(_hg_policy_record(s, "1.3", 15, t0 + 6 * day) == 0);
  CHECK_EQ_U(_hg_policy_count(s, "1.2 (34)", 15, t0 + 6 * day), 0); /* older versions forgotten */
  CHECK_EQ_U(_hg_policy_count(s, "1.3", 15, t0 + 6 * day), 1);
  hg_spool_close(s);
}

static void test_upload_state(void) {
  CHECK(_hg_upload_classify(201) == HG_UPLOAD_SENT && _hg_upload_classify(200) == HG_UPLOAD_DUPLICATE);
  CHECK(_hg_upload_classify(413) == HG_UPLOAD_DROPPED && _hg_upload_classify(422) == HG_UPLOAD_DROPPED);
  CHECK(_hg_upload_classify(429) == HG_UPLOAD_RETRY && _hg_upload_classify(503) == HG_UPLOAD_RETRY);
  CHECK(_hg_upload_classify(0) == HG_UPLOAD_RETRY && _hg_upload_classify(401) == HG_UPLOAD_RETRY);
  for (uint64_t r = 0; r < 1000; r += 37) {
    uint64_t d1 = _hg_upload_backoff_ms(1000, 1, r), d3 = _hg_upload_backoff_ms(1000, 3, r),
             d30 = _hg_upload_backoff_ms(1000, 30, r);
    CHECK(d1 >= 500 && d1 <= 1000);
    CHECK(d3 >= 2000 && d3 <= 4000);
    CHECK(d30 >= 1800000 && d30 <= 3600000);
  }
  CHECK(_hg_retry_after("Retry-After: 120\r\n", 18) == 120);
  CHECK(_hg_retry_after("retry-after:7", 13) == 7);
  CHECK(_hg_retry_after("Retry-After: Fri, 31 Dec 1999 23:59:59 GMT", 42) == 0);
  CHECK(_hg_retry_after("Retry-After: 99999999999999999999", 33) == 86400);

  char dir[300];
  fresh_dir(dir, sizeof dir, "up");
  struct hg_spool_limits l = test_limits();
  l.backoff_ms = 60000;
  l.max_tries = 3;
  struct hg_spool *s;
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  struct hg_upload_item it;
  uint64_t wait = 0;
  CHECK(hg_upload_peek(s, &it, &wait) == HG_ENOTFOUND);
  REQUIRE(snap(dir, "a") == 0);
  hg_spool_close(s);
  REQUIRE(hg_spool_open(dir, &l, &s) == 0); /* adds a.hgsnap */
  REQUIRE(hg_upload_peek(s, &it, &wait) == 0);
  CHECK(strlen(it.checksum) == 16 && it.bytes > 0);
  int hdr = 0;
  for (uint32_t i = 0; i < it.header_count; i++)
    hdr += !strncmp(it.headers[i], "Content-Encoding: gzip", 22) || !strncmp(it.headers[i], "X-Heapgraph-Checksum: ", 22);
  CHECK(hdr == 2);
  struct hg_upload_item sent = it, busy;
  CHECK(hg_upload_report(s, &sent, 503, 0) == HG_UPLOAD_RETRY);
  CHECK(hg_upload_peek(s, &busy, &wait) == HG_EBUSY && wait > 25000 && wait <= 60000);
  hg_spool_close(s); /* a restart keeps the backoff */
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  CHECK(hg_upload_peek(s, &busy, &wait) == HG_EBUSY && wait > 25000);
  CHECK(hg_upload_report(s, &sent, 429, 5) == HG_UPLOAD_RETRY); /* Retry-After wins */
  CHECK(hg_upload_peek(s, &busy, &wait) == HG_EBUSY && wait <= 5000);
  CHECK(hg_upload_report(s, &sent, 0, 0) == HG_UPLOAD_DROPPED); /* third try: max_tries */
  CHECK(hg_upload_peek(s, &it, &wait) == HG_ENOTFOUND);
  REQUIRE(snap(dir, "b") == 0);
  REQUIRE(snap(dir, "c") == 0);
  hg_spool_close(s);
  REQUIRE(hg_spool_open(dir, &l, &s) == 0);
  REQUIRE(hg_upload_peek(s, &it, &wait) == 0);
  CHECK(hg_upload_report(s, &it, 201, 0) == HG_UPLOAD_SENT);
  CHECK(access(it.path, F_OK) != 0);
  REQUIRE(hg_upload_peek(s, &it, &wait) == 0); /* no backoff after a success */
  CHECK(hg_upload_report(s, &it, 422, 0) == HG_UPLOAD_DROPPED);
  struct hg_spool_stats st;
  REQUIRE(hg_spool_stats(s, &st) == 0);
  CHECK_EQ_U(st.files, 0);
  CHECK_EQ_U(st.dropped_total, 2);
  CHECK(hg_upload_report(s, &it, 201, 0) == HG_UPLOAD_SENT); /* again: nothing left to remove */
  it.name[0] = 0;
  CHECK(hg_upload_report(s, &it, 201, 0) == HG_EINVAL);
  hg_spool_close(s);
}

static void test_parsers(void) {
  char path[256];
  int v2 = -1;
  const char both[] = "12:memory:/a/b\n0::/user.slice/x.scope\n";
  CHECK(_hg_cgroup_path(both, sizeof both - 1, path, sizeof path, &v2) == 0);
  CHECK(!strcmp(path, "/user.slice/x.scope") && v2 == 1);
  const char v1[] = "4:memory:/process_api/983\n3:cpuset:/\n";
  CHECK(_hg_cgroup_path(v1, sizeof v1 - 1, path, sizeof path, &v2) == 0);
  CHECK(!strcmp(path, "/process_api/983") && v2 == 0);
  const char joined[] = "5:cpu,memory,pids:/j\n";
  CHECK(_hg_cgroup_path(joined, sizeof joined - 1, path, sizeof path, &v2) == 0 && !strcmp(path, "/j"));
  const char none[] = "3:cpuset:/\nrubbish";
  CHECK(_hg_cgroup_path(none, sizeof none - 1, path, sizeof path, &v2) == -1);
  uint64_t sum = 0;
  const char ev[] = "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n";
  CHECK(_hg_memory_events(ev, sizeof ev - 1, &sum) == 0 && sum == 16);
  CHECK(_hg_memory_events("low 5\n", 6, &sum) == -1);
  /* limit fraction: 900 permille of 1000 bytes fires at 900 */
  struct hg_watch_options o;
  hg_watch_options_init(&o);
  o.dir = "/tmp";
  o.on_pressure = 0;
  o.limit_permille = 900;
  struct hg_watch_policy p;
  _hg_watch_policy_init(&p, &o);
  struct hg_watch_sample smp;
  memset(&smp, 0, sizeof smp);
  smp.limit = 1000;
  smp.usage = 899;
  CHECK(_hg_watch_decide(&p, 0, &smp, 0) == HG_WATCH_NONE);
  smp.usage = 900;
  CHECK(_hg_watch_decide(&p, 0, &smp, 0) == HG_WATCH_LIMIT);
  smp.limit = UINT64_MAX; /* no overflow at the top */
  smp.usage = UINT64_MAX / 10 * 9;
  CHECK(_hg_watch_decide(&p, 0, &smp, 0) == HG_WATCH_NONE);
  smp.usage = UINT64_MAX;
  CHECK(_hg_watch_decide(&p, 0, &smp, 0) == HG_WATCH_LIMIT);
  /* Darwin's probe: footprint + available is the limit */
  memset(&smp, 0, sizeof smp);
  smp.footprint = 950;
  smp.have_available = 1;
  smp.available = 50;
  _hg_watch_fill_limit(&smp);
  CHECK(smp.limit == 1000 && smp.usage == 950);
}

static void test_device(void) {
  char dir[300];
  fresh_dir(dir, sizeof dir, "dev");
  struct hg_spool *s;
  REQUIRE(hg_spool_open(dir, NULL, &s) == 0);
  struct hg_device_info info = {HG_DEVICE_INFO_VERSION, "app", "1.2", "34", NULL, NULL, {0}};
  static struct _hg_device_kv d;
  hg_device_state(1, 55, 0);
  _hg_device_collect(&d, &info, s, 0, 1234, 5678, 2);
  const char *want[] = {"app.name", "app.version", "app.build", "device.os_version", "device.model",
                        "device.install_id", "device.session_id", "device.since_launch_ms", "device.state",
                        "device.battery_percent", "device.footprint", "device.limit", "spool.dropped"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int found = 0;
    for (int k = 0; k < d.n; k++) found |= !strcmp(d.kv[k].key, want[i]);
    if (!found) fprintf(stderr, "missing %s\n", want[i]);
    CHECK(found);
  }
  for (int k = 0; k < d.n; k++) {
    if (!strcmp(d.kv[k].key, "device.install_id")) CHECK(!strcmp(d.kv[k].value, hg_spool_install_id(s)));
    if (!strcmp(d.kv[k].key, "device.state")) CHECK(!strcmp(d.kv[k].value, "foreground"));
  }
  _hg_device_collect(&d, &info, s, HG_OMIT_DEVICE, 1234, 5678, 2);
  for (int k = 0; k < d.n; k++) {
    CHECK(strcmp(d.kv[k].key, "device.install_id") && strcmp(d.kv[k].key, "device.session_id"));
    CHECK(strcmp(d.kv[k].key, "device.model") && strcmp(d.kv[k].key, "device.os_version"));
  }
  hg_device_state(-1, -1, 0);
  hg_spool_close(s);
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/hg_spool_test.%ld", (long)getpid());
  mkdir(root, 0700);
  RUN(test_budget);
  RUN(test_crash_leftovers);
  RUN(test_state_hostile);
  RUN(test_policy);
  RUN(test_policy_restart);
  RUN(test_upload_state);
  RUN(test_parsers);
  RUN(test_device);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  return hg_test_done();
}
