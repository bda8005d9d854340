/*
 * mkmeta.c — writes small snapshots for the intake tests with the library's
 * writer: SEED nodes of varying sizes (so each seed is another checksum),
 * and the app key/values given as KEY=VALUE arguments (values may hold any
 * byte but NUL: SQL metacharacters, quotes, control characters); the
 * argument @nodes=N asks for N nodes instead (bigger files).
 *   mkmeta OUT.hgsnap SEED [KEY=VALUE ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mkmeta OUT.hgsnap SEED [KEY=VALUE ...]\n");
    return 2;
  }
  unsigned seed = (unsigned)strtoul(argv[2], NULL, 10);
  struct hg_kv app[32];
  size_t n = 0;
  unsigned long nodes = 0;
  for (int i = 3; i < argc && n < 32; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) continue;
    *eq = 0;
    if (!strcmp(argv[i], "@nodes")) {
      nodes = strtoul(eq + 1, NULL, 10);
      continue;
    }
    app[n].key = argv[i];
    app[n++].value = eq + 1;
  }
  struct hg_builder *b = hg_builder_new();
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = 8, .page_size = 4096,
                      .process = "mkmeta", .trigger = "manual", .allocator = "test", .app_count = n,
                      .app = app};
  hg_builder_meta(b, &m);
  uint32_t cls = hg_builder_class(b, "Thing", HG_CLASS_OTHER, 0);
  uint64_t base = 0x100000;
  unsigned count = nodes ? (unsigned)nodes : 2 + seed % 50;
  for (unsigned i = 0; i < count; i++) hg_builder_node(b, base + 0x1000ull * i, 16 + 8 * ((seed + i) % 7), cls, HG_NODE_MALLOC, 0);
  for (unsigned i = 0; i + 1 < count; i++) hg_builder_edge(b, base + 0x1000ull * i, 0, base + 0x1000ull * (i + 1), HG_EDGE_STRONG, NULL);
  hg_builder_root(b, HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000 + seed, base);
  int rc = hg_builder_write(b, argv[1], NULL);
  if (rc) fprintf(stderr, "mkmeta: %s\n", hg_builder_message(b));
  hg_builder_free(b);
  return rc ? 1 : 0;
}
