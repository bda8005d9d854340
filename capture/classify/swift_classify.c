/*
 * swift_classify.c — the Swift classifier (Linux; no ObjC interop) plugged
 * into the capture engine's hook (classify.h): Swift class instances,
 * closure contexts, boxes, tasks and weak side tables, named and with
 * typed edges (field names; strong / weak / unowned).
 *
 *   prepare  (before the freeze): the Swift runtime is there
 *            (swift_allocObject), else the classifier stays off; the type
 *            descriptors listed in every image's swift5_type_metadata go
 *            into a hash set (capture/linux/images.c finds the sections).
 *   identify (frozen, both scan lanes): word 0 is metadata whose kind word
 *            and descriptor check out — a class's descriptor must be in the
 *            set, a non-generic class's metadata inside the descriptor's
 *            image, its instance size must fit the block; a closure
 *            context's metadata lies in an image and its capture
 *            descriptor in that image's swift5_capture; a box's boxed type
 *            is known. A side table is a small block whose word 0 is an
 *            object whose refcount word holds the block's address >> 3.
 *            Metadata seen go into a table (token = its index + 1; its
 *            writers take turns), with a direct-mapped cache per lane in
 *            front.
 *   class_of (capturing thread): the name (Module.Class<Args>) registered
 *            at the first instance of a metadata, and its word map built:
 *            stored properties of the class and its superclasses from
 *            swift5_fieldmd (swift_fields.c) at the offsets of the
 *            metadata's field offset vector; closure captures
 *            (swift_meta.c); a box's value; a side table's object (weak).
 *   edges    (frozen): the word map (edge_map), edge tokens name the field
 *            and its kind (edge_of).
 *
 * A weak reference is a pointer to the referent's side table: the field's
 * edge goes to the side table (weak), and the side table's to the object
 * (weak), so a weakly referenced object is not retained through it.
 *
 * Every read of process memory while frozen goes through _hg_readable();
 * prepare reads only inside the images' readable segments. One capture at
 * a time; the state is a static whose vectors live in the capture's
 * scratch. Never calls malloc while frozen.
 */
#include <string.h>

#include "capture/classify/classify.h"
#include "capture/classify/swift_meta.h"
#include "capture/platform.h"
#include "cxxabi/ptrhash.h"

#if defined(__linux__)
#include <dlfcn.h>
#endif

#define MAX_IMAGES 512
#define MAX_METAS (1u << 16)     /* metadata seen in one capture            */
#define META_SLOTS (1u << 17)
#define MAX_MAP_WORDS 512u       /* word maps of classes up to 4 KiB        */
#define IDC_SIZE 256
#define SIDE_TABLE_MAX 64        /* bytes: HeapObjectSideTableEntry         */

enum { SW_CLASS = 1, SW_CONTEXT, SW_BOX, SW_TASK, SW_SIDE, SW_NKINDS };

struct sw_image {
  uint64_t lo, hi, cap_lo, cap_hi;
};

struct sw_desc {  /* the descriptor set: open addressing on addr */
  uint64_t addr;
  uint32_t flags;
  uint32_t image;
};

struct sw_meta {
  uint64_t meta, desc;
  uint32_t size;          /* instance size (classes), else 16              */
  uint32_t kind;          /* SW_*                                          */
  uint32_t class_id;
  uint32_t map_first;     /* index + 1 into maps, published last           */
  uint32_t map_words;
};

struct sw_field {
  uint32_t field_id, kind;
};

struct sw_idc { /* identify()'s cache: metadata -> instance size, token */
  uint64_t meta, size;
  uint32_t token;
};

struct swift_state {
  int on;
  const struct hg_cap *cap;
  struct sw_image images[MAX_IMAGES];
  uint32_t nimages;
  struct hg_vec descs;    /* struct sw_desc, 2^dbits slots                  */
  uint32_t dbits;
  struct hg_vec metas;    /* struct sw_meta                                 */
  struct hg_vec slots;    /* uint32: meta index + 1, META_SLOTS             */
  struct hg_vec maps;     /* uint32: edge tokens per word                   */
  struct hg_vec fields;   /* struct sw_field: edge token - 1                */
  uint32_t fixed_id[SW_NKINDS]; /* class ids of the fixed names            */
  uint32_t side_token;    /* identify()'s token of every side table        */
  uint32_t insert_lock;   /* the metadata table's writers (both lanes)     */
  struct sw_idc idc[HG_SCAN_LANES][IDC_SIZE]; /* a cache per lane (classify.h) */
};

