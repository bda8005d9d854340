// cxx_classes.cpp — end-to-end proof of C++ classification (issue 5).
//
// The program allocates polymorphic objects of many shapes (single, multiple
// and virtual inheritance, templates, an anonymous-namespace class, a local
// class, classes from a dlopen()ed plugin, new, new[], make_shared, vector
// storage), non-polymorphic blocks and adversarial blocks, remembering for
// every block what it must be classified as. Then:
//   A. direct: discovers the type_infos (_hg_cxx_discover) and runs the
//      cxxabi check on every remembered block's first word;
//   B. capture: hg_capture() of itself in suspend and fork mode, loads each
//      snapshot and checks every remembered block's node class, the count
//      per class of the program's own classes, and that no block outside
//      the remembered polymorphic ones is classified at all.
// Built twice by mk/cxx.mk: with the shared libstdc++ and -static-libstdc++.
// "Allocated on its own" (docs/cxx-types.md): a block that starts with a
// complete object. new T[n] of a type with a non-trivial destructor starts
// with the array cookie and is NOT classified; without a cookie (trivial
// destructor) and for std::vector<T> storage the block is one block of T.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

extern "C" {
#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "heapgraph.h"
}

// ---------------------------------------------------------------- classes

struct Base {
  virtual ~Base() {}
  virtual int f() const { return 1; }
  long b = 1;
};
struct Derived : Base {
  int f() const override { return 2; }
  long d = 2;
};
struct Leaf final : Derived {
  int f() const override { return 3; }
};
struct Left {
  virtual ~Left() {}
  virtual int l() const { return 1; }
  long x = 1;
};
struct Right {
  virtual ~Right() {}
  virtual int r() const { return 2; }
  long y = 2;
};
struct Both : Left, Right {
  int l() const override { return 3; }
  int r() const override { return 4; }
};
struct VBase {
  virtual ~VBase() {}
  long v = 0;
};
struct VLeft : virtual VBase {
  long vl = 1;
};
struct VRight : virtual VBase {
  long vr = 2;
};
struct Diamond : VLeft, VRight {
  long dd = 3;
};
template <class T> struct Box : Base {
  T value{};
  int f() const override { return (int)sizeof(T); }
};
namespace {
struct Hidden : Base {
  int f() const override { return 9; }
};
}  // namespace
struct TrivialPoly {  // polymorphic, trivially destructible: new[] has no cookie
  virtual int g() const { return 5; }
  long t = 0;
};
struct Shared : Base {
  long s = 4;
};
struct VecElem {
  virtual int e() const { return 6; }
  long z = 0;
};
struct NonPoly {
  long a[4];
};

static Base *make_local() {
  struct Local : Base {
    int f() const override { return 11; }
  };
  return new Local();
}

// ---------------------------------------------------------------- bookkeeping

struct Expect {
  uintptr_t addr;    // block start
  const char *name;  // expected class (type_info name), NULL = unclassified
  const char *what;
};
static Expect g_exp[8192];
static size_t g_nexp;
static int g_pass, g_fail;

