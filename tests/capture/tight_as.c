/*
 * tight_as.c — captures under a tight address-space limit (RLIMIT_AS, what
 * `ulimit -v` sets): 200,000 linked blocks, then the limit is set to the
 * process's mapped size plus 256 MiB and every capture mode must succeed
 * with every block as a node and every link as an edge. Before issue 33
 * each scratch array reserved up to 2 GiB of address space (the scratch
 * budget), so the first reservation failed and the capture returned
 * HG_ENOMEM.
 *
 *   tight_as [DIR]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

#define N 200000
#define HEADROOM (256ull << 20)

void **volatile blocks; /* exported: a root the capture must see */
static char dir[256] = "/tmp";

static uint64_t mapped_bytes(void) {
  char buf[64] = {0};
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 ? strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void capture_mode(enum hg_capture_mode mode, uint32_t helpers, const char *name) {
  char path[400];
  snprintf(path, sizeof path, "%s/tight_as_%d.hgsnap", dir, (int)getpid());
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.mode = mode;
  o.helpers = helpers;
  o.stats = &st;
  int rc = hg_capture(path, &o);
  if (rc) fprintf(stderr, "%s: %s\n", name, hg_error_string(rc));
  CHECK(rc == 0);
  if (!rc) {
    printf("%s: nodes=%llu edges=%llu scratch_peak=%llu\n", name, (unsigned long long)st.nodes,
           (unsigned long long)st.edges, (unsigned long long)st.scratch_peak_bytes);
    CHECK(st.nodes >= N);
    CHECK(st.edges >= N - 1); /* each block but the first points at the one before */
  }
  unlink(path);
}

static void test_fork(void) { capture_mode(HG_MODE_FORK, 1, "fork"); }
static void test_fork_alone(void) { capture_mode(HG_MODE_FORK, 0, "fork, no helper"); }
static void test_suspend(void) { capture_mode(HG_MODE_SUSPEND, 1, "suspend"); }

int main(int argc, char **argv) {
  if (argc > 1) snprintf(dir, sizeof dir, "%s", argv[1]);
  blocks = calloc(N, sizeof *blocks);
  for (size_t i = 0; i < N; i++) {
    void **b = calloc(1, 16 + (i % 13) * 16);
    if (!b || !blocks) abort();
    b[0] = i ? blocks[i - 1] : NULL;
    blocks[i] = b;
  }
  uint64_t lim = mapped_bytes() + HEADROOM;
  struct rlimit rl = {lim, lim};
  if (!HG_TEST_ASAN && setrlimit(RLIMIT_AS, &rl) != 0) {
    perror("setrlimit");
    return 1;
  }
  printf("RLIMIT_AS %llu MiB (mapped + 256 MiB)\n", (unsigned long long)(lim >> 20));
  RUN(test_fork);
  RUN(test_fork_alone);
  RUN(test_suspend);
  return hg_test_done();
}