static struct swift_state state;

/* ---- readers ---- */

/* While frozen: any mapped readable memory of the process. */
static HG_NO_ASAN int cap_read(void *ctx, uint64_t addr, void *out, size_t n) {
  const struct hg_cap *c = ctx;
  if (!_hg_readable(c, addr, n)) return -1;
  memcpy(out, (const void *)(uintptr_t)addr, n);
  return 0;
}

static const struct sw_desc *desc_find(const struct swift_state *s, uint64_t d) {
  if (!d || (d & 3) || !s->dbits) return NULL;
  const struct sw_desc *t = (const struct sw_desc *)s->descs.base;
  uint32_t mask = (1u << s->dbits) - 1, i = _hg_ptr_hash(d, 4) & mask;
  for (uint32_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
    if (t[i].addr == d) return &t[i];
    if (!t[i].addr) return NULL;
  }
  return NULL;
}

static int known(void *ctx, uint64_t d) {
  (void)ctx;
  return desc_find(&state, d) != NULL;
}

static int in_image(const struct swift_state *s, uint64_t a, uint32_t *which) {
  for (uint32_t i = 0; i < s->nimages; i++)
    if (a >= s->images[i].lo && a < s->images[i].hi) {
      if (which) *which = i;
      return 1;
    }
  return 0;
}

/* ---- prepare ---- */

#if defined(__linux__)
/* Inside one of the image's readable segments. */
static const struct hg_swift_image *prep_im;
static int prep_read(void *ctx, uint64_t addr, void *out, size_t n) {
  (void)ctx;
  for (uint32_t i = 0; prep_im && i < prep_im->nseg; i++)
    if (addr >= prep_im->seg[i][0] && addr + n <= prep_im->seg[i][1] && addr + n >= addr) {
      memcpy(out, (const void *)(uintptr_t)addr, n);
      return 0;
    }
  return -1;
}

static int add_desc(struct swift_state *s, uint64_t d, uint32_t flags, uint32_t image) {
  struct sw_desc *t = (struct sw_desc *)s->descs.base;
  uint32_t mask = (1u << s->dbits) - 1, i = _hg_ptr_hash(d, 4) & mask;
  for (uint32_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
    if (t[i].addr == d) return 0;
    if (!t[i].addr) {
      t[i].addr = d;
      t[i].flags = flags;
      t[i].image = image;
      return 0;
    }
  }
  return HG_ENOMEM;
}

static int count_image(void *arg, const struct hg_swift_image *im) {
  uint64_t *n = arg;
  *n += (im->types[1] - im->types[0]) / 4;
  return 0;
}

static int load_image(void *arg, const struct hg_swift_image *im) {
  struct swift_state *s = arg;
  if (s->nimages >= MAX_IMAGES) return 0;
  uint32_t idx = s->nimages++;
  s->images[idx] = (struct sw_image){im->lo, im->hi, im->capture[0], im->capture[1]};
  prep_im = im;
  for (uint64_t r = im->types[0]; r + 4 <= im->types[1]; r += 4) {
    int32_t rel;
    if (prep_read(NULL, r, &rel, 4) || !rel) continue;
    /* RelativeDirectPointerIntPair: low 2 bits, 0 direct, 1 indirect */
    uint64_t d = r + (uint64_t)(int64_t)(rel & ~3), p;
    if ((rel & 3) == 1) {
      if (prep_read(NULL, d, &p, 8)) continue;
      d = p;
    } else if (rel & 3) {
      continue;
    }
    uint32_t flags;
    if (prep_read(NULL, d, &flags, 4)) continue;
    uint32_t k = flags & 0x1fu;
    if (k != HG_SWIFT_CTX_CLASS && k != HG_SWIFT_CTX_STRUCT && k != HG_SWIFT_CTX_ENUM) continue;
    if (add_desc(s, d, flags, idx)) return HG_ENOMEM;
  }
  prep_im = NULL;
  return 0;
}
#endif

