/*
 * cxxabi.h — the portable Itanium C++ ABI core shared by the Linux and
 * Darwin capture backends: a bounded set of the process's type_info objects
 * (O(1) lookup by address) and the check "is this word the primary vptr of a
 * complete object, and of which class?".
 *
 * Format-neutral: the platform discovers type_info objects (ELF relocations
 * on Linux, Mach-O binds on Darwin) and feeds them with _hg_cxx_set_add*();
 * it also declares the image ranges (any readable image memory: where names
 * may live) and the read-only ranges (read-only or RELRO data: where vtables
 * may live).
 *
 * Life cycle: init → add ranges/type_infos (before the freeze; mmap only,
 * never malloc) → seal → _hg_cxx_check() while frozen (no allocation, every
 * read of process memory through the caller's validated reader) → free.
 */
#ifndef HG_CXXABI_H
#define HG_CXXABI_H

#include <stddef.h>
#include <stdint.h>

/* Reads one 8-byte word at addr; 0 and *out on success, -1 if unreadable.
 * Implementations validate addr first: they never touch unmapped memory. */
typedef int (*hg_cxx_read_fn)(void *ctx, uint64_t addr, uint64_t *out);

/* One known type_info. class_id is free for the caller (lazy registration). */
struct hg_cxx_type {
  uint64_t ti;          /* address of the type_info object (0 = empty slot) */
  uint32_t name;        /* offset of its mangled name in the string pool    */
  uint32_t class_id;    /* caller's: 0 = not registered yet                 */
  uint32_t slab_class_id; /* caller's: class of slabs that start with it    */
  uint32_t census;      /* caller's: objects counted inside slabs           */
};

struct hg_cxx_range {
  uint64_t lo, hi;
};

#define HG_CXX_MAX_TYPES (1u << 22)     /* hard bound of the set            */
#define HG_CXX_MAX_RANGES 4096u         /* of each range list               */
#define HG_CXX_MAX_POOL (64u << 20)     /* bytes of names                   */
#define HG_CXX_MAX_NAME 4096u           /* longest accepted mangled name    */
/* Class name of blocks that hold many objects, the first of class T:
 * HG_CXX_SLAB_PREFIX + T's mangled name (shown "slab starting with T");
 * capture number HG_CXX_CENSUS_PREFIX + T's mangled name: objects of T
 * counted inside such blocks (docs/cxx-types.md). */
#define HG_CXX_SLAB_PREFIX "slab:"
#define HG_CXX_CENSUS_PREFIX "cxx_census:"

struct hg_cxx_set {
  struct hg_cxx_type *slots;  /* open addressing, power-of-two capacity    */
  uint32_t cap, count, bits;
  char *pool;                 /* NUL-terminated names; offset 0 = ""        */
  size_t pool_used, pool_cap;
  struct hg_cxx_range *ro;    /* read-only / RELRO data (vtables)           */
  uint32_t nro;
  struct hg_cxx_range *img;   /* readable image memory (names)              */
  uint32_t nimg;
  uint64_t ro_min, ro_max;    /* bounds of ro[] for a fast reject           */
  int sealed;
  int external;               /* storage moved into a caller's buffer       */
  uint64_t rejected;          /* adds refused (bad name, out of range …)    */
  uint64_t duplicates;        /* adds of an address already present         */
  uint64_t bytes;             /* mapped bytes (for stats)                   */
};

/* 0 or HG_ENOMEM. The set is empty and unsealed. */
int _hg_cxx_set_init(struct hg_cxx_set *s);
void _hg_cxx_set_free(struct hg_cxx_set *s);

/* Declares [lo, hi) as readable memory of a loaded image (names may live
 * there). 0, HG_EINVAL (empty/overflow), HG_ELIMIT (too many ranges). */
int _hg_cxx_set_add_image_range(struct hg_cxx_set *s, uint64_t lo, uint64_t hi);
/* Declares [lo, hi) as read-only or RELRO data of a loaded image (vtables
 * may live there). Same returns. */
