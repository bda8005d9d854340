/*
 * memory.c — validated access to the captured process's memory: region
 * lookup over the sorted region table and checked word reads. Every read of
 * an address that did not come from our own scratch goes through here.
 *
 * Never calls malloc.
 */
#include <string.h>
#include <sys/mman.h>

#include "capture/internal.h"

int64_t _hg_region_find(const struct hg_cap *c, uint64_t addr) {
  const struct hg_cregion *r = (const struct hg_cregion *)c->regions.base;
  size_t lo = 0, hi = _hg_vec_len(&c->regions);
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (addr < r[mid].start) hi = mid;
    else if (addr >= r[mid].end) lo = mid + 1;
    else return (int64_t)mid;
  }
  return -1;
}

int _hg_readable(const struct hg_cap *c, uint64_t addr, uint64_t len) {
  if (len == 0) return 1;
  if (addr + len < addr) return 0;
  const struct hg_cregion *r = (const struct hg_cregion *)c->regions.base;
  int64_t i = _hg_region_find(c, addr);
  if (i < 0) return 0;
  size_t n = _hg_vec_len(&c->regions);
  for (size_t k = (size_t)i; k < n; k++) { /* may span adjacent regions */
    if (!(r[k].prot & HG_PROT_READ)) return 0;
    if (k > (size_t)i && r[k].start != r[k - 1].end) return 0;
    if (addr + len <= r[k].end) return 1;
  }
  return 0;
}

#define WINDOW_PAGES 16384u

int _hg_region_reservation(const struct hg_cregion *r) {
  return r->end - r->start >= HG_RESERVATION_MIN;
}

/* Index of the first page in vec[i, n) whose resident bit equals want;
 * eight pages per step while the bytes are uniform. */
static uint64_t find_page(const unsigned char *vec, uint64_t i, uint64_t n, int want) {
  const uint64_t ones = 0x0101010101010101ull;
  while (i < n && (i & 7)) {
    if ((vec[i] & 1) == want) return i;
    i++;
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, vec + i, 8);
    w &= ones;
    if (want ? w != 0 : w != ones) break;
  }
  while (i < n && (vec[i] & 1) != want) i++;
  return i;
}

int _hg_next_resident(uint64_t *lo, uint64_t hi, uint64_t *end) {
  unsigned char vec[WINDOW_PAGES];
  uint64_t a = *lo & ~(uint64_t)4095;
  while (a < hi) {
    uint64_t n = (hi - a + 4095) / 4096;
    if (n > WINDOW_PAGES) n = WINDOW_PAGES;
    if (mincore((void *)(uintptr_t)a, n * 4096, (void *)vec) != 0) return 0; /* char * on Darwin */
    uint64_t i = find_page(vec, 0, n, 1);
    if (i == n) {
      a += n * 4096;
      continue;
    }
    uint64_t j = find_page(vec, i, n, 0);
    *lo = a + i * 4096 > *lo ? a + i * 4096 : *lo;
    *end = a + j * 4096 < hi ? a + j * 4096 : hi;
    return 1;
  }
  return 0;
}

HG_NO_ASAN int _hg_read_word(const struct hg_cap *c, uint64_t addr, uint64_t *out) {
  if ((addr & 7) || !_hg_readable(c, addr, 8)) return -1;
  *out = *(const volatile uint64_t *)(uintptr_t)addr;
  return 0;
}
