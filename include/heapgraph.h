/*
 * heapgraph.h — the one public header of libheapgraph.
 *
 * heapgraph captures a heap snapshot and memory graph of the running process
 * (VM regions, live malloc blocks with their classes, every pointer between
 * blocks, and the roots that keep them alive) into a compact CBOR file, and
 * reads such files back into an in-memory graph for analysis.
 *
 * Sections:
 *   1. Errors
 *   2. Snapshot vocabulary (kinds and flags stored in files)
 *   3. Snapshot records (plain structs shared by writer and reader)
 *   4. Streaming writer  (hg_writer_*)   — what capture backends feed
 *   5. Graph builder     (hg_builder_*)  — in-memory, any order, for tools/tests
 *   6. Reader            (hg_graph_*)    — validating loader into CSR arrays
 *   7. Capture           (hg_capture)    — declared by the capture engine
 *   8. Analysis          (hg_dominators_*, hg_leaks_*, hg_export …)
 *   9. Memory-pressure watcher (hg_watch_*)
 *  12. Spool, capture policy, device metadata, upload (hg_spool_*, hg_upload_*)
 *
 * Conventions: functions return 0 on success and a negative HG_E* code on
 * failure; hg_error_string() names a code. Pointers returned inside an
 * hg_graph are owned by the graph and live until hg_graph_free().
 * The file format is described in docs/snapshot-format.md.
 */
#ifndef HEAPGRAPH_H
#define HEAPGRAPH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HG_API __attribute__((visibility("default")))
#else
#define HG_API
#endif

#define HG_VERSION_STRING "0.1.0"
#define HG_FORMAT_VERSION 1u

/* ---------------------------------------------------------------- 1. Errors */

enum hg_error {
  HG_OK = 0,
  HG_EINVAL = -1,       /* bad argument or call out of order                 */
  HG_ENOMEM = -2,       /* allocation failed or scratch budget exhausted     */
  HG_EIO = -3,          /* read/write/fsync/rename failed (see errno text)   */
  HG_ENOSPC = -4,       /* no space left on device / file size limit        */
  HG_EFORMAT = -5,      /* malformed snapshot (message names byte offset)    */
  HG_ETRUNCATED = -6,   /* snapshot ends before its trailer                  */
  HG_ECHECKSUM = -7,    /* trailer checksum does not match the content       */
  HG_EVERSION = -8,     /* wrong magic or unsupported format version         */
  HG_ELIMIT = -9,       /* a count or size is beyond what we accept          */
  HG_ETIMEOUT = -10,    /* a thread could not be parked in time              */
  HG_EBUSY = -11,       /* allocator locks held; retried and gave up         */
  HG_EUNSUPPORTED = -12,/* platform/allocator not supported (partial result) */
  HG_EPERM = -13,       /* permission denied                                 */
  HG_ENOTFOUND = -14,   /* lookup found nothing (address, class …)           */
  HG_EINTERNAL = -15,   /* invariant broken: a bug in heapgraph              */
  HG_ENOENT = -16,      /* the output file's directory does not exist        */
  HG_ENOTREG = -17,     /* the output path exists and is not a regular file
                           (device, FIFO, socket, directory): never replaced */
  HG_ECHILDTIME = -18   /* fork mode: the capture child did not finish within
                           child_timeout_ms (it was killed)                  */
};

/* Static English text for an HG_E* code ("unknown error" for others). */
HG_API const char *hg_error_string(int code);

/* ------------------------------------------------- 2. Snapshot vocabulary */

/* Region protection bits. */
enum { HG_PROT_READ = 1, HG_PROT_WRITE = 2, HG_PROT_EXEC = 4, HG_PROT_SHARED = 8 };

/* Class kinds. */
enum hg_class_kind {
  HG_CLASS_OTHER = 0,
  HG_CLASS_OBJC = 1,
  HG_CLASS_SWIFT = 2,
  HG_CLASS_CXX = 3,
  HG_CLASS_CF = 4
};

/* Node flags (low bits of the per-node flags). */
enum hg_node_flag {
  HG_NODE_MALLOC = 1,   /* a live allocator block                          */
  HG_NODE_REGION = 2,   /* a whole VM region (non-malloc memory)           */
  HG_NODE_MMAPPED = 4,  /* allocator block served by its own mmap          */
  HG_NODE_ROOTLIKE = 8  /* reserved                                        */
};
#define HG_NODE_FLAG_MASK 0x0fu

/* Edge kinds. The "named" kinds carry a field-name string id. */
enum hg_edge_kind {
  HG_EDGE_CONSERVATIVE = 0, /* a word that points at the start of a block   */
  HG_EDGE_INTERIOR = 1,     /* a word that points inside a block            */
  HG_EDGE_STRONG = 2,       /* typed strong reference (e.g. ObjC ivar)      */
  HG_EDGE_WEAK = 3,         /* typed weak reference: does not retain        */
  HG_EDGE_UNOWNED = 4       /* typed unowned/unsafe reference: no retain    */
};
#define HG_EDGE_KIND_COUNT 5

/* Root kinds. */
enum hg_root_kind {
  HG_ROOT_STACK = 0,    /* word on a thread stack (owner = thread index)     */
  HG_ROOT_REGISTER = 1, /* register of a thread (addr = register number)     */
  HG_ROOT_GLOBAL = 2,   /* word in an image's data (owner = image index)     */
  HG_ROOT_TLS = 3,      /* thread-local storage (owner = thread index)       */
  HG_ROOT_OTHER = 4
};
#define HG_ROOT_KIND_COUNT 5
#define HG_NO_OWNER UINT32_MAX

/* --------------------------------------------------- 3. Snapshot records */

struct hg_kv { const char *key; const char *value; };
struct hg_num { const char *key; uint64_t value; };

/* Snapshot metadata. In the writer, NULL strings and zero numbers are not
 * written; hg_writer_meta may be called several times and a reader merges
 * the records (later keys win), so capture timings can come at the end. */
struct hg_meta {
  const char *platform;     /* "linux", "darwin"                          */
  const char *os_version;   /* uname release / ProductVersion             */
  const char *arch;         /* "x86_64", "arm64", "arm64e"                */
  uint32_t pointer_size;
  uint32_t page_size;
  int64_t pid;
  const char *process;      /* process name                               */
  uint64_t time_ns;         /* wall clock, nanoseconds since Unix epoch   */
  const char *trigger;      /* why: "memory-warning", "signal", "manual" … */
  const char *allocator;    /* "glibc-ptmalloc2", "darwin-malloc-zones" … */
  const char *heap_status;  /* "ok" or why there are no heap nodes         */
  size_t app_count;  const struct hg_kv *app;       /* app key/values     */
  size_t capture_count; const struct hg_num *capture; /* timings, stats: */
      /* pause_ns, walk_ns, scan_ns, write_ns, scratch_peak_bytes, …     */
};

struct hg_region {
  uint64_t start, size;
  uint32_t prot;            /* HG_PROT_*                                  */
  uint32_t tag;             /* Darwin user_tag, 0 elsewhere               */
  const char *name;         /* path, "[heap]", "[stack]", "MALLOC_TINY"… or NULL */
  uint64_t resident, dirty, swapped;  /* bytes                            */
  uint32_t image;           /* image index, or HG_NO_OWNER                */
};

struct hg_image {
  const char *path;
  const uint8_t *id;        /* Mach-O UUID or ELF build-id bytes          */
  uint32_t id_len;
  uint64_t load_addr;       /* address of the image header in memory      */
  uint64_t slide;           /* Mach-O slide / ELF load bias               */
  uint64_t size;            /* bytes from load_addr to the end of the last segment */
};

struct hg_thread {
  uint64_t tid;
  const char *name;
  uint64_t stack_lo, stack_hi;  /* scanned range [lo, hi)                  */
};

struct hg_class {
  const char *name;         /* as found: mangled for C++, Swift           */
  uint32_t kind;            /* enum hg_class_kind                         */
  uint64_t instance_size;   /* 0 if unknown                               */
};

struct hg_root {
  uint32_t kind;            /* enum hg_root_kind                          */
  uint32_t owner;           /* thread or image index, or HG_NO_OWNER      */
  uint64_t addr;            /* where the pointer lives (register: number) */
  uint32_t target;          /* node index                                 */
};

/* Allocation stacks as a snapshot carries them (optional records). A frame
 * is an image index + byte offset from the image's load_addr, or, when no
 * loaded image contains the address, image = HG_NO_OWNER and offset = the
 * absolute address. frames[0] is the innermost (the malloc caller). */