int _hg_cxx_set_add_ro_range(struct hg_cxx_set *s, uint64_t lo, uint64_t hi);

/* Adds a type_info at `ti` whose name pointer is `name_ptr` (bit 63, Apple's
 * non-unique RTTI flag, is ignored). The name must lie inside a declared
 * image range and be a plausible NUL-terminated mangled class name; it is
 * read with `read` (call after every image range is declared). A leading
 * '*' (GCC's mark for internal-linkage types) is dropped. Returns 1 if
 * added, 0 if already present or refused as implausible, HG_ENOMEM/HG_ELIMIT
 * when the set is full. */
int _hg_cxx_set_add(struct hg_cxx_set *s, uint64_t ti, uint64_t name_ptr, hg_cxx_read_fn read,
                    void *ctx);
/* The same with the name already in hand (e.g. parsed from a file). */
int _hg_cxx_set_add_name(struct hg_cxx_set *s, uint64_t ti, const char *name, size_t len);

/* Sorts and merges the range lists. Call once after the last add. */
void _hg_cxx_set_seal(struct hg_cxx_set *s);

/* Moving a sealed set into one buffer of the caller's (e.g. capture scratch,
 * which the capture knows as its own memory and never reports or scans):
 * bytes needed, then the move (the set's own mappings are unmapped; free
 * then leaves the buffer alone). 0, or HG_EINVAL (unsealed / too small). */
size_t _hg_cxx_set_compact_size(const struct hg_cxx_set *s);
int _hg_cxx_set_compact(struct hg_cxx_set *s, void *buf, size_t bytes);

/* The entry for type_info address ti, or NULL. O(1) expected. */
struct hg_cxx_type *_hg_cxx_set_find(const struct hg_cxx_set *s, uint64_t ti);
static inline const char *_hg_cxx_name(const struct hg_cxx_set *s, const struct hg_cxx_type *t) {
  return s->pool + t->name;
}

/* 1 if [addr, addr+len) lies inside one declared read-only range. */
int _hg_cxx_in_ro(const struct hg_cxx_set *s, uint64_t addr, uint64_t len);
/* 1 if [addr, addr+len) lies inside one declared image range. */
int _hg_cxx_in_image(const struct hg_cxx_set *s, uint64_t addr, uint64_t len);

/* Plausible type_info name of a class type: [*](digit|N|S|Z) then mangling
 * characters only, 2..HG_CXX_MAX_NAME bytes. */
int _hg_cxx_plausible_name(const char *name, size_t len);

/* The classification: is `vptr` (a block's first word) the primary vptr of
 * a complete object? It must be 8-aligned and lie in a read-only range with
 * the two words before it there too; vptr[-2] (offset-to-top) must be 0 and
 * vptr[-1] a known type_info. Reads only through `read`. Returns the type
 * or NULL. Never allocates. */
struct hg_cxx_type *_hg_cxx_check(const struct hg_cxx_set *s, uint64_t vptr, hg_cxx_read_fn read,
                                  void *ctx);

/* ---- discovery: every loaded image's type_infos into a set ---- */

/* What discovery found (for stats and tests). */
struct hg_cxx_discovery {
  uint32_t images;          /* images looked at                              */
  uint32_t images_symbolic; /* with relocations against the cxxabi vtables  */
  uint32_t images_scanned;  /* where the vtables were defined: data scanned */
  uint32_t images_structural; /* vtables found without symbols (stripped)   */
  uint64_t candidates;      /* type_info candidates met                      */
  uint64_t ns;              /* time spent                                   */
};

/* Fills s with every loaded image's ranges and type_infos (the backend's
 * _hg_plat_cxx_images, capture/platform.h), then seals it; d (may be NULL)
 * gets what was found and the time spent. 0 or a negative HG_E* code (a
 * partial set still classifies what it holds). In capture/classify/classify_cxx.c. */
int _hg_cxx_discover(struct hg_cxx_set *s, struct hg_cxx_discovery *d);

#endif
