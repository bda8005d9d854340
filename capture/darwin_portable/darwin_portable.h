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
 * them in the thread state); user addresses fit in 47 bits. */
#define HG_ARM64_VA_MASK 0x00007fffffffffffull

/* Appends the register words of a general state (and optionally the vector
 * state; NULL/0 to skip) to regs[] (up to max), sets *sp. Returns the number
 * of words written, or 0 when a state is too short for its layout. */
uint32_t _hg_thread_state_regs(int cpu, const void *gp, size_t gp_bytes, const void *vec,
                               size_t vec_bytes, uint64_t *regs, uint32_t max, uint64_t *sp);

/* Stack range to scan: from sp minus the red zone (128 bytes on both ABIs)
 * up to the stack top. The stack is [top - size, top) as pthread reports it
 * when known (top or size 0 = unknown), else the VM region [rlo, rhi)
 * containing sp (0/0 = unknown). Returns 1 and [*lo, *hi), or 0 when sp is
 * not inside the stack. */
int _hg_stack_range(uint64_t sp, uint64_t top, uint64_t size, uint64_t rlo, uint64_t rhi,
                    uint64_t *lo, uint64_t *hi);

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

#endif
