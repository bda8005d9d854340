/*
 * prefault.c — fork mode: the helper thread (helper.c) touches one word of
 * every page of the heap areas, ahead of the chunk walk.
 *
 * Why: fork gives the child copies of the page tables with every entry
 * marked not-accessed, so the child's first access to each page costs a
 * page-table update on top of the miss (measured here: a first pass over a
 * 230 MB buffer takes 80-110 ms in the child against 45-50 ms in the
 * parent). The helper pays that on another core while the walk runs; it
 * advances about twice as fast as the walk, so it stays ahead. Only ranges
 * that _hg_readable() (a pure lookup in the region table) accepts are read.
 *
 * Then, when asked, it reads /proc/self/smaps (raw system calls: no libc)
 * into a buffer from capture scratch: the kernel's per-region figures cost
 * ~12 ms for a 300 MB heap (every page table walked), which then overlap
 * the walk instead of preceding it (maps.c parses them after the walk).
 * Never calls malloc.
 */
#include <fcntl.h>
#include <sys/syscall.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

#define PAGE 4096u

static struct {
  const struct hg_cap *c;
  const uint64_t *ranges; /* lo, hi pairs, `stride` words apart           */
  size_t n, stride;
  volatile uint32_t stop;
  uint64_t pages;
  volatile uint64_t sink;
  int running;
  char *smaps;            /* _hg_prefault_want_smaps: where, how much room  */
  size_t smaps_cap;
  long smaps_len;         /* bytes read, -1: none (not asked, failed, full)  */
} pf; /* one capture at a time (capture lock) */

/* /proc/self/smaps into pf.smaps, whole or not at all. */
HG_NO_ASAN static void read_smaps(void) {
  pf.smaps_len = -1;
  long fd = _hg_linux_syscall4(SYS_openat, AT_FDCWD, (long)(uintptr_t)"/proc/self/smaps", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  size_t have = 0;
  for (;;) {
    if (have == pf.smaps_cap) break; /* no room for the rest */
    long k = _hg_linux_syscall4(SYS_read, fd, (long)(uintptr_t)(pf.smaps + have), (long)(pf.smaps_cap - have), 0);
    if (k < 0) break;
    if (k == 0) {
      pf.smaps_len = (long)have;
      break;
    }
    have += (size_t)k;
  }
  _hg_linux_syscall4(SYS_close, fd, 0, 0, 0);
}

HG_NO_ASAN static void toucher(void *arg) {
  (void)arg;
  uint64_t sum = 0, pages = 0;
  for (size_t i = 0; i < pf.n && !pf.stop; i++) {
    uint64_t lo = pf.ranges[i * pf.stride], hi = pf.ranges[i * pf.stride + 1];
    if (hi <= lo || !_hg_readable(pf.c, lo, hi - lo)) continue;
    for (uint64_t a = (lo + PAGE - 1) & ~(uint64_t)(PAGE - 1); a < hi && !pf.stop; a += PAGE) {
      sum += *(const volatile uint64_t *)(uintptr_t)a;
      pages++;
    }
  }
  pf.sink = sum;
  pf.pages = pages;
  if (pf.smaps) read_smaps(); /* even when stopped early: the walk needs it next */
}

void _hg_prefault_want_smaps(char *buf, size_t cap) {
  pf.smaps = buf;
  pf.smaps_cap = cap;
  pf.smaps_len = -1;
}

long _hg_prefault_smaps(void) {
  long n = pf.smaps_len;
  pf.smaps = NULL;
  pf.smaps_len = -1;
  return n;
}

void _hg_prefault_start(struct hg_cap *c, const uint64_t *ranges, size_t n, size_t stride) {
  pf.running = 0;
  if (c->mode != HG_MODE_FORK || !c->shared || n == 0) return;
  pf.c = c;
  pf.ranges = ranges;
  pf.n = n;
  pf.stride = stride;
  pf.stop = 0;
  pf.pages = 0;
  pf.running = _hg_plat_helper_start(c, toucher, NULL) == 0;
}

uint64_t _hg_prefault_stop(struct hg_cap *c) {
  if (!pf.running) return 0;
  pf.stop = 1;
  _hg_plat_helper_join(c);
  pf.running = 0;
  return pf.pages;
}
