/*
 * test_format_write_errors.c — the streaming writer's rules and failure
 * behaviour: every ordering/argument rule returns HG_EINVAL or HG_ELIMIT,
 * errors are sticky, and a failed snapshot leaves NO file at the target path
 * and no temporary next to it (an existing file there is untouched); files
 * are created 0600 and replaced atomically; a file-size limit (RLIMIT_FSIZE)
 * is HG_ENOSPC without SIGXFSZ killing the process; an unwritable or missing
 * directory is a clear error naming the path.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_format_util.h"

static char dir[600];

/* A fresh directory per case, so "nothing left behind" is exact. */
static void new_dir(const char *name) {
  snprintf(dir, sizeof dir, "%s/%s", fmt_tmpdir(), name);
  mkdir(dir, 0700);
}

static void dir_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

static void rm_dir(void) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[1200];
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      if (rmdir(p) != 0) unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* A writer with one thread, one image, one class, one heap, one string and
 * two nodes (0x1000+0x20, 0x2000+0x20), ready for more. */
static struct hg_writer *base_writer(const char *path) {
  struct hg_writer *w = NULL;
  if (hg_writer_open(&w, path) != 0) {
    hg_writer_close(w);
    return NULL;
  }
  struct hg_thread t = {1, "main", 0x100, 0x200};
  struct hg_image im = {"/lib/x.so", NULL, 0, 0x7000, 0, 0x1000};
  struct hg_class c = {"C", HG_CLASS_OTHER, 0};
  uint32_t id;
  int rc = hg_writer_thread(w, &t);
  rc = rc ? rc : hg_writer_image(w, &im);
  rc = rc ? rc : hg_writer_class(w, &c, &id);
  rc = rc ? rc : hg_writer_heap(w, "h", &id);
  rc = rc ? rc : hg_writer_string(w, "f", &id);
  rc = rc ? rc : hg_writer_node(w, 0x1000, 0x20, 1, HG_NODE_MALLOC, 1);
  rc = rc ? rc : hg_writer_node(w, 0x2000, 0x20, 0, HG_NODE_MALLOC, 0);
  if (rc) {
    hg_writer_close(w);
    return NULL;
  }
  return w;
}

enum { AT_CALL, AT_FINISH };

struct rule_case {
  const char *name;
  int code;
  int when;             /* the bad call fails, or finish does */
  const char *needle;   /* in hg_writer_message */
};

static int apply(struct hg_writer *w, int i) {
  struct hg_root rt = {HG_ROOT_STACK, 0, 0x150, 0};
  struct hg_region rg = {0x1000, 0x1000, HG_PROT_READ, 0, NULL, 0, 0, 0, HG_NO_OWNER};
  struct hg_class cl = {"K", 9, 0};
  struct hg_thread th = {2, NULL, 0x300, 0x200};
  switch (i) {
    case 0: return hg_writer_node(w, 0x1800, 0x10, 0, 0, 0);          /* decreasing */
    case 1: return hg_writer_node(w, 0x2010, 0x10, 0, 0, 0);          /* overlapping */
    case 2: return hg_writer_node(w, 0x3000, 0, 0, 0, 0);             /* empty */
    case 3: return hg_writer_node(w, UINT64_MAX - 8, 0x10, 0, 0, 0);  /* wrapping */
    case 4: return hg_writer_node(w, 0x3000, 0x10, 0, 0x10, 0);       /* unknown flag */
    case 5: hg_writer_edge(w, 1, 8, 0, HG_EDGE_CONSERVATIVE, 0);
            return hg_writer_edge(w, 0, 8, 0, HG_EDGE_CONSERVATIVE, 0); /* source goes back */
    case 6: hg_writer_edge(w, 1, 8, 0, HG_EDGE_CONSERVATIVE, 0);
            return hg_writer_edge(w, 1, 8, 1, HG_EDGE_CONSERVATIVE, 0); /* same offset */
    case 7: return hg_writer_edge(w, 0, 0, 1, HG_EDGE_KIND_COUNT, 0);   /* bad kind */
    case 8: return hg_writer_edge(w, 0, 0, 1, HG_EDGE_CONSERVATIVE, 1); /* field on conservative */
    case 9: return hg_writer_edge(w, 0, 0, 1, HG_EDGE_INTERIOR, 1);     /* field on interior */
    case 10: return hg_writer_edge(w, 0, 0x100000000ull, 1, HG_EDGE_STRONG, 0); /* > 4 GiB */
    case 11: return hg_writer_edge(w, 0, 0, 2, HG_EDGE_STRONG, 0);      /* dangling target */
    case 12: return hg_writer_edge(w, 5, 0, 1, HG_EDGE_STRONG, 0);      /* dangling source */
    case 13: return hg_writer_edge(w, 0, 0, 1, HG_EDGE_STRONG, 2);      /* dangling string */
    case 14: return hg_writer_node(w, 0x3000, 0x10, 2, 0, 0);           /* dangling class */
    case 15: return hg_writer_node(w, 0x3000, 0x10, 0, 0, 2);           /* dangling heap */
    case 16: rt.target = 2; return hg_writer_root(w, &rt);               /* dangling root */
    case 17: rt.owner = 1; return hg_writer_root(w, &rt);                /* no thread 1 */
    case 18: rt.kind = HG_ROOT_GLOBAL; rt.owner = 1; return hg_writer_root(w, &rt); /* no image 1 */
    case 19: rg.image = 1; return hg_writer_region(w, &rg);              /* no image 1 */
    case 20: rt.kind = HG_ROOT_KIND_COUNT; return hg_writer_root(w, &rt); /* bad root kind */
    case 21: return hg_writer_class(w, &cl, NULL);                       /* bad class kind */
    case 22: return hg_writer_thread(w, &th);                            /* reversed stack */
    case 23: rg.start = UINT64_MAX - 4; return hg_writer_region(w, &rg); /* wrapping region */
    case 24: return hg_writer_string(w, NULL, NULL);
    case 25: return hg_writer_heap(w, NULL, NULL);
    case 26: return hg_writer_meta(w, NULL);
    case 27: return hg_writer_edge(w, 0, 0, UINT32_MAX, HG_EDGE_STRONG, 0);
    case 28: { struct hg_kv kv = {"k", NULL}; struct hg_meta m = {.app_count = 1, .app = &kv};
               return hg_writer_meta(w, &m); }
    case 29: { struct hg_image im = {NULL, NULL, 0, 0, 0, 0}; return hg_writer_image(w, &im); }
  }
  return 0;
}