static int swift_prepare(struct hg_classify_reg *reg) {
  struct swift_state *s = &state;
  memset(s, 0, sizeof *s);
  reg->state = s;
  /* off (no Swift here, or no room): sit the capture out, so that a C or
   * C++ program's blocks never even reach identify() */
  if (!reg->cap) return -1;
#if defined(__linux__)
  /* no Swift runtime: stay off (one failed dlsym) */
  if (!dlsym(RTLD_DEFAULT, "swift_allocObject")) return -1;
  uint64_t n = 0;
  if (_hg_plat_swift_images(count_image, &n) || n == 0 || n > (1u << 22)) return -1;
  s->dbits = 4;
  while ((1ull << s->dbits) < 2 * n) s->dbits++;
  struct hg_scratch *sc = &reg->cap->scratch;
  if (_hg_vec_init(sc, &s->descs, sizeof(struct sw_desc), (size_t)1 << s->dbits) ||
      !_hg_vec_push(&s->descs, (size_t)1 << s->dbits) ||
      _hg_vec_init(sc, &s->metas, sizeof(struct sw_meta), MAX_METAS) ||
      _hg_vec_init(sc, &s->slots, 4, META_SLOTS) || !_hg_vec_push(&s->slots, META_SLOTS) ||
      _hg_vec_init(sc, &s->maps, 4, (size_t)MAX_METAS * 64) ||
      _hg_vec_init(sc, &s->fields, sizeof(struct sw_field), (size_t)MAX_METAS * 16))
    return -1;
  if (_hg_plat_swift_images(load_image, s)) return -1;
  s->cap = reg->cap;
  s->on = 1;
  return 0;
#else
  return -1;
#endif
}

/* ---- identify (pure; helper thread) ---- */

/* The kind of instance whose metadata is m, and its size; 0 if none. */
static uint32_t check_meta(const struct swift_state *s, const struct hg_cap *c, uint64_t m,
                           uint64_t size, uint64_t *desc_out, uint32_t *isize) {
  uint64_t kind, d;
  if (_hg_read_word(c, m, &kind)) return 0;
  *desc_out = 0;
  *isize = 16;
  if (kind == HG_SWIFT_MK_CLASS) {
    uint32_t sz;
    if (_hg_read_word(c, m + HG_SWIFT_DESC_NATIVE, &d) || cap_read((void *)c, m + 24, &sz, 4))
      return 0;
    const struct sw_desc *e = desc_find(s, d);
    if (!e || (e->flags & 0x1fu) != HG_SWIFT_CTX_CLASS || sz < 16 || sz > size) return 0;
    /* a non-generic class's metadata is the image's own (a copy is not);
     * a generic one's is made at run time, a resilient subclass's too */
    if (!(e->flags & (HG_SWIFT_DESC_GENERIC | HG_SWIFT_CLASS_RESILIENT_SUPER))) {
      const struct sw_image *im = &s->images[e->image];
      if (m < im->lo || m >= im->hi) return 0;
    }
    *desc_out = d;
    *isize = sz;
    return SW_CLASS;
  }
  if (size < 16) return 0;
  uint32_t i;
  if (kind == HG_SWIFT_MK_CONTEXT) {
    uint64_t cd;
    if (!in_image(s, m, &i) || _hg_read_word(c, m + 16, &cd)) return 0;
    if (cd && (cd < s->images[i].cap_lo || cd >= s->images[i].cap_hi)) return 0;
    return SW_CONTEXT;
  }
  if (kind == HG_SWIFT_MK_BOX) {
    uint64_t t, tk, td;
    if (_hg_read_word(c, m + 16, &t) || _hg_read_word(c, t, &tk)) return 0;
    if (tk == HG_SWIFT_MK_CLASS ? _hg_read_word(c, t + HG_SWIFT_DESC_NATIVE, &td)
        : tk >= HG_SWIFT_MK_STRUCT && tk <= HG_SWIFT_MK_OPTIONAL ? _hg_read_word(c, t + 8, &td)
                                                                   : -1)
      return 0;
    if (!desc_find(s, td)) return 0;
    *desc_out = t; /* the boxed type's metadata */
    return SW_BOX;
  }
  if (kind >= HG_SWIFT_MK_ERROR && kind <= HG_SWIFT_MK_JOB && in_image(s, m, NULL)) return SW_TASK;
  return 0;
}

