/*
 * fleet.h — fleet analysis: from many snapshots to ranked, version-aware
 * memory issues (docs/fleet.md). Shared by the CLI (`heapgraph fleet`) and
 * a backend server; everything here is in libheapgraph (hg_fleet_*).
 *
 *   graph/fleet_summary.c  a snapshot's summary (metadata, class census,
 *                          retention / leak / site / large signatures)
 *   graph/fleet_codec.c    the summary's CBOR form and its hostile reader
 *   graph/fleet_set.c      a set of summaries: issues, statuses, ranking
 *   graph/fleet_views.c    class growth between versions, merged retention tree
 *   graph/fleet_json.c     the one JSON writer of each of those results
 *
 * Ownership: every result struct owns its memory and is freed by its *_free
 * (NULL allowed). A summary's strings live until hg_fleet_summary_free; the
 * strings of issues, growth and trees (paths, versions, snapshot names) are
 * the set's: the struct hg_fleet must outlive them.
 */
#ifndef HG_GRAPH_FLEET_H
#define HG_GRAPH_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph_priv.h"
#include "heapgraph.h"

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

/* ---- internal, shared by the fleet files ---- */

/* A result's storage: the reader's string arena (graph/graph_priv.h). */
struct _hg_arena {
  struct hg_graph_priv pv;  /* only its blocks are used                   */
};
void *_hg_fa_alloc(struct _hg_arena *a, size_t n);
char *_hg_fa_strndup(struct _hg_arena *a, const char *s, size_t n);
char *_hg_fa_strdup(struct _hg_arena *a, const char *s);
void _hg_fa_free(struct _hg_arena *a);
/* A result struct kept in its own arena: _hg_fa_result allocates it zeroed
 * (size bytes) in a, with room for the arena after it (NULL on ENOMEM, a
 * freed); _hg_fa_keep moves a there and returns it for the result's priv;
 * _hg_fa_release(priv) frees everything. */
void *_hg_fa_result(struct _hg_arena *a, size_t size);
void *_hg_fa_keep(struct _hg_arena *a, void *result, size_t size);
void _hg_fa_release(void *priv);
/* The signature hash of (kind, algo, steps). */
uint64_t _hg_fleet_hash(uint32_t kind, uint32_t algo, const char *const *steps, uint32_t n);
/* A title for a signature ("Cache held by global:app → App"). */
char *_hg_fleet_title(struct _hg_arena *a, uint32_t kind, const char *const *steps, uint32_t n);
/* Version order: digit runs compare as numbers. */
int _hg_fleet_vercmp(const char *a, const char *b);

#endif