static void expect(const void *p, const char *name, const char *what) {
  if (g_nexp < sizeof g_exp / sizeof g_exp[0]) g_exp[g_nexp++] = {(uintptr_t)p, name, what};
}

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (cond) {                                                            \
      g_pass++;                                                            \
    } else {                                                               \
      g_fail++;                                                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

static uintptr_t vptr_of(const void *p) {
  uintptr_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

// Everything allocated stays alive in here (no heap bookkeeping of vptrs).
static void *g_keep[8192];
static size_t g_nkeep;
static void keep(void *p) {
  if (g_nkeep < sizeof g_keep / sizeof g_keep[0]) g_keep[g_nkeep++] = p;
}

template <class T> static void make_n(int n) {
  for (int i = 0; i < n; i++) {
    T *p = new T();
    keep(p);
    expect(p, typeid(T).name(), "new");
  }
}

static uintptr_t g_fake_vtable[4];  // writable global: never a vtable

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

static void adversarial(uintptr_t first, const char *what) {
  uintptr_t *blk = (uintptr_t *)calloc(8, sizeof(uintptr_t));
  blk[0] = first;
  blk[1] = first + 8;
  keep(blk);
  expect(blk, nullptr, what);
}

// Keeps the shared_ptrs alive.
static std::shared_ptr<Shared> g_shared[4];
static std::shared_ptr<Leaf> g_shared_new[3];
static std::vector<VecElem> *g_vec;
static std::vector<NonPoly> *g_vec_np;
static std::string *g_strings[4];

typedef void *(*plug_make_fn)(int);
typedef const char *(*plug_name_fn)(int);

static void build(const char *plugin_path) {
  make_n<Base>(3);
  make_n<Derived>(5);
  make_n<Leaf>(2);
  make_n<Both>(4);
  make_n<Diamond>(3);
  make_n<VLeft>(2);
  make_n<Box<int>>(2);
  make_n<Box<double>>(3);
  make_n<Box<std::string>>(1);
  make_n<Hidden>(6);
  for (int i = 0; i < 2; i++) {
    Base *p = make_local();
    keep(p);
    expect(p, typeid(*p).name(), "local class");
  }

  // Plugin classes (type_infos in another image, loaded with dlopen).
  void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != nullptr, "dlopen %s: %s", plugin_path, dlerror());
  if (h) {
    plug_make_fn mk = (plug_make_fn)dlsym(h, "plug_make");
    plug_name_fn nm = (plug_name_fn)dlsym(h, "plug_name");
    CHECK(mk && nm, "plugin symbols");
    for (int which = 0; mk && nm && which < 2; which++)
      for (int i = 0; i < 3 + which; i++) {
        void *p = mk(which);
        keep(p);
        expect(p, nm(which), "plugin new");
      }
  }

  // new[] with a non-trivial destructor: the block starts with the cookie.
  Derived *arr = new Derived[3];
  keep(arr);
  size_t cookie;
  memcpy(&cookie, (char *)arr - sizeof(size_t), sizeof cookie);
  CHECK(cookie == 3, "array cookie %zu", cookie);
  expect((char *)arr - sizeof(size_t), nullptr, "new Derived[3] (cookie first)");
  // new[] of a trivially destructible polymorphic type: no cookie.
  TrivialPoly *tarr = new TrivialPoly[4];
  keep(tarr);
  expect(tarr, typeid(TrivialPoly).name(), "new TrivialPoly[4] (one block)");

  // make_shared: one block, the polymorphic control block with the object in it.
  for (auto &sp : g_shared) {
    sp = std::make_shared<Shared>();
    expect((char *)sp.get() - 16,
           typeid(std::_Sp_counted_ptr_inplace<Shared, std::allocator<void>, __gnu_cxx::_S_atomic>)
               .name(),
           "make_shared control block");
  }
  // shared_ptr(new T): the object and a separate polymorphic control block.
  for (auto &sp : g_shared_new) {
    Leaf *p = new Leaf();
    expect(p, typeid(Leaf).name(), "new for shared_ptr");
    sp = std::shared_ptr<Leaf>(p);
    void *cb;  // libstdc++ layout: {T *ptr; _Sp_counted_base *refcount}
    memcpy(&cb, (char *)&sp + sizeof(void *), sizeof cb);
    expect(cb, typeid(std::_Sp_counted_ptr<Leaf *, __gnu_cxx::_S_atomic>).name(),
           "shared_ptr(new T) control block");
  }

  // vector storage: one block starting with a complete VecElem.
  g_vec = new std::vector<VecElem>(5);
  expect(g_vec->data(), typeid(VecElem).name(), "vector<VecElem> storage");
  expect(g_vec, nullptr, "vector object (non-polymorphic)");
  g_vec_np = new std::vector<NonPoly>(3);
  expect(g_vec_np->data(), nullptr, "vector<NonPoly> storage");

  // Non-polymorphic blocks.
  for (int i = 0; i < 5; i++) {
    NonPoly *p = new NonPoly();
    keep(p);
    expect(p, nullptr, "new NonPoly");
    void *m = malloc(24 + 8 * i);
    memset(m, 0, 24 + 8 * i);
    keep(m);
    expect(m, nullptr, "malloc");
  }
  for (auto &s : g_strings) {
    s = new std::string(100, 'x');
    expect(s->data(), nullptr, "string buffer");
  }

  // Adversarial blocks: never classified.
  Derived *dref = new Derived();
  keep(dref);
  expect(dref, typeid(Derived).name(), "new");
  Both *bref = new Both();
  keep(bref);
  expect(bref, typeid(Both).name(), "new");
  Diamond *diref = new Diamond();
  keep(diref);
  expect(diref, typeid(Diamond).name(), "new");
  uintptr_t vd = vptr_of(dref);
  adversarial(vd + 8, "vptr + 8");
  adversarial(vd - 8, "vptr - 8 (type_info slot)");
  adversarial(vd - 16, "vptr - 16 (offset-to-top slot)");
  adversarial(vd + 1, "vptr + 1 (misaligned)");
  adversarial(vptr_of(static_cast<Right *>(bref)), "secondary vptr (Right in Both)");
  adversarial(vptr_of(static_cast<VRight *>(diref)), "secondary vptr (VRight in Diamond)");
  adversarial(vptr_of(static_cast<VBase *>(diref)), "virtual base vptr (VBase in Diamond)");
  adversarial((uintptr_t)typeid(Derived).name(), "pointer to type_info name");
  adversarial((uintptr_t)&typeid(Derived), "pointer to type_info");
  adversarial((uintptr_t)&typeid(Hidden) + 8, "pointer into type_info");
  adversarial(0x10, "small integer");
  adversarial(0x7ff0000000000000ull, "unmapped");
  adversarial(UINTPTR_MAX - 7, "top of address space");
  uintptr_t *heap_vt = (uintptr_t *)malloc(4 * sizeof(uintptr_t));
  heap_vt[0] = 42;  // not a vptr at its start (the adversary below points inside)
  heap_vt[1] = 0;
  heap_vt[2] = (uintptr_t)&typeid(Derived);
  heap_vt[3] = vptr_of(dref) ? ((uintptr_t *)vd)[0] : 0;
  keep(heap_vt);
  expect(heap_vt, nullptr, "fake vtable storage");
  adversarial((uintptr_t)&heap_vt[3], "fake vtable in the heap");
  g_fake_vtable[0] = 0;
  g_fake_vtable[1] = (uintptr_t)&typeid(Derived);
  g_fake_vtable[2] = ((uintptr_t *)vd)[0];
  adversarial((uintptr_t)&g_fake_vtable[2], "fake vtable in writable data");
  for (int i = 0; i < 200; i++) {
    uintptr_t *blk = (uintptr_t *)malloc(64);
    for (int k = 0; k < 8; k++) blk[k] = (uintptr_t)rnd();
    keep(blk);
    expect(blk, nullptr, "random words");
  }
}

// ---------------------------------------------------------------- counts

struct Count {
  const char *name;
  uint64_t expected, got;
};
static Count g_counts[64];
static size_t g_ncounts;

static void count_expected() {
  g_ncounts = 0;
  for (size_t i = 0; i < g_nexp; i++) {
    if (!g_exp[i].name) continue;
    size_t k = 0;
    while (k < g_ncounts && strcmp(g_counts[k].name, g_exp[i].name)) k++;
    if (k == g_ncounts && g_ncounts < 64) g_counts[g_ncounts++] = {g_exp[i].name, 0, 0};
    if (k < g_ncounts) g_counts[k].expected++;
  }
}

// ---------------------------------------------------------------- A: direct

// Reads image memory (ASan would see redzones between globals there).
__attribute__((no_sanitize_address)) static int direct_read(void *ctx, uint64_t a,
                                                             uint64_t *out) {
  const hg_cxx_set *s = (const hg_cxx_set *)ctx;
  if ((a & 7) || !_hg_cxx_in_image(s, a, 8)) return -1;
  *out = *(const volatile uint64_t *)(uintptr_t)a;
  return 0;
}

static void part_direct() {
  hg_cxx_set s;
  hg_cxx_discovery d;
  CHECK(_hg_cxx_set_init(&s) == 0, "set init");
  int rc = _hg_cxx_discover(&s, &d);
  CHECK(rc == 0, "discover rc %d", rc);
  printf("direct: %u type_infos from %u images (symbolic %u, scanned %u, structural %u), "
         "%llu candidates, %.2f ms\n",
         s.count, d.images, d.images_symbolic, d.images_scanned, d.images_structural,
         (unsigned long long)d.candidates, d.ns / 1e6);
  for (size_t i = 0; i < g_nexp; i++) {
    const Expect &e = g_exp[i];
    hg_cxx_type *t = _hg_cxx_check(&s, vptr_of((const void *)e.addr), direct_read, &s);
    const char *got = t ? _hg_cxx_name(&s, t) : nullptr;
    if (e.name)
      CHECK(got && !strcmp(got, e.name), "direct %s: want %s got %s", e.what, e.name,
            got ? got : "(none)");
    else
      CHECK(!got, "direct %s: classified as %s", e.what, got);
  }
  _hg_cxx_set_free(&s);
}

// ---------------------------------------------------------------- B: capture

static int64_t node_at(const hg_graph *g, uint64_t addr) {
  int64_t n = hg_graph_find(g, addr);
  return (n >= 0 && g->node_addr[n] == addr) ? n : -1;
}

static void part_capture(const char *dir, int mode, const char *label, uint32_t helpers) {
  char path[4096];
  snprintf(path, sizeof path, "%s/cxx_classes_%s.hgsnap", dir, label);
  hg_options o;
  hg_options_init(&o);
  o.mode = (uint32_t)mode;
  o.helpers = helpers; // 1: classes identified on the helper thread; 0: on the capturing thread
  hg_capture_stats st;
  o.stats = &st;
  int rc = hg_capture(path, &o);
  if (rc == HG_EUNSUPPORTED) {
    // The allocator is not walkable here (e.g. the ASan allocator under
    // SANITIZE=1): nothing can be classified. Not a pass.
    printf("capture %s: heap not walkable (%s): snapshot checks NOT run\n", label,
           hg_error_string(rc));
    return;
  }
  CHECK(rc == 0, "hg_capture %s: %s", label, hg_error_string(rc));
  if (rc) return;
  hg_load_error err;
  hg_graph *g = hg_graph_load(path, &err);
  CHECK(g != nullptr, "load %s", path);
  if (!g) return;
  count_expected();
  size_t missing = 0;
  for (size_t i = 0; i < g_nexp; i++) {
    const Expect &e = g_exp[i];
    int64_t n = node_at(g, e.addr);
    if (n < 0) {
      missing++;
      CHECK(false, "%s: block %s at 0x%llx is not a node", label, e.what,
            (unsigned long long)e.addr);
      continue;
    }
    const char *got = hg_graph_node_class_name(g, (uint32_t)n);
    uint32_t cid = g->node_class[n];
    if (e.name) {
      CHECK(got && !strcmp(got, e.name), "%s %s: want %s got %s", label, e.what, e.name,
            got ? got : "(none)");
      CHECK(cid && g->classes[cid - 1].kind == HG_CLASS_CXX, "%s %s: kind", label, e.what);
    } else {
      CHECK(!got, "%s %s: classified as %s", label, e.what, got);
    }
  }
  // Per-class counts over the whole snapshot, for the program's classes.
  uint64_t classified = 0, other = 0;
  for (uint32_t n = 0; n < g->node_count; n++) {
    const char *nm = hg_graph_node_class_name(g, n);
    if (!nm) continue;
    classified++;
    size_t k = 0;
    while (k < g_ncounts && strcmp(g_counts[k].name, nm)) k++;
    if (k < g_ncounts) {
      g_counts[k].got++;
    } else {
      other++;
      printf("  %s: other classified block 0x%llx: %s\n", label,
             (unsigned long long)g->node_addr[n], nm);
    }
  }
  // Nothing the program does not know about is classified: its other blocks
  // (bookkeeping vectors, strings, runtime buffers) are not polymorphic.
  CHECK(other == 0, "%s: %llu classified blocks the program did not make", label,
        (unsigned long long)other);
  for (size_t k = 0; k < g_ncounts; k++)
    CHECK(g_counts[k].got == g_counts[k].expected, "%s count %s: want %llu got %llu", label,
          g_counts[k].name, (unsigned long long)g_counts[k].expected,
          (unsigned long long)g_counts[k].got);
  printf("capture %s: %llu nodes, %llu classified (%zu classes checked, %llu other), "
         "%zu blocks checked, total %.2f ms\n",
         label, (unsigned long long)st.nodes, (unsigned long long)classified, g_ncounts,
         (unsigned long long)other, g_nexp - missing, st.total_ns / 1e6);
  hg_graph_free(g);
}

int main(int argc, char **argv) {
  // The plugin sits next to this program; snapshots go there too.
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", argv[0]);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  char plugin[4200];
  snprintf(plugin, sizeof plugin, "%s/libcxx_plugin.so", dir);
#ifndef HG_CXX_LABEL
#define HG_CXX_LABEL "shared"
#endif
  const char *label = argc > 1 ? argv[1] : HG_CXX_LABEL;

  build(plugin);
  part_direct();
  char l1[64], l2[64], l3[64];
  snprintf(l1, sizeof l1, "%s-suspend", label);
  snprintf(l2, sizeof l2, "%s-fork", label);
  snprintf(l3, sizeof l3, "%s-suspend-alone", label);
  part_capture(dir, HG_MODE_SUSPEND, l1, 1);
  part_capture(dir, HG_MODE_FORK, l2, 1);
  part_capture(dir, HG_MODE_SUSPEND, l3, 0);
  printf("cxx-%s: %d passed, %d failed\n", label, g_pass, g_fail);
  return g_fail ? 1 : 0;
}