struct hg_stack_frame { uint32_t image; uint64_t offset; };
struct hg_stack {
  uint64_t count;           /* live blocks (an estimate when sampled)     */
  uint64_t bytes;           /* their usable bytes (estimate when sampled) */
  uint32_t frame_count;
  const struct hg_stack_frame *frames;
};
struct hg_stack_info {
  uint32_t max_frames;      /* frames kept per stack                      */
  uint64_t sample_bytes;    /* 0 = every block; else mean sampling interval */
  uint64_t budget_bytes;    /* tracking memory allowed                    */
  uint64_t tracking_bytes;  /* tracking memory in use at the capture      */
  uint64_t map_bytes;       /* of which the live-block map                */
  uint64_t live_blocks;     /* blocks in the live map                     */
  uint64_t dropped;         /* blocks not recorded (budget, odd address)  */
  const char *status;       /* "ok" or "budget-exhausted"                 */
  const char *unwinder;     /* "libunwind", "frame-pointer" …             */
};
/* One allocation >= the large-allocation threshold (the ring's last ones). */
struct hg_large_alloc { uint64_t addr, size, time_ns, tid; uint32_t stack; };

/* ---------------------------------------------------- 4. Streaming writer */
/*
 * Writes a snapshot as it goes, in a fixed amount of memory obtained at open
 * (mmap, never malloc afterwards: usable while the heap is frozen and in a
 * forked child). The file is created as a temporary next to `path`, mode
 * 0600, and renamed into place by hg_writer_finish() after fsync; on any
 * failure no file is left at `path`.
 *
 * Order rules: classes, heaps and strings get ids 1, 2, 3 … in the order
 * they are added (0 means none) and must be added before finish; nodes are
 * added in strictly increasing, non-overlapping address order and get
 * indices 0, 1, 2 …; edges are added with non-decreasing source and, for the
 * same source, strictly increasing offset; edge targets and root targets may
 * refer to nodes added later; everything is checked at finish.
 */
struct hg_writer;

/*
 * Contracts shared by every hg_writer_* call below: w must come from a
 * successful hg_writer_open(). Errors are sticky: the first failure (its
 * code, and its text in hg_writer_message) is returned again by every
 * later call, so a caller may check only at finish. HG_EINVAL: a NULL or
 * malformed argument, an order rule broken, or the writer already finished;
 * HG_ELIMIT: a count or offset beyond the format's 32-bit fields; HG_EIO,
 * HG_ENOSPC, HG_EPERM: the file system (text names the target path). None
 * of them calls malloc.
 */
/* Creates the temporary file next to path and maps the writer's memory.
 * *out is set (NULL on failure: hg_writer_close(NULL) is allowed). 0,
 * HG_EINVAL (no path, or too long), HG_ENOMEM (the mmap), or a file error. */
HG_API int hg_writer_open(struct hg_writer **out, const char *path);
/* The metadata record (platform, process, trigger, capture figures). */
HG_API int hg_writer_meta(struct hg_writer *w, const struct hg_meta *m);
/* Records referenced by index: regions, images and threads are numbered in
 * the order written (a root's or region's owner refers to them). */
HG_API int hg_writer_region(struct hg_writer *w, const struct hg_region *r);
HG_API int hg_writer_image(struct hg_writer *w, const struct hg_image *im);
HG_API int hg_writer_thread(struct hg_writer *w, const struct hg_thread *t);
/* Heaps, classes and strings (field names): *id is 1, 2, 3 … in the order
 * added; the strings are copied. */
HG_API int hg_writer_heap(struct hg_writer *w, const char *name, uint32_t *id);
HG_API int hg_writer_class(struct hg_writer *w, const struct hg_class *c, uint32_t *id);
HG_API int hg_writer_string(struct hg_writer *w, const char *s, uint32_t *id);
/* Node number hg_writer_node_count() before the call: a non-empty range
 * above the previous node's, known flags (HG_NODE_*), class/heap ids
 * (0 = none) defined by finish. */
HG_API int hg_writer_node(struct hg_writer *w, uint64_t addr, uint64_t size,
                          uint32_t class_id, uint32_t flags, uint32_t heap_id);
/* An edge of node src at byte offset (below 4 GiB): sources non-decreasing,
 * offsets increasing within a source; dst may be a node written later; a
 * field name (field_id != 0) needs a strong, weak or unowned kind. */
HG_API int hg_writer_edge(struct hg_writer *w, uint32_t src, uint64_t offset,
                          uint32_t dst, uint32_t kind, uint32_t field_id);
/* A root (any order); its target and owner are checked at finish. */
HG_API int hg_writer_root(struct hg_writer *w, const struct hg_root *r);
/* Optional allocation-stack records (any time before finish). Stacks must be
 * written with ids 1, 2, 3 … in order; node stacks for nodes first ..
 * first+n-1 (a node range may be split over calls, in order). */
HG_API int hg_writer_stack_info(struct hg_writer *w, const struct hg_stack_info *si);
HG_API int hg_writer_stack(struct hg_writer *w, const struct hg_stack *st);
HG_API int hg_writer_node_stacks(struct hg_writer *w, uint32_t first, uint32_t n,
                                 const uint32_t *stack_ids);
HG_API int hg_writer_large_alloc(struct hg_writer *w, const struct hg_large_alloc *la);
/* Checks every reference (classes, heaps, strings, owners, node indices),
 * writes the trailer with the checksum, fsyncs and renames into place.
 * Returns 0 or an error (then the temporary is removed, nothing at path). */
HG_API int hg_writer_finish(struct hg_writer *w);
/* Frees the writer (NULL allowed); if finish did not succeed, removes the
 * temporary file. */
HG_API void hg_writer_close(struct hg_writer *w);
/* Text of the first error ("write …: No space left on device"), never NULL. */
HG_API const char *hg_writer_message(const struct hg_writer *w);
/* Counts so far and bytes written (after finish: the file size). */
HG_API uint32_t hg_writer_node_count(const struct hg_writer *w);
HG_API uint64_t hg_writer_edge_count(const struct hg_writer *w);
HG_API uint64_t hg_writer_bytes(const struct hg_writer *w);

/* ------------------------------------------------------- 5. Graph builder */
/*
 * Collects a graph in memory (malloc) in any order, with edges given by
 * addresses, then writes it through the streaming writer. For tools, tests,
 * the demo and converters — not for the capture path.
 */
struct hg_builder;

HG_API struct hg_builder *hg_builder_new(void);
HG_API void hg_builder_free(struct hg_builder *b);
HG_API int hg_builder_meta(struct hg_builder *b, const struct hg_meta *m);
HG_API int hg_builder_region(struct hg_builder *b, const struct hg_region *r);
HG_API int hg_builder_image(struct hg_builder *b, const struct hg_image *im);
HG_API int hg_builder_thread(struct hg_builder *b, const struct hg_thread *t);
/* Returns the class id (>= 1); the same name+kind gives the same id. */
HG_API uint32_t hg_builder_class(struct hg_builder *b, const char *name,
                                 uint32_t kind, uint64_t instance_size);
HG_API uint32_t hg_builder_heap(struct hg_builder *b, const char *name);
HG_API int hg_builder_node(struct hg_builder *b, uint64_t addr, uint64_t size,
                           uint32_t class_id, uint32_t flags, uint32_t heap_id);
/* An edge from the word at src_addr+offset to the node containing dst_addr
 * (interior when dst_addr is not the node start). field may be NULL. */
HG_API int hg_builder_edge(struct hg_builder *b, uint64_t src_addr, uint64_t offset,
                           uint64_t dst_addr, uint32_t kind, const char *field);
/* A root at `where` pointing into the node containing dst_addr. */
HG_API int hg_builder_root(struct hg_builder *b, uint32_t kind, uint32_t owner,
                           uint64_t where, uint64_t dst_addr);
/* Sorts, resolves addresses, drops edges/roots whose target is no node
 * (counted in *dropped if non-NULL) and writes the snapshot. */
HG_API int hg_builder_write(struct hg_builder *b, const char *path, uint64_t *dropped);
HG_API const char *hg_builder_message(const struct hg_builder *b);

/* --------------------------------------------------------------- 6. Reader */
/*
 * hg_graph_load() streams a snapshot (libcbor's streaming decoder) into a
 * compact, read-only graph. Input is treated as hostile: every problem is an
 * error naming what is wrong and its byte offset; memory is proportional to
 * the file size.
 */