/* A weak side table (HeapObjectSideTableEntry): word 0 is the object, whose
 * refcount word (word 1) has UseSlowRC and SideTableMark set (bits 63, 62)
 * and the side table's address >> 3 below them. */
static int is_side_table(const struct hg_cap *c, uint64_t addr, uint64_t size, uint64_t obj) {
  uint64_t rc;
  if (size > SIDE_TABLE_MAX || !obj || (obj & 7) || _hg_read_word(c, obj + 8, &rc)) return 0;
  return (rc >> 62) == 3 && ((rc & ((1ull << 62) - 1)) << 3) == addr;
}

static uint32_t meta_insert(struct swift_state *s, uint64_t m, uint32_t kind, uint64_t desc,
                            uint32_t isize) {
  uint32_t *slot = (uint32_t *)s->slots.base;
  uint32_t mask = META_SLOTS - 1, i = _hg_ptr_hash(m, 8) & mask;
  for (uint32_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
    if (slot[i]) {
      const struct sw_meta *e = (const struct sw_meta *)s->metas.base + (slot[i] - 1);
      if (e->meta == m && e->kind == kind) return slot[i];
      continue;
    }
    struct sw_meta *e = _hg_vec_push(&s->metas, 1);
    if (!e) return 0;
    *e = (struct sw_meta){m, desc, isize, kind, 0, 0, 0};
    slot[i] = (uint32_t)_hg_vec_len(&s->metas);
    return slot[i];
  }
  return 0;
}

/* The direct-mapped cache's slot of metadata m (8-aligned, distinct). */
static inline uint32_t idc_slot(uint64_t m) {
  return (uint32_t)((m >> 3) ^ (m >> 11)) & (IDC_SIZE - 1);
}

/* meta_insert() for either lane: the table is shared, so its writers take
 * turns (a spin lock between the two scan threads, never held across a
 * wait; the checks that come first only read). Once per metadata. */
static uint32_t meta_insert_shared(struct swift_state *s, uint64_t m, uint32_t kind, uint64_t desc,
                                   uint32_t isize) {
  while (__atomic_exchange_n(&s->insert_lock, 1, __ATOMIC_ACQUIRE)) _hg_plat_yield();
  uint32_t token = kind == SW_SIDE ? s->side_token : 0;
  if (!token) token = meta_insert(s, m, kind, desc, isize);
  if (kind == SW_SIDE) __atomic_store_n(&s->side_token, token, __ATOMIC_RELEASE);
  __atomic_store_n(&s->insert_lock, 0, __ATOMIC_RELEASE);
  return token;
}

/* identify() past its cache: the checks, then the lane's cache filled. */
static __attribute__((noinline)) uint32_t identify_slow(struct swift_state *s,
                                                        struct sw_idc *idc,
                                                        const struct hg_cap *c, uint64_t addr,
                                                        uint64_t size, uint64_t m) {
  /* a side table first: one read (its object's refcount word, whose top
   * bits no metadata's second word has), never cached (one per object) */
  if (is_side_table(c, addr, size, m)) {
    uint32_t token = __atomic_load_n(&s->side_token, __ATOMIC_ACQUIRE);
    return token ? token : meta_insert_shared(s, 0, SW_SIDE, 0, 16);
  }
  uint64_t desc;
  uint32_t isize, kind = check_meta(s, c, m, size, &desc, &isize);
  if (!kind) return 0;
  uint32_t token = meta_insert_shared(s, m, kind, desc, isize), h = idc_slot(m);
  if (token) {
    idc[h].meta = m;
    idc[h].size = isize;
    idc[h].token = token;
  }
  return token;
}

/* Called for every block no classifier before it claimed: the cached
 * answer without a call, the rest out of line. */
static uint32_t swift_identify(void *st, const struct hg_cap *c, uint32_t lane, uint64_t addr,
                               uint64_t size, const uint64_t *words, uint32_t nwords) {
  struct swift_state *s = st;
  if (__builtin_expect(!s->on || nwords == 0 || lane >= HG_SCAN_LANES, 0)) return 0;
  /* an empty slot (meta 0, token 0, size 0) answers m == 0 rightly; an
   * unaligned m never enters the cache */
  struct sw_idc *idc = s->idc[lane];
  const uint64_t m = words[0];
  const uint32_t h = idc_slot(m);
  if (idc[h].meta == m && size >= idc[h].size) return idc[h].token;
  if (!m || (m & 7)) return 0;
  return identify_slow(s, idc, c, addr, size, m);
}

