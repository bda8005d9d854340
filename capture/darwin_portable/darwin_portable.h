/*
 * darwin_portable.h — the pure logic of the Darwin capture backend, kept out
 * of capture/darwin/ so it compiles and is unit-tested on Linux:
 *
 *   darwin_tags.c     VM user_tag -> vmmap-style region names and kinds
 *   thread_state.c    ARM_THREAD_STATE64 / ARM_NEON_STATE64 /
 *                     x86_THREAD_STATE64 / x86_AVX_STATE64 bytes -> register
 *                     root words, SP, and the stack range to scan
 *   image_segments.c  in-memory Mach-O load commands -> UUID, extent, and
 *                     the data segments that hold global roots
 *   zone_blocks.c     malloc-zone ranges (any order) -> sorted,
 *                     non-overlapping segments and nodes of the capture
 *   thread_set.c      suspending a task's threads until the set is stable
 *   image_file.c      type_infos of a loaded image from its file (LC_UUID)
 *   zone_policy.c     which malloc zones may be enumerated while frozen,
 *                     the busy test, unwalked zones' memory as root memory
 *
 * The layouts of the Mach structures are defined here from their published
 * field lists (sizes are checked against the SDK headers by static asserts
 * in capture/darwin/ when cross-compiling). Nothing here calls malloc.
 */
#ifndef HG_CAPTURE_DARWIN_PORTABLE_H
#define HG_CAPTURE_DARWIN_PORTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "capture/internal.h"
#include "machoparse/macho.h"

/* ------------------------------------------------------------ darwin_tags.c */

/* vmmap-style name of a VM user_tag ("MALLOC_TINY", "Stack", …); NULL for
 * tag 0 (plain VM_ALLOCATE) and for unknown tags, see _hg_darwin_tag_label. */
const char *_hg_darwin_tag_name(uint32_t tag);
/* Name for any tag: the known name, "VM_ALLOCATE" for 0, "Memory Tag N"
 * (written to buf, size >= 24) otherwise. */
const char *_hg_darwin_tag_label(uint32_t tag, char *buf, size_t size);
/* enum hg_region_kind for an anonymous region with this tag: HG_RK_HEAP for
 * the malloc tags, HG_RK_STACK for stacks, HG_RK_OTHER else. */
uint32_t _hg_darwin_tag_kind(uint32_t tag);
/* 1 for the tags libmalloc puts on the regions it owns (MALLOC_*). */
int _hg_darwin_tag_is_malloc(uint32_t tag);

/* ------------------------------------------------------------ thread_state.c */

/* Flavors and word counts (in 32-bit units), as thread_get_state takes them. */
#define HG_ARM_THREAD_STATE64 6
#define HG_ARM_THREAD_STATE64_COUNT 68u   /* x0..x28, fp, lr, sp, pc, cpsr, flags */
#define HG_ARM_NEON_STATE64 17
#define HG_ARM_NEON_STATE64_COUNT 130u    /* q0..q31, fpsr, fpcr                 */
#define HG_X86_THREAD_STATE64 4
#define HG_X86_THREAD_STATE64_COUNT 42u   /* rax … gs: 21 words                  */
#define HG_X86_AVX_STATE64 17
#define HG_X86_AVX_STATE64_COUNT 211u     /* fxsave-style area + ymm high halves */

enum hg_cpu { HG_CPU_ARM64 = 1, HG_CPU_X86_64 = 2 };

/* Byte offsets inside the states. */
#define HG_ARM_TS_FP 232u
#define HG_ARM_TS_LR 240u
#define HG_ARM_TS_SP 248u
#define HG_ARM_TS_PC 256u
#define HG_ARM_TS_FLAGS 268u
#define HG_X86_TS_RSP 56u
#define HG_X86_AVX_XMM0 168u
#define HG_X86_AVX_YMMH0 588u

/* Pointer-authentication bits are stripped from fp/lr/sp/pc (arm64e signs
 * them in the thread state) with the running system's VA mask; this one
 * (47 bits: macOS, iOS extended VA) is the default when none is known. */
#define HG_ARM64_VA_MASK 0x00007fffffffffffull
/* iOS without extended VA: T0SZ 25 -> 39-bit user addresses. */
#define HG_ARM64_VA_MASK_39 0x0000007fffffffffull

/* The VA mask from a probe: the all-ones address 0x007fffffffffffff after
 * the hardware stripped it (xpaci clears the bits above the VA size). A
 * probe that is not 2^k - 1 with 32 <= k <= 55 gives HG_ARM64_VA_MASK. */
uint64_t _hg_pac_va_mask(uint64_t probe);
/* v without its pointer-authentication bits (va_mask 0: the default). */
uint64_t _hg_pac_strip(uint64_t v, uint64_t va_mask);

