/*
 * objc_table.c — the Objective-C class table copied out of the runtime at
 * prepare time: classes (and metaclasses) with name, instance size and own
 * ivars, in bounded capture scratch, with two open-addressing lookups:
 * class pointer -> class (every heap block asks once) and writer class
 * id -> class (every edge out of a classified block asks once).
 *
 * Filling (_hg_objc_add_*, _hg_objc_table_finish) happens before the freeze.
 * Lookups and _hg_objc_bind_id run while frozen: no malloc, no locks, reads
 * and writes only the table's scratch vectors.
 */
#include <string.h>

#include "capture/classify/objc.h"
#include "cxxabi/ptrhash.h"

/* ---- set-up ---- */

static uint32_t log2_up(uint64_t n) {
  uint32_t b = 4; /* at least 16 slots */
  while (b < 31 && (1ull << b) < n) b++;
  return b;
}

int _hg_objc_table_init(struct hg_objc_table *t, struct hg_scratch *s, uint32_t max_classes,
                        uint32_t max_ivars, size_t max_string_bytes) {
  memset(t, 0, sizeof *t);
  if (!max_classes || max_classes > (1u << 28)) return HG_EINVAL;
  size_t slots = (size_t)1 << log2_up(2ull * max_classes);
  int rc = 0;
  rc = rc ? rc : _hg_vec_init(s, &t->classes, sizeof(struct hg_objc_class), max_classes);
  rc = rc ? rc : _hg_vec_init(s, &t->ivars, sizeof(struct hg_objc_ivar), max_ivars ? max_ivars : 1);
  rc = rc ? rc : _hg_vec_init(s, &t->strings, 1, max_string_bytes ? max_string_bytes : 1);
  rc = rc ? rc : _hg_vec_init(s, &t->byptr, sizeof(uint32_t), slots);
  rc = rc ? rc : _hg_vec_init(s, &t->byid, sizeof(uint64_t), slots);
  /* word maps of instantiated classes: 16 MiB reserved, touched as used */
  rc = rc ? rc : _hg_vec_init(s, &t->wordmap, sizeof(uint32_t), 4u << 20);
  if (!rc && !_hg_str_add(&t->strings, "", 0)) rc = HG_ENOMEM; /* offset 0 = "" */
  _hg_objc_isa_plain(&t->isa);
  return rc;
}

uint32_t _hg_objc_add_class(struct hg_objc_table *t, uint64_t ptr, const char *name,
                            uint64_t instance_size, int meta, uint64_t super_ptr) {
  if (t->ready || !ptr) return HG_OBJC_NONE;
  size_t n = _hg_vec_len(&t->classes);
  if (n >= HG_OBJC_NONE - 1) return HG_OBJC_NONE;
  uint32_t name_off = name ? _hg_str_add(&t->strings, name, strnlen(name, 4096)) : 0;
  struct hg_objc_class *c = _hg_vec_push(&t->classes, 1);
  if (!c || (name && !name_off)) {
    if (c) _hg_vec_truncate(&t->classes, n);
    t->overflow++;
    return HG_OBJC_NONE;
  }
  c->ptr = ptr;
  c->super_ptr = super_ptr;
  c->instance_size = instance_size;
  c->name = name_off;
  c->super = HG_OBJC_NONE;
  c->ivar_first = (uint32_t)_hg_vec_len(&t->ivars);
  c->meta = meta ? 1 : 0;
  c->kind = (uint8_t)_hg_objc_name_kind(name);
  return (uint32_t)n;
}

int _hg_objc_add_ivar(struct hg_objc_table *t, uint32_t cls, const char *name, uint64_t offset,
                      const char *type, uint32_t kind) {
  size_t n = _hg_vec_len(&t->classes);
  if (t->ready || n == 0 || cls != n - 1) return HG_EINVAL;
  struct hg_objc_class *c = _hg_objc_class_at(t, cls);
  size_t ni = _hg_vec_len(&t->ivars);
  if (ni >= UINT32_MAX || c->ivar_first + c->ivar_count != ni) return HG_EINVAL;
  uint32_t name_off = name ? _hg_str_add(&t->strings, name, strnlen(name, 4096)) : 0;
  uint32_t type_off = type ? _hg_str_add(&t->strings, type, strnlen(type, 4096)) : 0;
  if ((name && !name_off) || (type && !type_off)) {
    t->overflow++;
    return HG_ENOMEM;
  }
  struct hg_objc_ivar *v = _hg_vec_push(&t->ivars, 1);
  if (!v) {
    t->overflow++;
    return HG_ENOMEM;
  }
  v->offset = offset;
  v->name = name_off;
  v->type = type_off;
  v->kind = kind;
  v->refs = kind ? _hg_objc_type_refs(type) : 0;
  if (kind && !v->refs) v->refs = 1; /* a layout said "object" for a non-'@' type */
  c->ivar_count++;
  return 0;
}

