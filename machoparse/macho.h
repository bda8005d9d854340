/*
 * macho.h — machoparse: a bounds-checked reader of 64-bit Mach-O images, their
 * fixups (LC_DYLD_INFO opcode streams and LC_DYLD_CHAINED_FIXUPS) and the C++
 * type_info objects those fixups reveal. Internal to libheapgraph (names are
 * `macho_`, not exported); used by the CLI (`heapgraph macho`) and by the
 * Darwin capture backend.
 *
 * Properties every function here keeps:
 *   - Never calls malloc and keeps no global state: all state lives in the
 *     caller's structs (struct macho_image ≈ 5 KB, iterators < 2 KB), so it
 *     can run while the heap is frozen and from several threads at once.
 *   - Treats the input as hostile: every offset, count, ULEB/SLEB, ordinal
 *     and chain `next` is checked; work per iterator is bounded by the size
 *     of the image (runaway opcode loops and cyclic chains are errors).
 *   - Errors are HG_E* codes (include/heapgraph.h) with a message that names
 *     the byte offset (from the start of the file, fat header included).
 *
 * Inputs:
 *   macho_open_file()   a byte range holding a thin or fat file; a fat file's
 *                       slice is chosen by arch name ("arm64", "arm64e",
 *                       "x86_64", "x86_64h"), or NULL = x86_64 if present,
 *                       else the first slice.
 *   macho_open_loaded() an image already mapped by dyld: its mach_header and
 *                       slide. File offsets are translated through the
 *                       segments (data at fileoff F of segment S lives at
 *                       header + S.vmaddr - text.vmaddr + F - S.fileoff).
 *                       Opcode streams are in __LINKEDIT and work there;
 *                       chained-fixup *chains* are overwritten by dyld while
 *                       it binds, so for chained images iterate over the
 *                       on-disk file instead and add the slide to addresses.
 *
 * Strings returned (symbol, dylib and section names) point into the input and
 * stay valid as long as it does; they are checked to be NUL-terminated inside
 * their table.
 */
#ifndef HG_MACHOPARSE_MACHO_H
#define HG_MACHOPARSE_MACHO_H

#include <stddef.h>
#include <stdint.h>

#define MACHO_MAX_SEGMENTS 32
#define MACHO_MAX_DYLIBS 512

struct macho_error {
  int code;            /* HG_E*, 0 = none                                     */
  uint64_t offset;     /* byte offset in the file where the problem was found */
  char message[192];   /* "…: at offset 0x1234" style text                    */
};

struct macho_range { uint32_t off, size; };  /* file offsets within the slice */

struct macho_segment {
  char name[17];
  uint32_t index;
  uint64_t vmaddr, vmsize, fileoff, filesize;
  uint32_t maxprot, initprot, flags;
  uint32_t nsects;
  uint32_t sect_hdr;   /* slice offset of its first section_64 header         */
  uint32_t first_section; /* global index of its first section (0-based)      */
};

struct macho_section {
  char segname[17], sectname[17];
  uint64_t addr, size;
  uint32_t offset, flags;
  uint32_t segment;    /* segment index                                       */
};

struct macho_image {
  /* Input. */
  const uint8_t *file;       /* whole file (file mode), NULL when loaded     */
  uint64_t file_size;
  uint64_t slice_off;        /* offset of this slice in the file             */
  uint64_t slice_size;
  const uint8_t *header;     /* the mach_header (slice start / in memory)    */
  int loaded;                /* 1 = macho_open_loaded                        */
  uint64_t slide;
  /* Header. */
  uint32_t cputype, cpusubtype, filetype, ncmds, sizeofcmds, flags;
  const char *arch;          /* "arm64", "arm64e", "x86_64", "x86_64h"       */
  /* Identity and versions. */
  int has_uuid;
  uint8_t uuid[16];
  uint32_t platform;         /* LC_BUILD_VERSION platform, or 1/2/3/4 from version-min */
  uint32_t minos, sdk;       /* xxxx.yy.zz nibbles as stored                 */
  const char *install_name;  /* LC_ID_DYLIB, or NULL                         */
  /* Segments (in load-command order) and the text base. */
  uint32_t segment_count, section_count;
  struct macho_segment segments[MACHO_MAX_SEGMENTS];
  uint64_t base_vmaddr;      /* vmaddr of the segment mapping file offset 0  */
  /* Dylibs, ordinal 1 = dylib_name[0]. */
  uint32_t dylib_count;
  uint32_t dylib_name_off[MACHO_MAX_DYLIBS]; /* slice offsets of the names   */
  /* Linkedit tables (sizes 0 when absent). */
  struct macho_range symtab_syms, symtab_strs; /* nlist_64 array, strings    */
  uint32_t nsyms;
  uint32_t dysymtab_nindirect;
  int has_dyld_info, has_chained, has_exports_trie;
  int threaded;                /* bind opcodes start with BIND_OPCODE_THREADED:
                                  data pointers are arm64e chain entries      */
  struct macho_range rebase, bind, weak_bind, lazy_bind, exports;
  struct macho_range chained;  /* LC_DYLD_CHAINED_FIXUPS blob                */
  struct macho_error err;      /* why macho_open_* failed                    */
};