/* ---- class_of (capturing thread) ---- */

struct map_build {
  struct swift_state *s;
  struct hg_classify_reg *reg;
  uint32_t *map;
  uint32_t words;
  uint64_t meta;   /* the class whose field offsets are read */
  uint32_t fovo, generic_off;
};

static uint32_t add_field(struct map_build *b, const char *name, uint32_t kind) {
  struct sw_field *f = _hg_vec_push(&b->s->fields, 1);
  if (!f) return 0;
  f->field_id = _hg_classify_string(b->reg, name);
  f->kind = kind;
  return (uint32_t)_hg_vec_len(&b->s->fields);
}

static void map_word(struct map_build *b, uint64_t off, uint32_t token) {
  if (!(off & 7) && off / 8 < b->words && token) b->map[off / 8] = token;
}

static int field_cb(void *arg, uint32_t index, const char *name, size_t len, uint32_t kind) {
  struct map_build *b = arg;
  uint64_t off;
  if (!kind || len >= 128) return 0;
  if (kind & HG_SWIFT_PARAM) { /* a reference when its argument is a class */
    uint64_t arg, ak;
    if (!b->generic_off ||
        _hg_read_word(b->s->cap, b->meta + 8ull * (b->generic_off + (kind >> 16)), &arg) ||
        _hg_read_word(b->s->cap, arg, &ak) || ak != HG_SWIFT_MK_CLASS)
      return 0;
    kind = HG_EDGE_STRONG;
  }
  if (cap_read((void *)b->s->cap, b->meta + 8ull * (b->fovo + index), &off, 8)) return 0;
  char n[128];
  memcpy(n, name, len);
  n[len] = 0;
  map_word(b, off + ((kind & HG_SWIFT_SECOND_WORD) ? 8 : 0),
           add_field(b, n, kind & ~HG_SWIFT_SECOND_WORD));
  return 0;
}

static int capture_cb(void *arg, uint32_t index, uint64_t offset, uint32_t kind) {
  struct map_build *b = arg;
  char n[24] = "capture#";
  size_t k = 8;
  if (index >= 10) n[k++] = (char)('0' + index / 10 % 10);
  n[k++] = (char)('0' + index % 10);
  n[k] = 0;
  map_word(b, offset, add_field(b, n, kind));
  return 0;
}

static void build_map(struct swift_state *s, struct hg_classify_reg *reg, struct sw_meta *e) {
  uint32_t words = e->size / 8;
  if (e->kind == SW_CONTEXT || e->kind == SW_BOX) words = MAX_MAP_WORDS / 8;
  if (words > MAX_MAP_WORDS) words = MAX_MAP_WORDS;
  uint32_t first = (uint32_t)_hg_vec_len(&s->maps);
  uint32_t *map = _hg_vec_push(&s->maps, words);
  if (!map) return;
  memset(map, 0, words * 4u);
  struct map_build b = {s, reg, map, words, e->meta, 0, 0};
  struct hg_swift_names nm = {cap_read, known, (void *)s->cap};
  if (e->kind == SW_CLASS) {
    /* the class and its superclasses: each one's own properties at the
     * offsets of its own field offset vector */
    uint64_t m = e->meta;
    for (int depth = 0; m && depth < 32; depth++) {
      uint64_t d, kind;
      struct hg_swift_desc dd;
      if (_hg_read_word(s->cap, m, &kind) || kind != HG_SWIFT_MK_CLASS ||
          _hg_read_word(s->cap, m + HG_SWIFT_DESC_NATIVE, &d) || !desc_find(s, d) ||
          _hg_swift_desc_read(d, 0, cap_read, (void *)s->cap, &dd))
        break;
      b.meta = m;
      b.fovo = dd.fovo;
      b.generic_off = dd.num_params ? dd.generic_off : 0;
      if (dd.fields && dd.num_fields)
        _hg_swift_fd_fields(dd.fields, 0, cap_read, (void *)s->cap, field_cb, &b);
      if (_hg_read_word(s->cap, m + 8, &m)) break;
    }
  } else if (e->kind == SW_CONTEXT) {
    _hg_swift_captures(&nm, e->meta, capture_cb, &b);
  } else if (e->kind == SW_BOX) {
    uint32_t off;
    uint64_t tk;
    if (!cap_read((void *)s->cap, e->meta + 8, &off, 4) && !_hg_read_word(s->cap, e->desc, &tk) &&
        tk == HG_SWIFT_MK_CLASS)
      map_word(&b, off, add_field(&b, "value", HG_EDGE_STRONG));
  } else if (e->kind == SW_SIDE) {
    map_word(&b, 0, add_field(&b, "object", HG_EDGE_WEAK));
  }
  e->map_words = words;
  __atomic_store_n(&e->map_first, first + 1, __ATOMIC_RELEASE);
}

