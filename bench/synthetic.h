/*
 * synthetic.h — a deterministic synthetic heap graph for benchmarks: node
 * sizes drawn like a real malloc heap (mostly small blocks, a long tail),
 * 16-byte aligned blocks with 8-byte headers, ~60 % of blocks classified
 * among 2,000 classes, about 3 out-edges per node whose targets are half
 * near the source (objects allocated together) and half anywhere, 90 %
 * conservative, 5 % interior, 5 % strong with a field name.
 * Header-only so several benchmarks share it; streamed straight into an
 * hg_writer (never materialised).
 */
#ifndef HG_BENCH_SYNTHETIC_H
#define HG_BENCH_SYNTHETIC_H

#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"

static inline uint64_t syn_rand(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Usable size of block i: log-uniform 24..1000 for 95 %, up to 64 KiB else. */
static inline uint64_t syn_size(uint64_t *s) {
  uint64_t r = syn_rand(s);
  unsigned bits = (r & 0xff) < 243 ? 4 + (unsigned)((r >> 8) % 6) : 10 + (unsigned)((r >> 8) % 6);
  uint64_t v = (1ull << bits) + ((r >> 16) % (1ull << bits));
  return ((v + 15) & ~15ull) + 8; /* ptmalloc-like usable sizes: 16k + 8 */
}

/* Writes `nodes` nodes and about 3 edges per node, plus classes, field
 * names, 64 roots. Returns 0 or an HG_E* code. */
static inline int syn_write(struct hg_writer *w, uint32_t nodes, int with_edges, uint64_t *edges_out,
                            uint64_t *node_bytes) {
  uint64_t s = 42;
  int rc = 0;
  for (uint32_t c = 0; c < 2000 && !rc; c++) {
    char name[48];
    snprintf(name, sizeof name, "N7example%uClass%uE", c % 97, c);
    struct hg_class k = {name, c % 3 ? HG_CLASS_CXX : HG_CLASS_OBJC, 16 + (c % 64) * 8};
    rc = hg_writer_class(w, &k, NULL);
  }
  for (uint32_t f = 0; f < 100 && !rc; f++) {
    char name[32];
    snprintf(name, sizeof name, "_field%u", f);
    rc = hg_writer_string(w, name, NULL);
  }
  uint64_t addr = 0x555555550000ull, total = 0, ne = 0;
  uint64_t *sizes = NULL;
  (void)sizes;
  /* nodes first pass: sizes regenerated deterministically in the edge pass */
  uint64_t s_nodes = s;
  for (uint32_t i = 0; i < nodes && !rc; i++) {
    uint64_t size = syn_size(&s);
    uint64_t r = syn_rand(&s);
    uint32_t cls = (r % 10) < 6 ? 1 + (uint32_t)((r >> 8) % 2000) : 0;
    rc = hg_writer_node(w, addr, size, cls, HG_NODE_MALLOC, 0);
    total += size;
    addr += size + 8;
  }
  if (with_edges) {
    s = s_nodes;
    for (uint32_t i = 0; i < nodes && !rc; i++) {
      uint64_t size = syn_size(&s);
      (void)syn_rand(&s);
      uint64_t r = syn_rand(&s);
      unsigned k = (unsigned)(r % 8); /* 0..7, ~3 after small blocks fill up */
      uint64_t words = size / 8;
      uint64_t off = 0;
      for (unsigned j = 0; j < k && !rc; j++) {
        uint64_t left = words - off / 8;
        if (left <= k - j) break;
        off += 8 * (1 + syn_rand(&s) % (left / (k - j)));
        if (off >= size) break;
        uint64_t q = syn_rand(&s);
        int64_t dst = (q & 1) ? (int64_t)i + (int64_t)((q >> 8) % 129) - 64
                              : (int64_t)((q >> 8) % nodes);
        if (dst < 0 || dst >= (int64_t)nodes) dst = (int64_t)((q >> 8) % nodes);
        unsigned kind = (q >> 40) % 20;
        if (kind < 18)
          rc = hg_writer_edge(w, i, off, (uint32_t)dst, kind == 17 ? HG_EDGE_INTERIOR : HG_EDGE_CONSERVATIVE, 0);
        else
          rc = hg_writer_edge(w, i, off, (uint32_t)dst, HG_EDGE_STRONG, 1 + (uint32_t)((q >> 48) % 100));
        ne++;
      }
    }
  }
  for (uint32_t i = 0; i < 64 && !rc; i++) {
    struct hg_root root = {HG_ROOT_OTHER, HG_NO_OWNER, 0x7ffd00000000ull + i * 8, (i * 7919u) % nodes};
    rc = hg_writer_root(w, &root);
  }
  if (edges_out) *edges_out = ne;
  if (node_bytes) *node_bytes = total;
  return rc;
}

#endif