static const struct rule_case rule_cases[] = {
    {"decreasing node", HG_EINVAL, AT_CALL, "increase and not overlap"},
    {"overlapping node", HG_EINVAL, AT_CALL, "increase and not overlap"},
    {"empty node", HG_EINVAL, AT_CALL, "empty or wrapping"},
    {"wrapping node", HG_EINVAL, AT_CALL, "empty or wrapping"},
    {"unknown node flag", HG_EINVAL, AT_CALL, "unknown flags"},
    {"edge source goes back", HG_EINVAL, AT_CALL, "sorted by source"},
    {"edge offset repeats", HG_EINVAL, AT_CALL, "sorted by source"},
    {"bad edge kind", HG_EINVAL, AT_CALL, "unknown kind"},
    {"field on conservative edge", HG_EINVAL, AT_CALL, "field names need"},
    {"field on interior edge", HG_EINVAL, AT_CALL, "field names need"},
    {"offset beyond 4 GiB", HG_ELIMIT, AT_CALL, "beyond 4 GiB"},
    {"dangling edge target", HG_EINVAL, AT_FINISH, "refers to node 2 but only 2 nodes"},
    {"dangling edge source", HG_EINVAL, AT_FINISH, "refers to node 5 but only 2 nodes"},
    {"dangling string", HG_EINVAL, AT_FINISH, "undefined string"},
    {"dangling class", HG_EINVAL, AT_FINISH, "undefined class"},
    {"dangling heap", HG_EINVAL, AT_FINISH, "undefined heap"},
    {"dangling root target", HG_EINVAL, AT_FINISH, "refers to node 2"},
    {"dangling thread owner", HG_EINVAL, AT_FINISH, "undefined thread"},
    {"dangling image owner", HG_EINVAL, AT_FINISH, "undefined image"},
    {"dangling region image", HG_EINVAL, AT_FINISH, "undefined image"},
    {"bad root kind", HG_EINVAL, AT_CALL, "root"},
    {"bad class kind", HG_EINVAL, AT_CALL, "class"},
    {"reversed thread stack", HG_EINVAL, AT_CALL, "stack range"},
    {"wrapping region", HG_EINVAL, AT_CALL, "bad range"},
    {"NULL string", HG_EINVAL, AT_CALL, "NULL"},
    {"NULL heap", HG_EINVAL, AT_CALL, "NULL"},
    {"NULL meta", HG_EINVAL, AT_CALL, "NULL"},
    {"edge to node UINT32_MAX", HG_EINVAL, AT_CALL, "bad node index"},
    {"NULL app value", HG_EINVAL, AT_CALL, "NULL app"},
    {"NULL image path", HG_EINVAL, AT_CALL, "image"},
};

