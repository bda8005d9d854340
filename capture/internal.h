/*
 * internal.h — data model shared by the portable capture files (capture/ files)
 * and the platform backends (capture/linux/, later capture/darwin/).
 *
 * Everything here lives in capture scratch (mmap, see scratch.c): nothing in
 * it may be allocated with malloc once the heap is frozen. Names are `_hg_`
 * (shared between files, hidden from the library's users).
 */
#ifndef HG_CAPTURE_INTERNAL_H
#define HG_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "capture/scan_state.h"
#include "heapgraph.h"

/* Functions that read arbitrary (validated) process memory: other code's
 * stack frames and globals carry ASan redzones, which are not our bugs. */
#if defined(__clang__) || defined(__GNUC__)
#define HG_NO_ASAN __attribute__((no_sanitize_address))
#else
#define HG_NO_ASAN
#endif

/* ---------------------------------------------------------------- scratch.c */

/* A growable array in its own reserved mmap: pages are touched only as it
 * grows, so reserving is free; usage counts against the capture budget. */
struct hg_vec {
  uint8_t *base;
  size_t cap;       /* reserved bytes                                       */
  size_t used;      /* bytes in use                                         */
  size_t elem;      /* element size                                         */
  size_t touched;   /* high-water mark (page-rounded)                       */
  struct hg_scratch *owner;
};

#define HG_SCRATCH_MAX_VECS 32

struct hg_scratch {
  uint64_t limit;       /* hard budget (bytes of touched pages)             */
  uint64_t touched;     /* current sum of touched pages                     */
  uint64_t peak;        /* peak of touched                                  */
  uint64_t max_reserve; /* bytes one vector may reserve (RLIMIT_AS share)   */
  uint32_t nvec;
  struct hg_vec *vecs[HG_SCRATCH_MAX_VECS];
};

void _hg_scratch_init(struct hg_scratch *s, uint64_t limit);
/* Reserves room for up to max_elems elements. 0 or HG_ENOMEM. */
int _hg_vec_init(struct hg_scratch *s, struct hg_vec *v, size_t elem, size_t max_elems);
/* Pointer to n new zeroed elements at the end, or NULL when the budget or
 * the reservation is exhausted. Never calls malloc. */
void *_hg_vec_push(struct hg_vec *v, size_t n);
static inline size_t _hg_vec_len(const struct hg_vec *v) { return v->elem ? v->used / v->elem : 0; }
static inline void *_hg_vec_at(const struct hg_vec *v, size_t i) { return v->base + i * v->elem; }
void _hg_vec_truncate(struct hg_vec *v, size_t n);
/* Unmaps every vector. */
void _hg_scratch_free(struct hg_scratch *s);
/* Copies a string into a char vector; returns its offset (0 = none/failed,
 * offset 0 is a reserved empty string). */
uint32_t _hg_str_add(struct hg_vec *strings, const char *s, size_t n);
/* True if [lo, hi) overlaps one of the scratch reservations. */
int _hg_scratch_owns(const struct hg_scratch *s, uint64_t lo, uint64_t hi);
/* In-place heap sort (no malloc): elements of `size` bytes, key = first u64. */
void _hg_sort_u64key(void *base, size_t n, size_t size);

/* ------------------------------------------------------------ data model */

enum hg_region_kind {
  HG_RK_OTHER = 0,
  HG_RK_HEAP = 1,      /* allocator-owned (not scanned as a root)          */
  HG_RK_STACK = 2,     /* a thread stack                                   */
  HG_RK_IMAGE = 3,     /* belongs to a loaded image                        */
  HG_RK_OWN = 4        /* heapgraph's own memory (scratch, writer)         */
};

struct hg_cregion {
  uint64_t start, end;
  uint32_t prot;          /* HG_PROT_*                                      */
  uint32_t name;          /* offset in strings, 0 = none                    */
  uint64_t rss, dirty, swap;
  uint32_t image;         /* image index or HG_NO_OWNER                     */
  uint32_t kind;          /* enum hg_region_kind                            */
  uint32_t tag;           /* Darwin user_tag (0 elsewhere): hg_region.tag   */
  uint32_t flags;         /* HG_RF_*, set by the backend                    */
};