/* Appends the register words of a general state (and optionally the vector
 * state; NULL/0 to skip) to regs[] (up to max), sets *sp; arm64 fp/lr/sp
 * are stripped with va_mask (0: HG_ARM64_VA_MASK). Returns the number of
 * words written, or 0 when a state is too short for its layout. */
uint32_t _hg_thread_state_regs(int cpu, const void *gp, size_t gp_bytes, const void *vec,
                               size_t vec_bytes, uint64_t va_mask, uint64_t *regs, uint32_t max,
                               uint64_t *sp);

/* sizeof(struct _opaque_pthread_t) on LP64 (sys/_pthread/_pthread_types.h:
 * __PTHREAD_SIZE__ 8176 + sig + cleanup stack). */
#define HG_DARWIN_PTHREAD_SIZE 8192u
/* TLS root range of a thread: its pthread_t struct [pthread, pthread +
 * size) clipped to the VM region [rlo, rhi) that holds it. 1 and [*lo,
 * *hi), or 0 (no pthread, misaligned, outside the region). */
int _hg_darwin_tls_range(uint64_t pthread, uint64_t size, uint64_t rlo, uint64_t rhi,
                         uint64_t *lo, uint64_t *hi);

/* Stack range to scan: from sp minus the red zone (128 bytes on both ABIs)
 * up to the stack top. The stack is [top - size, top) as pthread reports it
 * when known (top or size 0 = unknown), else the VM region [rlo, rhi)
 * containing sp (0/0 = unknown). Returns 1 and [*lo, *hi), or 0 when sp is
 * not inside the stack. */
int _hg_stack_range(uint64_t sp, uint64_t top, uint64_t size, uint64_t rlo, uint64_t rhi,
                    uint64_t *lo, uint64_t *hi);

/* ------------------------------------------------------------ thread_set.c */

/* The task's threads as the freeze sees them (Mach: thread ports). */
struct hg_tset_ops {
  /* Lists the threads into ids[0 .. max), their number in *n; when *n >
   * max, only the first max were stored (and hold references). 0 or HG_E*. */
  int (*list)(void *ctx, uint32_t *ids, uint32_t max, uint32_t *n);
  int (*suspend)(void *ctx, uint32_t id); /* 0, or nonzero: thread gone     */
  void (*resume)(void *ctx, uint32_t id);
  void (*release)(void *ctx, uint32_t id); /* drops list()'s reference      */
  uint64_t (*now)(void *ctx);              /* monotonic nanoseconds         */
};

struct hg_tset {
  uint32_t *held;          /* suspended threads, in suspension order       */
  uint32_t nheld, max;
  uint32_t *scratch;       /* list buffer                                  */
  uint32_t scratch_max;
  uint32_t self;           /* the capturing thread: never suspended        */
  uint32_t passes;         /* list() calls of the last freeze (and after)  */
};

/* One pass: suspends the listed threads not yet held. Number added, or
 * HG_ELIMIT (more threads than max / scratch_max) or list()'s error. */
int _hg_tset_pass(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx);
/* Passes until one adds nobody. 0, or HG_ETIMEOUT (now() > deadline
 * while threads keep appearing) / HG_ELIMIT / error, with every held thread
 * resumed and released. */
int _hg_tset_freeze(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx, uint64_t deadline);
/* Resumes and releases every held thread. */
void _hg_tset_thaw(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx);

/* ------------------------------------------------------------ image_segments.c */

#define HG_MACHO_MAX_SEGS 16

struct hg_macho_seg {
  char name[17];
  uint64_t vmaddr, vmsize;    /* unslid                                  */
  uint32_t initprot;
  int root;                   /* 1: a global-root segment                */
};

struct hg_macho_info {
  uint32_t cputype, filetype, ncmds;
  uint8_t uuid[16];
  int has_uuid;
  uint64_t text_vmaddr;       /* __TEXT vmaddr (slide = header - this)   */
  uint64_t lo, hi;            /* unslid extent of all segments (no __PAGEZERO) */
  uint32_t nsegs;             /* segments kept (first HG_MACHO_MAX_SEGS) */
  struct hg_macho_seg segs[HG_MACHO_MAX_SEGS];
};

/* 1 for the segments whose words are global roots: __DATA, __DATA_CONST,
 * __DATA_DIRTY (also __AUTH, __AUTH_CONST: arm64e's data segments). */
int _hg_macho_is_root_segment(const char *segname16);
/* Parses a 64-bit Mach-O header and load commands held in hdr[0..avail).
 * Every command is bounds-checked against avail and sizeofcmds. 0, or
 * HG_EFORMAT (not a 64-bit Mach-O, or a command runs past the end). */
int _hg_macho_parse(const uint8_t *hdr, size_t avail, struct hg_macho_info *out);

/* ------------------------------------------------------------ zone_blocks.c */

/* One enumerated block; first field is the sort key. */
struct hg_zblock {
  uint64_t addr, size;
  uint64_t heap;              /* writer heap id of its zone              */
};

