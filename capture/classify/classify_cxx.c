/*
 * classify_cxx.c — the C++ classifier plugged into the capture engine
 * (capture/classify/classify.h): a block is of class T when its first word is the
 * primary vptr of a complete object whose vtable names T's type_info.
 *
 *   prepare  (before the freeze): the platform discovers every type_info of
 *            the loaded images into a cxxabi set in its own mmap
 *            (_hg_cxx_discover: ELF on Linux, Mach-O on Darwin), then
 *            moves it into one buffer of capture scratch.
 *   identify (frozen, no malloc, either scan lane, caches per lane): the
 *            cxxabi check on the first word, reading through the frozen
 *            region table; a slab (below) gets its own token;
 *   class_of (capturing thread): a class is registered with the writer the
 *            first time one of its objects is met (kind HG_CLASS_CXX, the
 *            mangled name as found, '*' prefix dropped).
 *   count    (capturing thread, once per node): a slab's objects go into
 *            their types' census;
 *   meta     (after the scan): the census as capture numbers.
 *   finish   (after thaw): nothing to free: the set was moved into capture
 *            scratch at the end of prepare (so the capture never reports or
 *            scans it as process memory), which the capture unmaps.
 *
 * Never calls malloc and never fails a capture: when discovery fails the
 * classifier just classifies nothing.
 */
#include <string.h>

#include "capture/classify/classify.h"
#include "capture/internal.h"
#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "cxxabi/ptrhash.h"

#define CLASS_FAILED UINT32_MAX

/* The largest plausible single object: a block larger than this that starts
 * with a typed object and holds HG_CXX_SLAB_MIN more is a slab (one page:
 * LLVM's BumpPtrAllocator's smallest slab is 4096 bytes; most polymorphic
 * objects are far smaller — clang::Sema, 13 KB, is one that is not, and it
 * holds fewer typed words than HG_CXX_SLAB_MIN). */
#define HG_CXX_OBJECT_MAX 4096u
#define HG_CXX_SLAB_MIN 4u

/* Validated vptrs of this capture: the vtable memory is read-only and the
 * process is frozen, so a vptr checked once stays valid; objects of a class
 * share one vptr, so most blocks are classified without any read. */
#define VCACHE_BITS 8

struct vcache_entry {
  uint64_t vptr;
  struct hg_cxx_type *type;
};

/* A filter in front of the read-only range search: one bit per 2 MiB of
 * address space (folded to 64 Ki bits), set where some image has read-only
 * data. Heap words (most first words) fail it with one L1 load; the span
 * test alone lets them through when the heap lies between two images. */
#define GRAN_SHIFT 21
#define GRAN_BITS 16

/* What identify() keeps per lane (classify.h: both lanes run at once; a
 * torn region cache could let a read through that no region validated). */
struct cxx_lane {
  _Alignas(64) struct vcache_entry vcache[1u << VCACHE_BITS];
  const struct hg_cap *cap;    /* for cap_read (set by identify)          */
  uint64_t cache_lo, cache_hi; /* last readable region met by the reader */
};

struct cxx_state {
  uint64_t ro_gran[(1u << GRAN_BITS) / 64];
  struct cxx_lane lane[HG_SCAN_LANES];
  struct hg_cxx_set set;
  struct hg_cxx_discovery disc;
  uint64_t slabs;              /* blocks named slabs (cxx_count)          */
};

/* Validated reader over the frozen region table, with a one-region cache
 * (vptrs of a heap cluster in a few vtable regions); ctx: a lane. */
HG_NO_ASAN static int cap_read(void *ctx, uint64_t a, uint64_t *out) {
  struct cxx_lane *ln = ctx;
  if (a & 7) return -1;
  if (!(a >= ln->cache_lo && a + 8 <= ln->cache_hi)) {
    int64_t i = _hg_region_find(ln->cap, a);
    if (i < 0) return -1;
    const struct hg_cregion *r = _hg_vec_at(&ln->cap->regions, (size_t)i);
    if (!(r->prot & HG_PROT_READ) || a + 8 > r->end) return _hg_read_word(ln->cap, a, out);
    ln->cache_lo = r->start;
    ln->cache_hi = r->end;
  }
  *out = *(const volatile uint64_t *)(uintptr_t)a;
  return 0;
}

int _hg_cxx_discover(struct hg_cxx_set *s, struct hg_cxx_discovery *d) {
  struct hg_cxx_discovery local;
  if (!d) d = &local;
  memset(d, 0, sizeof *d);
  uint64_t t0 = _hg_now_ns();
  int rc = _hg_plat_cxx_images(s, d);
  _hg_cxx_set_seal(s);
  d->ns = _hg_now_ns() - t0;
  return rc;
}

