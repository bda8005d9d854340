/*
 * objc.h — the Objective-C classifier's portable core, shared by
 * objc_isa.c (isa decoding, tagged pointers), objc_classdata.c (a class's
 * class_ro_t facts, Swift bit), swift_fields.c (Swift stored properties
 * from the reflection metadata), objc_layout.c (ivar layout
 * strings and type encodings), objc_table.c (the class table with O(1)
 * lookups) and objc_runtime.c (reaching the GNU or Apple runtime through
 * dlsym). classify_objc.c glues them to the capture engine's hook.
 *
 * Nothing here includes an Objective-C or Apple header: the Apple path is
 * plain C compiled (and unit-tested) on every platform; the runtime's
 * functions are looked up by name at prepare time.
 *
 * Rule: the table is filled before the freeze (malloc and runtime locks
 * allowed there); everything used while frozen (_hg_objc_isa_class,
 * _hg_objc_find*, _hg_objc_ivar_at, _hg_objc_bind_id) never calls malloc
 * and only reads the table's own scratch memory.
 */
#ifndef HG_CAPTURE_OBJC_H
#define HG_CAPTURE_OBJC_H

#include <stddef.h>
#include <stdint.h>

#include "capture/internal.h"

/* ------------------------------------------------------------ objc_isa.c */

/* How an object's first word (isa) leads to its class. */
struct hg_objc_isa {
  uint64_t class_mask;   /* 0: plain isa (GNU runtime): the word is the class */
  uint64_t magic_mask;   /* non-pointer isa: (isa & magic_mask) == magic_value */
  uint64_t magic_value;
  uint64_t tag_mask;     /* value & tag_mask != 0: tagged pointer (0 = none)  */
  uint64_t ptr_mask;     /* raw (not nonpointer) isa: signature stripped with
                            this mask (arm64e; 0 = unsigned)                 */
};

enum hg_objc_arch {
  HG_OBJC_ARCH_X86_64 = 1,  /* x86_64 (macOS, simulator)                    */
  HG_OBJC_ARCH_ARM64 = 2,   /* arm64 without pointer authentication         */
  HG_OBJC_ARCH_ARM64E = 3   /* arm64e (pointer authentication)              */
};

/* Plain isa, no tagged pointers (the GNU runtime). */
void _hg_objc_isa_plain(struct hg_objc_isa *m);
enum hg_objc_os { HG_OBJC_OS_MACOS = 1, HG_OBJC_OS_IOS = 2, HG_OBJC_OS_SIMULATOR = 3 };

/* Apple's masks for the runtime's architecture and OS (used when the
 * runtime's objc_debug_* variables cannot be found), the class mask
 * limited to the OS's MACH_VM_MAX_ADDRESS as objc4 does. 0, or HG_EINVAL. */
int _hg_objc_isa_apple(struct hg_objc_isa *m, int arch, int os);
/* enum hg_objc_arch of a process from its main executable's Mach-O
 * cputype/cpusubtype (arm64e = subtype 2 under the capability bits), or 0. */
int _hg_objc_arch_of(uint32_t cputype, uint32_t cpusubtype);
/* The class pointer an isa word designates, or 0 when the word cannot be
 * an isa (misaligned, bad magic, zero). */
uint64_t _hg_objc_isa_class(const struct hg_objc_isa *m, uint64_t isa);
/* 1 when v is a tagged pointer (an object living in the pointer itself,
 * never a heap block). */
int _hg_objc_is_tagged(const struct hg_objc_isa *m, uint64_t v);
/* The bits of the runtime's tagged-pointer mask that make a word "never a
 * pointer" for the scan (hg_cap.nonptr_mask): the low tag bits only. */
uint64_t _hg_objc_nonptr_mask(uint64_t tag_mask);
/* HG_CLASS_SWIFT for Swift mangled class names (_TtC…, _TtGC…, $s…, _$s…),
 * HG_CLASS_OBJC otherwise. */