/* Anonymous memory (no file behind it): Linux regions without a name or
 * named "[anon:…]", Darwin regions whose VM objects are all internal
 * (vm_region_submap_info_64.external_pager == 0). The root scan treats
 * writable private anonymous non-heap memory as holding roots. */
#define HG_RF_ANON 1u
/* rss, dirty and swap are not known yet (Linux fork mode reads them during
 * the heap walk): nothing may take the region for untouched. */
#define HG_RF_NOFIG 2u
/* Darwin (zone_recorded.c): a walked malloc zone reported a block or a
 * region of its own in it. */
#define HG_RF_ZWALKED 4u
/* Whether the region is known to have no resident page. */
static inline int _hg_region_untouched(const struct hg_cregion *r) {
  return r->rss == 0 && !(r->flags & HG_RF_NOFIG);
}

struct hg_cimage {
  uint64_t load_addr, bias, size;
  uint32_t path;          /* offset in strings                              */
  uint32_t id_len;
  uint8_t id[32];
};

/* A range of memory that holds roots (image data, TLS). */
struct hg_crange {
  uint64_t lo, hi;
  uint32_t kind;          /* enum hg_root_kind                              */
  uint32_t owner;         /* image or thread index                          */
};

#define HG_MAX_REGS 64    /* 23 general-purpose + 32 words of XMM + spare */

struct hg_cthread {
  uint64_t tid;
  uint64_t sp;
  uint64_t tls_lo, tls_hi;     /* thread control block + static TLS        */
  uint64_t stack_lo, stack_hi; /* filled once regions are known            */
  uint32_t nregs;
  uint32_t self;               /* the capturing thread                     */
  uint64_t regs[HG_MAX_REGS];
  char name[16];
};

/* A contiguous allocator area whose blocks are nodes. Nodes of a segment
 * are stored as 32-bit offsets/sizes in 8-byte units (8 bytes per node). */
struct hg_segment {
  uint64_t base, end;
  uint32_t first, count;  /* node index range                              */
  uint32_t index_off;     /* first uint32 of its index in c->index         */
  uint32_t granules;      /* granules covered (0: no index, linear search) */
  uint32_t shift;         /* granule = 1 << shift bytes                    */
  uint32_t flags;         /* HG_NODE_* for every node of the segment       */
  uint32_t heap_id;       /* writer heap id                                */
  uint32_t ix_kind;       /* HG_IX_* (ptrindex.h)                          */
  uint32_t recorded;      /* 1: its nodes are listed from the allocation
                             recorder, not walked: the memory between them
                             may hold blocks no list has (allocated before
                             recording), so in root memory it is scanned
                             as roots around the nodes (scan.c)           */
};

/* A node: offset from its segment's base and usable size, in 8-byte units
 * (one cache line access per lookup). */
struct hg_cnode {
  uint32_t off, size;
};

struct hg_classifier;
#define HG_MAX_CLASSIFIERS 8

struct hg_cap {
  struct hg_scratch scratch;
  struct hg_writer *w;
  const struct hg_options *opt;
  int mode;                 /* HG_MODE_FORK / HG_MODE_SUSPEND               */