/* ---------------------------------------------------------------- Opening */

/* Opens a thin or fat 64-bit Mach-O held in data[0, size). `arch` selects a
 * fat slice (NULL: see above). 32-bit, big-endian and unknown inputs are
 * refused (HG_EUNSUPPORTED / HG_EFORMAT). On failure img->err says why. */
int macho_open_file(struct macho_image *img, const void *data, uint64_t size, const char *arch);

/* Opens an image mapped in this process at `header` with `slide`. */
int macho_open_loaded(struct macho_image *img, const void *header, uint64_t slide);

/* Names the architecture of cputype/cpusubtype ("arm64e"…) or NULL. */
const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype);

/* Lists the slices of a fat file: up to `max` arch names (NULL for unknown
 * types) into names[]; returns the slice count, 0 for a thin file, or <0. */
int macho_fat_archs(const void *data, uint64_t size, const char **names, int max,
                    struct macho_error *err);

/* ---------------------------------------------------------------- Lookups */

/* Pointer to `size` bytes at slice offset `off`, or NULL if out of range. */
const uint8_t *macho_bytes(const struct macho_image *img, uint64_t off, uint64_t size);

/* Segment/section containing unslid vmaddr, or NULL. */
const struct macho_segment *macho_segment_at(const struct macho_image *img, uint64_t vmaddr);
int macho_section_get(const struct macho_image *img, uint32_t index, struct macho_section *out);
/* Section containing vmaddr within segment `seg`: 0 and *out, or HG_ENOTFOUND. */
int macho_section_at(const struct macho_image *img, uint32_t seg, uint64_t vmaddr,
                     struct macho_section *out);

/* Install name of library `ordinal` (1-based), NULL when out of range. */
const char *macho_dylib_name(const struct macho_image *img, int64_t ordinal);
/* The short name llvm-objdump shows for an install name ("libSystem",
 * "Foundation"); writes at most cap bytes (NUL included) into buf. */
const char *macho_dylib_short_name(const char *install_name, char *buf, size_t cap);

/* Reads the 8-byte pointer stored at unslid vmaddr as a rebase: *value gets
 * the unslid pointer with its high byte at bits 56..63 (as llvm-objdump
 * shows it: bit 63 marks a non-unique RTTI name), *target the same without
 * that byte. Plain file value for LC_DYLD_INFO images, decoded chain entry
 * for chained images (HG_EFORMAT if the slot is a bind), live value minus the
 * slide (PAC bits stripped) for loaded images. Either out pointer may be NULL. */
int macho_read_pointer(const struct macho_image *img, uint64_t vmaddr, uint64_t *target,
                       uint64_t *value, struct macho_error *err);

/* NUL-terminated string at unslid vmaddr, or NULL if not inside a segment's
 * file-backed bytes. */
const char *macho_string_at(const struct macho_image *img, uint64_t vmaddr);

/* ---------------------------------------------------------------- Fixups */

enum macho_fixup_kind {
  MACHO_FIXUP_REBASE = 1,
  MACHO_FIXUP_BIND = 2,
  MACHO_FIXUP_WEAK_BIND = 3,
  MACHO_FIXUP_LAZY_BIND = 4
};

/* Which tables an iterator walks (bit mask). */
enum macho_fixup_source {
  MACHO_SRC_REBASE = 1,     /* rebase opcodes                             */
  MACHO_SRC_BIND = 2,       /* bind opcodes (incl. threaded apply chains)  */
  MACHO_SRC_WEAK_BIND = 4,  /* weak-bind opcodes                          */
  MACHO_SRC_LAZY_BIND = 8,  /* lazy-bind opcodes                          */
  MACHO_SRC_CHAINED = 16,   /* LC_DYLD_CHAINED_FIXUPS chains              */
  MACHO_SRC_ALL = 31
};