static void test_rules(void) {
  for (int i = 0; i < (int)(sizeof rule_cases / sizeof rule_cases[0]); i++) {
    const struct rule_case *rc = &rule_cases[i];
    char name[32], path[700];
    snprintf(name, sizeof name, "rule%d", i);
    new_dir(name);
    dir_path(path, sizeof path, "out.hgsnap");
    struct hg_writer *w = base_writer(path);
    REQUIRE(w);
    int r = apply(w, i);
    int f = hg_writer_finish(w);
    int ok = 1;
    if (rc->when == AT_CALL && r != rc->code) ok = 0;
    if (rc->when == AT_FINISH && r != 0) ok = 0;
    if (f != rc->code) ok = 0;
    if (!strstr(hg_writer_message(w), rc->needle)) ok = 0;
    /* sticky: later calls return the first error */
    if (hg_writer_node(w, 0x900000, 8, 0, 0, 0) != rc->code) ok = 0;
    if (fmt_exists(path) || fmt_dir_entries(dir) != 0) ok = 0;
    if (!ok)
      fprintf(stderr, "rule \"%s\": call %d, finish %d (want %d), message \"%s\", entries %d\n", rc->name, r,
              f, rc->code, hg_writer_message(w), fmt_dir_entries(dir));
    CHECK(ok);
    hg_writer_close(w);
    CHECK_EQ_U(fmt_dir_entries(dir), 0);
    rm_dir();
  }
}

static void test_open_args(void) {
  struct hg_writer *w = (struct hg_writer *)1;
  CHECK(hg_writer_open(&w, NULL) == HG_EINVAL);
  CHECK(w == NULL);
  CHECK(hg_writer_open(&w, "") == HG_EINVAL);
  CHECK(hg_writer_open(NULL, "x") == HG_EINVAL);
  char longp[5000];
  memset(longp, 'a', sizeof longp - 1);
  longp[sizeof longp - 1] = 0;
  CHECK(hg_writer_open(&w, longp) == HG_EINVAL);
  CHECK(hg_writer_finish(NULL) == HG_EINVAL);
  CHECK(hg_writer_node(NULL, 0, 1, 0, 0, 0) == HG_EINVAL);
  hg_writer_close(NULL);
  CHECK(strcmp(hg_writer_message(NULL), "no writer") == 0);
}

/* Close without finish: nothing is left. Finish twice: the second fails and
 * the file stays. */
static void test_close_and_refinish(void) {
  char path[700];
  new_dir("close");
  dir_path(path, sizeof path, "out.hgsnap");
  struct hg_writer *w = base_writer(path);
  REQUIRE(w);
  CHECK(fmt_dir_entries(dir) == 1); /* the temporary */
  CHECK_EQ_U(fmt_tmp_entries(dir), 1);
  hg_writer_close(w);
  CHECK_EQ_U(fmt_dir_entries(dir), 0);
  w = base_writer(path);
  REQUIRE(w);
  CHECK(strcmp(hg_writer_message(w), "ok") == 0);
  REQUIRE(hg_writer_finish(w) == 0);
  CHECK(hg_writer_finish(w) == HG_EINVAL);
  CHECK(hg_writer_node(w, 0x900000, 8, 0, 0, 0) == HG_EINVAL);
  CHECK(strstr(hg_writer_message(w), "already finished") != NULL);
  hg_writer_close(w);
  CHECK_EQ_U(fmt_dir_entries(dir), 1);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  CHECK(g && g->node_count == 2);
  hg_graph_free(g);
  fmt_save(path, "writer-base.hgsnap");
  rm_dir();
}

/* Atomic replace: a failed write leaves the old file byte for byte; a good
 * one replaces it (mode 0600). */
static void test_atomic(void) {
  char path[700];
  new_dir("atomic");
  dir_path(path, sizeof path, "snap.hgsnap");
  const char old[] = "previous snapshot contents";
  REQUIRE(fmt_write(path, old, sizeof old) == 0);
  chmod(path, 0644);
  for (int i = 0; i < (int)(sizeof rule_cases / sizeof rule_cases[0]); i += 5) {
    struct hg_writer *w = base_writer(path);
    REQUIRE(w);
    apply(w, i);
    CHECK(hg_writer_finish(w) != 0);
    hg_writer_close(w);
    size_t n = 0;
    uint8_t *d = fmt_read(path, &n);
    CHECK(d && n == sizeof old && memcmp(d, old, n) == 0);
    free(d);
    CHECK_EQ_U(fmt_dir_entries(dir), 1);
  }
  struct hg_writer *w = base_writer(path);
  REQUIRE(w);
  REQUIRE(hg_writer_finish(w) == 0);
  uint64_t bytes = hg_writer_bytes(w);
  hg_writer_close(w);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK_EQ_U(st.st_mode & 0777, 0600);
  CHECK_EQ_U((uint64_t)st.st_size, bytes);
  CHECK_EQ_U(fmt_dir_entries(dir), 1);
  rm_dir();
}

