/*
 * mkhostile.c — writes the snapshot the viewer test uses to check escaping:
 * class, field, heap, region and process names that are HTML/JS if a page
 * ever treats them as markup.  mkhostile OUT.hgsnap [DEVICE]
 * With DEVICE (tests/serve/dashboard.cjs): also the fleet metadata — a
 * hostile app version and device model, device id DEVICE — so the
 * dashboard of `heapgraph serve` shows them.
 */
#include <stdio.h>

#include "heapgraph.h"

#define A(i) (0x10000ull + 0x1000ull * (i))
#define XSS "<script>window.__pwned=1</script>"
#define IMG "<img src=x onerror=\"window.__pwned=2\">"

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: mkhostile OUT.hgsnap [DEVICE]\n");
    return 2;
  }
  struct hg_builder *b = hg_builder_new();
  struct hg_kv app[] = {{"<b>key</b>", IMG}, {"app", "hostile"}, {"app_version", XSS},
                        {"device_model", IMG}, {"device_id", argc == 3 ? argv[2] : ""}};
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = 8, .page_size = 4096,
                      .process = XSS, .trigger = IMG, .allocator = "test", .app_count = argc == 3 ? 5 : 1,
                      .app = app};
  hg_builder_meta(b, &m);
  struct hg_region r = {.start = A(0), .size = 0x100000, .prot = HG_PROT_READ | HG_PROT_WRITE, .name = IMG,
                        .resident = 0x80000, .dirty = 0x40000, .image = HG_NO_OWNER};
  hg_builder_region(b, &r);
  uint32_t xss = hg_builder_class(b, XSS, HG_CLASS_OBJC, 0);
  uint32_t img = hg_builder_class(b, IMG, HG_CLASS_OTHER, 0);
  uint32_t amp = hg_builder_class(b, "\"quoted\" & 'amp' \\ </td>", HG_CLASS_OTHER, 0);
  uint32_t heap = hg_builder_heap(b, XSS);
  hg_builder_node(b, A(0), 64, xss, HG_NODE_MALLOC, heap);
  hg_builder_node(b, A(1), 128, img, HG_NODE_MALLOC, heap);
  hg_builder_node(b, A(2), 32, amp, HG_NODE_MALLOC, heap);
  hg_builder_node(b, A(3), 16, xss, HG_NODE_MALLOC, heap); /* leaked */
  hg_builder_edge(b, A(0), 8, A(1), HG_EDGE_STRONG, XSS);
  hg_builder_edge(b, A(1), 8, A(2), HG_EDGE_STRONG, IMG);
  hg_builder_edge(b, A(2), 8, A(1), HG_EDGE_STRONG, NULL);
  hg_builder_root(b, HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000, A(0));
  int rc = hg_builder_write(b, argv[1], NULL);
  if (rc) fprintf(stderr, "mkhostile: %s\n", hg_builder_message(b));
  hg_builder_free(b);
  return rc ? 1 : 0;
}
