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
 *                     the busy test, unwalked zones' memory as root memory,
 *                     the walk redone when the kernel made a thread
 *   zone_ranges.c     one enumerator recorder call -> blocks and regions
 *   nano_walk.c       nano v2's live blocks from its own metadata
 *   mlog.c            the malloc_logger hook's per-thread state (TSD
 *                     slots, never a thread-local variable) and chaining
 *   mlog_event.c      one malloc_logger call -> live-map add / remove
 *   zone_recorded.c   the live map's blocks of zones that are not walked
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
/* 1 when the task now has a thread outside the held set (the kernel made
 * one since the freeze: it runs), 0 when not, or list()'s error. Suspends
 * nothing; releases every reference it got. */
int _hg_tset_changed(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx);

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
  uint64_t heap;              /* writer heap id of its zone, and
                                 HG_ZBLOCK_RECORDED                      */
};
/* The block comes from the allocation recorder's live map, not a walk: its
 * segment is marked recorded (struct hg_segment). */
#define HG_ZBLOCK_RECORDED (1ull << 32)

/* Turns blocks (in any order, possibly duplicated or overlapping) into
 * capture segments and nodes: sorts them in place, drops duplicates,
 * overlaps, misaligned or empty blocks (counted in c->heap_errors, except
 * exact duplicates reported by two zones), and gives each run of blocks in
 * one VM region and one zone a segment spanning that region (clipped to
 * the previous segment). Regions must already be in c->regions. 0 or error. */
int _hg_zone_blocks_commit(struct hg_cap *c, struct hg_zblock *blocks, size_t n);

/* ------------------------------------------------------------ zone_recorded.c */

/* VM user_tag of nano v2's regions (mach/vm_statistics.h). */
#define HG_VM_MEMORY_MALLOC_NANO 11u
#define HG_ZREC_NONE UINT64_MAX
/* Heaps that take the live map's blocks of zones not walked, decided
 * before the freeze (HG_ZREC_NONE: no such zone). */
struct hg_zrec_plan {
  uint64_t nano_heap;         /* a nano v2 zone not walked: blocks in
                                 MALLOC_NANO regions                     */
  uint64_t other_heap;        /* the other zones not walked              */
};
struct hg_zrec_stats {
  uint64_t listed;            /* appended as recorded blocks             */
  uint64_t in_walked;         /* in a walked zone's regions: skipped     */
  uint64_t unowned;           /* no zone not walked could own it         */
  uint64_t unreadable;        /* not in readable heap/anonymous memory   */
};
/* Appends to c->work (struct hg_zblock, heap | HG_ZBLOCK_RECORDED) every
 * live-map block of r that lies in memory no walked zone touched — the
 * walked zones' blocks are c->work's from index `mark` (uint64 units) on,
 * their claimed regions `claimed` (both sorted here in place) — and marks
 * the regions they touched HG_RF_ZWALKED. Regions must be sorted. 0,
 * HG_EUNSUPPORTED (no recorder, or it keeps no sizes), HG_ENOMEM. */
struct hg_rec;
struct hg_zrange;
int _hg_zone_recorded_collect(struct hg_cap *c, const struct hg_rec *r, size_t mark,
                              struct hg_zrange *claimed, size_t nclaimed,
                              const struct hg_zrec_plan *p, struct hg_zrec_stats *st);
/* From each zone's plan (enum hg_zone_plan_kind), heap id and name (NULL:
 * "malloc zone"), n zones: the heaps that take the recorder's blocks of
 * the zones not walked — a nano v2 zone's its own, the others' the one
 * other zone's; with several others p->other_heap is HG_ZREC_NONE and
 * *shared 1 (the caller makes one heap for them) — and their names,
 * ", "-separated, in list. Returns how many zones are not walked. */
uint32_t _hg_zone_recorded_plan(const uint8_t *plans, const uint32_t *heaps, const char *const *names,
                                uint32_t n, struct hg_zrec_plan *p, int *shared, char *list, size_t size);
/* The snapshot's heap_status when zones (a list of names) were not walked:
 * their blocks listed from the recorder (why_not NULL), or why not and how
 * to get them. Written to buf; returns buf. */
const char *_hg_zone_recorded_note(char *buf, size_t size, const char *zones, const char *why_not);

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
  HG_ZONE_NO_LOCK_QUERY = 2, /* zone_locked NULL or version < 5              */
  HG_ZONE_NANO = 3,          /* nano v2 whose layout was not recognised      */
  HG_ZONE_XZONE = 4,         /* xzone: enumerated, zone_locked never called  */
  HG_ZONE_NANO_OWN = 5       /* nano v2 walked from its metadata (nano_walk) */
};
/* malloc_introspection_t.zone_type (version >= 14), libmalloc-792.41.1
 * src/malloc_common.h malloc_zone_type_t */
#define HG_MALLOC_ZONE_TYPE_XZONE 1u