uint32_t _hg_objc_name_kind(const char *name);
/* The readable form of an ObjC-visible Swift class name: "_TtC5MyApp4View"
 * -> "MyApp.View", nested "_TtCC…" -> "MyApp.Outer.Inner", "_TtCs…" ->
 * "Swift.…", private discriminators (P<len>_…) skipped. Written to buf;
 * returns name itself for any other form (or when buf is too small). */
const char *_hg_swift_readable_name(const char *name, char *buf, size_t size);

/* ------------------------------------------------------ objc_classdata.c */

/* Reads n bytes at addr into out without faulting: 0, or nonzero when the
 * memory is not readable. */
typedef int (*hg_objc_read_fn)(void *ctx, uint64_t addr, void *out, size_t n);

struct hg_objc_data_masks {
  uint64_t rw_mask;     /* objc_debug_class_rw_data_mask                     */
  uint64_t ptr_mask;    /* arm64e signature strip (0 = unsigned pointers)    */
  uint64_t swift_bits;  /* FAST_IS_SWIFT_LEGACY | objc_debug_swift_stable_abi_bit */
};

struct hg_objc_ro {
  uint32_t ro_flags, instance_start, instance_size; /* class_ro_t, unaligned */
  int swift;            /* a Swift class (data bits)                         */
};

/* A realized class's class_ro_t facts, read through rd. 0, HG_EINVAL (bad
 * arguments) or HG_EFORMAT (unreadable, not realized, inconsistent). */
int _hg_objc_class_data(uint64_t cls, const struct hg_objc_data_masks *k, hg_objc_read_fn rd,
                        void *ctx, struct hg_objc_ro *out);
/* Where the class's ARC layouts start: word_align(instanceStart) when the
 * class data was read (have_ro) and agrees with the public facts (its
 * aligned instanceSize equals class_getInstanceSize, instanceStart <= the
 * first ivar's offset); else the first ivar's offset word-aligned (0 with
 * no ivars: min_ivar_offset UINT64_MAX). */
uint64_t _hg_objc_layout_start(const struct hg_objc_ro *ro, int have_ro, uint64_t aligned_size,
                               uint64_t min_ivar_offset);

/* -------------------------------------------------------- swift_fields.c */

/* Receives one stored property: its name and the edge kind of its first
 * word (HG_EDGE_STRONG / _WEAK / _UNOWNED, 0 = not a reference). < 0 stops. */
typedef int (*hg_swift_field_fn)(void *arg, const char *name, size_t len, uint32_t kind);
/* The edge kind of a field of mangled type m[0, n) found at addr (for
 * symbolic references, followed through rd; rd may be NULL). */
uint32_t _hg_swift_type_kind(const char *m, size_t n, uint64_t addr, hg_objc_read_fn rd,
                             void *ctx, uint64_t ptr_mask);
/* The stored properties of the Swift class at cls from its field
 * descriptor, in declaration order. The number passed to fn, 0 when the
 * class has no reflection metadata, < 0: fn's code, HG_EINVAL or
 * HG_EFORMAT (unreadable or inconsistent metadata). */
int _hg_swift_fields(uint64_t cls, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                     hg_swift_field_fn fn, void *arg);

/* --------------------------------------------------------- objc_layout.c */

/* Longest layout string we read (bytes before the terminating 0). */
#define HG_OBJC_LAYOUT_MAX 4096u

/* Apple ivar layout strings: each byte is (skip << 4) | scan, in words,
 * skip first; 0 ends the string. 1 if word `word` (counted from the start
 * the layout describes) falls in a scan run, else 0. Reads at most
 * `max_len` bytes (stops there as if terminated). NULL layout: 0. */
int _hg_objc_layout_has(const uint8_t *layout, size_t max_len, uint64_t word);
/* Expands a layout into bits[0 .. nwords) (1 = scanned word); returns the
 * number of words the layout describes (which may exceed nwords). */
uint64_t _hg_objc_layout_expand(const uint8_t *layout, size_t max_len, uint8_t *bits,
                                uint64_t nwords);
