/*
 * fuzz_verify.c — libFuzzer target for the streaming verifier
 * (hg_snapshot_verify), differential against the loader: any byte string,
 * written to a memfd, goes through both, and they must agree — accepted by
 * both, or refused by both with the same code and offset (the verifier's
 * own limits, HG_ELIMIT "…verifier's limit…", and the loader running out of
 * memory excepted). The fuzzer cannot forge xxh64, so when the input looks
 * like it ends in a trailer its checksum is recomputed and the pair is
 * compared again: that reaches the structural checks after the checksum
 * and the success path. Must never crash, hang, leak or disagree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fuzz_memfd.h"
#include "heapgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void both(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_memfd(data, size, path, sizeof path);
  if (fd < 0) return;
  struct hg_load_error e1, e2;
  struct hg_graph *g = hg_graph_load_flags(path, 0, &e1);
  struct hg_verify_info v;
  int rc = hg_snapshot_verify(path, 0, &v, &e2);
  int limit = rc == HG_ELIMIT && strstr(e2.message, "verifier's limit");
  if (rc && (e2.code >= 0 || memchr(e2.message, 0, sizeof e2.message) == NULL)) __builtin_trap();
  if (!limit && !(g == NULL && e1.code == HG_ENOMEM)) {
    if ((g == NULL) != (rc != 0)) __builtin_trap();
    if (g && (v.checksum != g->checksum || v.node_count != g->node_count || v.edge_count != g->edge_count ||
              v.meta.app_count != g->meta.app_count))
      __builtin_trap();
    if (!g && (e1.code != e2.code || e1.offset != e2.offset)) __builtin_trap();
  }
  hg_graph_free(g);
  if (!rc) hg_verify_info_free(&v);
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  both(data, size);
  /* [11, {counts}, 1b xxh64] ff at the end: the same with a matching checksum */
  if (size < 16 || data[size - 1] != 0xff || data[size - 10] != 0x1b) return 0;
  for (size_t t = size - 11; t > 0; t--) {
    if (data[t] != 0x83 || data[t + 1] != 0x0b) continue;
    uint8_t *b = malloc(size);
    if (!b) return 0;
    memcpy(b, data, size);
    uint64_t h = XXH64(b, t, 0);
    for (int k = 0; k < 8; k++) b[size - 9 + k] = (uint8_t)(h >> (56 - 8 * k));
    both(b, size);
    free(b);
    break;
  }
  return 0;
}