struct hg_zone_facts {
  const char *name;          /* zone_name (may be NULL)                      */
  uint32_t version;          /* malloc_zone_t.version                        */
  int has_enumerator;        /* introspect && introspect->enumerator         */
  int has_zone_locked;       /* introspect->zone_locked != NULL              */
  int helper_present;        /* some zone is named "MallocHelperZone"        */
  uint32_t zone_type;        /* introspect->zone_type when version >= 14     */
  int nano_layout_ok;        /* nano v2 metadata recognised (nano_walk.c)    */
};
/* 1 for the plans whose zone is enumerated (by its enumerator or ours). */
int _hg_zone_plan_walks(int plan);

/* What the freeze protocol does with a zone (enum hg_zone_plan_kind). */
int _hg_zone_plan(const struct hg_zone_facts *f);
/* Why a zone is not walked, NULL for HG_ZONE_WALK. */
const char *_hg_zone_plan_reason(int plan);
/* The snapshot's heap name: the zone's, plus " (not walked: why)", and
 * when listed (zone_recorded.c) "; blocks listed from the allocation
 * recorder" inside the parentheses. */
const char *_hg_zone_heap_name(const char *zone, int plan, int listed, char *buf, size_t size);
/* 1 when the stack-logging lock (msl_locked, may be NULL) or a lock of a
 * zone planned HG_ZONE_WALK (zone_locked(ctx, i)) is held. */
int _hg_zones_busy(const uint8_t *plans, uint32_t n, int (*zone_locked)(void *ctx, uint32_t i),
                   int (*msl_locked)(void *ctx), void *ctx);
/* A VM range a walked zone reported as its own region. */
struct hg_zrange {
  uint64_t lo, hi;
};
/* Malloc regions (HG_RK_HEAP) that hold no enumerated segment (recorded
 * segments, zone_recorded.c, do not count: their regions are still root
 * memory around the listed blocks) and overlap
 * none of the claimed ranges (sorted here in place; NULL = unknown, e.g.
 * the table overflowed) become anonymous HG_RK_OTHER: scanned
 * conservatively as root memory. Regions and segments must be sorted.
 * Returns how many. */
uint32_t _hg_zone_demote_unwalked(struct hg_cap *c, struct hg_zrange *claimed, size_t nclaimed);

/* The walk of every walked zone while frozen, redone when the kernel made
 * a thread during a zone's enumeration (it ran while the zone was read). */
struct hg_zwalk_ops {
  int (*walk_zone)(void *ctx, uint32_t i); /* 0 or < 0                       */
  int (*threads_changed)(void *ctx);       /* 1 new thread, 0, or < 0        */
  void (*reset)(void *ctx);                /* drop what the attempt gathered */
  int (*refreeze)(void *ctx);              /* thaw, freeze again (busy test
                                              included): 0 or < 0            */
};
#define HG_ZWALK_TRIES 4u
/* Walks the zones whose plan walks (in order), asking threads_changed after
 * each; on a change: reset, refreeze, start again, at most tries attempts,
 * then HG_EBUSY (after reset). 0, HG_EBUSY, or the first error. */
int _hg_zones_walk_stable(const uint8_t *plans, uint32_t n, const struct hg_zwalk_ops *o,
                          void *ctx, uint32_t tries);

/* ------------------------------------------------------------ zone_ranges.c */

/* vm_range_t on LP64 (checked against the SDK in capture/darwin/zones.c) */
struct hg_vmrange {
  uint64_t address, size;
};
/* malloc.h's range types */
#define HG_MALLOC_PTR_IN_USE 1u
#define HG_MALLOC_PTR_REGION 2u
#define HG_MALLOC_ADMIN_REGION 4u
/* The regions walked zones reported (a fixed table). */
struct hg_zclaims {
  struct hg_zrange *r;
  size_t n, max;
  int overflow;
};
/* One recorder call of an enumerator: IN_USE ranges become blocks of heap
 * (appended to c->work as struct hg_zblock), REGION ranges claims; a range
 * typed both (scalable-zone large blocks, xzone large/huge chunks) is both.
 * ADMIN ranges are ignored. 0, or HG_ENOMEM when c->work is full. */
int _hg_zone_ranges_add(struct hg_cap *c, struct hg_zclaims *cl, uint64_t heap, unsigned type,
                        const struct hg_vmrange *r, unsigned n);

/* ------------------------------------------------------------ nano_walk.c */

#define HG_NANO_BLOCK_SIZE 16384u            /* 1 << NANOV2_OFFSET_BITS      */
#define HG_NANO_ARENA_SIZE (64ull << 20)
#define HG_NANO_REGION_SIZE (512ull << 20)
#define HG_NANO_BLOCKS_PER_ARENA 4096u
#define HG_NANO_SIZE_CLASSES 16u
#define HG_NANO_MAX_REGIONS 64u              /* regions followed at most     */

