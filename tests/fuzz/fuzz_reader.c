/*
 * fuzz_reader.c — libFuzzer target for the snapshot reader: any byte string
 * goes through hg_graph_load_mem(). Inputs whose only fault is the checksum
 * (the fuzzer cannot forge xxh64) are loaded again through the file reader
 * (a memfd, window refills included) with HG_LOAD_ALLOW_BAD_CHECKSUM, so
 * the success path is reachable from mutated files. On success the loaded graph is walked
 * (reverse CSR, address lookups, edge field names, class names) so every
 * index the reader accepted is exercised, and summarised for the fleet as
 * `heapgraph serve` does every upload (dominators, leaks, retention paths;
 * an empty snapshot crashed it once). Must never crash, hang or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_memfd.h"
#include "graph/fleet.h"
#include "heapgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static struct hg_graph *load_ignoring_checksum(const uint8_t *data, size_t size,
                                               struct hg_load_error *err) {
  char path[64];
  int fd = fuzz_memfd(data, size, path, sizeof path);
  if (fd < 0) return NULL;
  struct hg_graph *g = hg_graph_load_flags(path, HG_LOAD_ALLOW_BAD_CHECKSUM, err);
  close(fd);
  return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load_mem(data, size, &err);
  if (!g && err.code == HG_ECHECKSUM) g = load_ignoring_checksum(data, size, &err);
  if (!g) {
    /* The error must be a code with a terminated message. */
    if (err.code >= 0 || memchr(err.message, 0, sizeof err.message) == NULL) __builtin_trap();
    return 0;
  }
  if (hg_graph_build_reverse(g) == 0) {
    uint64_t s = 0;
    for (uint32_t n = 0; n < g->node_count; n++)
      for (uint32_t i = g->in_start[n]; i < g->in_start[n + 1]; i++) {
        if (g->edge_target[g->in_edge[i]] != n) __builtin_trap();
        s += g->in_source[i];
      }
    sink += s;
  }
  for (uint32_t n = 0; n < g->node_count; n++) {
    if (hg_graph_find(g, g->node_addr[n]) != (int64_t)n) __builtin_trap();
    if (hg_graph_find(g, g->node_addr[n] + g->node_size[n] - 1) != (int64_t)n) __builtin_trap();
    const char *c = hg_graph_node_class_name(g, n);
    if (c) sink += (uint8_t)c[0];
    for (uint32_t e = g->edge_start[n]; e < g->edge_start[n + 1]; e++) {
      const char *f = hg_graph_edge_field(g, e);
      if (f) sink += (uint8_t)f[0];
      if (g->edge_target[e] >= g->node_count) __builtin_trap();
    }
  }
  sink += (uint64_t)hg_graph_find(g, 0) + (uint64_t)hg_graph_find(g, UINT64_MAX);
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target >= g->node_count) __builtin_trap();
  for (size_t i = 0; i < g->meta.app_count; i++) sink += strlen(g->meta.app[i].key);
  struct hg_fleet_summary *fs = NULL;
  if (hg_fleet_summarize(g, NULL, &fs) == 0) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (hg_fleet_summary_encode(fs, &buf, &len) == 0) sink += len;
    free(buf);
    hg_fleet_summary_free(fs);
  }
  hg_graph_free(g);
  return 0;
}