struct hg_load_error {
  int code;                 /* HG_E*                                       */
  uint64_t offset;          /* byte offset in the file where it was found */
  char message[200];
};

struct hg_graph {
  uint32_t format_version;
  struct hg_meta meta;      /* merged metadata (app/capture arrays owned) */

  uint32_t region_count;  struct hg_region *regions;
  uint32_t image_count;   struct hg_image *images;
  uint32_t thread_count;  struct hg_thread *threads;
  uint32_t heap_count;    const char **heaps;     /* heaps[id - 1]        */
  uint32_t class_count;   struct hg_class *classes; /* classes[id - 1]    */
  uint32_t string_count;  const char **strings;   /* strings[id - 1]      */

  /* Nodes, sorted by address, non-overlapping. */
  uint32_t node_count;
  uint64_t *node_addr;
  uint64_t *node_size;
  uint32_t *node_class;     /* 0 = unclassified                           */
  uint8_t  *node_flags;     /* HG_NODE_*                                  */
  uint32_t *node_heap;      /* 0 = none                                   */

  /* Edges in CSR form: out-edges of node n are [edge_start[n], edge_start[n+1]). */
  uint32_t edge_count;
  uint32_t *edge_start;     /* node_count + 1 entries                     */
  uint32_t *edge_target;
  uint32_t *edge_offset;    /* byte offset of the pointer in the source   */
  uint8_t  *edge_kind;      /* enum hg_edge_kind                          */
  /* Field names of named edges, sorted by edge index. */
  uint32_t named_count;
  uint32_t *named_edge;
  uint32_t *named_field;    /* string id                                  */

  /* Reverse CSR, built by hg_graph_build_reverse() (NULL until then):
   * in-edges of node n are [in_start[n], in_start[n+1]), in_edge[] holds
   * edge indices and in_source[] their source nodes. */
  uint32_t *in_start;
  uint32_t *in_source;
  uint32_t *in_edge;

  uint32_t root_count;    struct hg_root *roots;

  uint64_t file_size;
  uint64_t checksum;        /* xxh64 from the trailer                     */
  int checksum_ok;          /* 1 when it matched the content              */
  void *priv;               /* owned storage                              */
  /* Allocation stacks (optional records 12-15, section 11 below; all zero /
   * NULL when the file has none). node_stack[n]: stack id of node n, 0 =
   * not recorded; stacks[id - 1]. */
  int has_stacks;
  struct hg_stack_info stack_info;
  uint32_t stack_count;   struct hg_stack *stacks;
  uint32_t *node_stack;
  uint32_t large_count;   struct hg_large_alloc *large;
};

/* Loads and fully validates a snapshot. On failure returns NULL and fills
 * *err (if non-NULL). */
HG_API struct hg_graph *hg_graph_load(const char *path, struct hg_load_error *err);
/* Load flags. HG_LOAD_ALLOW_BAD_CHECKSUM keeps loading when only the
 * checksum is wrong (checksum_ok = 0): for `heapgraph info` on a damaged file. */
enum {
  HG_LOAD_ALLOW_BAD_CHECKSUM = 1,
  /* Reads the file as a reader that predates the optional records (types
   * 12 and up, e.g. allocation stacks) does: they are skipped as unknown. */
  HG_LOAD_SKIP_OPTIONAL = 2,
  /* For analyses that never show where a pointer sits or its field name
   * (`heapgraph top`, the fleet summary): the loaded graph has no
   * edge_offset (NULL) / no named edges (named_count 0), 4 B / ~8 B per
   * edge less while the analysis runs. The file is validated in full. */
  HG_LOAD_NO_EDGE_OFFSETS = 4,
  HG_LOAD_NO_EDGE_NAMES = 8
};
HG_API struct hg_graph *hg_graph_load_flags(const char *path, unsigned flags,
                                            struct hg_load_error *err);
/* The same from a memory buffer (used by fuzzing and tests). */
HG_API struct hg_graph *hg_graph_load_mem(const void *data, size_t size,
                                          struct hg_load_error *err);
HG_API void hg_graph_free(struct hg_graph *g);

/* Streaming verification, in memory independent of the file's size (a
 * fixed 1 MiB read window, counts and maxima, the metadata): the
 * loader's own record parsers and chunk decoders (graph/reader.c), nothing
 * kept but the metadata. Accepts exactly the files hg_graph_load_flags
 * accepts (flags: HG_LOAD_SKIP_OPTIONAL; a bad checksum is always an
 * error), within two limits that answer HG_ELIMIT beyond them: one CBOR
 * item (a string, a chunk) of at most HG_VERIFY_ITEM_MAX bytes, and at
 * most HG_VERIFY_META_MAX bytes of metadata text (each string counted with
 * its entry). A rejection has the loader's code, offset and message, except
 * the references checked after the last record (offset = file size): their
 * message names the largest reference instead of the first record making
 * it. Returns 0 with *info filled (free with hg_verify_info_free), or the
 * HG_E* code with *err filled. */
#define HG_VERIFY_ITEM_MAX (1u << 20)
#define HG_VERIFY_META_MAX (1u << 20)
struct hg_verify_info {
  uint64_t file_size;
  uint64_t checksum;        /* xxh64 from the trailer (it matched)        */
  uint32_t region_count, image_count, thread_count, heap_count, class_count, string_count;
  uint32_t node_count, edge_count, root_count;
  struct hg_meta meta;      /* merged metadata, as hg_graph_load gives it */
  void *priv;               /* owned storage                              */
};
HG_API int hg_snapshot_verify(const char *path, unsigned flags, struct hg_verify_info *info,
                              struct hg_load_error *err);
HG_API void hg_verify_info_free(struct hg_verify_info *info);

/* Builds in_start/in_source/in_edge. Idempotent. 0 or HG_ENOMEM. */
HG_API int hg_graph_build_reverse(struct hg_graph *g);
/* Index of the node containing addr (interior included), or -1. */
HG_API int64_t hg_graph_find(const struct hg_graph *g, uint64_t addr);
/* Field name of edge e, or NULL when the edge has none. */
HG_API const char *hg_graph_edge_field(const struct hg_graph *g, uint32_t e);
/* Class name of node n, or NULL when unclassified. */
HG_API const char *hg_graph_node_class_name(const struct hg_graph *g, uint32_t n);
/* Human names: "conservative", "stack", "objc" … */
HG_API const char *hg_edge_kind_name(uint32_t kind);
HG_API const char *hg_root_kind_name(uint32_t kind);
HG_API const char *hg_class_kind_name(uint32_t kind);

/* --------------------------------------------------------------- 7. Capture */
/*
 * hg_capture() writes a snapshot of the calling process to `path`.
 *
 * Fork mode (Linux default): every other thread is parked with its registers
 * saved, the process forks (raw clone: no atfork handlers), the threads are
 * released and the child walks the frozen copy-on-write image and writes the
 * file; hg_capture returns when the child is done. Suspend mode: the other
 * threads stay parked while the calling thread walks and writes (the same
 * flow the Darwin backend uses).
 *
 * Callable from any thread, any number of times; concurrent calls are
 * serialized. Not async-signal-safe: call it from a normal thread (the
 * LD_PRELOAD agent uses its own capture thread). Threads are always resumed,
 * also on every error. Returns 0; HG_EUNSUPPORTED when the file was written
 * without heap nodes (allocator not understood: the metadata's heap_status
 * says why); HG_ETIMEOUT when a thread could not be parked in time; HG_EBUSY
 * when allocator locks stayed held; other HG_E* codes (no file is left).
 * HG_MODE_FORK where the platform cannot fork (Darwin: HG_MODE_DEFAULT is
 * suspend there) returns HG_EUNSUPPORTED at once and writes no file.
 */
enum hg_capture_mode {
  HG_MODE_DEFAULT = 0,      /* fork on Linux                               */
  HG_MODE_FORK = 1,
  HG_MODE_SUSPEND = 2
};

/* Figures of one capture (also written to the snapshot's capture metadata).
 * hg_capture() fills every field, version first: fields added later come
 * with a higher version. */
#define HG_CAPTURE_STATS_VERSION 1u
struct hg_capture_stats {
  uint32_t version;         /* HG_CAPTURE_STATS_VERSION (set by hg_capture) */
  uint64_t pause_ns;        /* application threads parked                 */
  uint64_t walk_ns;         /* regions + heap walk                        */
  uint64_t scan_ns;         /* classify + node rows, edges, roots         */
  uint64_t write_ns;        /* metadata, finish (fsync, rename)           */
  uint64_t total_ns;        /* hg_capture entry to return                 */
  uint64_t scratch_peak_bytes; /* capture scratch memory (mmap) at peak   */
  uint64_t nodes, edges, roots, threads, regions, images;
  uint64_t file_bytes;
  uint64_t busy_retries;    /* freezes undone because allocator locks were held */
  int heap_status;          /* 0, or HG_EUNSUPPORTED (no heap nodes)      */
};