struct hg_nano_layout {
  uint64_t first_region;     /* nanozonev2_t.first_region_base              */
  uint64_t next_arena;       /* .current_region_next_arena                  */
  uint32_t aslr_cookie;      /* .aslr_cookie (12 bits)                      */
  uint32_t max_regions;      /* bound on the region chain (0: 1)            */
  uint8_t units[HG_NANO_SIZE_CLASSES]; /* block_units_by_size_class       */
};
struct hg_nano_stats {
  uint64_t regions, blocks_active, slots, unreadable, bad_lists;
};
/* A pointer to [addr, addr + len) when it is mapped and readable, else NULL. */
typedef const void *(*hg_nano_map_fn)(void *ctx, uint64_t addr, uint64_t len);
struct hg_nano_sink {
  int (*block)(void *ctx, uint64_t addr, uint64_t size);  /* < 0 stops      */
  int (*region)(void *ctx, uint64_t addr, uint64_t size); /* may be NULL    */
  void *ctx;
};
/* libmalloc's default block_units_by_size_class. */
void _hg_nano_default_units(uint8_t units[HG_NANO_SIZE_CLASSES]);
/* The size-class units of a MallocNanoSizeClassBlocks value, parsed as
 * libmalloc parses it: 0 (units set) or HG_EINVAL (libmalloc ignores it
 * too; units untouched). */
int _hg_nano_units_parse(const char *s, uint8_t units[HG_NANO_SIZE_CLASSES]);
/* 0 or HG_EFORMAT. */
int _hg_nano_layout_check(const struct hg_nano_layout *L);
/* Reads the layout from the zone's bytes zone[0, avail) (the zone's first
 * page is PAGE_MAX_SIZE page_max); helper, when nonzero, must equal its
 * helper_zone field. Default size-class units. 0 or HG_EFORMAT. */
int _hg_nano_layout_from_zone(const uint8_t *zone, size_t avail, uint64_t page_max,
                              uint64_t helper, struct hg_nano_layout *out);
/* Every in-use slot (sink->block) and active block (sink->region), as
 * nanov2_ptr_in_use_enumerator reports them. 0, HG_EFORMAT, or a sink's < 0. */
int _hg_nano_walk(const struct hg_nano_layout *L, hg_nano_map_fn map, void *mctx,
                  const struct hg_nano_sink *s, struct hg_nano_stats *st);

/* ------------------------------------------------------------ mlog.c */

/* The malloc_logger hook's per-thread state: words in fixed slots that are
 * read and written without ever allocating (Darwin: pthread keys, i.e. the
 * pthread_t's tsd[] array). Never a thread-local variable: on Darwin a
 * thread's first touch of one runs dyld's instantiation, which mallocs,
 * which calls the logger again. */
enum { HG_MLOG_IN_HOOK, HG_MLOG_SAMPLE_LEFT, HG_MLOG_RNG, HG_MLOG_NSLOTS };
struct hg_mlog_tls {
  uintptr_t (*get)(void *ctx, unsigned slot);
  void (*set)(void *ctx, unsigned slot, uintptr_t v);
  void *ctx;
};
/* 1: the caller may record (this thread is now inside the hook); 0: the
 * hook re-entered itself on this thread (record nothing). */
int _hg_mlog_enter(const struct hg_mlog_tls *t);
void _hg_mlog_leave(const struct hg_mlog_tls *t);
/* Sampled mode (mean T bytes between samples): 1 when this allocation of
 * size bytes is sampled (exponential gaps per thread, as on Linux). */
int _hg_mlog_sampled(const struct hg_mlog_tls *t, uint64_t T, uint64_t size);
/* Installs ours in *slot atomically, the previous value in *prev (stored
 * before ours is visible). 0. */
int _hg_mlog_chain(void **slot, void *ours, void **prev);
/* Puts *prev back when *slot is still ours: 0; HG_EBUSY when another
 * logger was installed over ours (ours stays, and must forward only). */
int _hg_mlog_unchain(void **slot, void *ours, void **prev);

/* ------------------------------------------------------------ mlog_event.c */

/* malloc_logger's type bits (libmalloc private/stack_logging.h). */
#define HG_MLOG_ALLOCATE 2u
#define HG_MLOG_DEALLOCATE 4u
#define HG_MLOG_HAS_ZONE 8u
#define HG_MLOG_CLEARED 64u
/* What the hook does for the recorder. */
struct hg_mlog_sink {
  /* The usable size of a live block (malloc_size), 0 when no zone has it. */
  uint64_t (*size)(void *ctx, uintptr_t p);
  /* A new block: its address, the size asked for, its usable size; the
   * hook samples, takes the stack and calls _hg_rec_add with `size`. */
  void (*add)(void *ctx, uintptr_t p, uint64_t requested, uint64_t size, uint32_t skip);
  void *ctx;
};
/* Applies one malloc_logger(type, zone, a2, a3, result, skip) call to r
 * (mlog_event.c lists the calls): frees and reallocs leave the live map
 * (with the stored size when r->sizes, else sink->size's); new blocks are
 * added through sink->add when `recording` (0 after hg_stacks_stop). */
struct hg_rec;
void _hg_mlog_event(struct hg_rec *r, int recording, uint32_t type, uintptr_t a2, uintptr_t a3,
                    uintptr_t result, uint32_t skip, const struct hg_mlog_sink *s);

#endif
