/*
 * evil_names.c — writes a small snapshot whose every string carries
 * terminal control sequences (ESC ]0;… title, ESC [2J clear, BEL, CR,
 * newline, a C1 CSI): class names, field names, heap, region, image and
 * thread names, process, trigger, app key/value, os version. Used by
 * test_cli_escape.sh (issue 18, item 6).   evil_names OUT.hgsnap
 */
#include <stdio.h>

#include "heapgraph.h"

#define EVIL(x) x "\x1b]0;owned\x07\x1b[2J\r\nfake row\t\xc2\x9b" "31m"

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct hg_builder *b = hg_builder_new();
  struct hg_kv app[1] = {{EVIL("key"), EVIL("value")}};
  struct hg_meta m = {0};
  m.platform = EVIL("linux");
  m.os_version = EVIL("6.1");
  m.arch = "x86_64";
  m.pointer_size = 8;
  m.page_size = 4096;
  m.process = EVIL("proc");
  m.trigger = EVIL("manual");
  m.allocator = EVIL("glibc");
  m.heap_status = "ok";
  m.app_count = 1;
  m.app = app;
  hg_builder_meta(b, &m);
  struct hg_region r = {0x10000, 0x100000, HG_PROT_READ | HG_PROT_WRITE, 0, EVIL("/lib/region"), 4096, 4096, 0, 0};
  hg_builder_region(b, &r);
  struct hg_image im = {EVIL("/lib/image.so"), NULL, 0, 0x10000, 0, 0x1000};
  hg_builder_image(b, &im);
  struct hg_thread t = {1, EVIL("thread"), 0x20000, 0x21000};
  hg_builder_thread(b, &t);
  uint32_t cls = hg_builder_class(b, EVIL("Class"), HG_CLASS_OTHER, 32);
  uint32_t heap = hg_builder_heap(b, EVIL("heap"));
  for (int i = 0; i < 4; i++) hg_builder_node(b, 0x11000 + 64 * (uint64_t)i, 32, cls, HG_NODE_MALLOC, heap);
  hg_builder_edge(b, 0x11000, 0, 0x11040, HG_EDGE_STRONG, EVIL("field"));
  hg_builder_edge(b, 0x11080, 8, 0x110c0, HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, 0x110c0, 8, 0x11080, HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_root(b, HG_ROOT_GLOBAL, 0, 0x10008, 0x11000);
  int rc = hg_builder_write(b, argv[1], NULL);
  if (rc) fprintf(stderr, "evil_names: %s\n", hg_builder_message(b));
  hg_builder_free(b);
  return rc ? 1 : 0;
}