/* RLIMIT_FSIZE: HG_ENOSPC, the process survives SIGXFSZ, nothing is left. */
static void test_fsize_limit(void) {
  char path[700];
  new_dir("fsize");
  dir_path(path, sizeof path, "big.hgsnap");
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit rl = {64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
    struct hg_writer *w = NULL;
    if (hg_writer_open(&w, path) != 0) _exit(11);
    int rc = 0;
    for (uint32_t i = 0; i < 400000 && !rc; i++) rc = hg_writer_node(w, 0x1000 + 64ull * i, 48, 0, 1, 0);
    if (!rc) rc = hg_writer_finish(w);
    int ok = rc == HG_ENOSPC && strstr(hg_writer_message(w), "big.hgsnap") &&
             strstr(hg_writer_message(w), "File too large");
    if (!ok) fprintf(stderr, "fsize: rc %d, \"%s\"\n", rc, hg_writer_message(w));
    hg_writer_close(w);
    _exit(ok ? 0 : 12);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) fprintf(stderr, "fsize child killed by signal %d\n", WTERMSIG(st));
  CHECK(WIFEXITED(st));
  CHECK_EQ_U(WIFEXITED(st) ? WEXITSTATUS(st) : 99, 0);
  CHECK(!fmt_exists(path));
  CHECK_EQ_U(fmt_dir_entries(dir), 0);
  rm_dir();
}

static void check_open_fails(const char *path, const char *want_in_msg, int line) {
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  int ok = rc == HG_EIO || rc == HG_EPERM || rc == HG_ENOENT;
  const char *msg = hg_writer_message(w);
  if (!strstr(msg, want_in_msg)) ok = 0;
  if (!ok) fprintf(stderr, "line %d: open(%s): %d \"%s\"\n", line, path, rc, msg);
  CHECK(ok);
  /* every later call keeps failing; finish does not create anything */
  CHECK(hg_writer_node(w, 0x1000, 8, 0, 0, 0) == rc);
  CHECK(hg_writer_finish(w) == rc);
  hg_writer_close(w);
  CHECK(!fmt_exists(path));
}

static void test_unwritable(void) {
  check_open_fails("/nonexistent-heapgraph-dir/x.hgsnap", "/nonexistent-heapgraph-dir/", __LINE__);
  {
    struct hg_writer *w = NULL; /* a missing directory has its own code */
    CHECK(hg_writer_open(&w, "/nonexistent-heapgraph-dir/x.hgsnap") == HG_ENOENT);
    CHECK(strstr(hg_writer_message(w), "no such directory") != NULL);
    hg_writer_close(w);
  }
  check_open_fails("/proc/heapgraph-test.hgsnap", "heapgraph-test.hgsnap", __LINE__);
  check_open_fails("/proc/self/heapgraph-test.hgsnap", "/proc/self/", __LINE__);
  check_open_fails("/sys/heapgraph-test.hgsnap", "/sys/", __LINE__); /* read-only for root too */
  if (geteuid() != 0) {
    new_dir("ro");
    chmod(dir, 0500);
    char path[700];
    dir_path(path, sizeof path, "x.hgsnap");
    struct hg_writer *w = NULL;
    CHECK(hg_writer_open(&w, path) == HG_EPERM);
    CHECK(strstr(hg_writer_message(w), "Permission denied") != NULL);
    hg_writer_close(w);
    chmod(dir, 0700);
    rm_dir();
  }
  /* the target is a directory: refused at open (never replaced), no temporary */
  new_dir("isdir");
  char path[700];
  dir_path(path, sizeof path, "sub");
  REQUIRE(mkdir(path, 0700) == 0);
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, path);
  CHECK(rc == HG_ENOTREG);
  CHECK(strstr(hg_writer_message(w), "not a regular file") != NULL);
  CHECK(hg_writer_finish(w) == HG_ENOTREG);
  hg_writer_close(w);
  CHECK_EQ_U(fmt_dir_entries(dir), 1);
  CHECK_EQ_U(fmt_tmp_entries(dir), 0);
  rm_dir();
}

int main(void) {
  RUN(test_open_args);
  RUN(test_rules);
  RUN(test_close_and_refinish);
  RUN(test_atomic);
  RUN(test_fsize_limit);
  RUN(test_unwritable);
  fmt_cleanup();
  return hg_test_done();
}
