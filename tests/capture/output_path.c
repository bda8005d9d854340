/*
 * output_path.c — where a capture may write (issue 18, item 3): a FIFO,
 * directory or device node at the output path is refused (HG_ENOTREG) and
 * left as it was; a missing directory is HG_ENOENT; file names of 242–255
 * bytes work (the temporary name stays within NAME_MAX) and 256 is
 * HG_EINVAL; a symbolic link at the target is replaced; a fork-mode child
 * that overruns child_timeout_ms is HG_ECHILDTIME. Nothing is left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

static char dir[256];

static int cap(const char *path, uint32_t mode) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = mode;
  return hg_capture(path, &o);
}

static int entries(void) { /* files in dir, excluding . and .. */
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static void test_fifo_dir_device(void) {
  char p[512];
  snprintf(p, sizeof p, "%s/fifo", dir);
  REQUIRE(mkfifo(p, 0600) == 0);
  CHECK_EQ_U(cap(p, HG_MODE_SUSPEND), (uint64_t)(int64_t)HG_ENOTREG);
  struct stat st;
  CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
  unlink(p);
  snprintf(p, sizeof p, "%s/adir", dir);
  REQUIRE(mkdir(p, 0700) == 0);
  CHECK_EQ_U(cap(p, HG_MODE_FORK), (uint64_t)(int64_t)HG_ENOTREG);
  CHECK(lstat(p, &st) == 0 && S_ISDIR(st.st_mode));
  rmdir(p);
  if (geteuid() == 0) { /* a copy of /dev/null's node: what `-o /dev/null` as root would hit */
    snprintf(p, sizeof p, "%s/null", dir);
    if (mknod(p, S_IFCHR | 0600, makedev(1, 3)) == 0) {
      CHECK_EQ_U(cap(p, HG_MODE_SUSPEND), (uint64_t)(int64_t)HG_ENOTREG);
      CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode));
      unlink(p);
    }
  } else {
    fprintf(stderr, "output_path: not root, device node case skipped\n");
  }
  CHECK_EQ_U(entries(), 0);
}

static void test_missing_dir(void) {
  char p[512];
  snprintf(p, sizeof p, "%s/no/such/dir/x.hgsnap", dir);
  CHECK_EQ_U(cap(p, HG_MODE_SUSPEND), (uint64_t)(int64_t)HG_ENOENT);
  CHECK(strstr(hg_error_string(HG_ENOENT), "directory") != NULL);
}

static void test_long_names(void) {
  for (int len = 240; len <= 256; len++) {
    char name[300], p[600];
    memset(name, 'n', (size_t)len);
    memcpy(name + len - 7, ".hgsnap", 7);
    name[len] = 0;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int rc = cap(p, len % 2 ? HG_MODE_FORK : HG_MODE_SUSPEND);
    if (len <= 255) {
      if (rc) fprintf(stderr, "name of %d bytes: %s\n", len, hg_error_string(rc));
      CHECK_EQ_U(rc, 0);
      CHECK(access(p, F_OK) == 0);
      unlink(p);
    } else {
      CHECK_EQ_U(rc, (uint64_t)(int64_t)HG_EINVAL);
    }
  }
  CHECK_EQ_U(entries(), 0);
}

static void test_symlink_replaced(void) {
  char p[512], t[512];
  snprintf(p, sizeof p, "%s/link.hgsnap", dir);
  snprintf(t, sizeof t, "%s/elsewhere", dir);
  REQUIRE(symlink(t, p) == 0);
  CHECK_EQ_U(cap(p, HG_MODE_SUSPEND), 0);
  struct stat st;
  CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
  CHECK(access(t, F_OK) != 0); /* not followed */
  unlink(p);
}

static void test_child_timeout(void) {
  enum { N = 300000 };
  void **b = malloc(N * sizeof *b);
  for (int i = 0; i < N; i++) b[i] = malloc(32);
  char p[512];
  snprintf(p, sizeof p, "%s/slow.hgsnap", dir);
  struct hg_options o;
  hg_options_init(&o);
  o.mode = HG_MODE_FORK;
  o.child_timeout_ms = 1;
  int rc = hg_capture(p, &o);
  CHECK_EQ_U(rc, (uint64_t)(int64_t)HG_ECHILDTIME);
  CHECK(strstr(hg_error_string(rc), "child") != NULL);
  CHECK_EQ_U(entries(), 0);
  for (int i = 0; i < N; i++) free(b[i]);
  free(b);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/hg_output_path_%d", (int)getpid());
  if (mkdir(dir, 0700) != 0) return 1;
  RUN(test_fifo_dir_device);
  RUN(test_missing_dir);
  RUN(test_long_names);
  RUN(test_symlink_replaced);
  RUN(test_child_timeout);
  rmdir(dir);
  return hg_test_done();
}
