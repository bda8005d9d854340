/*
 * typeset.c — the bounded set of known type_info objects: an open-addressing
 * hash table keyed by address, a pool of their mangled names, and the two
 * range lists (image memory, read-only data). All memory comes from mmap
 * (reserved up front, touched as it grows), never from malloc, so the set
 * can be built next to a heap that is about to be frozen and read while it
 * is. Adding happens before the freeze only; lookups never allocate.
 */
#include <string.h>
#include <sys/mman.h>

#include "cxxabi/cxxabi.h"
#include "cxxabi/ptrhash.h"
#include "heapgraph.h"

#define INITIAL_BITS 12u

static void *map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

static inline uint32_t slot_of(uint64_t ti, uint32_t bits) { return _hg_ptr_hash(ti, bits); }

int _hg_cxx_set_init(struct hg_cxx_set *s) {
  memset(s, 0, sizeof *s);
  s->bits = INITIAL_BITS;
  s->cap = 1u << s->bits;
  s->slots = map((size_t)s->cap * sizeof *s->slots);
  s->pool_cap = HG_CXX_MAX_POOL;
  s->pool = map(s->pool_cap);
  s->ro = map(HG_CXX_MAX_RANGES * sizeof *s->ro);
  s->img = map(HG_CXX_MAX_RANGES * sizeof *s->img);
  if (!s->slots || !s->pool || !s->ro || !s->img) {
    _hg_cxx_set_free(s);
    return HG_ENOMEM;
  }
  s->pool[0] = 0;
  s->pool_used = 1;
  s->ro_min = UINT64_MAX;
  s->bytes = (size_t)s->cap * sizeof *s->slots + 2 * HG_CXX_MAX_RANGES * sizeof *s->ro;
  return 0;
}

void _hg_cxx_set_free(struct hg_cxx_set *s) {
  if (s->external) {
    memset(s, 0, sizeof *s);
    return;
  }
  unmap(s->slots, (size_t)s->cap * sizeof *s->slots);
  unmap(s->pool, s->pool_cap);
  unmap(s->ro, HG_CXX_MAX_RANGES * sizeof *s->ro);
  unmap(s->img, HG_CXX_MAX_RANGES * sizeof *s->img);
  memset(s, 0, sizeof *s);
}

static int add_range(struct hg_cxx_range *r, uint32_t *n, uint64_t lo, uint64_t hi) {
  if (hi <= lo) return HG_EINVAL;
  if (*n >= HG_CXX_MAX_RANGES) return HG_ELIMIT;
  r[*n].lo = lo;
  r[*n].hi = hi;
  (*n)++;
  return 0;
}

int _hg_cxx_set_add_image_range(struct hg_cxx_set *s, uint64_t lo, uint64_t hi) {
  if (s->sealed) return HG_EINVAL;
  return add_range(s->img, &s->nimg, lo, hi);
}

int _hg_cxx_set_add_ro_range(struct hg_cxx_set *s, uint64_t lo, uint64_t hi) {
  if (s->sealed) return HG_EINVAL;
  return add_range(s->ro, &s->nro, lo, hi);
}

/* Sorted by lo, overlapping or touching ranges merged. */
static uint32_t sort_merge(struct hg_cxx_range *r, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) { /* insertion sort: a few hundred ranges */
    struct hg_cxx_range k = r[i];
    uint32_t j = i;
    while (j > 0 && r[j - 1].lo > k.lo) {
      r[j] = r[j - 1];
      j--;
    }
    r[j] = k;
  }
  uint32_t out = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (out && r[i].lo <= r[out - 1].hi) {
      if (r[i].hi > r[out - 1].hi) r[out - 1].hi = r[i].hi;
    } else {
      r[out++] = r[i];
    }
  }
  return out;
}