  struct hg_vec strings;    /* char                                         */
  struct hg_vec regions;    /* struct hg_cregion, sorted by start           */
  struct hg_vec images;     /* struct hg_cimage                             */
  struct hg_vec ranges;     /* struct hg_crange: global roots               */
  struct hg_vec not_roots;  /* struct hg_crange: the allocator's own state
                               (glibc: each arena's malloc_state) and dead
                               threads' cached stacks (Linux threads.c),
                               never scanned for roots (scan.c)            */
  struct hg_vec threads;    /* struct hg_cthread                            */
  struct hg_vec segments;   /* struct hg_segment, sorted by base            */
  struct hg_vec nodes;      /* struct hg_cnode (8 bytes per node); created
                               on first use by _hg_seg_begin if not yet    */
  struct hg_vec index;      /* uint32: per-segment index (ptrindex.h)       */
  struct hg_vec freelist;   /* uint64: user addresses of cached-free blocks */
  struct hg_vec work;       /* platform work space (uint64)                 */
  struct hg_vec helper_stack; /* the helper thread's stack (platform.h)   */
  struct hg_vec ring;       /* scan_pipe.c: resolved edges between the threads */
  struct hg_vec toks;       /* scan_pipe.c: the helper's identify() tokens  */
  struct hg_vec stack_ids;  /* alloc_write.c: uint32 allocation-stack id of
                               nodes 0..ids_done-1, looked up ahead while
                               the scan waits for its helper                 */
  uint32_t ids_done, ids_seg; /* how far, and the segment it is in          */
  int ids_off;              /* no room for them: looked up when written     */
  int helper_used;          /* the scan ran pipelined on a helper thread    */
  struct hg_scan_state scan; /* names.c, scan_pipe.c (reset at each scan)   */
  uint64_t prefault_pages;  /* pages the helper touched ahead of the walk   */

  uint64_t heap_lo, heap_hi;  /* bounds of all segments                     */
  uint64_t nonptr_mask;     /* a word with any of these bits set is never a
                               pointer (macOS x86_64 ObjC tagged pointers:
                               bit 0); set by the backend, 0 = none         */
  uint64_t own_lo[4], own_hi[4]; /* heapgraph's own mappings (writer …)     */
  uint32_t own_count;

  /* heap walk outcome */
  int heap_status;          /* 0 or HG_EUNSUPPORTED                         */
  char heap_reason[320];
  const char *allocator;
  int rec_heap;             /* the heap is listed from the allocation
                               recorder's live map (alloc_heap.c)            */
  uint64_t heap_errors;     /* inconsistencies met (walk stopped there)     */
  uint64_t freed_excluded;  /* cached-free blocks dropped from the nodes    */
  uint64_t dead_stacks;     /* dead threads' cached stacks kept out of the
                               root scan (Linux threads.c)                   */
  uint64_t recorded_blocks; /* blocks listed from the allocation recorder's
                               live map (alloc_heap.c, Darwin zone_recorded.c) */

  /* classifiers */
  uint32_t nclassifiers;
  const struct hg_classifier *classifiers[HG_MAX_CLASSIFIERS]; /* prepared ones */
  void *classifier_state[HG_MAX_CLASSIFIERS];

  /* counts and times */
  uint64_t roots, edges;
  uint64_t t_start, t_freeze, t_thaw, pause_ns, walk_ns, scan_ns, write_ns;
  uint64_t busy_retries;
  uint64_t stacks_unapplied; /* allocation-stack events of frozen threads not
                                applied to the live map (alloc_record.h)     */
  uint32_t images_encrypted; /* Darwin: images with LC_ENCRYPTION_INFO cryptid
                                != 0 (FairPlay); metadata when not 0      */

  int64_t pid;              /* the captured process (not the fork child)    */
  struct hg_cthread self;   /* the capturing thread at hg_capture() entry   */
  void *plat;               /* backend state                                */
  struct hg_fork_shared *shared; /* fork mode: page shared with the parent  */
};

/* Fork mode: one MAP_SHARED page between the capturing parent and the child. */
struct hg_fork_shared {
  volatile uint64_t pause_ns;   /* set by the parent after thaw (0 = not yet) */
  volatile uint32_t done;       /* set by the child when the file is final   */
  volatile int32_t rc;
  struct hg_capture_stats stats;
};

uint64_t _hg_now_ns(void);

/* A heap the backend cannot walk (alloc_heap.c): before the freeze,
 * _hg_stacks_heap_plan decides whether the allocation recorder's live map
 * lists its blocks (c->rec_heap; 1) or appends to c->heap_reason why not and
 * how to get them (0); frozen, _hg_stacks_heap_walk makes them nodes. */
