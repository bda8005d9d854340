/*
 * mkstacks.c — writes the sampled-mode stacks snapshot of the viewer test:
 * what `heapgraph run --sample-bytes 4096` would record, with frames that
 * point into this program itself (so they symbolize to the functions below,
 * with file:line from its debug info, under any build, ASan included, where
 * `run --stacks` records nothing). Some blocks carry a stack, some were not
 * sampled, one stack's blocks were all freed, one frame is in an image whose
 * path is HTML.  mkstacks OUT.hgsnap
 * `mkstacks OUT.hgsnap N`: N stacks (every block recorded), one block each,
 * for paging: frame 0 in widget_new, frame 1 an address in no image.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "heapgraph.h"

#define NOINLINE __attribute__((noinline, used))
volatile int sink;
NOINLINE void widget_new(void) { sink = 1; }
NOINLINE void cache_fill(void) { sink = 2; }
NOINLINE void parse_config(void) { sink = 3; }
NOINLINE void freed_site(void) { sink = 4; }

static int first(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  *(uintptr_t *)out = info->dlpi_addr; /* the main program comes first */
  return 1;
}

/* A return address a few bytes into fn (the symbolizer looks up addr - 1). */
static uint64_t in(void (*fn)(void), uintptr_t base) { return (uint64_t)((uintptr_t)fn - base + 4); }

/* N stacks of two frames, block i (16 + 8 * (i % 100) bytes) at stack i + 1. */
static int many(const char *path, const char *self, uintptr_t base, uint32_t n) {
  struct hg_writer *w;
  int rc = hg_writer_open(&w, path);
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = 8, .page_size = 4096,
                      .process = "many", .allocator = "test"};
  struct hg_image im = {self, NULL, 0, 0, 0, 1u << 30};
  struct hg_stack_info si = {32, 0, 1u << 30, 1u << 20, 1u << 19, n, 0, "ok", "frame-pointer"};
  rc = rc ? rc : hg_writer_meta(w, &m);
  rc = rc ? rc : hg_writer_image(w, &im);
  for (uint32_t i = 0; i < n; i++) {
    rc = rc ? rc : hg_writer_node(w, 0x100000 + 0x1000ull * i, 16 + 8 * (i % 100), 0, HG_NODE_MALLOC, 0);
    struct hg_root r = {HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000 + 8ull * i, i};
    rc = rc ? rc : hg_writer_root(w, &r);
  }
  rc = rc ? rc : hg_writer_stack_info(w, &si);
  for (uint32_t i = 0; i < n; i++) {
    struct hg_stack_frame f[2] = {{0, in(widget_new, base)}, {HG_NO_OWNER, 0x7f0000000000ull + 16ull * i}};
    struct hg_stack s = {1, 16 + 8 * (i % 100), 2, f};
    rc = rc ? rc : hg_writer_stack(w, &s);
    uint32_t id = i + 1;
    rc = rc ? rc : hg_writer_node_stacks(w, i, 1, &id);
  }
  rc = rc ? rc : hg_writer_finish(w);
  if (rc) fprintf(stderr, "mkstacks: %s\n", w ? hg_writer_message(w) : hg_error_string(rc));
  hg_writer_close(w);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: mkstacks OUT.hgsnap [N]\n");
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  uintptr_t base = 0;
  dl_iterate_phdr(first, &base);
  if (argc == 3) return many(argv[1], self, base, (uint32_t)strtoul(argv[2], NULL, 10));
  uintptr_t mainp = (uintptr_t)main;
  struct hg_writer *w;
  int rc = hg_writer_open(&w, argv[1]);
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = 8, .page_size = 4096,
                      .process = "sampled", .allocator = "test"};
  struct hg_image im = {self, NULL, 0, 0, 0, 1u << 30};
  struct hg_stack_info si = {32, 4096, 1u << 20, 8192, 4096, 5, 0, "ok", "frame-pointer"};
  struct hg_stack_frame f1[3] = {{0, in(widget_new, base)}, {0, in(cache_fill, base)}, {0, mainp - base + 4}};
  /* an image path that is markup if a page ever treats it as HTML */
  struct hg_image evil = {"/opt/<img src=x onerror=\"window.__pwned=3\">.so", NULL, 0, 0x7e0000000000, 0, 0x10000};
  struct hg_stack_frame f2[3] = {{0, in(parse_config, base)}, {0, mainp - base + 8}, {1, 0x10}};
  struct hg_stack_frame f3[2] = {{0, in(freed_site, base)}, {HG_NO_OWNER, 0x7f0000001234}};
  struct hg_stack s1 = {40, 163840, 3, f1}, s2 = {3, 1536, 3, f2}, s3 = {0, 0, 2, f3};
  /* blocks: 0 widget (stack 1) holds 1 and 2; 2 and 4 were not sampled */
  const uint64_t size[6] = {4096, 64, 128, 2048, 32, 512};
  const uint32_t stack[6] = {1, 2, 0, 1, 0, 2};
  struct hg_large_alloc la = {0x10000, 4096, 1000, 7, 1};
  rc = rc ? rc : hg_writer_meta(w, &m);
  rc = rc ? rc : hg_writer_image(w, &im);
  rc = rc ? rc : hg_writer_image(w, &evil);
  for (uint32_t i = 0; i < 6; i++) rc = rc ? rc : hg_writer_node(w, 0x10000 + 0x2000 * i, size[i], 0, HG_NODE_MALLOC, 0);
  rc = rc ? rc : hg_writer_edge(w, 0, 8, 1, HG_EDGE_CONSERVATIVE, 0);
  rc = rc ? rc : hg_writer_edge(w, 0, 16, 2, HG_EDGE_CONSERVATIVE, 0);
  for (uint32_t i = 0; i < 6; i++) {
    struct hg_root r = {HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000 + 8 * i, i};
    if (i != 1 && i != 2) rc = rc ? rc : hg_writer_root(w, &r);
  }
  rc = rc ? rc : hg_writer_stack_info(w, &si);
  rc = rc ? rc : hg_writer_stack(w, &s1);
  rc = rc ? rc : hg_writer_stack(w, &s2);
  rc = rc ? rc : hg_writer_stack(w, &s3);
  rc = rc ? rc : hg_writer_node_stacks(w, 0, 6, stack);
  rc = rc ? rc : hg_writer_large_alloc(w, &la);
  rc = rc ? rc : hg_writer_finish(w);
  if (rc) fprintf(stderr, "mkstacks: %s\n", w ? hg_writer_message(w) : hg_error_string(rc));
  hg_writer_close(w);
  return rc ? 1 : 0;
}