#define HG_OPTIONS_VERSION 1u

struct hg_options {
  uint32_t version;         /* HG_OPTIONS_VERSION (set by hg_options_init) */
  uint32_t mode;            /* enum hg_capture_mode                       */
  const char *trigger;      /* metadata "trigger"; default "manual"       */
  size_t app_count; const struct hg_kv *app;  /* app key/values (copied)  */
  uint64_t scratch_limit;   /* hard budget of capture scratch, bytes (default 2 GiB) */
  uint32_t freeze_timeout_ms; /* park all threads within this (default 2000) */
  uint32_t busy_retries;    /* re-freezes while allocator locks are held (default 200) */
  uint32_t child_timeout_ms;  /* fork mode: give up on the child (default 600000) */
  int suspend_signal;       /* signal used to park threads; 0 = SIGRTMIN+4 */
  struct hg_capture_stats *stats; /* optional: filled on return           */
  uint32_t helpers;         /* helper threads the frozen part may use on other
                               cores (Linux; default 1, 0 = none)           */
  uint32_t omit;            /* HG_OMIT_* flags: leave identifying strings out
                               of the file (default 0: everything written) */
  uint64_t reserved[7];
};

/* Fills *o with the defaults above. */
/* hg_options.omit: what a snapshot leaves out (see docs/capture.md, "What
 * leaves the device"). Heap contents are never written in any case. */
#define HG_OMIT_PATHS 1u   /* executable, library and mapped-file paths      */
#define HG_OMIT_NAMES 2u   /* thread names and the process name              */
#define HG_OMIT_DEVICE 4u  /* watcher metadata: install and session ids, device
                              model, OS version (section 12)                */

HG_API void hg_options_init(struct hg_options *o);
/* Captures the calling process into `path` (NULL o = defaults). */
HG_API int hg_capture(const char *path, const struct hg_options *o);

/* -------------------------------------------------------------- 8. Analysis */
/*
 * Analyses over a loaded graph (graph/dominators.c, scc.c, leaks.c, paths.c,
 * diff.c, export_*.c; docs/analysis.md). Semantics shared by all of them:
 *   - conservative, interior and strong edges retain; weak and unowned edges
 *     never do (left out of dominators, reachability, leaks, cycles, paths);
 *   - the dominator tree hangs off a virtual super-root whose children are
 *     the targets of g->roots.
 * Functions taking a non-const graph may call hg_graph_build_reverse(g).
 * Every algorithm is iterative with O(nodes + edges) memory in flat uint32
 * arrays: a 10-million-node chain needs no deeper C stack than a 1-node graph.
 * Results are heap structs freed by the matching *_free (NULL is fine).
 */
#define HG_NONE UINT32_MAX              /* "no node / not reachable"          */
#define HG_SUPER_ROOT (UINT32_MAX - 1u) /* the virtual super-root             */

/* 1 if an edge of this kind keeps its target alive. */
HG_API int hg_edge_kind_retains(uint32_t kind);

/* Analysis cache. hg_dominators_compute leaves derived data on the graph
 * (its retaining edges renumbered in BFS order and root reachability:
 * ~4 bytes per node plus 4 per retaining edge) that later analyses reuse —
 * hg_leaks_find, hg_cycles_find and the heapsnapshot export then skip their
 * own whole-graph passes; results are identical with or without it.
 * hg_paths_to_roots likewise keeps its BFS from the roots (8 bytes per
 * node), so later calls on the same graph answer at once. It is
 * freed with the graph, or now by hg_graph_drop_cache() (to get the memory
 * back, or after changing the graph's arrays in place). NULL is fine. */
HG_API void hg_graph_drop_cache(struct hg_graph *g);

struct hg_dominators {
  uint32_t node_count;
  uint32_t reachable_count;   /* nodes reachable from the roots            */
  uint64_t reachable_bytes;   /* their bytes (the super-root's retained)   */
  /* idom[n]: immediate dominator of node n; HG_SUPER_ROOT when only the
   * super-root dominates n (e.g. n is held by two roots); HG_NONE when n is
   * not reachable from any root through retaining edges. */
  uint32_t *idom;
  /* retained[n]: bytes freed if n went away (n's size plus everything it
   * dominates); 0 for unreachable nodes. */
  uint64_t *retained;
  /* The reachable nodes in BFS order from the roots: every node after its
   * dominator. */
  uint32_t *order;
};
/* Dominator tree and retained sizes over the retaining edges (weak and
 * unowned edges excluded): iterative Cooper-Harvey-Kennedy with a SEMI-NCA
 * fallback, on a compact retaining-edge copy (no reverse CSR needed). Starts
 * one helper thread that only reads the graph; leaves its view on the
 * graph for later analyses (see hg_graph_drop_cache). 0, HG_ENOMEM, HG_EINVAL. */
HG_API int hg_dominators_compute(struct hg_graph *g, struct hg_dominators **out);
HG_API void hg_dominators_free(struct hg_dominators *d);
/* The (up to) k reachable nodes with the biggest retained sizes, biggest
 * first (ties: lower index first), into out[k]. Returns how many. */
HG_API uint32_t hg_dominators_top(const struct hg_dominators *d, uint32_t k, uint32_t *out);

/* Per class id 0..class_count (0 = unclassified), for the reachable nodes:
 * counts[c] instances, bytes[c] their own bytes, retained[c] the bytes the
 * class retains, counted like DevTools (a node dominated by another node of
 * the same class is not counted again). Arrays have class_count+1 entries;
 * any may be NULL. 0 or HG_ENOMEM. */
HG_API int hg_class_retained(const struct hg_graph *g, const struct hg_dominators *d,
                             uint64_t *counts, uint64_t *bytes, uint64_t *retained);

/* Per allocation stack id 0..stack_count (0 = not recorded): the snapshot's
 * nodes with that stack, their bytes, and (with d) the bytes they retain,
 * counted like hg_class_retained. *out is calloc'd (free()). 0, HG_ENOMEM. */
struct hg_stack_total { uint64_t nodes, node_bytes, retained; };
HG_API int hg_stack_totals(const struct hg_graph *g, const struct hg_dominators *d,
                           struct hg_stack_total **out);

/* Leaks: blocks unreachable from every root through retaining edges, folded
 * like libmemunreachable: each group of leaked blocks that reference each
 * other in a cycle (a strongly connected group) with no retaining edge from
 * any other leaked block is a root leak; everything else leaked hangs off
 * root leaks. Whole-region nodes (HG_NODE_REGION without HG_NODE_MALLOC) are
 * never leaks and count as roots here: unknown memory may hold pointers. */
struct hg_leak {
  uint32_t node;          /* lowest-address block of the root group        */
  uint32_t group_count;   /* blocks in the group (1 = a lone block)        */
  uint64_t group_bytes;
  uint32_t count;         /* blocks it holds: all leaked blocks reachable  */
  uint64_t bytes;         /*   from the group, the group included          */
  uint32_t owned_count;   /* of those, blocks no other root leak reaches   */
  uint64_t owned_bytes;   /*   (its dominator subtree in the leaked graph) */
};
struct hg_leaks {
  uint32_t leaked_count;  /* all leaked blocks                             */
  uint64_t leaked_bytes;
  uint32_t count;         /* root leaks, sorted by bytes then count, desc  */
  struct hg_leak *leaks;
  /* 1 when every count/bytes is exact. Computing "everything reachable" for
   * many root leaks sharing one big structure is quadratic; past a budget of
   * 16 x (leaked nodes + edges) + 2^24 steps the remaining leaks report
   * count/bytes = owned_count/owned_bytes (a lower bound) and this is 0. */
  int held_exact;
};
/* Starts one helper thread that only reads the graph. 0 or HG_ENOMEM. */
HG_API int hg_leaks_find(struct hg_graph *g, struct hg_leaks **out);
HG_API void hg_leaks_free(struct hg_leaks *l);

/* Reference cycles: strongly connected groups of at least min_size (>= 2)
 * nodes over retaining edges, biggest bytes first (ties: more members, then
 * lowest member address); members[] is laid out in that order. */
