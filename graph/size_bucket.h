/*
 * size_bucket.h — the size classes unclassified blocks are grouped by,
 * in `heapgraph classes` and in the heapsnapshot export: bucket b holds
 * sizes in (2^(b-1), 2^b] (bucket 0: 0 and 1), labelled
 * "(unclassified <=2^b B)". Header only, for the library and the CLI.
 */
#ifndef HG_GRAPH_SIZE_BUCKET_H
#define HG_GRAPH_SIZE_BUCKET_H

#include <stdint.h>
#include <stdio.h>

#define HG_SIZE_BUCKETS 64
#define HG_SIZE_BUCKET_LABEL 48 /* bytes a label needs, with its NUL */

static inline unsigned _hg_size_bucket(uint64_t size) {
  unsigned b = 0;
  while (b < HG_SIZE_BUCKETS - 1 && ((uint64_t)1 << b) < size) b++;
  return b;
}

/* The label of bucket b, in buf. */
static inline const char *_hg_size_bucket_label(unsigned b, char *buf, size_t size) {
  snprintf(buf, size, "(unclassified <=%llu B)", (unsigned long long)((uint64_t)1 << b));
  return buf;
}

#endif
