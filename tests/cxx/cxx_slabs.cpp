// cxx_slabs.cpp — blocks that hold many C++ objects (issue 26, item 7):
// a bump allocator (64 KiB slabs from malloc, objects placed with placement
// new one after the other, like LLVM's BumpPtrAllocator) must not make its
// slabs "objects of the first object's class". The program fills:
//   - 6 slabs that start with a Param (polymorphic, 48 B) and hold Params,
//     Methods (polymorphic, 80 B) and Plain records (no vtable) in a fixed
//     pattern: each is "slab starting with Param", and the census counts
//     every Param and Method after the first object, exactly;
//   - 2 slabs that start with a Plain record: unclassified, not counted;
//   - one Big object (12 KiB, polymorphic, an inline array and 2 polymorphic
//     members): a real object larger than a page, still a Big;
//   - std::vector<Param> storage of 300 elements (14 KiB): a slab starting
//     with Param, its 299 further elements counted;
//   - single Params and Methods allocated with new: objects of their class.
// It captures itself (suspend and fork) and checks node classes, cxx_slabs
// and the cxx_census:… capture numbers, and that no node exists inside a
// slab.
//   cxx_slabs [DIR] [KEEP]   KEEP: path to keep the suspend-mode snapshot at
//                            (tests/cxx/test_cxx_cli.sh reads it)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <new>
#include <string>
#include <typeinfo>
#include <vector>

extern "C" {
#include "cxxabi/cxxabi.h"
#include "heapgraph.h"
}

struct Param {
  virtual ~Param() {}
  virtual int kind() const { return 1; }
  long a = 1, b = 2, c = 3, d = 4;
};
struct Method {
  virtual ~Method() {}
  virtual int kind() const { return 2; }
  long x[8] = {};
};
struct Plain { // no vtable: never counted
  long w[5] = {7, 7, 7, 7, 7};
};
struct Member {
  virtual ~Member() {}
  long m = 5;
};
struct Big {
  virtual ~Big() {}
  Member one, two; // two typed words inside: fewer than a slab needs
  char buf[12 * 1024] = {};
};

class Bump {
 public:
  static constexpr size_t kSlab = 64 * 1024;
  std::vector<char *> slabs;
  char *cur = nullptr, *end = nullptr;
  void *take(size_t n) {
    n = (n + 15) & ~size_t(15);
    if (!cur || cur + n > end) {
      cur = static_cast<char *>(malloc(kSlab));
      if (!cur) abort();
      memset(cur, 0, kSlab);
      end = cur + kSlab;
      slabs.push_back(cur);
    }
    void *p = cur;
    cur += n;
    return p;
  }
};