/* Turns blocks (in any order, possibly duplicated or overlapping) into
 * capture segments and nodes: sorts them in place, drops duplicates,
 * overlaps, misaligned or empty blocks (counted in c->heap_errors, except
 * exact duplicates reported by two zones), and gives each run of blocks in
 * one VM region and one zone a segment spanning that region (clipped to
 * the previous segment). Regions must already be in c->regions. 0 or error. */
int _hg_zone_blocks_commit(struct hg_cap *c, struct hg_zblock *blocks, size_t n);

/* ------------------------------------------------------------ image_file.c */

/* Opens, in img, the slice of the Mach-O file data[0, size) (thin or fat)
 * whose LC_UUID is uuid. 0, HG_ENOTFOUND (no slice matches), HG_EFORMAT. */
int _hg_macho_open_matching(struct macho_image *img, const void *data, uint64_t size,
                            const uint8_t uuid[16]);
/* Receives one class type_info: its address in the process and its mangled
 * name (without "_Z"). < 0 stops the walk with that code. */
typedef int (*hg_typeinfo_fn)(void *ctx, uint64_t ti, const char *name, size_t len);
/* LC_ENCRYPTION_INFO(_64) of a Mach-O header (file or loaded): cryptid 0
 * = not encrypted (yet); present 0 = no such command. */
struct hg_macho_crypt {
  int present;
  uint32_t cryptoff, cryptsize, cryptid;
};
/* Reads it from the header and load commands in hdr[0, avail), bounded:
 * 0, or HG_EFORMAT (not a 64-bit header, commands out of bounds). */
int _hg_macho_crypt_info(const uint8_t *hdr, size_t avail, struct hg_macho_crypt *out);
struct hg_typeinfo_stats {
  uint32_t candidates;       /* class type_infos passed to add             */
  uint32_t names_memory;     /* ... whose name was read in the loaded image */
  uint32_t names_unreadable; /* dropped: not in memory, and the file's copy
                                missing or in its encrypted range          */
  uint32_t cryptid;          /* the file's LC_ENCRYPTION_INFO cryptid      */
};
/* Every class type_info of img (file or loaded), at vmaddr + slide. Names
 * are read in mem (the loaded image, may be NULL) at their unslid address
 * first; img's own copy only where mem lacks it and img is not encrypted
 * there. st (may be NULL) gets the counts. The number passed to add, or
 * < 0: add's code, or HG_EFORMAT when the fixups could not be read at all
 * (a loaded image with chained fixups: open its file). */
int _hg_macho_typeinfos(const struct macho_image *img, const struct macho_image *mem,
                        uint64_t slide, hg_typeinfo_fn add, void *ctx,
                        struct hg_typeinfo_stats *st);

/* ------------------------------------------------------------ zone_policy.c */

enum hg_zone_plan_kind {
  HG_ZONE_WALK = 0,          /* enumerate while frozen (after the busy test) */
  HG_ZONE_NO_ENUMERATOR = 1, /* nothing to call                              */
  HG_ZONE_NO_LOCK_QUERY = 2, /* zone_locked NULL or version < 5 (xzone …)    */
  HG_ZONE_NANO = 3           /* nano v2: the enumerator allocates            */
};

struct hg_zone_facts {
  const char *name;          /* zone_name (may be NULL)                      */
  uint32_t version;          /* malloc_zone_t.version                        */
  int has_enumerator;        /* introspect && introspect->enumerator         */
  int has_zone_locked;       /* introspect->zone_locked != NULL              */
  int helper_present;        /* some zone is named "MallocHelperZone"        */
};

/* What the freeze protocol does with a zone (enum hg_zone_plan_kind). */
int _hg_zone_plan(const struct hg_zone_facts *f);
/* Why a zone is not walked, NULL for HG_ZONE_WALK. */
const char *_hg_zone_plan_reason(int plan);
/* The snapshot's heap name: the zone's, plus " (not walked: why)". */
const char *_hg_zone_heap_name(const char *zone, int plan, char *buf, size_t size);
/* 1 when the stack-logging lock (msl_locked, may be NULL) or a lock of a
 * zone planned HG_ZONE_WALK (zone_locked(ctx, i)) is held. */
int _hg_zones_busy(const uint8_t *plans, uint32_t n, int (*zone_locked)(void *ctx, uint32_t i),
                   int (*msl_locked)(void *ctx), void *ctx);
/* A VM range a walked zone reported as its own region. */
struct hg_zrange {
  uint64_t lo, hi;
};
/* Malloc regions (HG_RK_HEAP) that hold no enumerated segment and overlap
 * none of the claimed ranges (sorted here in place; NULL = unknown, e.g.
 * the table overflowed) become anonymous HG_RK_OTHER: scanned
 * conservatively as root memory. Regions and segments must be sorted.
 * Returns how many. */
uint32_t _hg_zone_demote_unwalked(struct hg_cap *c, struct hg_zrange *claimed, size_t nclaimed);

#endif
