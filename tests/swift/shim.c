/*
 * shim.c — the C side of the Swift test program (tests/swift/main.swift):
 * hg_capture with the default options (suspend or fork mode), and C heap
 * blocks that point at a Swift class's metadata without being instances of
 * it (too small; a fake metadata copy), which must never be labelled Swift.
 */
#include <heapgraph.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int swift_test_capture(const char *path, int fork_mode) {
  struct hg_options o;
  hg_options_init(&o);
  o.mode = fork_mode ? HG_MODE_FORK : HG_MODE_SUSPEND;
  return hg_capture(path, &o);
}

static void *keep[64];

/* The address of planted block i (for the manifest). */
unsigned long swift_test_adversarial_addr(long i) {
  return i >= 0 && i < 64 ? (unsigned long)(uintptr_t)keep[i] : 0;
}

/* Returns how many blocks it planted. */
long swift_test_adversarial(const void *meta, long size) {
  int n = 0;
  /* a block too small for the class, with the class's metadata in word 0 */
  uint64_t *small = malloc(16);
  small[0] = (uint64_t)(uintptr_t)meta;
  small[1] = 3;
  keep[n++] = small;
  /* a copy of the metadata (its first 128 bytes) and a block pointing at it:
   * the descriptor is right, the metadata is not one the runtime made */
  uint64_t *fake = malloc(128);
  memcpy(fake, meta, 128);
  keep[n++] = fake;
  uint64_t *obj = calloc(1, (size_t)size + 64);
  obj[0] = (uint64_t)(uintptr_t)fake;
  obj[1] = 3;
  keep[n++] = obj;
  /* random words */
  for (int i = 0; i < 8; i++) {
    uint64_t *r = malloc(64);
    for (int k = 0; k < 8; k++) r[k] = (uint64_t)rand() * 2654435761u;
    keep[n++] = r;
  }
  return n;
}
