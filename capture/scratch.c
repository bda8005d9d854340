/*
 * scratch.c — capture scratch memory: growable arrays in their own mmap
 * reservations, a hard budget on the pages actually touched, and the peak
 * (reported as scratch_peak_bytes). Also the no-malloc sort and string pool.
 *
 * Never calls malloc: every function here runs while the heap is frozen or
 * in a forked child. Reservations are MAP_NORESERVE and marked
 * MADV_DONTDUMP, which also keeps the kernel from merging them with the
 * application's anonymous mappings. Under a finite RLIMIT_AS (`ulimit -v`)
 * each reservation is at most 1/HG_SCRATCH_MAX_VECS of the address space
 * left when the capture started, so that all of them together fit in it
 * (a vector never moves: callers keep pointers into it).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "capture/internal.h"

#define PAGE 4096u

static size_t page_up(size_t n) { return (n + PAGE - 1) & ~(size_t)(PAGE - 1); }

uint64_t _hg_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bytes of address space this process may still map under RLIMIT_AS, or
 * UINT64_MAX when it is unlimited. The mapped size comes from
 * /proc/self/statm (Linux); without it, half the limit is taken as left. */
static uint64_t as_room(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  uint64_t lim = (uint64_t)rl.rlim_cur, used = lim / 2;
  char buf[64];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      uint64_t pages = 0;
      for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        pages = pages * 10 + (uint64_t)(buf[i] - '0');
      used = pages * PAGE;
    }
  }
  return used < lim ? lim - used : 0;
}

void _hg_scratch_init(struct hg_scratch *s, uint64_t limit) {
  memset(s, 0, sizeof *s);
  s->limit = limit;
  uint64_t room = as_room();
  s->max_reserve = room == UINT64_MAX ? UINT64_MAX : room / HG_SCRATCH_MAX_VECS;
}

int _hg_vec_init(struct hg_scratch *s, struct hg_vec *v, size_t elem, size_t max_elems) {
  memset(v, 0, sizeof *v);
  if (elem == 0 || max_elems == 0 || s->nvec >= HG_SCRATCH_MAX_VECS) return HG_EINTERNAL;
  size_t cap = elem * max_elems;
  if (cap / elem != max_elems) return HG_ENOMEM;
  if (cap > s->limit) cap = (size_t)s->limit;
  if (cap > s->max_reserve) cap = (size_t)s->max_reserve;
  cap = page_up(cap < elem ? elem : cap);
  void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return HG_ENOMEM;
#ifdef MADV_DONTDUMP
  madvise(m, cap, MADV_DONTDUMP);
#endif
  v->base = m;
  v->cap = cap;
  v->elem = elem;
  v->owner = s;
  s->vecs[s->nvec++] = v;
  return 0;
}

void *_hg_vec_push(struct hg_vec *v, size_t n) {
  if (!v->base) return NULL;
  size_t bytes = n * v->elem;
  if (n && bytes / n != v->elem) return NULL;
  if (bytes > v->cap - v->used) return NULL;
  size_t need = page_up(v->used + bytes);
  if (need > v->touched) {
    struct hg_scratch *s = v->owner;
    uint64_t grow = need - v->touched;
    /* The budget is shared by both scan threads (a classifier's identify()
     * on the helper may push while the capturing thread's class_of() does):
     * taken and given back atomically, the peak raised by compare-and-swap.
     * A vector itself is pushed by one thread at a time. */
    uint64_t t = __atomic_add_fetch(&s->touched, grow, __ATOMIC_RELAXED);
    if (t > s->limit) {
      __atomic_sub_fetch(&s->touched, grow, __ATOMIC_RELAXED);
      return NULL;
    }
    uint64_t pk = __atomic_load_n(&s->peak, __ATOMIC_RELAXED);
    while (t > pk && !__atomic_compare_exchange_n(&s->peak, &pk, t, 1, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
    }
    v->touched = need;
  }
  void *p = v->base + v->used;
  v->used += bytes;
  return p; /* fresh mmap pages are zero; truncated space is re-zeroed */
}

void _hg_vec_truncate(struct hg_vec *v, size_t n) {
  size_t bytes = n * v->elem;
  if (bytes >= v->used) return;
  memset(v->base + bytes, 0, v->used - bytes);
  v->used = bytes;
}

void _hg_scratch_free(struct hg_scratch *s) {
  for (uint32_t i = 0; i < s->nvec; i++) {
    struct hg_vec *v = s->vecs[i];
    if (v->base) munmap(v->base, v->cap);
    v->base = NULL;
    v->cap = v->used = 0;
  }
  s->nvec = 0;
  s->touched = 0;
}

int _hg_scratch_owns(const struct hg_scratch *s, uint64_t lo, uint64_t hi) {
  for (uint32_t i = 0; i < s->nvec; i++) {
    const struct hg_vec *v = s->vecs[i];
    uint64_t b = (uint64_t)(uintptr_t)v->base;
    if (v->base && lo < b + v->cap && hi > b) return 1;
  }
  return 0;
}

uint32_t _hg_str_add(struct hg_vec *strings, const char *s, size_t n) {
  if (strings->used == 0 && !_hg_vec_push(strings, 1)) return 0; /* offset 0 = "" */
  if (!s) return 0;
  size_t off = strings->used;
  if (off > UINT32_MAX - n - 1) return 0;
  char *p = _hg_vec_push(strings, n + 1);
  if (!p) return 0;
  memcpy(p, s, n);
  p[n] = 0;
  return (uint32_t)off;
}

/* ---- heap sort on records whose first 8 bytes are the key ---- */

static uint64_t key_at(const uint8_t *b, size_t i, size_t size) {
  uint64_t k;
  memcpy(&k, b + i * size, sizeof k);
  return k;
}

static void swap_rec(uint8_t *b, size_t i, size_t j, size_t size) {
  uint8_t tmp[64];
  uint8_t *x = b + i * size, *y = b + j * size;
  while (size) {
    size_t k = size < sizeof tmp ? size : sizeof tmp;
    memcpy(tmp, x, k);
    memcpy(x, y, k);
    memcpy(y, tmp, k);
    x += k;
    y += k;
    size -= k;
  }
}

static void sift(uint8_t *b, size_t root, size_t n, size_t size) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && key_at(b, child + 1, size) > key_at(b, child, size)) child++;
    if (key_at(b, root, size) >= key_at(b, child, size)) return;
    swap_rec(b, root, child, size);
    root = child;
  }
}

void _hg_sort_u64key(void *base, size_t n, size_t size) {
  uint8_t *b = base;
  if (n < 2) return;
  for (size_t i = n / 2; i-- > 0;) sift(b, i, n, size);
  for (size_t end = n - 1; end > 0; end--) {
    swap_rec(b, 0, end, size);
    sift(b, 0, end, size);
  }
}