static int cxx_prepare(struct hg_classify_reg *reg) {
  struct hg_cxx_set tmp;
  struct hg_cxx_discovery disc;
  if (_hg_cxx_set_init(&tmp) != 0) return 0; /* sit out quietly: never stop the list */
  /* A partial set (limit reached) still classifies what it holds. */
  (void)_hg_cxx_discover(&tmp, &disc);
  if (!tmp.sealed) _hg_cxx_set_seal(&tmp);
  /* Move state and set into capture scratch: memory the capture knows as
   * its own (never reported as a region, never scanned for roots), counted
   * in scratch_peak_bytes. The discovery mappings are gone before the freeze. */
  size_t head = (sizeof(struct cxx_state) + 63) & ~(size_t)63;
  size_t need = head + _hg_cxx_set_compact_size(&tmp);
  struct hg_cap *c = reg->cap;
  struct hg_vec *v = NULL;
  uint8_t *mem = NULL;
  if (c->scratch.nvec < HG_SCRATCH_MAX_VECS) {
    static struct hg_vec vec; /* one capture at a time (capture lock) */
    memset(&vec, 0, sizeof vec);
    if (_hg_vec_init(&c->scratch, &vec, 1, need) == 0) {
      v = &vec;
      mem = _hg_vec_push(v, need);
    }
  }
  if (!mem) {
    _hg_cxx_set_free(&tmp);
    return 0;
  }
  struct cxx_state *st = (struct cxx_state *)mem;
  memset(st, 0, sizeof *st);
  st->disc = disc;
  st->set = tmp;
  if (_hg_cxx_set_compact(&st->set, mem + head, need - head) != 0) {
    _hg_cxx_set_free(&tmp);
    return 0;
  }
  for (uint32_t k = 0; k < st->set.nro; k++) {
    uint64_t lo = st->set.ro[k].lo >> GRAN_SHIFT, hi = (st->set.ro[k].hi - 1) >> GRAN_SHIFT;
    if (st->set.ro[k].hi <= st->set.ro[k].lo) continue;
    for (uint64_t g = lo; g <= hi && g - lo < (1u << GRAN_BITS); g++) {
      uint32_t b = (uint32_t)(g & ((1u << GRAN_BITS) - 1));
      st->ro_gran[b >> 6] |= 1ull << (b & 63);
    }
  }
  reg->state = st;
  return 0;
}

/* The validated type whose primary vptr is `vptr`, or NULL. */
static struct hg_cxx_type *type_of(struct cxx_state *st, struct cxx_lane *ln, const struct hg_cap *c,
                                   uint64_t vptr) {
  /* One compare rejects most plain blocks (0, small numbers, heap pointers
   * outside the span of the images' read-only data). */
  if (vptr - st->set.ro_min >= st->set.ro_max - st->set.ro_min) return NULL;
  uint32_t b = (uint32_t)((vptr >> GRAN_SHIFT) & ((1u << GRAN_BITS) - 1));
  if (!((st->ro_gran[b >> 6] >> (b & 63)) & 1)) return NULL;
  struct vcache_entry *e =
      &ln->vcache[_hg_ptr_hash(vptr, VCACHE_BITS)];
  struct hg_cxx_type *t;
  if (vptr && e->vptr == vptr) {
    t = e->type;
  } else {
    ln->cap = c;
    t = _hg_cxx_check(&st->set, vptr, cap_read, ln);
    if (!t) return NULL;
    e->vptr = vptr;
    e->type = t;
  }
  return t;
}

/* Typed objects inside a block past its first word: 8-aligned words that
 * are the primary vptr of a known class (the same check as a first word).
 * With count set (cxx_count, on the capturing thread), each one is added to
 * its type's census. */
HG_NO_ASAN static uint32_t inside(struct cxx_state *st, struct cxx_lane *ln, const struct hg_cap *c,
                                  uint64_t addr, uint64_t size, int count) {
  uint32_t n = 0;
  for (uint64_t a = addr + 8; a + 8 <= addr + size; a += 8) {
    struct hg_cxx_type *t = type_of(st, ln, c, *(const volatile uint64_t *)(uintptr_t)a);
    if (!t) continue;
    n++;
    if (count) t->census++;
  }
  return n;
}

/* The pure half: the validated type of the block's vptr (its slot + 1),
 * or, for a slab (below), slot + 1 + the set's capacity; 0 for none.
 * A block is a slab starting with T — not a T — when it is larger than
 * HG_CXX_OBJECT_MAX and holds at least HG_CXX_SLAB_MIN more typed objects
 * after the first (an allocator's slab or pool: LLVM's BumpPtrAllocator,
 * an arena); those are counted into their types' census, never made
 * nodes. See docs/cxx-types.md ("Blocks that hold many objects"). */