/* Object references an ivar of this type encoding holds: 1 for '@'
 * (id, @"Class", @? blocks), N for a C array "[N@]", 0 otherwise (ints,
 * '#' Class, '^@' pointers, structs). Bounded: at most 65536. */
uint32_t _hg_objc_type_refs(const char *type);

/* The edge kind for an ivar at byte `offset` with type encoding `type`,
 * given its class's ARC layouts (either may be NULL) which start at the
 * class's word-aligned instanceStart `start`: HG_EDGE_STRONG / _WEAK from
 * the layouts; without layouts (GNU runtime, Apple MRR classes) strong for
 * object types; HG_EDGE_UNOWNED for an object type in neither layout of a
 * class that has layouts (__unsafe_unretained); 0 for non-objects. */
uint32_t _hg_objc_ivar_kind(const char *type, uint64_t offset, uint64_t start,
                            const uint8_t *strong, const uint8_t *weak);

/* ---------------------------------------------------------- objc_table.c */

#define HG_OBJC_NONE UINT32_MAX

struct hg_objc_class {
  uint64_t ptr;           /* the Class pointer                               */
  uint64_t super_ptr;     /* superclass pointer (0 = root)                   */
  uint64_t instance_size;
  uint32_t name;          /* offset in the table's strings                   */
  uint32_t super;         /* superclass index, HG_OBJC_NONE = root/unknown   */
  uint32_t ivar_first;    /* own ivars: [ivar_first, ivar_first + ivar_count) */
  uint32_t ivar_count;    /*   sorted by offset by _hg_objc_table_finish     */
  uint32_t class_id;      /* writer class id; 0 until the first instance     */
  uint32_t map_first;     /* word map (see _hg_objc_bind_id): first slot + 1 */
  uint32_t map_words;     /*   and its length in words; 0 = no map          */
  uint8_t meta;           /* 1 for a metaclass: never an instance's class    */
  uint8_t kind;           /* HG_CLASS_OBJC or HG_CLASS_SWIFT                 */
  uint8_t pad[6];
};

struct hg_objc_ivar {
  uint64_t offset;        /* from the object's start                         */
  uint32_t name, type;    /* offsets in the table's strings                  */
  uint32_t field_id;      /* writer string id; 0 until the first edge        */
  uint32_t refs;          /* object words at offset (0: not an object ivar)  */
  uint32_t kind;          /* HG_EDGE_STRONG / _WEAK / _UNOWNED when refs     */
  uint32_t pad;
};

struct hg_objc_table {
  struct hg_vec classes;  /* struct hg_objc_class                            */
  struct hg_vec ivars;    /* struct hg_objc_ivar                             */
  struct hg_vec strings;  /* char                                            */
  struct hg_vec byptr;    /* uint32 slot -> class index + 1 (open addressing) */
  struct hg_vec byid;     /* uint64 slot: (class_id << 32) | index + 1       */
  struct hg_vec wordmap;  /* uint32 per instance word: ivar index + 1 or 0   */
  uint32_t bits;          /* log2 of both tables' slot count                 */
  uint32_t ready;         /* 1 after _hg_objc_table_finish                   */
  uint64_t lo, hi;        /* bounds of the non-meta class pointers [lo, hi]  */
  struct hg_objc_isa isa;
  uint64_t overflow;      /* classes/ivars dropped for want of room          */
};

/* Reserves room for up to max_classes classes (metaclasses included),
 * max_ivars ivars and max_string_bytes of names in scratch s. 0 or
 * HG_ENOMEM. */
int _hg_objc_table_init(struct hg_objc_table *t, struct hg_scratch *s, uint32_t max_classes,
                        uint32_t max_ivars, size_t max_string_bytes);
/* Adds a class; its ivars follow with _hg_objc_add_ivar. Returns the class
 * index or HG_OBJC_NONE (out of room: counted in t->overflow). */
