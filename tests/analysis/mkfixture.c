/*
 * mkfixture.c — writes the snapshots the analysis CLI tests run on, through
 * the public builder API:  mkfixture OUT_DIR  →  OUT_DIR/app.hgsnap,
 * OUT_DIR/app2.hgsnap (the same app later: more leaks, a new class),
 * OUT_DIR/chain.hgsnap (a 200,000-node chain). Known answers are listed in
 * tests/analysis/test_cli.py.
 */
#include <stdio.h>
#include <string.h>

#include "heapgraph.h"

#define A(i) (0x10000ull + 0x1000ull * (i))

static int fail(struct hg_builder *b, const char *what) {
  fprintf(stderr, "mkfixture: %s: %s\n", what, hg_builder_message(b));
  return 1;
}

static int app(const char *path, int later) {
  struct hg_builder *b = hg_builder_new();
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = 8, .page_size = 4096,
                      .process = "fixture", .allocator = "test"};
  hg_builder_meta(b, &m);
  uint32_t app_c = hg_builder_class(b, "AppDelegate", HG_CLASS_OBJC, 64);
  uint32_t cache_c = hg_builder_class(b, "N3foo5CacheE", HG_CLASS_CXX, 0);
  uint32_t entry_c = hg_builder_class(b, "Entry", HG_CLASS_SWIFT, 0);
  uint32_t view_c = hg_builder_class(b, "UIView", HG_CLASS_OBJC, 0);
  uint32_t ctl_c = hg_builder_class(b, "UIViewController", HG_CLASS_OBJC, 0);
  uint32_t leaky_c = hg_builder_class(b, "Leaky", HG_CLASS_OBJC, 0);
  uint32_t big_c = hg_builder_class(b, "Big", HG_CLASS_OTHER, 0);
  uint32_t weak_c = hg_builder_class(b, "WeakOnly", HG_CLASS_OBJC, 0);
  const uint32_t M = HG_NODE_MALLOC;
  hg_builder_node(b, A(0), 64, app_c, M, 0);      /* App        */
  hg_builder_node(b, A(1), 1000, cache_c, M, 0);  /* Cache      */
  hg_builder_node(b, A(2), 100, entry_c, M, 0);   /* Entry1     */
  hg_builder_node(b, A(3), 100, entry_c, M, 0);   /* Entry2     */
  hg_builder_node(b, A(4), 200, view_c, M, 0);    /* View       */
  hg_builder_node(b, A(5), 300, ctl_c, M, 0);     /* Controller */
  hg_builder_node(b, A(16), 48, leaky_c, M, 0);   /* L1         */
  hg_builder_node(b, A(17), 48, leaky_c, M, 0);   /* L2         */
  hg_builder_node(b, A(18), 16, 0, M, 0);         /* L3         */
  hg_builder_node(b, A(19), 500, big_c, M, 0);    /* L4         */
  hg_builder_node(b, A(20), 32, weak_c, M, 0);    /* W          */
  hg_builder_edge(b, A(0), 8, A(1), HG_EDGE_STRONG, "cache");
  hg_builder_edge(b, A(0), 16, A(4), HG_EDGE_STRONG, "view");
  hg_builder_edge(b, A(0), 24, A(20), HG_EDGE_WEAK, "delegate");
  hg_builder_edge(b, A(1), 16, A(2), HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, A(1), 24, A(3), HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, A(2), 8, A(1), HG_EDGE_WEAK, "owner");
  hg_builder_edge(b, A(4), 8, A(5), HG_EDGE_STRONG, "controller");
  hg_builder_edge(b, A(5), 8, A(4), HG_EDGE_STRONG, "view");
  hg_builder_edge(b, A(16), 0, A(17), HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, A(17), 0, A(16), HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_edge(b, A(16), 8, A(18) + 8, HG_EDGE_INTERIOR, NULL);
  hg_builder_root(b, HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000, A(0));
  hg_builder_root(b, HG_ROOT_STACK, HG_NO_OWNER, 0x7ffe0000, A(3));
  if (later) { /* three more leaked Leaky, a new class */
    uint32_t new_c = hg_builder_class(b, "NewThing", HG_CLASS_OBJC, 0);
    for (int i = 0; i < 3; i++) hg_builder_node(b, A(32 + i), 48, leaky_c, M, 0);
    hg_builder_node(b, A(40), 4096, new_c, M, 0);
    hg_builder_edge(b, A(0), 32, A(40), HG_EDGE_STRONG, "thing");
  }
  int rc = hg_builder_write(b, path, NULL);
  if (rc) return fail(b, path);
  hg_builder_free(b);
  return 0;
}

static int chain(const char *path, uint32_t n) {
  struct hg_builder *b = hg_builder_new();
  for (uint32_t i = 0; i < n; i++) hg_builder_node(b, A(i), 16, 0, HG_NODE_MALLOC, 0);
  for (uint32_t i = 0; i + 1 < n; i++) hg_builder_edge(b, A(i), 0, A(i + 1), HG_EDGE_CONSERVATIVE, NULL);
  hg_builder_root(b, HG_ROOT_GLOBAL, HG_NO_OWNER, 0x601000, A(0));
  int rc = hg_builder_write(b, path, NULL);
  if (rc) return fail(b, path);
  hg_builder_free(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mkfixture OUT_DIR\n");
    return 2;
  }
  char p[4096];
  snprintf(p, sizeof p, "%s/app.hgsnap", argv[1]);
  if (app(p, 0)) return 1;
  snprintf(p, sizeof p, "%s/app2.hgsnap", argv[1]);
  if (app(p, 1)) return 1;
  snprintf(p, sizeof p, "%s/chain.hgsnap", argv[1]);
  if (chain(p, 200000)) return 1;
  return 0;
}