struct hg_cycle {
  uint32_t first;         /* index of its first member in members[]        */
  uint32_t count;         /* members                                       */
  uint64_t bytes;
  int leaked;             /* 1 if unreachable from the roots               */
};
struct hg_cycles {
  uint32_t count;
  struct hg_cycle *cycles;
  uint32_t *members;      /* node indices, grouped by cycle, by address    */
};
/* Starts one helper thread that only reads the graph. 0 or HG_ENOMEM. */
HG_API int hg_cycles_find(struct hg_graph *g, uint32_t min_size, struct hg_cycles **out);
HG_API void hg_cycles_free(struct hg_cycles *c);

/* Shortest retaining paths from a root to `node` (BFS, never through weak or
 * unowned edges). Up to max_paths paths (0 = 1), shortest first: one per
 * root pointing straight at the node, then one per distinct retainer (the
 * source of a retaining edge into the node). HG_ENOTFOUND when no root
 * reaches the node. */
struct hg_path {
  uint32_t root;          /* index into g->roots                           */
  uint32_t length;        /* edges                                         */
  uint32_t *nodes;        /* length + 1: nodes[0] = root target, last = node */
  uint32_t *edges;        /* length: edges[i] goes nodes[i] -> nodes[i+1]  */
};
struct hg_paths {
  uint32_t count;
  struct hg_path *paths;
};
HG_API int hg_paths_to_roots(struct hg_graph *g, uint32_t node, uint32_t max_paths,
                             struct hg_paths **out);
HG_API void hg_paths_free(struct hg_paths *p);

/* Per-class comparison of two snapshots (addresses do not match across
 * snapshots; classes are matched by name and kind). Sorted by byte growth,
 * biggest first. Names point into the graphs (NULL = unclassified). */
struct hg_class_delta {
  const char *name;
  uint32_t kind;
  uint64_t old_count, old_bytes;
  uint64_t new_count, new_bytes;
};
struct hg_diff {
  uint32_t count;
  struct hg_class_delta *classes;
  uint64_t old_count, old_bytes, new_count, new_bytes;   /* totals          */
};
HG_API int hg_diff_classes(const struct hg_graph *old_graph, const struct hg_graph *new_graph,
                           struct hg_diff **out);
HG_API void hg_diff_free(struct hg_diff *d);

/* Exports (docs/analysis.md, "Exports"). Output goes through `write`
 * (returns 0, or non-zero to fail with HG_EIO).
 * heapsnapshot: a Chrome DevTools heap snapshot (JSON) — node 0 is the
 * synthetic root with children "(GC roots)" (one child per root kind, each
 * pointing at its roots' targets) and "(Unreachable)" (pointing at each root
 * leak of hg_leaks_find and at each region node no root reaches). Edges from
 * a block no root reaches to one a root reaches are written as weak, so
 * DevTools' dominators and retained sizes of reachable blocks equal
 * hg_dominators_compute's. Blocks are "native" nodes named by class
 * (unclassified ones "(unclassified <=N B)" by power-of-two size, region
 * nodes "(VM regions)") with the odd ids of hg_export_node_ids; synthetic
 * nodes have small even ids. Every number must fit uint32: sizes above
 * 4294967295 are written as 4294967295 (counted in clamped_sizes); a graph
 * with more than 613566750 nodes (node field count x nodes > 2^32) fails
 * with HG_ELIMIT.
 * dot: Graphviz, bounded by max_nodes: the neighbourhood of `focus` up to
 * `depth` hops, or (focus = HG_NONE) the top retainers grouped by class with
 * their dominator-tree links, and a legend.
 * json: the whole graph with dominators and retained sizes, as one document;
 * jsonl: the same as one JSON record per line (meta, classes, nodes, edges,
 * roots), for any size. 64-bit numbers that can exceed 2^53 are strings. */
typedef int (*hg_write_fn)(void *ctx, const void *data, size_t len);
/* Display name for a class (e.g. demangled); may return `name`. The result
 * is copied before the next call. */
typedef const char *(*hg_name_fn)(void *ctx, const char *name, uint32_t class_kind);
enum hg_export_format {
  HG_EXPORT_HEAPSNAPSHOT = 1, HG_EXPORT_DOT = 2, HG_EXPORT_JSON = 3, HG_EXPORT_JSONL = 4
};
/* Options of hg_export(). version: HG_EXPORT_OPTIONS_VERSION, or 0 (read
 * as 1, so that `{.format = …}` initialisers keep working); a higher one
 * than the library knows is HG_EINVAL. */
#define HG_EXPORT_OPTIONS_VERSION 1u
struct hg_export_options {
  uint32_t version;       /* HG_EXPORT_OPTIONS_VERSION or 0                  */
  uint32_t format;        /* enum hg_export_format                          */
  uint32_t focus;         /* dot: centre node, or HG_NONE                   */
  uint32_t depth;         /* dot: hops around focus (0 = 2)                 */
  uint32_t max_nodes;     /* dot: bound (0 = 30; with focus 40)             */
  hg_name_fn class_name;  /* NULL = names as stored                         */
  void *class_name_ctx;
};
struct hg_export_stats {
  uint64_t nodes, edges;  /* written                                        */
  uint64_t clamped_sizes; /* heapsnapshot: sizes clamped to UINT32_MAX      */
  uint64_t bytes;         /* output bytes                                   */
  uint64_t moved_ids;     /* heapsnapshot: blocks whose address-derived id
                             another block took (see hg_export_node_ids)    */
};
HG_API int hg_export(struct hg_graph *g, const struct hg_export_options *opt, hg_write_fn write,
                     void *ctx, struct hg_export_stats *stats);
/* The DevTools node id of every block, as the heapsnapshot export writes
 * them, into ids[g->node_count]: id = 2 x ((addr >> 4) mod 2^31) + 1, so
 * (id - 1) x 8 is the block address's low 35 bits and the id stays the same
 * across snapshots of one process while the block lives. Unique within the
 * graph: a block whose id a lower-addressed block already has (addresses a
 * multiple of 32 GiB apart; impossible when the heap spans less than 32 GiB)
 * gets the next free odd id instead, counted in *moved (may be NULL).
 * 0, HG_ENOMEM, HG_EINVAL, HG_ELIMIT (more than 2^31 - 1 blocks). */
HG_API int hg_export_node_ids(const struct hg_graph *g, uint32_t *ids, uint64_t *moved);

/* ------------------------------------------------ 9. Memory-pressure watcher */
/*
 * A background thread that captures a snapshot when the process's memory
 * gets high or the system signals memory pressure, then hands the file to
 * the app (e.g. to upload it later). One watcher per process.
 *
 * Footprint: Darwin phys_footprint (task_info TASK_VM_INFO, what jetsam
 * counts); Linux resident set size (/proc/self/statm). Pressure: Darwin
 * DISPATCH_SOURCE_TYPE_MEMORYPRESSURE (warning or critical); Linux PSI
 * (/proc/pressure/memory "some avg10", percent) where the kernel has it.
 * hg_watch_memory_warning() lets an app feed its own signal (iOS
 * didReceiveMemoryWarning) without blocking the caller.
 *
 * Policy: a capture is taken when a trigger is present and at least
 * min_interval_ms passed since the previous capture (also since a failed
 * one); after max_captures (0 = no limit) the watcher only samples. Files
 * are named DIR/PREFIX-PID-UNIXMS-SEQ.hgsnap. The callback runs on the
 * watcher thread after each attempt with the path and hg_capture's result
 * (on failure no file exists at the path).
 */
#define HG_WATCH_OPTIONS_VERSION 2u  /* 1 still accepted (no section-12 fields) */

enum hg_watch_trigger {
  HG_WATCH_NONE = 0,
  HG_WATCH_FOOTPRINT = 1,   /* footprint >= footprint_threshold           */
  HG_WATCH_PRESSURE = 2,    /* system pressure (dispatch source / PSI)    */
  HG_WATCH_WARNING = 3,     /* hg_watch_memory_warning() was called       */
  HG_WATCH_LIMIT = 4        /* available memory < available_threshold     */
};

typedef void (*hg_watch_fn)(const char *path, int result, uint32_t trigger, void *user);