/* ---- hashing ---- */

static inline uint32_t slot_of(uint64_t key, uint32_t bits) { return _hg_ptr_hash(key, bits); }

static void sort_ivars(struct hg_objc_ivar *v, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) { /* insertion sort: ivar lists are short */
    struct hg_objc_ivar x = v[i];
    uint32_t j = i;
    while (j > 0 && v[j - 1].offset > x.offset) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

int _hg_objc_table_finish(struct hg_objc_table *t) {
  if (t->ready) return 0;
  uint32_t n = (uint32_t)_hg_vec_len(&t->classes);
  t->bits = log2_up(2ull * (n ? n : 1));
  size_t slots = (size_t)1 << t->bits;
  uint32_t *tab = _hg_vec_push(&t->byptr, slots);
  if (!tab || !_hg_vec_push(&t->byid, slots)) return HG_ENOMEM;
  struct hg_objc_ivar *iv = (struct hg_objc_ivar *)t->ivars.base;
  t->lo = UINT64_MAX;
  t->hi = 0;
  for (uint32_t i = 0; i < n; i++) {
    struct hg_objc_class *c = _hg_objc_class_at(t, i);
    sort_ivars(iv + c->ivar_first, c->ivar_count);
    uint32_t s = slot_of(c->ptr, t->bits);
    for (;;) {
      if (tab[s] == 0) {
        tab[s] = i + 1;
        break;
      }
      if (_hg_objc_class_at(t, tab[s] - 1)->ptr == c->ptr) break; /* duplicate: first wins */
      s = (s + 1) & (uint32_t)(slots - 1);
    }
    if (!c->meta) {
      if (c->ptr < t->lo) t->lo = c->ptr;
      if (c->ptr > t->hi) t->hi = c->ptr;
    }
  }
  t->ready = 1;
  for (uint32_t i = 0; i < n; i++) {
    struct hg_objc_class *c = _hg_objc_class_at(t, i);
    uint32_t sup = c->super_ptr ? _hg_objc_find(t, c->super_ptr) : HG_OBJC_NONE;
    c->super = sup == i ? HG_OBJC_NONE : sup;
  }
  return 0;
}

/* ---- lookups (frozen-safe) ---- */

uint32_t _hg_objc_find(const struct hg_objc_table *t, uint64_t ptr) {
  if (!t->ready || !ptr) return HG_OBJC_NONE;
  const uint32_t *tab = (const uint32_t *)t->byptr.base;
  uint32_t mask = (1u << t->bits) - 1, s = slot_of(ptr, t->bits);
  for (uint32_t probes = 0; probes <= mask; probes++, s = (s + 1) & mask) {
    uint32_t v = tab[s];
    if (v == 0) return HG_OBJC_NONE;
    if (_hg_objc_class_at(t, v - 1)->ptr == ptr) return v - 1;
  }
  return HG_OBJC_NONE;
}

uint32_t _hg_objc_classify_word(const struct hg_objc_table *t, uint64_t isa, uint64_t block_size) {
  uint64_t cls = _hg_objc_isa_class(&t->isa, isa);
  if (cls < t->lo || cls > t->hi) return HG_OBJC_NONE; /* also cls == 0 */
  uint32_t i = _hg_objc_find(t, cls);
  if (i == HG_OBJC_NONE) return HG_OBJC_NONE;
  const struct hg_objc_class *c = _hg_objc_class_at(t, i);
  if (c->meta || c->instance_size == 0 || c->instance_size > block_size) return HG_OBJC_NONE;
  return i;
}

static void build_map(struct hg_objc_table *t, uint32_t cls) {
  struct hg_objc_class *c = _hg_objc_class_at(t, cls);
  uint64_t words = c->instance_size / 8;
  if (c->map_first || words == 0 || words > HG_OBJC_MAP_MAX_WORDS) return;
  size_t first = _hg_vec_len(&t->wordmap);
  if (first >= UINT32_MAX - HG_OBJC_MAP_MAX_WORDS) return;
  uint32_t *map = _hg_vec_push(&t->wordmap, (size_t)words);
  if (!map) return; /* no room: lookups take the slow path */
  const struct hg_objc_ivar *base = (const struct hg_objc_ivar *)t->ivars.base;
  for (uint64_t w = 0; w < words; w++) {
    const struct hg_objc_ivar *v = _hg_objc_ivar_at(t, cls, w * 8);
    map[w] = v ? (uint32_t)(v - base) + 1 : 0;
  }
  c->map_words = (uint32_t)words;
  /* published last: pure readers may run on another thread (_hg_objc_map_of) */
  __atomic_store_n(&c->map_first, (uint32_t)first + 1, __ATOMIC_RELEASE);
}

int _hg_objc_bind_id(struct hg_objc_table *t, uint32_t cls, uint32_t id) {
  if (!t->ready || id == 0 || cls >= _hg_vec_len(&t->classes)) return HG_EINVAL;
  build_map(t, cls);
  uint64_t *tab = (uint64_t *)t->byid.base;
  uint32_t mask = (1u << t->bits) - 1, s = slot_of((uint64_t)id << 3, t->bits);
  for (uint32_t probes = 0; probes <= mask; probes++, s = (s + 1) & mask) {
    if (tab[s] == 0 || (uint32_t)(tab[s] >> 32) == id) {
      tab[s] = ((uint64_t)id << 32) | (uint64_t)(cls + 1);
      return 0;
    }
  }
  return HG_ENOMEM; /* cannot happen: at most one id per class, 2x slots */
}

uint32_t _hg_objc_find_id(const struct hg_objc_table *t, uint32_t id) {
  if (!t->ready || id == 0) return HG_OBJC_NONE;
  const uint64_t *tab = (const uint64_t *)t->byid.base;
  uint32_t mask = (1u << t->bits) - 1, s = slot_of((uint64_t)id << 3, t->bits);
  for (uint32_t probes = 0; probes <= mask; probes++, s = (s + 1) & mask) {
    uint64_t v = tab[s];
    if (v == 0) return HG_OBJC_NONE;
    if ((uint32_t)(v >> 32) == id) return (uint32_t)v - 1;
  }
  return HG_OBJC_NONE;
}

#define MAX_DEPTH 256u /* superclass chain guard */

struct hg_objc_ivar *_hg_objc_ivar_at(const struct hg_objc_table *t, uint32_t cls,
                                      uint64_t offset) {
  if (!t->ready) return NULL;
  uint32_t n = (uint32_t)_hg_vec_len(&t->classes);
  struct hg_objc_ivar *iv = (struct hg_objc_ivar *)t->ivars.base;
  for (uint32_t depth = 0; cls < n && depth < MAX_DEPTH; depth++) {
    const struct hg_objc_class *c = _hg_objc_class_at(t, cls);
    if (c->ivar_count && offset >= iv[c->ivar_first].offset) {
      /* the last own ivar starting at or before offset */
      uint32_t lo = c->ivar_first, hi = c->ivar_first + c->ivar_count;
      while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (iv[mid].offset <= offset) lo = mid; else hi = mid;
      }
      /* several ivars may share an offset (bitfields, empty structs):
       * prefer an object one among them */
      for (uint32_t k = lo + 1; k-- > c->ivar_first && iv[k].offset == iv[lo].offset;) {
        struct hg_objc_ivar *v = &iv[k];
        uint64_t d = offset - v->offset;
        if (v->refs && (d & 7u) == 0 && d / 8 < v->refs) return v;
      }
      return NULL; /* inside this class's own ivars: no inherited one can match */
    }
    cls = c->super;
  }
  return NULL;
}

const uint32_t *_hg_objc_map_of(const struct hg_objc_table *t, uint32_t cls, uint32_t *words) {
  *words = 0;
  if (cls >= _hg_vec_len(&t->classes)) return NULL;
  const struct hg_objc_class *c = _hg_objc_class_at(t, cls);
  uint32_t first = __atomic_load_n(&c->map_first, __ATOMIC_ACQUIRE);
  if (!first) return NULL;
  *words = c->map_words;
  return (const uint32_t *)t->wordmap.base + (first - 1);
}

struct hg_objc_ivar *_hg_objc_ivar_fast(const struct hg_objc_table *t, uint32_t cls,
                                        uint64_t offset) {
  if (cls >= _hg_vec_len(&t->classes)) return NULL;
  uint32_t words;
  const uint32_t *map = _hg_objc_map_of(t, cls, &words);
  if (!map) return _hg_objc_ivar_at(t, cls, offset);
  if ((offset & 7u) || offset / 8 >= words) return NULL;
  uint32_t v = map[offset / 8];
  return v ? (struct hg_objc_ivar *)_hg_vec_at(&t->ivars, v - 1) : NULL;
}