enum macho_fixup_flag {
  MACHO_FIXUP_WEAK_IMPORT = 1,  /* symbol may be missing at runtime         */
  MACHO_FIXUP_STRONG = 2,       /* weak-bind "non-weak definition": no location */
  MACHO_FIXUP_AUTH = 4,         /* arm64e signed pointer (key, diversity)   */
  MACHO_FIXUP_THREADED = 8,     /* from BIND_OPCODE_THREADED_APPLY          */
  MACHO_FIXUP_ADDR_DIV = 16     /* auth: address diversity                  */
};

struct macho_fixup {
  uint32_t kind;            /* enum macho_fixup_kind                          */
  uint32_t flags;           /* enum macho_fixup_flag                          */
  uint32_t segment;         /* segment index (UINT32_MAX for STRONG entries)  */
  uint32_t type;            /* REBASE/BIND_TYPE_* (1 pointer, 2 abs32, 3 rel32) */
  uint64_t vmaddr;          /* unslid address of the fixed-up location        */
  uint64_t file_off;        /* its offset in the file (0 if not file-backed)  */
  int64_t ordinal;          /* bind: library ordinal (0 self, <0 special)     */
  const char *symbol;       /* bind: symbol name                              */
  int64_t addend;           /* bind: effective addend (import + pointer)      */
  uint64_t target;          /* chained/threaded rebase: unslid target with high8 at bits 56..63 */
  uint64_t raw;             /* chained/threaded: the raw 64-bit pointer       */
  uint32_t pointer_format;  /* chained: DYLD_CHAINED_PTR_*; threaded: 1       */
  uint16_t diversity;       /* auth only                                      */
  uint8_t key;              /* auth only: 0 IA, 1 IB, 2 DA, 3 DB              */
};

/* Opcode-stream state (one stream at a time). */
struct macho_opcode_state {
  uint32_t start, end, pos;  /* slice offsets of the stream                */
  uint32_t kind;             /* fixup kind this stream yields              */
  uint32_t seg;
  int seg_set;
  uint64_t seg_off;
  uint32_t type, sym_flags;
  int64_t ordinal, addend;
  const char *symbol;
  uint64_t repeat, skip;     /* pending DO_*_TIMES work                    */
  uint32_t op_pos;           /* offset of the opcode being executed        */
  uint64_t budget;           /* fixups still allowed (runaway-loop guard)  */
  int done;
  /* BIND_OPCODE_THREADED */
  int threaded;              /* ordinal table started                      */
  uint32_t table_size, table_count, table_start;
  int in_chain;              /* walking a THREADED_APPLY chain             */
  uint64_t chain_off;        /* segment offset of the next chain entry     */
};

/* Chained-fixups state. */
struct macho_chained_state {
  uint32_t blob, blob_size;      /* the LC_DYLD_CHAINED_FIXUPS data         */
  uint32_t starts, imports, symbols, imports_count, imports_format;
  uint32_t seg_count, seg_i;     /* segment being walked                    */
  uint32_t seg_starts;           /* slice offset of its starts_in_segment   */
  uint32_t seg_info_size;
  uint16_t page_size, pointer_format, page_count;
  uint32_t page_i;
  uint32_t multi_i;              /* index into page_start[] for MULTI pages */
  int multi;
  int in_chain;
  uint64_t seg_vmoff;            /* segment_offset from the header          */
  uint64_t loc;                  /* vm offset of the next chain entry       */
  uint64_t page_end;             /* vm offset the chain must stay below     */
  uint32_t stride;
  uint32_t seg_index;            /* image segment matching seg_i            */
  int done;
};

struct macho_fixup_iter {
  const struct macho_image *img;
  unsigned sources;          /* remaining enum macho_fixup_source bits     */
  unsigned current;          /* source being walked (0 = pick next)        */
  struct macho_opcode_state op;
  struct macho_chained_state ch;
  /* Small direct-mapped cache of threaded ordinal-table entries. */
  struct { uint32_t index; int valid; int64_t ordinal, addend; const char *symbol;
           uint32_t flags; } tcache[16];
  struct macho_error err;
};

/* Starts iterating over the fixups of `sources` (bit mask), in order: rebase,
 * bind, weak, lazy opcode streams, then chained fixups; tables the image
 * lacks are skipped. Within a table, fixups come in table order. */
void macho_fixups_begin(struct macho_fixup_iter *it, const struct macho_image *img,
                        unsigned sources);
/* 1 and *out = the next fixup, 0 at the end, or <0 (HG_E*, it->err says
 * where). After an error the iterator stays at the end. */
int macho_fixups_next(struct macho_fixup_iter *it, struct macho_fixup *out);