struct hg_watch_options {
  uint32_t version;           /* HG_WATCH_OPTIONS_VERSION                  */
  uint64_t footprint_threshold; /* bytes; 0 = footprint never triggers     */
  uint32_t min_interval_ms;   /* between captures (default 60000)          */
  uint32_t poll_interval_ms;  /* footprint/PSI sampling (default 1000)     */
  uint32_t psi_some_avg10;    /* Linux: PSI "some avg10" percent that counts
                                 as pressure (default 10; 0 = PSI off)     */
  int on_pressure;            /* 1: system pressure triggers (default 1)   */
  uint32_t max_captures;      /* 0 = unlimited                             */
  const char *dir;            /* output directory (required; copied)       */
  const char *prefix;         /* file name prefix (default "heapgraph")    */
  const struct hg_options *capture; /* NULL = defaults; trigger is set per capture */
  hg_watch_fn callback;       /* may be NULL                               */
  void *user;
  uint64_t available_threshold; /* bytes; capture when the memory the app may
                                 still use before its limit falls below this
                                 (iOS: os_proc_available_memory, else
                                 TASK_VM_INFO limit_bytes_remaining); 0 =
                                 off; no effect where the OS reports none  */
  uint64_t reserved[3];
  /* version 2 (section 12): */
  uint32_t limit_permille;    /* capture when usage reaches this many
                                 thousandths of the nearest limit (Linux:
                                 cgroup v2 memory.max/memory.high, cgroup v1
                                 memory.limit_in_bytes, RLIMIT_AS; Darwin:
                                 footprint + available); 0 = off            */
  uint32_t events;            /* 1: a new cgroup "high"/"max"/"oom" event in
                                 memory.events counts as pressure (default 1) */
  struct hg_spool *spool;     /* NULL: files go to dir; else into the spool
                                 (dir ignored), its free-disk guard and trim
                                 apply and its dropped count goes into the
                                 next snapshot                               */
  const struct hg_policy_options *policy; /* NULL: only min_interval_ms and
                                 max_captures; else also the capture policy
                                 (state in the spool's directory)           */
  const struct hg_device_info *device; /* NULL: only what is detected      */
  uint64_t reserved2[4];
};

HG_API void hg_watch_options_init(struct hg_watch_options *o);
/* Starts the watcher thread. HG_EINVAL (bad options), HG_EBUSY (already
 * running), HG_ENOMEM. */
HG_API int hg_watch_start(const struct hg_watch_options *o);
/* Stops and joins the watcher (waits for a capture in progress). Returns
 * the number of captures attempted, or HG_EINVAL when none was running. */
HG_API int hg_watch_stop(void);
/* Asks the watcher for a capture (trigger "memory-warning"), subject to the
 * interval policy; returns at once. HG_EINVAL when no watcher runs. */
HG_API int hg_watch_memory_warning(void);

/* ------------------------------------------------- 11. Allocation stacks */
/*
 * Recording "which code allocated it" in the running process (docs/stacks.md).
 * Linux: libheapgraph.so interposes malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc and reallocarray;
 * the wrappers only forward to glibc until recording starts (by
 * hg_stacks_start, or HEAPGRAPH_STACKS=1 when preloaded). A static link gets
 * the interposer from libheapgraph_stacks.a. Stacks are unwound from .eh_frame
 * (libunwind), so programs without frame pointers are fine. Darwin: the
 * libmalloc malloc_logger hook (chaining a previous logger) and a
 * frame-pointer walk. Every later hg_capture writes the stack table, each
 * node's stack id and the large-allocation ring into the snapshot.
 */
struct hg_large_event {
  uint64_t addr, size, time_ns, tid;
  uint32_t frame_count;
  const uintptr_t *frames;  /* return addresses, innermost first          */
};
typedef void (*hg_large_fn)(const struct hg_large_event *ev, void *user);

struct hg_stacks_options {
  uint32_t version;          /* set by hg_stacks_options_init               */
  uint32_t max_frames;       /* frames per stack (default 32, at most 64)   */
  uint64_t budget_bytes;     /* tracking memory (default 256 MiB); when the
                                tables cannot grow, recording stops and the
                                snapshot says "budget-exhausted"            */
  uint64_t sample_bytes;     /* 0: every block; N: Poisson sampling with a
                                mean of one sample per N bytes allocated    */
  uint64_t large_alloc_bytes; /* 0: off; else report allocations >= this    */
  hg_large_fn on_large;      /* called on the monitor thread (NULL: stderr) */
  void *user;
  uint64_t reserved[4];
};
HG_API void hg_stacks_options_init(struct hg_stacks_options *o);
/* Starts recording. HG_EUNSUPPORTED when this build has no interposer (the
 * library was not preloaded/linked with it, or an ASan build), HG_EBUSY when
 * already started, HG_ENOMEM. */
HG_API int hg_stacks_start(const struct hg_stacks_options *o);
/* Stops recording new allocations. The blocks recorded before keep their
 * stacks: their frees are still followed (one live-map removal per free,
 * so a stopped recorder costs a little on frees, nothing on allocations),
 * and later snapshots carry them with the stack info's status "stopped".
 * Allocations racing with the call may still be recorded. 0, or HG_EINVAL
 * when not recording (never started, already stopped, or no interposer);
 * calling it twice is harmless. hg_stacks_start after a stop resumes
 * recording into the same tables with the first start's settings (o is
 * not read again; status back to "ok"). */
HG_API int hg_stacks_stop(void);


/* ------------------------------------- 12. Spool, policy, device, upload */
/*
 * The device half of the upload (docs/upload.md). A spool is a directory
 * that holds finished snapshots until they are sent: byte, file-count and
 * free-disk budgets (oldest dropped first, the count goes into the next
 * snapshot's metadata), temp + rename everywhere, so a file half-written by
 * a killed process is never listed, and is removed by the next open. Its
 * state (install id, policy counters, upload backoff) lives in files in the
 * directory, so it survives the app being killed. Several processes may
 * share one spool (file locks).
 */
struct hg_spool;
#define HG_SPOOL_LIMITS_VERSION 1u
struct hg_spool_limits {
  uint32_t version;          /* HG_SPOOL_LIMITS_VERSION                      */
  uint32_t max_files;        /* default 8                                    */
  uint64_t max_bytes;        /* default 64 MiB                               */
  uint64_t min_free_bytes;   /* default 200 MB: below it no capture is taken
                                and spooled files are dropped (oldest first) */
  uint32_t compress;         /* 1: gzip each capture after the thaw (default 1) */
  uint32_t level;            /* deflate level (default 1)                    */
  uint32_t backoff_ms;       /* upload retry: first delay (default 30000),
                                doubled per failed try up to 1 hour, each
                                delay drawn in [d/2, d] (jitter)            */
  uint32_t max_tries;        /* a file that failed this many times without
                                an answer that settles it is dropped (default 10) */
  uint64_t reserved[4];
};
HG_API void hg_spool_limits_init(struct hg_spool_limits *l);
/* Creates dir if missing (one level, mode 0700), removes temporaries of
 * writers that are gone, trims to the limits. NULL l = defaults.
 * 0, HG_EINVAL, HG_ENOENT, HG_EIO, HG_ENOMEM. */
HG_API int hg_spool_open(const char *dir, const struct hg_spool_limits *l, struct hg_spool **out);
HG_API void hg_spool_close(struct hg_spool *s);
HG_API const char *hg_spool_dir(const struct hg_spool *s);
/* Drops oldest files while over a budget; returns how many were dropped. */
HG_API int hg_spool_trim(struct hg_spool *s);
/* Adds a finished snapshot at `path` (inside the spool directory) to the
 * queue: compresses it when the limits say so (file.hgsnap -> file.hgsnap.gz,
 * temp + rename, then the original is removed) and trims. 0 or HG_E*. */
HG_API int hg_spool_add(struct hg_spool *s, const char *path);
struct hg_spool_stats {
  uint32_t files;            /* queued snapshots                             */
  uint64_t bytes;
  uint64_t dropped;          /* dropped since the last snapshot took the count */
  uint64_t dropped_total;
};
HG_API int hg_spool_stats(struct hg_spool *s, struct hg_spool_stats *st);
/* The per-install id: 32 random hex digits made on first open and kept in
 * the spool directory (never a hardware id). */
HG_API const char *hg_spool_install_id(const struct hg_spool *s);

/* Capture policy used by the watcher (defaults after KOOM / LeakCanary). */
#define HG_POLICY_OPTIONS_VERSION 1u
struct hg_policy_options {
  uint32_t version;          /* HG_POLICY_OPTIONS_VERSION                    */
  uint32_t fires;            /* the trigger must fire this many times (default 3) */
  uint32_t window_ms;        /*   within this window (default 60000)         */
  uint32_t max_per_version;  /* captures per app version per period (default 5) */
  uint32_t period_days;      /* (default 15)                                 */
  uint32_t once_per_session; /* 1: at most one capture per process (default 1) */
  uint32_t sample_permille;  /* installs that capture at all, by a stable
                                choice from the install id (default 1000 = all) */
  uint32_t min_battery_percent; /* no capture below this while not charging,
                                where the level is known (default 20)       */
  uint64_t reserved[4];
};
HG_API void hg_policy_options_init(struct hg_policy_options *o);