static uint32_t swift_class_of(struct hg_classify_reg *reg, uint32_t token) {
  struct swift_state *s = reg->state;
  if (!s || !s->on || !token || token > _hg_vec_len(&s->metas)) return 0;
  struct sw_meta *e = (struct sw_meta *)s->metas.base + (token - 1);
  if (e->class_id) return e->class_id;
  static const char *const fixed[SW_NKINDS] = {
      [SW_CONTEXT] = "Swift closure context", [SW_TASK] = "Swift task",
      [SW_SIDE] = "Swift weak side table"};
  uint32_t id = 0;
  if (fixed[e->kind]) {
    if (!s->fixed_id[e->kind])
      s->fixed_id[e->kind] = _hg_classify_class(reg, fixed[e->kind], HG_CLASS_SWIFT, 0);
    id = s->fixed_id[e->kind];
  } else {
    char name[512];
    size_t at = 0;
    struct hg_swift_names nm = {cap_read, known, (void *)s->cap};
    if (e->kind == SW_CLASS) {
      if (_hg_swift_meta_name(&nm, e->meta, e->desc, 0, name, sizeof name, &at)) return 0;
    } else { /* SW_BOX */
      memcpy(name, "Swift box<", 10);
      int n = _hg_swift_type_of(&nm, e->desc, name + 10, sizeof name - 12);
      if (n < 0) return 0;
      memcpy(name + 10 + n, ">", 2);
    }
    id = _hg_classify_class(reg, name, HG_CLASS_SWIFT, e->kind == SW_CLASS ? e->size : 0);
  }
  if (!id) return 0;
  build_map(s, reg, e);
  e->class_id = id;
  return id;
}

/* ---- edges ---- */

static const uint32_t *swift_edge_map(void *st, const struct hg_cap *cap, uint32_t token,
                                      uint32_t *words) {
  (void)cap;
  struct swift_state *s = st;
  *words = 0;
  if (!s || !s->on || !token || token > _hg_vec_len(&s->metas)) return NULL;
  const struct sw_meta *e = (const struct sw_meta *)s->metas.base + (token - 1);
  uint32_t first = __atomic_load_n(&e->map_first, __ATOMIC_ACQUIRE);
  if (!first) return NULL;
  *words = e->map_words;
  return (const uint32_t *)s->maps.base + (first - 1);
}

static uint32_t swift_edge_identify(void *st, const struct hg_cap *cap, uint32_t token,
                                    uint64_t offset) {
  uint32_t words;
  const uint32_t *map = swift_edge_map(st, cap, token, &words);
  return map && !(offset & 7) && offset / 8 < words ? map[offset / 8] : 0;
}

static uint32_t swift_edge_of(struct hg_classify_reg *reg, uint32_t edge_token, uint32_t *field) {
  struct swift_state *s = reg->state;
  *field = 0;
  if (!s || !s->on || !edge_token || edge_token > _hg_vec_len(&s->fields))
    return HG_EDGE_CONSERVATIVE;
  const struct sw_field *f = (const struct sw_field *)s->fields.base + (edge_token - 1);
  *field = f->field_id;
  return f->kind;
}

static void swift_finish(struct hg_classify_reg *reg) {
  struct swift_state *s = reg->state;
  if (s) s->on = 0; /* the vectors go with the capture's scratch */
}

const struct hg_classifier _hg_classifier_swift = {
    .name = "swift",
    .prepare = swift_prepare,
    .finish = swift_finish,
    .identify = swift_identify,
    .class_of = swift_class_of,
    .edge_identify = swift_edge_identify,
    .edge_map = swift_edge_map,
    .edge_of = swift_edge_of,
};