static uint32_t cxx_identify(void *state, const struct hg_cap *c, uint32_t lane, uint64_t addr,
                             uint64_t size, const uint64_t *words, uint32_t nwords) {
  struct cxx_state *st = state;
  if (!st || nwords < 1 || lane >= HG_SCAN_LANES) return 0;
  struct cxx_lane *ln = &st->lane[lane];
  struct hg_cxx_type *t = type_of(st, ln, c, words[0]);
  if (!t) return 0;
  uint32_t token = (uint32_t)(t - st->set.slots) + 1;
  if (size <= HG_CXX_OBJECT_MAX || !_hg_readable(c, addr, size) ||
      inside(st, ln, c, addr, size, 0) < HG_CXX_SLAB_MIN)
    return token;
  return token + st->set.cap;
}

/* What a token of cxx_identify says: the type (NULL for none) and whether
 * the block is a slab that starts with it. */
static struct hg_cxx_type *token_type(const struct cxx_state *st, uint32_t token, int *slab) {
  *slab = 0;
  if (!st || token == 0 || token > 2 * (uint64_t)st->set.cap) return NULL;
  *slab = token > st->set.cap;
  return &st->set.slots[token - 1 - (*slab ? st->set.cap : 0)];
}

/* Once per block written as a node (capturing thread, classify.h): a
 * slab's objects go into their types' census. identify() may see a block
 * twice (a steal), so the counting is here. */
static void cxx_count(struct hg_classify_reg *reg, uint32_t token, uint64_t addr, uint64_t size) {
  struct cxx_state *st = reg->state;
  int slab;
  if (!token_type(st, token, &slab) || !slab) return;
  if (!_hg_readable(reg->cap, addr, size)) return;
  inside(st, &st->lane[0], reg->cap, addr, size, 1);
  st->slabs++;
}

/* prefix + name into out (cap bytes, NUL-terminated, cut if need be):
 * no stdio while frozen. */
static const char *join(char *out, size_t cap, const char *prefix, const char *name) {
  size_t a = strlen(prefix), b = strlen(name);
  if (a > cap - 1) a = cap - 1;
  if (b > cap - 1 - a) b = cap - 1 - a;
  memcpy(out, prefix, a);
  memcpy(out + a, name, b);
  out[a + b] = 0;
  return out;
}

/* The registering half (capturing thread): class id of a type, or of the
 * slabs that start with it (named HG_CXX_SLAB_PREFIX + the type's name). */
static uint32_t cxx_class_of(struct hg_classify_reg *reg, uint32_t token) {
  struct cxx_state *st = reg->state;
  int slab;
  struct hg_cxx_type *t = token_type(st, token, &slab);
  if (!t) return 0;
  uint32_t *id = slab ? &t->slab_class_id : &t->class_id;
  if (!*id) {
    static char name[sizeof HG_CXX_SLAB_PREFIX + HG_CXX_MAX_NAME]; /* capturing thread only */
    const char *n = _hg_cxx_name(&st->set, t);
    if (slab) n = join(name, sizeof name, HG_CXX_SLAB_PREFIX, n);
    uint32_t got = _hg_classify_class(reg, n, HG_CLASS_CXX, 0);
    *id = got ? got : CLASS_FAILED;
  }
  return *id == CLASS_FAILED ? 0 : *id;
}

/* After the scan: the census as capture numbers — "cxx_slabs" (blocks
 * named slabs) and "cxx_census:" + mangled name (objects of that class
 * counted inside them), one metadata record each. */
static int cxx_meta(struct hg_classify_reg *reg, struct hg_writer *w) {
  struct cxx_state *st = reg->state;
  if (!st || !st->slabs) return 0;
  static char key[sizeof HG_CXX_CENSUS_PREFIX + HG_CXX_MAX_NAME]; /* capturing thread only */
  struct hg_num num = {"cxx_slabs", st->slabs};
  struct hg_meta m;
  memset(&m, 0, sizeof m);
  m.capture = &num;
  m.capture_count = 1;
  int rc = hg_writer_meta(w, &m);
  for (uint32_t i = 0; !rc && i < st->set.cap; i++) {
    const struct hg_cxx_type *t = &st->set.slots[i];
    if (!t->ti || !t->census) continue;
    num = (struct hg_num){join(key, sizeof key, HG_CXX_CENSUS_PREFIX, _hg_cxx_name(&st->set, t)),
                          t->census};
    rc = hg_writer_meta(w, &m);
  }
  return rc;
}

static void cxx_finish(struct hg_classify_reg *reg) {
  /* Everything lives in capture scratch, unmapped by the capture itself. */
  reg->state = NULL;
}

const struct hg_classifier _hg_classifier_cxx = {
    .name = "c++",
    .prepare = cxx_prepare,
    .finish = cxx_finish,
    .identify = cxx_identify,
    .count = cxx_count,
    .class_of = cxx_class_of,
    .meta = cxx_meta,
};
