/*
 * export_ids.c — the stable node ids the heapsnapshot export gives blocks
 * (hg_export_node_ids): DevTools' Comparison view matches objects between
 * two snapshots by id, so an id must depend on the block alone, not on how
 * many blocks lie below it.
 *
 *   id = 2 x ((addr >> 4) mod 2^31) + 1      odd, 1 .. 2^32 - 1
 *
 * i.e. (id - 1) x 8 = the address's low 35 bits (16-byte granules). Two
 * blocks can share an id only when their addresses differ by a multiple of
 * 32 GiB (or lie in one 16-byte granule): never when the heap spans less
 * than 32 GiB of address space, which is checked first (nodes are sorted by
 * address). Otherwise the keys are radix-sorted and every block whose key a
 * lower-addressed block already holds moves to the next key no block holds
 * (counted: such a block's id may differ between snapshots). Ids are unique
 * within one export whatever the addresses.
 */
#include <stdlib.h>

#include "graph/analysis.h"

#define KEY_BITS 31u
#define KEY_MASK ((1u << KEY_BITS) - 1u)

static uint32_t key_of(uint64_t addr) { return (uint32_t)(addr >> 4) & KEY_MASK; }

/* 1 if key k is some block's own key (sorted: keys of s[0..n) ascending). */
static int taken(const uint64_t *s, uint32_t n, uint32_t k) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if ((uint32_t)(s[mid] >> 32) < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && (uint32_t)(s[lo] >> 32) == k;
}

/* Stable LSD radix sort of (key << 32 | node) by key, two 16-bit passes:
 * equal keys stay in node (= address) order. */
static int sort_keys(uint64_t *a, uint32_t n) {
  uint64_t *tmp = _hg_malloc_big((size_t)n * sizeof *tmp);
  uint32_t *cnt = malloc(((size_t)1 << 16) * sizeof *cnt);
  if (!tmp || !cnt) {
    free(tmp);
    free(cnt);
    return HG_ENOMEM;
  }
  for (unsigned shift = 32; shift < 64; shift += 16) {
    memset(cnt, 0, ((size_t)1 << 16) * sizeof *cnt);
    for (uint32_t i = 0; i < n; i++) cnt[(a[i] >> shift) & 0xffff]++;
    uint32_t sum = 0;
    for (uint32_t b = 0; b < (1u << 16); b++) {
      uint32_t c = cnt[b];
      cnt[b] = sum;
      sum += c;
    }
    for (uint32_t i = 0; i < n; i++) tmp[cnt[(a[i] >> shift) & 0xffff]++] = a[i];
    memcpy(a, tmp, (size_t)n * sizeof *a);
  }
  free(tmp);
  free(cnt);
  return 0;
}

int hg_export_node_ids(const struct hg_graph *g, uint32_t *ids, uint64_t *moved) {
  if (!g || !ids) return HG_EINVAL;
  uint32_t n = g->node_count;
  if (n > KEY_MASK) return HG_ELIMIT; /* more blocks than odd uint32 ids */
  if (moved) *moved = 0;
  int clash = 0;
  for (uint32_t v = 0; v < n; v++) {
    ids[v] = 2 * key_of(g->node_addr[v]) + 1;
    if (v && (g->node_addr[v] >> 4) == (g->node_addr[v - 1] >> 4)) clash = 1;
  }
  /* One window of 2^31 granules maps injectively (mod 2^31 wraps once). */
  if (!n || (!clash && (g->node_addr[n - 1] >> 4) - (g->node_addr[0] >> 4) <= KEY_MASK)) return 0;

  uint64_t *s = _hg_malloc_big((size_t)n * sizeof *s);
  if (!s) return HG_ENOMEM;
  for (uint32_t v = 0; v < n; v++) s[v] = (uint64_t)key_of(g->node_addr[v]) << 32 | v;
  if (sort_keys(s, n)) {
    free(s);
    return HG_ENOMEM;
  }
  /* Blocks that lost their key, in key order, get increasing free keys:
   * above every key handed out before, and no block's own key. */
  uint64_t next = 0, count = 0;
  for (uint32_t i = 1; i < n; i++) {
    uint32_t k = (uint32_t)(s[i] >> 32);
    if (k != (uint32_t)(s[i - 1] >> 32)) continue;
    uint64_t c = next > (uint64_t)k + 1 ? next : (uint64_t)k + 1;
    for (;; c++) {
      if (c > KEY_MASK) c = 0; /* wrapped: search from 0 (rare; see below) */
      if (taken(s, n, (uint32_t)c)) continue;
      /* after a wrap, keys below `next` may already be handed out */
      int used = 0;
      for (uint32_t j = 0; c < next && j < n && !used; j++) used = ids[j] == 2 * (uint32_t)c + 1;
      if (!used) break;
    }
    ids[(uint32_t)s[i]] = 2 * (uint32_t)c + 1;
    next = c + 1;
    count++;
  }
  free(s);
  if (moved) *moved = count;
  return 0;
}