/* Decodes one chained pointer of `format` at vm offset `vmoff` (from the
 * header): fills kind/target/ordinal(=import index)/addend/flags/… of *out
 * and *next (bytes to the next entry, 0 = end of chain). For the generator,
 * the tests and the iterator. Returns 0 or HG_EUNSUPPORTED for unknown formats. */
int macho_chained_decode(uint32_t format, uint64_t raw, uint64_t base_vmaddr,
                         struct macho_fixup *out, uint64_t *next);

/* Decodes the chained-fixup slot at unslid vmaddr of a chained image (bind
 * with its import resolved, or rebase): 0 and *out, HG_ENOTFOUND if the
 * address has no chained fixups, or another HG_E* (err says where). */
int macho_chained_fixup_at(const struct macho_image *img, uint64_t vmaddr, struct macho_fixup *out,
                           struct macho_error *err);

/* --------------------------------------------------------------- Symbols */

/* A defined symbol of the LC_SYMTAB table (nlist_64 with type N_SECT). */
struct macho_symbol {
  const char *name;         /* as stored: C and C++ names keep Mach-O's '_'   */
  uint64_t addr;            /* unslid address (n_value); markers such as
                               __mh_execute_header lie outside their section */
  uint32_t section;         /* 0-based global section index (n_sect - 1)      */
  uint8_t type;             /* n_type (N_EXT 0x01, N_PEXT 0x10 …)             */
  uint16_t desc;            /* n_desc                                         */
};

struct macho_symbol_iter {
  const struct macho_image *img;
  uint32_t next;            /* index of the next nlist_64 entry               */
  struct macho_error err;
};

/* Walks the defined symbols in table order (stabs, undefined, absolute and
 * indirect entries skipped): 1 and *out, 0 at the end, or <0 (HG_E*, it->err
 * names the entry's file offset) for an entry whose name or section number
 * is out of range; the iterator then stays at the end. */
void macho_symbols_begin(struct macho_symbol_iter *it, const struct macho_image *img);
int macho_symbols_next(struct macho_symbol_iter *it, struct macho_symbol *out);

/* The symbol a code address belongs to: the defined symbol with the highest
 * address <= vmaddr inside the section that contains vmaddr (a linear walk of the
 * table; callers with many lookups sort the iterator's output instead).
 * 0 and *out, HG_ENOTFOUND, or <0 on a malformed table (*err, may be NULL). */
int macho_symbol_at(const struct macho_image *img, uint64_t vmaddr, struct macho_symbol *out,
                    struct macho_error *err);

/* ------------------------------------------------------------- type_info */

enum macho_typeinfo_kind {
  MACHO_TI_CLASS = 0,     /* __class_type_info      */
  MACHO_TI_SI_CLASS = 1,  /* __si_class_type_info   */
  MACHO_TI_VMI_CLASS = 2, /* __vmi_class_type_info  */
  MACHO_TI_POINTER = 3,   /* __pointer_type_info    */
  MACHO_TI_FUNCTION = 4   /* __function_type_info   */
};

struct macho_typeinfo {
  uint64_t vmaddr;        /* unslid address of the type_info object          */
  uint32_t kind;          /* enum macho_typeinfo_kind                        */
  int non_unique;         /* bit 63 of the name pointer was set              */
  uint64_t name_addr;     /* unslid address of the mangled name              */
  const char *name;       /* mangled name without "_Z" ("4Male"), or NULL    */
  const char *name_symbol; /* when the name slot is a bind (chained x86_64,
                              weak-def names): its symbol "__ZTS4Male"; name
                              then points inside it and name_addr is 0       */
};

/* Type_info iterator: filters binds from a fixup iterator. */
struct macho_typeinfo_iter {
  struct macho_fixup_iter fx;
  struct macho_error err;
};

/* Which cxxabi vtable a bind symbol names (with Mach-O's leading '_'),
 * or -1. */
int macho_typeinfo_vtable_kind(const char *symbol);

void macho_typeinfo_begin(struct macho_typeinfo_iter *it, const struct macho_image *img);
/* 1 and *out, 0 at the end, <0 on a malformed image (it->err). A type_info
 * whose name cannot be resolved is still returned with name == NULL. */
int macho_typeinfo_next(struct macho_typeinfo_iter *it, struct macho_typeinfo *out);

/* ------------------------------------------------------------- internals */

/* Fills *err with code, file offset and printf-style text (" at offset 0x…"
 * is appended). Returns code. */
int macho_fail(struct macho_error *err, int code, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