int _hg_stacks_heap_plan(struct hg_cap *c);
int _hg_stacks_heap_walk(struct hg_cap *c);
/* Why the recorder r (may be NULL) cannot list a heap's blocks in a capture
 * of this mode (HG_MODE_*), with how to get them; NULL when it can. */
struct hg_rec;
const char *_hg_stacks_unlisted_why(const struct hg_rec *r, int mode);
/* What the last capture said about its heap when it was not walked ("" when
 * it was): for the preload agent's message. */
const char *_hg_capture_heap_note(void);

/* Region lookup (regions sorted): index of the region containing addr, or -1. */
int64_t _hg_region_find(const struct hg_cap *c, uint64_t addr);
/* True if [addr, addr+len) lies in readable mapped memory. */
int _hg_readable(const struct hg_cap *c, uint64_t addr, uint64_t len);
/* Next resident page range inside [*lo, hi) (mincore, no malloc): sets
 * [*lo, *end) and returns 1, or returns 0 when none is left. Lets sparse
 * reservations (sanitizer shadow, JIT/GC arenas) cost what is resident. */
int _hg_next_resident(uint64_t *lo, uint64_t hi, uint64_t *end);
/* Anonymous mappings this large are address-space reservations (sanitizer
 * shadow: ASan's ~20 TiB at 0x7fff8000…0x10007fff8000, MSan/TSan alike),
 * never scanned for roots or allocator segments: even the resident-page
 * walk costs time in proportion to their virtual size, and what is
 * resident there is shadow state, not pointers. */
#define HG_RESERVATION_MIN (1ull << 40)
int _hg_region_reservation(const struct hg_cregion *r);
/* Reads a word at a validated address; returns 0 and *out, or -1. */
int _hg_read_word(const struct hg_cap *c, uint64_t addr, uint64_t *out);

/* ------------------------------------------------------------ nodes (ptrindex.c) */

/* Starts a segment; nodes added next belong to it. Segments must be
 * started in increasing address order. 0 or HG_ENOMEM / HG_EINTERNAL. */
int _hg_seg_begin(struct hg_cap *c, uint64_t base, uint64_t end, uint32_t flags, uint32_t heap_id);
/* Adds a node (addr and size multiples of 8, increasing). 0 or error. */
int _hg_node_add(struct hg_cap *c, uint64_t addr, uint64_t size);
/* Ends the current segment (drops it when empty). */
void _hg_seg_end(struct hg_cap *c);
/* Removes nodes whose address is in the (sorted) freelist. */
void _hg_nodes_drop_freed(struct hg_cap *c);
/* Builds the address -> node index. 0 or HG_ENOMEM. */
int _hg_index_build(struct hg_cap *c);
/* Node containing v (interior included), or UINT32_MAX. */
uint32_t _hg_index_lookup(const struct hg_cap *c, uint64_t v);
uint32_t _hg_node_count(const struct hg_cap *c);
/* Address and size of node i (for the segment seg). */
static inline uint64_t _hg_node_addr(const struct hg_cap *c, const struct hg_segment *s, uint32_t i) {
  return s->base + ((uint64_t)((const struct hg_cnode *)c->nodes.base)[i].off << 3);
}
static inline uint64_t _hg_node_size(const struct hg_cap *c, uint32_t i) {
  return (uint64_t)((const struct hg_cnode *)c->nodes.base)[i].size << 3;
}

/* ------------------------------------------------- scan_nodes.c, scan_roots.c */

/* One pass: classifies each block once, writes it as a node, then its
 * edges (scan_nodes.c). _hg_scan_roots then writes every root (scan_roots.c). */
int _hg_scan_nodes(struct hg_cap *c);
int _hg_scan_roots(struct hg_cap *c);

/* ------------------------------------------------------------ capture.c */

/* The steps after the freeze: regions, heap walk, scan, write, finish.
 * Runs in the forked child or in the capturing thread (suspend mode). */
int _hg_capture_body(struct hg_cap *c);
/* Writes metadata with the timings so far (may be called several times). */
int _hg_capture_meta(struct hg_cap *c, int final);

#endif