uint32_t _hg_objc_add_class(struct hg_objc_table *t, uint64_t ptr, const char *name,
                            uint64_t instance_size, int meta, uint64_t super_ptr);
/* Adds an ivar to class `cls` (the last class added). kind is the edge
 * kind for object ivars. 0 or HG_ENOMEM / HG_EINVAL. */
int _hg_objc_add_ivar(struct hg_objc_table *t, uint32_t cls, const char *name, uint64_t offset,
                      const char *type, uint32_t kind);
/* Sorts ivars, links superclasses, builds the pointer lookup. 0 or error. */
int _hg_objc_table_finish(struct hg_objc_table *t);
/* Index of the class (or metaclass) at ptr, or HG_OBJC_NONE. O(1). */
uint32_t _hg_objc_find(const struct hg_objc_table *t, uint64_t ptr);
/* The class of a block whose first word is isa and usable size is
 * block_size: the isa must decode to a known non-meta class whose instance
 * size fits the block. Class index or HG_OBJC_NONE. */
uint32_t _hg_objc_classify_word(const struct hg_objc_table *t, uint64_t isa, uint64_t block_size);
/* Records that class index `cls` has writer id `id`, and builds the
 * class's word map (instance word -> object ivar, inherited ones included)
 * for classes up to HG_OBJC_MAP_MAX_WORDS words, so _hg_objc_ivar_fast is
 * one array read. Frozen-safe (scratch only). 0 or HG_ENOMEM / HG_EINVAL;
 * without room for the map the class is still bound (slow path). */
#define HG_OBJC_MAP_MAX_WORDS 1024u
int _hg_objc_bind_id(struct hg_objc_table *t, uint32_t cls, uint32_t id);
/* Class index bound to writer id `id`, or HG_OBJC_NONE. O(1). */
uint32_t _hg_objc_find_id(const struct hg_objc_table *t, uint32_t id);
/* The object ivar (own or inherited) holding a reference at byte `offset`
 * of an instance of class `cls`, or NULL. */
struct hg_objc_ivar *_hg_objc_ivar_at(const struct hg_objc_table *t, uint32_t cls,
                                      uint64_t offset);
/* The word map of class `cls` (instance word -> ivar index + 1, or 0) and
 * its length in *words, or NULL while it has none. May run on another
 * thread than _hg_objc_bind_id: a map is seen only once complete. */
const uint32_t *_hg_objc_map_of(const struct hg_objc_table *t, uint32_t cls, uint32_t *words);
/* The same through the class's word map when it has one. */
struct hg_objc_ivar *_hg_objc_ivar_fast(const struct hg_objc_table *t, uint32_t cls,
                                        uint64_t offset);
static inline const char *_hg_objc_str(const struct hg_objc_table *t, uint32_t off) {
  return (const char *)t->strings.base + off;
}
static inline struct hg_objc_class *_hg_objc_class_at(const struct hg_objc_table *t, uint32_t i) {
  return (struct hg_objc_class *)_hg_vec_at(&t->classes, i);
}

/* -------------------------------------------------------- objc_runtime.c */

enum hg_objc_flavor { HG_OBJC_NO_RUNTIME = 0, HG_OBJC_GNU = 1, HG_OBJC_APPLE = 2 };

/* Which runtime this process has (dlsym(RTLD_DEFAULT, …)); 0 = none. */
int _hg_objc_runtime_flavor(void);
/* Initialises t in scratch s and fills it from the runtime: every class
 * and metaclass, names, sizes, ivars and their strength; sets t->isa and
 * finishes the table. Before the freeze only (takes runtime locks, calls
 * malloc). 0, HG_ENOTFOUND (no runtime), HG_ENOMEM. */
int _hg_objc_runtime_load(struct hg_objc_table *t, struct hg_scratch *s);

/* ------------------------------------------------------ classify_objc.c */

struct hg_classifier;
/* The classifier listed in classify.c. */
extern const struct hg_classifier _hg_classifier_objc;

#endif
