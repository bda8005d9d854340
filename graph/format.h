/*
 * format.h — snapshot format v1 constants and the varint helpers shared by
 * the writer and the reader. The format itself is specified in
 * docs/snapshot-format.md (with a CDDL schema in docs/snapshot.cddl).
 *
 * Layout: tag 55799 ( indefinite array [ header, record*, trailer ] ).
 * header  = ["heapgraph-snapshot", version]
 * record  = [type, …]   (types below; unknown types are skipped by readers)
 * trailer = [HG_REC_TRAILER, {counts}, xxh64 of every byte before the trailer]
 * followed by the indefinite-array break (0xff) and end of file.
 */
#ifndef HG_GRAPH_FORMAT_H
#define HG_GRAPH_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define HG_MAGIC_TEXT "heapgraph-snapshot"
#define HG_MAGIC_TEXT_LEN 18
#define HG_SELF_DESCRIBE_TAG 55799u

/* The fixed 25-byte prefix every v1 file starts with. */
#define HG_PREFIX_LEN 25

enum hg_record_type {
  HG_REC_META = 1,    /* [1, {text: value}]                                  */
  HG_REC_REGION = 2,  /* [2, start, size, prot, tag, name/null, resident, dirty, swapped, image/null] */
  HG_REC_IMAGE = 3,   /* [3, path, id bytes, load_addr, slide, size]         */
  HG_REC_THREAD = 4,  /* [4, tid, name/null, stack_lo, stack_hi]             */
  HG_REC_HEAP = 5,    /* [5, id, name]                                       */
  HG_REC_CLASS = 6,   /* [6, id, name, kind, instance_size]                  */
  HG_REC_STRING = 7,  /* [7, id, text]                                       */
  HG_REC_NODES = 8,   /* [8, first_index, count, base_addr, bytes]           */
  HG_REC_EDGES = 9,   /* [9, first_source, count, bytes]                     */
  HG_REC_ROOTS = 10,  /* [10, count, bytes]                                  */
  HG_REC_TRAILER = 11, /* [11, {counts}, xxh64]                              */
  /* Optional allocation-stack records (skipped by readers that predate them) */
  HG_REC_STACK_INFO = 12, /* [12, max_frames, sample_bytes, budget, tracking, map, live, dropped, status, unwinder] */
  HG_REC_STACK = 13,      /* [13, id, count, bytes, frames bytes]            */
  HG_REC_NODE_STACKS = 14,/* [14, first_node, stack ids bytes]               */
  HG_REC_LARGE = 15       /* [15, addr, size, stack, time_ns, tid]           */
};
/* Stack frames: varint (image index + 1, 0 = none) then varint offset. */
#define HG_STACK_MAX_FRAMES 256u

/* Chunk payloads are capped so a reader never needs a bigger buffer. */
#define HG_CHUNK_MAX_BYTES (256u * 1024u)
/* Smallest encoded sizes, used by the reader to bound counts by bytes. */
#define HG_NODE_MIN_BYTES 4u /* gap, size, class, flags: one byte each       */
#define HG_EDGE_MIN_BYTES 2u /* offkind, target (group header amortised)     */
#define HG_ROOT_MIN_BYTES 3u /* kindbyte, where, target                      */

/* Node row flags byte: low 4 bits HG_NODE_*, bit 7 = heap id follows. */
#define HG_NODE_ROW_HEAP 0x80u
/* Edge group header "n" = (row count << 1) | words flag; with the flag set
 * every offset delta of the group is stored divided by 8. */
#define HG_GROUP_WORDS 0x01u
/* Edge row offkind = (offset delta << 3) | kind code (bits 0-2). */
#define HG_OFFKIND_SHIFT 3
/* Kind codes 5..7 are strong/weak/unowned with a field-name id following. */
#define HG_KINDCODE_NAMED_BASE 5u
/* Root row kind byte: low 4 bits kind, bit 4 = owner follows. */
#define HG_ROOT_ROW_OWNER 0x10u

/* Counts in the trailer map, in this order. */
#define HG_TRAILER_KEYS(X) \
  X(regions) X(images) X(threads) X(heaps) X(classes) X(strings) X(nodes) X(edges) X(roots)

/* ---- LEB128 varints ---- */

static inline size_t _hg_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* Decodes one varint from [*pp, end). Returns 0 on success, -1 when the
 * input ends inside the varint or it does not fit in 64 bits. */
static inline int _hg_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    if (shift == 63 && (b & 0x7e)) return -1;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *pp = p;
      *out = v;
      return 0;
    }
  }
  return -1;
}

static inline uint64_t _hg_zigzag(int64_t v) {
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t _hg_unzigzag(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#define HG_VARINT_MAX 10

#endif
