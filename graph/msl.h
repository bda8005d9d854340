/*
 * msl.h — reader of MallocStackLogging index files (graph/msl.c): the
 * stack-logs.<pid>.<addr>.<name>.XXXXXX.index files libmalloc wrote up to
 * libmalloc-166 (iOS <= 12, macOS <= 10.14). Internal to the CLI
 * (`heapgraph msl`) and its tests; not part of heapgraph.h.
 */
#ifndef HG_GRAPH_MSL_H
#define HG_GRAPH_MSL_H

#include <stddef.h>
#include <stdint.h>

/* Record type flags (libmalloc-166 private/stack_logging.h). */
#define HG_MSL_GENERIC 0x01u
#define HG_MSL_ALLOC 0x02u
#define HG_MSL_DEALLOC 0x04u
#define HG_MSL_VM_ALLOCATE 0x10u
#define HG_MSL_VM_DEALLOCATE 0x20u
#define HG_MSL_MAPPED_FILE 0x80u
#define HG_MSL_DISGUISE 0x5555u  /* address ^ this, both widths          */
#define HG_MSL_ID_MASK 0x0000ffffffffffffull /* stack id: low 48 bits      */

/* Events by kind (index into hg_msl_summary.events). */
enum hg_msl_event {
  HG_MSL_EV_ALLOC, HG_MSL_EV_FREE, HG_MSL_EV_REALLOC, HG_MSL_EV_VM_ALLOCATE,
  HG_MSL_EV_VM_DEALLOCATE, HG_MSL_EV_GENERIC, HG_MSL_EV_INVALID, HG_MSL_EV_COUNT
};

struct hg_msl_stack {
  uint64_t id;               /* uniquing-table stack id (low 48 bits)      */
  uint64_t allocs;           /* alloc events with this stack               */
  uint64_t live_count, live_bytes; /* still live at the end of the log     */
};

struct hg_msl_summary {
  uint32_t width;            /* record size in bytes: 16 (32-bit process), 24 (64-bit) */
  int width_detected;        /* 1: chosen by the reader, 0: given          */
  uint64_t records;          /* whole records read                         */
  uint64_t events[HG_MSL_EV_COUNT];
  uint64_t trailing_bytes;   /* a partial record at the end (cut file)     */
  uint64_t first_invalid;    /* byte offset of the first invalid record (valid when events[INVALID]) */
  uint64_t unmatched_frees;  /* frees of addresses not live                */
  uint64_t replaced_allocs;  /* allocs of an address already live          */
  uint64_t live_count, live_bytes;
  size_t nstacks;            /* stacks with an alloc, by live_bytes desc, id asc */
  struct hg_msl_stack *stacks;
};

struct hg_msl_error {
  int code;                  /* HG_E* */
  uint64_t offset;           /* byte offset in the file                    */
  char message[160];
};

/* Reads an index file's bytes: width 16 or 24 forces the record size, 0
 * detects it (the width whose records carry valid type flags; HG_EFORMAT
 * when neither fits). Replays allocs and frees (realloc is logged as a
 * free then an alloc) into the live blocks of each stack id. Memory grows
 * with the records only. 0, or HG_EFORMAT / HG_EINVAL / HG_ENOMEM with err
 * filled (out is then empty). Free out with _hg_msl_free. */
int _hg_msl_read(const uint8_t *data, size_t size, uint32_t width, struct hg_msl_summary *out,
                 struct hg_msl_error *err);
void _hg_msl_free(struct hg_msl_summary *s);
/* The event kind of a record's type-flag byte and its user-tag byte. */
enum hg_msl_event _hg_msl_kind(uint32_t flags, uint32_t tag);
/* Name of an event kind ("alloc", "free", …). */
const char *_hg_msl_event_name(enum hg_msl_event e);

#endif