/* Device metadata the watcher writes into each snapshot (as "device.*" and
 * "app.*" keys of the app key/values); NULL fields are left out. */
#define HG_DEVICE_INFO_VERSION 1u
struct hg_device_info {
  uint32_t version;          /* HG_DEVICE_INFO_VERSION                       */
  const char *app;           /* app name                                     */
  const char *app_version;   /* also the policy's per-version key            */
  const char *build;
  const char *os_version;    /* NULL: detected (uname / kern.osproductversion) */
  const char *device_model;  /* NULL: detected (DMI product / hw.machine)    */
  uint64_t reserved[4];
};
/* What only the app knows (iOS: UIApplication state, UIDevice battery):
 * foreground 1/0 (-1 unknown), battery percent 0..100 (-1 unknown),
 * charging 1/0. Any thread; read by the watcher at its next sample. */
HG_API void hg_device_state(int foreground, int battery_percent, int charging);

/* Upload. The backend: POST URL with the file as body, "Authorization:
 * Bearer KEY", 201 {"id"} stored / 200 duplicate (the server dedups by the
 * snapshot's checksum), 413/422 refused (the file is dropped, with the
 * reason logged), 429 (+ Retry-After) / 503 / 5xx / no answer: kept, retried
 * later with exponential backoff and jitter (state kept in the spool). */
enum hg_upload_action {
  HG_UPLOAD_EMPTY = 0,       /* nothing queued                              */
  HG_UPLOAD_SENT = 1,        /* 201: removed from the spool                 */
  HG_UPLOAD_DUPLICATE = 2,   /* 200: the server had it; removed             */
  HG_UPLOAD_DROPPED = 3,     /* 413/422 or other 4xx: removed, reason logged */
  HG_UPLOAD_RETRY = 4,       /* kept; not before retry_at_ms                */
  HG_UPLOAD_WAIT = 5         /* backing off: nothing sent (see wait_ms)     */
};
#define HG_UPLOAD_MAX_HEADERS 6
/* The next file to send, with the headers to send it with (Darwin: the app
 * sends it with URLSession and reports the outcome). */
struct hg_upload_item {
  char path[4096];
  char name[256];            /* file name in the spool                       */
  uint64_t bytes;
  char checksum[17];         /* the snapshot's xxh64, hex (from its name)    */
  uint32_t header_count;
  char headers[HG_UPLOAD_MAX_HEADERS][160]; /* "Name: value", without the
                                              Authorization header        */
};
/* 0 with *item; HG_ENOTFOUND when the queue is empty; HG_EBUSY with
 * *wait_ms set while backing off (or another process is uploading). */
HG_API int hg_upload_peek(struct hg_spool *s, struct hg_upload_item *item, uint64_t *wait_ms);
/* The outcome of sending item: the HTTP status (0: no answer), Retry-After
 * in seconds (0: none). Returns the enum hg_upload_action taken. */
HG_API int hg_upload_report(struct hg_spool *s, const struct hg_upload_item *item, int http_status,
                            uint32_t retry_after_s);

#define HG_UPLOAD_OPTIONS_VERSION 1u
struct hg_upload_options {
  uint32_t version;          /* HG_UPLOAD_OPTIONS_VERSION                    */
  uint32_t timeout_ms;       /* whole request (default 120000)              */
  uint64_t max_bytes_per_s;  /* send rate cap (default 1 MB/s; 0 = none)     */
  uint32_t insecure;         /* 1: do not verify TLS (tests only; default 0) */
  uint32_t pad;
  uint64_t reserved[4];
};
HG_API void hg_upload_options_init(struct hg_upload_options *o);
struct hg_upload_result {
  int action;                /* enum hg_upload_action                        */
  int http_status;           /* 0: no answer                                 */
  uint64_t wait_ms;          /* RETRY/WAIT: until the next attempt           */
  char name[256];            /* the file concerned                           */
  char message[256];         /* reason / server answer (truncated)           */
};
/* Linux (libcurl, loaded on first use; TLS verified, HTTP/2 where the
 * server offers it): sends the oldest spooled file, if the backoff allows.
 * Blocking: call it from a thread of its own, never the capturing one.
 * 0 with *r filled, or HG_EUNSUPPORTED (no libcurl / Darwin), HG_EINVAL. */
HG_API int hg_upload_next(struct hg_spool *s, const char *url, const char *key,
                          const struct hg_upload_options *o, struct hg_upload_result *r);
/* ------------------------------------------------- 13. Fleet analysis */
/*
 * From many snapshots to ranked, version-aware memory issues (graph/fleet*.c,
 * docs/fleet.md): a snapshot's summary (metadata, class census, signatures),
 * its CBOR form and hostile reader, a set of summaries with issues (status
 * against a baseline version), class growth, the merged retention tree, and
 * one JSON writer for each. Every result owns its memory (*_free, NULL
 * allowed); the strings of issues, growth and trees are the set's, so the
 * struct hg_fleet must outlive them.
 */
/* Version of the signature algorithm: every signature carries the one that
 * made it; summaries made by an older one are regrouped from their
 * snapshots (hg_fleet regroup), never compared with newer ones. */
#define HG_FLEET_ALGO 1u
/* Version of the summary's serialised form. */
#define HG_FLEET_SUMMARY_FORMAT 1u
/* The serialised summary's bound: the writer drops the smallest census rows,
 * then the smallest signatures, until it fits (counted in `dropped`). */
#define HG_FLEET_SUMMARY_MAX (64u * 1024u)

/* Selection rules (docs/fleet.md, "Signatures"). */
#define HG_FLEET_TOP_HOLDERS 32u          /* biggest dominator subtrees         */
#define HG_FLEET_HOLDER_BYTES (64u << 10) /* and every one at least this big    */
#define HG_FLEET_MAX_SIGS 512u            /* signatures kept per summary        */
#define HG_FLEET_MAX_CLASSES 256u         /* census rows kept per summary       */
#define HG_FLEET_MAX_STEPS 24u            /* path steps kept (root + last ones) */
#define HG_FLEET_SITE_FRAMES 8u           /* frames of a site signature         */
#define HG_FLEET_TOP_SITES 32u            /* allocation sites kept              */
#define HG_FLEET_MAX_TEXT 256u            /* bytes of any one string kept       */

enum hg_fleet_kind {
  HG_FLEET_RETENTION = 0, /* a dominator subtree: the class path to its holder */
  HG_FLEET_LEAK = 1,      /* a root leak: its classes and cycle/single shape    */
  HG_FLEET_SITE = 2,      /* an allocation stack, by image + symbol             */
  HG_FLEET_LARGE = 3      /* the large-allocation ring: size bucket + stack     */
};
#define HG_FLEET_KIND_COUNT 4
const char *hg_fleet_kind_name(uint32_t kind);
/* The kind named s ("retention" …), or -1. */
HG_API int hg_fleet_kind_parse(const char *s);

/* One signature of one snapshot. Same (kind, algo, hash) = same issue. */
struct hg_fleet_sig {
  uint64_t hash;            /* xxh64 of kind, algo and the steps            */
  uint64_t bytes;           /* retained / owned / allocated bytes           */
  uint64_t count;           /* holders, leaks, blocks folded into it        */
  uint32_t kind;            /* enum hg_fleet_kind                           */
  uint32_t algo;            /* HG_FLEET_ALGO that made it                   */
  uint32_t step_count;
  const char **steps;       /* retention: root step … holder; others: parts */
};

struct hg_fleet_class {
  const char *name;         /* "(unclassified)" for class 0                 */
  uint64_t count, bytes, retained;
};

/* Metadata keys read from the snapshot: the `app` map's app, app_version,
 * build, device_model, device_id, session_id, footprint, limit (the last two
 * decimal byte counts), os_version from the `app` map or else the snapshot's
 * own os_version; trigger, process, platform and time_ns from the snapshot. */
