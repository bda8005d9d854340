/*
 * export_target.cpp — a process with a known heap, captured twice, for the
 * export tests (test_devtools.py loads the exports in Chrome DevTools' own
 * loader and compares with heapgraph):
 *
 *   export_target DIR   writes DIR/one.hgsnap and DIR/two.hgsnap and prints
 *                       the addresses of the blocks below ("name 0x…")
 *
 * Live: 300 Widgets (C++ class with a vtable, classified by its type_info),
 * each owning a Part (another class) and a 5000-byte buffer, from a global
 * array; the repro: global -> A (16 B) -> B (1000 B). Leaked: L
 * (32 B) -> B (garbage pointing into the live heap); a cycle X <-> Y that
 * holds Z -> Z2, and W -> Z (two root leaks sharing Z).
 * Between the captures 50 new Widgets (with Parts and buffers) are made and
 * then 100 old ones freed (in that order, so no new block reuses a freed
 * address: DevTools then sees exactly 50 new and 100 deleted per class).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heapgraph.h"

struct Part {
  virtual ~Part() {}
  long serial = 0;
};

struct Widget {
  virtual ~Widget() { delete part; free(buf); }
  Part *part = new Part;
  char *buf = static_cast<char *>(calloc(1, 5000));
};

Widget *volatile g_widgets[300];
Widget *volatile g_new[50];
void *volatile g_a;

static void *blk(size_t n) { return calloc(1, n); }
static void link(void *from, void *to) { *static_cast<void **>(from) = to; }

__attribute__((noinline)) static void build(FILE *out) {
  for (int i = 0; i < 300; i++) g_widgets[i] = new Widget;
  void *a = blk(16), *b = blk(1000), *l = blk(32);
  link(a, b);
  link(l, b);
  g_a = a;
  void *x = blk(48), *y = blk(48), *z = blk(64), *z2 = blk(80), *w = blk(24);
  link(x, y);
  link(y, x);
  link(static_cast<char *>(x) + 8, z);
  link(z, z2);
  link(w, z);
  fprintf(out, "A %p\nB %p\nL %p\nX %p\nY %p\nZ %p\nZ2 %p\nW %p\n", a, b, l, x, y, z, z2, w);
  __asm__ volatile("xor %%ebx, %%ebx\n\txor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\t"
                   "xor %%r14d, %%r14d\n\txor %%r15d, %%r15d" ::: "rbx", "r12", "r13", "r14", "r15");
}

__attribute__((noinline)) static void churn() {
  for (int i = 0; i < 50; i++) g_new[i] = new Widget;
  for (int i = 0; i < 100; i++) {
    delete g_widgets[i];
    g_widgets[i] = nullptr;
  }
}

__attribute__((noinline)) static void clobber_stack() {
  volatile char buf[64 * 1024];
  memset(const_cast<char *>(buf), 0, sizeof buf);
}

static int capture(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.hgsnap", dir, name);
  hg_options o;
  hg_options_init(&o);
  int rc = hg_capture(path, &o);
  if (rc) fprintf(stderr, "capture %s: %s\n", path, hg_error_string(rc));
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: export_target DIR\n");
    return 2;
  }
  /* print the addresses through a buffer made before the heap is built */
  static char text[4096];
  FILE *out = fmemopen(text, sizeof text, "w");
  if (!out) return 1;
  build(out);
  fclose(out);
  clobber_stack();
  if (capture(argv[1], "one")) return 1;
  churn();
  clobber_stack();
  if (capture(argv[1], "two")) return 1;
  fputs(text, stdout);
  return 0;
}