static int in_ranges(const struct hg_cxx_range *r, uint32_t n, uint64_t addr, uint64_t len) {
  if (addr + len < addr) return 0;
  uint32_t lo = 0, hi = n; /* first range with r.lo > addr */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (r[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return 0;
  return addr + len <= r[lo - 1].hi;
}

void _hg_cxx_set_seal(struct hg_cxx_set *s) {
  s->nro = sort_merge(s->ro, s->nro);
  s->nimg = sort_merge(s->img, s->nimg);
  s->ro_min = s->nro ? s->ro[0].lo : UINT64_MAX;
  s->ro_max = s->nro ? s->ro[s->nro - 1].hi : 0;
  s->sealed = 1;
}

/* Table size of the compacted set: the smallest power of two keeping the
 * load factor at or below 1/2. */
static uint32_t compact_bits(const struct hg_cxx_set *s) {
  uint32_t bits = 4;
  while ((1u << bits) < 2u * s->count && bits < s->bits) bits++;
  return bits;
}

size_t _hg_cxx_set_compact_size(const struct hg_cxx_set *s) {
  size_t pool = (s->pool_used + 7) & ~(size_t)7;
  return ((size_t)1 << compact_bits(s)) * sizeof *s->slots + pool +
         ((size_t)s->nro + s->nimg) * sizeof *s->ro;
}

/* Puts s's types into n, an empty table of 2^bits slots (linear probing). */
static void rehash(const struct hg_cxx_set *s, struct hg_cxx_type *n, uint32_t bits) {
  uint32_t mask = (1u << bits) - 1;
  for (uint32_t i = 0; i < s->cap; i++) {
    if (!s->slots[i].ti) continue;
    uint32_t j = slot_of(s->slots[i].ti, bits);
    while (n[j].ti) j = (j + 1) & mask;
    n[j] = s->slots[i];
  }
}

int _hg_cxx_set_compact(struct hg_cxx_set *s, void *buf, size_t bytes) {
  if (!s->sealed || s->external || !buf || bytes < _hg_cxx_set_compact_size(s)) return HG_EINVAL;
  uint8_t *p = buf;
  uint32_t bits = compact_bits(s), cap = 1u << bits;
  size_t slots = (size_t)cap * sizeof *s->slots, pool = (s->pool_used + 7) & ~(size_t)7;
  struct hg_cxx_type *ns = (struct hg_cxx_type *)p;
  memset(ns, 0, slots);
  rehash(s, ns, bits); /* into the smaller table */
  char *np = (char *)(p + slots);
  memcpy(np, s->pool, s->pool_used);
  struct hg_cxx_range *nro = (struct hg_cxx_range *)(p + slots + pool);
  memcpy(nro, s->ro, s->nro * sizeof *nro);
  struct hg_cxx_range *nimg = nro + s->nro;
  memcpy(nimg, s->img, s->nimg * sizeof *nimg);
  unmap(s->slots, (size_t)s->cap * sizeof *s->slots);
  unmap(s->pool, s->pool_cap);
  unmap(s->ro, HG_CXX_MAX_RANGES * sizeof *s->ro);
  unmap(s->img, HG_CXX_MAX_RANGES * sizeof *s->img);
  s->slots = ns;
  s->cap = cap;
  s->bits = bits;
  s->pool = np;
  s->pool_cap = s->pool_used;
  s->ro = nro;
  s->img = nimg;
  s->external = 1;
  s->bytes = bytes;
  return 0;
}

int _hg_cxx_in_ro(const struct hg_cxx_set *s, uint64_t addr, uint64_t len) {
  if (!s->sealed) {
    for (uint32_t i = 0; i < s->nro; i++)
      if (addr >= s->ro[i].lo && addr + len >= addr && addr + len <= s->ro[i].hi) return 1;
    return 0;
  }
  return in_ranges(s->ro, s->nro, addr, len);
}

int _hg_cxx_in_image(const struct hg_cxx_set *s, uint64_t addr, uint64_t len) {
  if (!s->sealed) { /* adds happen before sealing: linear, image count is small */
    for (uint32_t i = 0; i < s->nimg; i++)
      if (addr >= s->img[i].lo && addr + len >= addr && addr + len <= s->img[i].hi) return 1;
    return 0;
  }
  return in_ranges(s->img, s->nimg, addr, len);
}

struct hg_cxx_type *_hg_cxx_set_find(const struct hg_cxx_set *s, uint64_t ti) {
  if (!ti || !s->count) return NULL;
  uint32_t mask = s->cap - 1;
  for (uint32_t i = slot_of(ti, s->bits);; i = (i + 1) & mask) {
    struct hg_cxx_type *t = &s->slots[i];
    if (t->ti == ti) return t;
    if (!t->ti) return NULL; /* load factor <= 1/2: an empty slot always exists */
  }
}

static int grow(struct hg_cxx_set *s) {
  uint32_t bits = s->bits + 1, cap = 1u << bits;
  struct hg_cxx_type *n = map((size_t)cap * sizeof *n);
  if (!n) return HG_ENOMEM;
  rehash(s, n, bits);
  unmap(s->slots, (size_t)s->cap * sizeof *s->slots);
  s->bytes += ((size_t)cap - s->cap) * sizeof *n;
  s->slots = n;
  s->cap = cap;
  s->bits = bits;
  return 0;
}

/* Inserts ti with a name already validated; 1 added, 0 duplicate, < 0 full. */
static int insert(struct hg_cxx_set *s, uint64_t ti, const char *name, size_t len) {
  if (_hg_cxx_set_find(s, ti)) {
    s->duplicates++;
    return 0;
  }
  if (s->count >= HG_CXX_MAX_TYPES) return HG_ELIMIT;
  if (s->pool_used + len + 1 > s->pool_cap) return HG_ELIMIT;
  if ((s->count + 1) * 2 > s->cap) {
    int rc = grow(s);
    if (rc) return rc;
  }
  uint32_t off = (uint32_t)s->pool_used;
  memcpy(s->pool + off, name, len);
  s->pool[off + len] = 0;
  s->pool_used += len + 1;
  uint32_t j = slot_of(ti, s->bits);
  while (s->slots[j].ti) j = (j + 1) & (s->cap - 1);
  s->slots[j].ti = ti;
  s->slots[j].name = off;
  s->slots[j].class_id = 0;
  s->count++;
  return 1;
}

int _hg_cxx_set_add_name(struct hg_cxx_set *s, uint64_t ti, const char *name, size_t len) {
  if (s->sealed || !ti || (ti & 7) || !name) return HG_EINVAL;
  if (len && name[0] == '*') {
    name++;
    len--;
  }
  if (!_hg_cxx_plausible_name(name, len)) {
    s->rejected++;
    return 0;
  }
  return insert(s, ti, name, len);
}

int _hg_cxx_set_add(struct hg_cxx_set *s, uint64_t ti, uint64_t name_ptr, hg_cxx_read_fn read,
                    void *ctx) {
  if (s->sealed || !ti || (ti & 7) || !read) return HG_EINVAL;
  name_ptr &= ~(1ull << 63); /* Apple non-unique RTTI flag */
  char buf[HG_CXX_MAX_NAME + 8];
  size_t len = 0;
  /* Word-wise reads from the aligned word containing the name's start. */
  uint64_t a = name_ptr & ~7ull;
  uint32_t skip = (uint32_t)(name_ptr & 7);
  int done = 0;
  while (!done && len <= HG_CXX_MAX_NAME) {
    uint64_t w;
    if (!_hg_cxx_in_image(s, a, 8) || read(ctx, a, &w) != 0) break;
    for (uint32_t k = skip; k < 8; k++) {
      char ch = (char)(w >> (8 * k)); /* little-endian */
      if (!ch) {
        done = 1;
        break;
      }
      buf[len++] = ch;
    }
    skip = 0;
    a += 8;
  }
  if (!done) {
    s->rejected++;
    return 0;
  }
  return _hg_cxx_set_add_name(s, ti, buf, len);
}
