/*
 * watch_linux.c — the watcher's probe on Linux: footprint = resident set
 * size from /proc/self/statm; pressure = PSI "some avg10" of
 * /proc/pressure/memory at or above the configured percentage (kernels
 * with CONFIG_PSI; without it only the footprint triggers), or a new
 * "high", "max" or "oom" event in the cgroup v2 memory.events. Limit: the
 * nearest of cgroup v2 memory.max and memory.high (usage memory.current),
 * cgroup v1 memory.limit_in_bytes (usage memory.usage_in_bytes) and
 * RLIMIT_AS (usage: the address space, statm's first field) — the one with
 * the highest usage / limit. Time is CLOCK_MONOTONIC.
 *
 * Runs on the watcher thread (malloc and stdio allowed, but not needed).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
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

int _hg_memory_events(const char *text, size_t n, uint64_t *sum) {
  uint64_t total = 0;
  int found = 0;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && text[e] != '\n') e++;
    static const char *const keys[] = {"high ", "max ", "oom "};
    for (int k = 0; k < 3; k++) {
      size_t kl = strlen(keys[k]);
      if (e - i > kl && !memcmp(text + i, keys[k], kl)) {
        uint64_t v = 0;
        for (size_t j = i + kl; j < e && text[j] >= '0' && text[j] <= '9' && v < UINT64_MAX / 16; j++)
          v = v * 10 + (uint64_t)(text[j] - '0');
        total += v;
        found = 1;
      }
    }
    i = e + 1;
  }
  *sum = total;
  return found ? 0 : -1;
}

int _hg_cgroup_path(const char *text, size_t n, char *path, size_t size, int *v2) {
  int got = -1;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && text[e] != '\n') e++;
    const char *line = text + i;
    size_t len = e - i, plen = 0;
    const char *p = NULL;
    int is2 = 0;
    if (len > 3 && !memcmp(line, "0::", 3)) {
      p = line + 3, plen = len - 3, is2 = 1;
    } else {
      const char *c1 = memchr(line, ':', len);
      const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line + len - c1 - 1)) : NULL;
      if (c2) { /* "N:controller,list:PATH" */
        for (const char *c = c1 + 1; c < c2;) {
          const char *ce = memchr(c, ',', (size_t)(c2 - c));
          if (!ce) ce = c2;
          if (ce - c == 6 && !memcmp(c, "memory", 6)) p = c2 + 1, plen = (size_t)(line + len - c2 - 1);
          c = ce + 1;
        }
      }
    }
    if (p && plen < size && p[0] == '/' && (is2 || got < 0)) {
      memcpy(path, p, plen);
      path[plen] = 0;
      *v2 = is2;
      got = 0;
    }
    i = e + 1;
  }
  return got;
}

struct linux_probe {
  uint32_t psi_centi;       /* threshold in hundredths of a percent, 0 = off */
  int events;               /* memory.events counts as pressure             */
  int have_events;
  uint64_t last_events;
  char v2[512], v1[512];    /* cgroup directories ("" = none)               */
};
static struct linux_probe LP;

static int is_file(const char *dir, const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, R_OK) == 0;
}

static int lp_open(void *ctx, const struct hg_watch_options *o) {
  struct linux_probe *p = ctx;
  p->psi_centi = o->psi_some_avg10 * 100u;
  p->events = o->version >= 2 ? (int)o->events : 1;
  p->have_events = 0;
  p->v2[0] = p->v1[0] = 0;
  char buf[2048], cg[400];
  int k = read_small("/proc/self/cgroup", buf, sizeof buf), v2;
  for (int want2 = 0; k > 0 && want2 < 2; want2++) {
    /* the v2 line first, then the v1 memory controller's line */
    char text[2048];
    size_t m = 0;
    for (int i = 0; i < k;) {
      int e = i;
      while (e < k && buf[e] != '\n') e++;
      int line2 = e - i > 3 && !memcmp(buf + i, "0::", 3);
      if (line2 == !want2 && m + (size_t)(e - i) + 1 < sizeof text) {
        memcpy(text + m, buf + i, (size_t)(e - i));
        m += (size_t)(e - i);
        text[m++] = '\n';
      }
      i = e + 1;
    }
    if (_hg_cgroup_path(text, m, cg, sizeof cg, &v2) != 0) continue;
    if (v2) {
      const char *roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
      for (int r = 0; r < 2 && !p->v2[0]; r++) {
        snprintf(p->v2, sizeof p->v2, "%s%s", roots[r], strcmp(cg, "/") ? cg : "");
        if (!is_file(p->v2, "memory.current")) p->v2[0] = 0;
      }
    } else {
      snprintf(p->v1, sizeof p->v1, "/sys/fs/cgroup/memory%s", strcmp(cg, "/") ? cg : "");
      if (!is_file(p->v1, "memory.limit_in_bytes")) p->v1[0] = 0;
    }
  }
  return 0;
}

/* A number from DIR/NAME ("max" and absurd values = none). */
static uint64_t read_u64(const char *dir, const char *name) {
  char p[700], b[64];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  if (read_small(p, b, sizeof b) <= 0 || b[0] < '0' || b[0] > '9') return 0;
  uint64_t v = strtoull(b, NULL, 10);
  return v >= (1ull << 60) ? 0 : v;
}

/* Keeps the (limit, usage) pair nearest to its limit. */
static void consider(struct hg_watch_sample *s, uint64_t limit, uint64_t usage) {
  if (!limit) return;
  /* usage/limit > s->usage/s->limit, compared without overflow */
  if (!s->limit || (double)usage / (double)limit > (double)s->usage / (double)s->limit) {
    s->limit = limit;
    s->usage = usage;
  }
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
  uint64_t pages, page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (k > 0 && _hg_statm_resident_pages(buf, (size_t)k, &pages) == 0) s->footprint = pages * page;
  struct rlimit rl;
  if (k > 0 && getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
  {
    uint64_t as = strtoull(buf, NULL, 10) * page;
    consider(s, (uint64_t)rl.rlim_cur, as);
    s->as_headroom = (uint64_t)rl.rlim_cur > as ? (uint64_t)rl.rlim_cur - as : 1;
  }
  if (p->v2[0]) {
    uint64_t cur = read_u64(p->v2, "memory.current");
    consider(s, read_u64(p->v2, "memory.max"), cur);
    consider(s, read_u64(p->v2, "memory.high"), cur);
    uint64_t ev;
    char p2[700];
    snprintf(p2, sizeof p2, "%s/memory.events", p->v2);
    if (p->events && (k = read_small(p2, buf, sizeof buf)) > 0 && _hg_memory_events(buf, (size_t)k, &ev) == 0) {
      if (p->have_events && ev > p->last_events) s->pressure = 1;
      p->have_events = 1;
      p->last_events = ev;
    }
  }
  if (p->v1[0]) consider(s, read_u64(p->v1, "memory.limit_in_bytes"), read_u64(p->v1, "memory.usage_in_bytes"));
  uint32_t centi;
  if (p->psi_centi && (k = read_small("/proc/pressure/memory", buf, sizeof buf)) > 0 &&
      _hg_psi_some_avg10(buf, (size_t)k, &centi) == 0 && centi >= p->psi_centi)
    s->pressure = 1;
  return 0;
}

static const struct hg_watch_probe probe = {lp_open, NULL, lp_now, lp_sample, &LP};

const struct hg_watch_probe *_hg_watch_plat_probe(void) { return &probe; }