struct hg_fleet_summary {
  uint32_t format;          /* HG_FLEET_SUMMARY_FORMAT                      */
  const char *app, *app_version, *build, *os_version, *device_model, *device_id,
      *session_id, *trigger, *platform, *process;
  const char *snapshot;     /* the snapshot's file name (no directory)     */
  uint64_t time_ns, footprint, limit;
  uint64_t checksum;        /* the snapshot's xxh64: the summary's key      */
  uint64_t file_size;
  uint64_t nodes, edges, heap_bytes, reachable_bytes, leaked_bytes;
  uint32_t class_count;
  struct hg_fleet_class *classes;  /* by retained bytes, biggest first      */
  uint32_t sig_count;
  struct hg_fleet_sig *sigs;       /* by kind, then bytes, biggest first    */
  uint32_t dropped;         /* rows and signatures left out by the bounds  */
  void *priv;               /* owned storage                               */
};

/* Names a stack frame for site and large signatures (e.g. a symbolizer's
 * function name); returns NULL to use the default, "IMAGE+0xOFF" with the
 * image's base name ("?" when the frame has no image: never an address). */
typedef const char *(*hg_fleet_frame_fn)(void *ctx, const struct hg_graph *g,
                                         const struct hg_stack_frame *f);
struct hg_fleet_summary_options {
  hg_fleet_frame_fn frame_name;
  void *frame_ctx;
  const char *snapshot;     /* file name recorded in the summary (copied)  */
};

/* Summarises a loaded snapshot (runs the dominators and leaks on g). opt may
 * be NULL. 0, HG_ENOMEM. */
HG_API int hg_fleet_summarize(struct hg_graph *g, const struct hg_fleet_summary_options *opt,
                       struct hg_fleet_summary **out);
HG_API void hg_fleet_summary_free(struct hg_fleet_summary *s);

/* The CBOR form (docs/fleet.md, "Summary format"), at most
 * HG_FLEET_SUMMARY_MAX bytes: *buf is malloc'd. May drop census rows and
 * signatures to fit (s->dropped is not changed; the encoded one is). */
HG_API int hg_fleet_summary_encode(const struct hg_fleet_summary *s, uint8_t **buf, size_t *len);
/* Reads a summary, treating the bytes as hostile: any problem is an error
 * with its byte offset (HG_EFORMAT, HG_EVERSION, HG_ELIMIT, HG_ETRUNCATED);
 * never more memory than a small multiple of len. */
HG_API int hg_fleet_summary_decode(const void *buf, size_t len, struct hg_fleet_summary **out,
                            struct hg_load_error *err);
/* Files: write atomically (temp + rename), read with the bound above. */
HG_API int hg_fleet_summary_save(const struct hg_fleet_summary *s, const char *path);
HG_API int hg_fleet_summary_load(const char *path, struct hg_fleet_summary **out,
                          struct hg_load_error *err);

/* The checksum in a snapshot's trailer and its size, read from the file's
 * last bytes without loading it: the summary cache's key. 0, HG_EIO,
 * HG_EFORMAT (no trailer checksum where the format puts it). */
HG_API int hg_fleet_snapshot_key(const char *path, uint64_t *checksum, uint64_t *size);

/* ---- A set of summaries ---- */

struct hg_fleet;
struct hg_fleet *hg_fleet_new(void);
HG_API void hg_fleet_free(struct hg_fleet *f);
/* Adds what the analyses need from s (s may be freed afterwards). 0, HG_ENOMEM. */
HG_API int hg_fleet_add(struct hg_fleet *f, const struct hg_fleet_summary *s);
/* Versions seen, lowest first (numeric-aware order: "8.10" after "8.9"). */
HG_API uint32_t hg_fleet_version_count(const struct hg_fleet *f);
const char *hg_fleet_version(const struct hg_fleet *f, uint32_t i);
HG_API uint32_t hg_fleet_snapshot_count(const struct hg_fleet *f);

/* Regression test (docs/fleet.md, "Statistics"). */
#define HG_FLEET_MIN_SAMPLES 8u     /* snapshots per side for "regressed"   */
#define HG_FLEET_ALPHA 0.001        /* one-sided Mann-Whitney p below this  */
#define HG_FLEET_MIN_DELTA (16u << 10) /* and medians at least this apart    */

struct hg_fleet_query {
  const char *version;      /* NULL: the highest version                    */
  const char *baseline;     /* NULL: the next lower version (none: no status) */
  int kind;                 /* enum hg_fleet_kind, or -1 for all            */
  uint64_t floor;           /* issues below this median are left out (0 = none) */
};

enum hg_fleet_status {
  HG_FLEET_ONGOING = 0, HG_FLEET_NEW = 1, HG_FLEET_REGRESSED = 2, HG_FLEET_FIXED = 3
};
const char *hg_fleet_status_name(uint32_t status);

struct hg_fleet_issue {
  uint64_t hash;
  uint32_t kind, algo, status;
  uint32_t step_count;
  const char **steps;       /* the representative path                      */
  const char *title;
  uint32_t snapshots;       /* in the version (fixed: in the baseline)      */
  uint32_t devices;         /* distinct device ids among them               */
  uint32_t version_count;
  const char **versions;    /* every version it was seen in, lowest first   */
  const char *first_version, *last_version;
  double share;             /* snapshots / the version's snapshots          */
  uint64_t bytes_median, bytes_p90, bytes_max;
  uint64_t base_median;     /* in the baseline (0 when absent)              */
  uint32_t base_snapshots;
  double p_value;           /* Mann-Whitney, one-sided (1 when not tested)  */
  uint64_t unexplained;     /* growth of the median not explained below     */
  int context_of;           /* index of the issue that explains it, or -1   */
  double impact;            /* devices x bytes_median                       */
  uint32_t exemplar_count;
  const char *exemplars[3]; /* snapshot names with the most bytes           */
  uint64_t exemplar_bytes[3];
};
struct hg_fleet_issues {
  const char *version, *baseline;  /* as resolved (baseline may be NULL)    */
  uint32_t version_snapshots, baseline_snapshots;
  uint32_t count;
  struct hg_fleet_issue *issues;   /* by impact, biggest first              */
  void *priv;
};
/* 0, HG_ENOMEM, HG_ENOTFOUND (no such version / no snapshots). */
HG_API int hg_fleet_issues(const struct hg_fleet *f, const struct hg_fleet_query *q,
                    struct hg_fleet_issues **out);
HG_API void hg_fleet_issues_free(struct hg_fleet_issues *r);

/* Class growth: median bytes per snapshot per class (0 where a snapshot does
 * not list the class), version against baseline, biggest risers first. */
struct hg_fleet_growth_row {
  const char *name;
  uint64_t base_median, median;
  int64_t delta;
  uint32_t base_snapshots, snapshots;  /* listing the class                 */
};
struct hg_fleet_growth {
  const char *version, *baseline;
  uint32_t count;
  struct hg_fleet_growth_row *rows;
  void *priv;
};
HG_API int hg_fleet_class_growth(const struct hg_fleet *f, const char *version, const char *baseline,
                          struct hg_fleet_growth **out);
HG_API void hg_fleet_growth_free(struct hg_fleet_growth *g);

/* Merged retention tree of a version: the retention paths of its snapshots
 * as a trie of steps; total = bytes summed over the snapshots (a node's
 * total is at least its children's), mean = total / snapshots. */
struct hg_fleet_tree_node {
  const char *name;
  uint64_t total;
  double mean;
  uint32_t snapshots;       /* snapshots with a holder at or below it       */
  uint32_t first_child, child_count; /* children are nodes[first_child …]   */
};
struct hg_fleet_tree {
  const char *version;
  uint32_t snapshots;
  uint32_t count;
  struct hg_fleet_tree_node *nodes; /* nodes[0] is the root "(roots)"       */
  void *priv;
};
HG_API int hg_fleet_tree(const struct hg_fleet *f, const char *version, struct hg_fleet_tree **out);
HG_API void hg_fleet_tree_free(struct hg_fleet_tree *t);

/* ---- JSON (one writer per result; the CLI and the server share them) ---- */
/* One issue as one JSON object, no newline. */
HG_API int hg_fleet_issue_json(const struct hg_fleet_issues *r, uint32_t i, hg_write_fn write, void *ctx);
/* {"version":…,"baseline":…,"classes":[…]} */
HG_API int hg_fleet_growth_json(const struct hg_fleet_growth *g, uint32_t limit, hg_write_fn write,
                         void *ctx);
/* Icicle-ready: {"name","value","mean","snapshots","children":[…]} nested. */
HG_API int hg_fleet_tree_json(const struct hg_fleet_tree *t, hg_write_fn write, void *ctx);
/* A summary as JSON (for inspection and the server). */
HG_API int hg_fleet_summary_json(const struct hg_fleet_summary *s, hg_write_fn write, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* HEAPGRAPH_H */