static int passed, failed;
#define EXPECT(c, ...)                    \
  do {                                    \
    if (c) {                              \
      passed++;                           \
    } else {                              \
      failed++;                           \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fprintf(stderr, " (%s)\n", #c);     \
    }                                     \
  } while (0)

static std::string mangled(const std::type_info &t) {
  const char *n = t.name();
  return n[0] == '*' ? n + 1 : n;
}

static uint64_t capture_num(const hg_graph *g, const std::string &key) {
  for (size_t i = 0; i < g->meta.capture_count; i++)
    if (key == g->meta.capture[i].key) return g->meta.capture[i].value;
  return 0;
}

static const char *class_of(const hg_graph *g, uintptr_t p) {
  int64_t n = hg_graph_find(g, p);
  if (n < 0 || g->node_addr[n] != p) return "(no node)";
  uint32_t c = g->node_class[n];
  return c ? g->classes[c - 1].name : "(unclassified)";
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  Bump typed, plain;
  uint64_t params = 0, methods = 0; // objects inside the typed slabs, after each slab's first
  // typed slabs: a Param first, then Method, Plain, Param … while they fit
  for (int k = 0; k < 6; k++) {
    typed.cur = typed.end; // a new slab
    new (typed.take(sizeof(Param))) Param;
    for (int i = 0;; i++) {
      size_t n = i % 3 == 0 ? sizeof(Method) : i % 3 == 1 ? sizeof(Plain) : sizeof(Param);
      if (typed.cur + ((n + 15) & ~size_t(15)) > typed.end) break;
      void *p = typed.take(n);
      if (i % 3 == 0) new (p) Method, methods++;
      else if (i % 3 == 1) new (p) Plain;
      else new (p) Param, params++;
    }
  }
  // untyped slabs: a Plain first, then Params (not counted: no claim on the block)
  for (int i = 0; i < 2 * 700; i++) {
    if (i % 700 == 0) plain.cur = plain.end; // a new slab
    void *p = plain.take(i % 700 == 0 ? sizeof(Plain) : sizeof(Param));
    if (i % 700 == 0) new (p) Plain;
    else new (p) Param;
  }
  Big *big = new Big;
  std::vector<Param> vec(300);
  std::vector<Param *> singles;
  std::vector<Method *> msingles;
  for (int i = 0; i < 20; i++) singles.push_back(new Param), msingles.push_back(new Method);
  params += vec.size() - 1;

  const std::string P = mangled(typeid(Param)), M = mangled(typeid(Method)), B = mangled(typeid(Big));
  const std::string slabP = std::string(HG_CXX_SLAB_PREFIX) + P;
  for (int mode = 0; mode < 2; mode++) {
    char path[512];
    if (mode == 0 && argc > 2) snprintf(path, sizeof path, "%s", argv[2]);
    else snprintf(path, sizeof path, "%s/hg_cxx_slabs_%d_%d.hgsnap", dir, (int)getpid(), mode);
    hg_options o;
    hg_options_init(&o);
    o.mode = mode ? HG_MODE_FORK : HG_MODE_SUSPEND;
    int rc = hg_capture(path, &o);
    hg_graph *g = hg_graph_load(path, nullptr);
    if (mode || argc <= 2) unlink(path);
    EXPECT(rc == 0 && g, "capture %d: rc %d", mode, rc);
    if (!g) continue;
    for (char *s : typed.slabs)
      EXPECT(slabP == class_of(g, (uintptr_t)s), "typed slab %p is '%s', want %s", (void *)s,
             class_of(g, (uintptr_t)s), slabP.c_str());
    for (char *s : plain.slabs)
      EXPECT(!strcmp(class_of(g, (uintptr_t)s), "(unclassified)"), "plain slab %p is '%s'", (void *)s,
             class_of(g, (uintptr_t)s));
    EXPECT(slabP == class_of(g, (uintptr_t)vec.data()), "vector storage is '%s'",
           class_of(g, (uintptr_t)vec.data()));
    EXPECT(B == class_of(g, (uintptr_t)big), "Big is '%s'", class_of(g, (uintptr_t)big));
    int ok = 0;
    for (Param *p : singles) ok += P == class_of(g, (uintptr_t)p);
    for (Method *m : msingles) ok += M == class_of(g, (uintptr_t)m);
    EXPECT(ok == 40, "%d of 40 single objects have their class", ok);
    // nothing inside a slab is a node
    size_t inner = 0;
    for (char *s : typed.slabs)
      for (uint32_t i = 0; i < g->node_count; i++)
        inner += g->node_addr[i] > (uintptr_t)s && g->node_addr[i] < (uintptr_t)s + Bump::kSlab;
    EXPECT(inner == 0, "%zu nodes inside typed slabs", inner);
    uint64_t slabs = capture_num(g, "cxx_slabs"), cp = capture_num(g, HG_CXX_CENSUS_PREFIX + P),
             cm = capture_num(g, HG_CXX_CENSUS_PREFIX + M), cb = capture_num(g, HG_CXX_CENSUS_PREFIX + std::string(mangled(typeid(Member))));
    EXPECT(slabs == typed.slabs.size() + 1, "cxx_slabs %llu, want %zu", (unsigned long long)slabs,
           typed.slabs.size() + 1);
    EXPECT(cp == params, "census of Param %llu, want %llu", (unsigned long long)cp, (unsigned long long)params);
    EXPECT(cm == methods, "census of Method %llu, want %llu", (unsigned long long)cm, (unsigned long long)methods);
    EXPECT(cb == 0, "census of Member %llu (inside Big, a real object), want 0", (unsigned long long)cb);
    printf("capture %s: %zu typed slabs (+ the vector), census Param %llu, Method %llu\n",
           mode ? "fork" : "suspend", typed.slabs.size(), (unsigned long long)cp, (unsigned long long)cm);
    hg_graph_free(g);
  }
  delete big;
  for (Param *p : singles) delete p;
  for (Method *m : msingles) delete m;
  for (char *s : typed.slabs) free(s);
  for (char *s : plain.slabs) free(s);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
