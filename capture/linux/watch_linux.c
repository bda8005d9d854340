/*
 * watch_linux.c — the watcher's probe on Linux: footprint = resident set
 * size from /proc/self/statm; pressure = PSI "some avg10" of
 * /proc/pressure/memory at or above the configured percentage (kernels
 * with CONFIG_PSI; without it only the footprint triggers). Time is
 * CLOCK_MONOTONIC.
 *
 * Runs on the watcher thread (malloc and stdio allowed, but not needed).
 */
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/platform.h"
#include "capture/watch.h"

int _hg_statm_resident_pages(const char *text, size_t n, uint64_t *pages) {
  size_t i = 0;
  while (i < n && text[i] >= '0' && text[i] <= '9') i++; /* size */
  if (i == 0 || i >= n || text[i] != ' ') return -1;
  i++;
  uint64_t v = 0;
  size_t start = i;
  while (i < n && text[i] >= '0' && text[i] <= '9' && v < (UINT64_MAX - 9) / 10)
    v = v * 10 + (uint64_t)(text[i++] - '0');
  if (i == start) return -1;
  *pages = v;
  return 0;
}

int _hg_psi_some_avg10(const char *text, size_t n, uint32_t *centi) {
  static const char key[] = "some avg10=";
  size_t k = sizeof key - 1;
  for (size_t i = 0; i + k <= n; i++) {
    if ((i > 0 && text[i - 1] != '\n') || memcmp(text + i, key, k)) continue;
    size_t j = i + k;
    uint32_t whole = 0, frac = 0, digits = 0;
    if (j >= n || text[j] < '0' || text[j] > '9') return -1;
    while (j < n && text[j] >= '0' && text[j] <= '9' && whole < 100000) whole = whole * 10 + (uint32_t)(text[j++] - '0');
    if (j < n && text[j] == '.') {
      j++;
      while (j < n && text[j] >= '0' && text[j] <= '9') {
        if (digits < 2) frac = frac * 10 + (uint32_t)(text[j] - '0');
        digits++;
        j++;
      }
    }
    if (digits == 1) frac *= 10;
    *centi = whole * 100 + frac;
    return 0;
  }
  return -1;
}

static int read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t k = read(fd, buf, size - 1);
  close(fd);
  if (k <= 0) return -1;
  buf[k] = 0;
  return (int)k;
}

struct linux_probe {
  uint32_t psi_centi;       /* threshold in hundredths of a percent, 0 = off */
};
static struct linux_probe LP;

static int lp_open(void *ctx, const struct hg_watch_options *o) {
  struct linux_probe *p = ctx;
  p->psi_centi = o->psi_some_avg10 * 100u;
  return 0;
}

static uint64_t lp_now(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int lp_sample(void *ctx, struct hg_watch_sample *s) {
  struct linux_probe *p = ctx;
  char buf[512];
  int k = read_small("/proc/self/statm", buf, sizeof buf);
  uint64_t pages;
  if (k > 0 && _hg_statm_resident_pages(buf, (size_t)k, &pages) == 0)
    s->footprint = pages * (uint64_t)sysconf(_SC_PAGESIZE);
  uint32_t centi;
  if (p->psi_centi && (k = read_small("/proc/pressure/memory", buf, sizeof buf)) > 0 &&
      _hg_psi_some_avg10(buf, (size_t)k, &centi) == 0 && centi >= p->psi_centi)
    s->pressure = 1;
  return 0;
}

static const struct hg_watch_probe probe = {lp_open, NULL, lp_now, lp_sample, &LP};

const struct hg_watch_probe *_hg_watch_plat_probe(void) { return &probe; }
