// bench_cxx.cpp — cost of C++ classification (issue 5, `make bench`).
//
// Builds a heap where half the blocks are polymorphic C++ objects (six
// classes, single/multiple/virtual inheritance) and half are plain malloc
// blocks of the same sizes, then captures it repeatedly, alternating, in
// suspend and fork mode with:
//   on    _hg_classifiers_override = {c++}
//   off   {} (no classifier: the engine never reads block contents for it)
//   hook  {a no-op classifier}: the engine's per-block hook cost alone
//         (it reads each block's first words and calls the classifier)
// Prints median total capture times and the ratios on/off (the issue's
// goal: <= 1.10) and on/hook (what the C++ classifier itself adds), plus
// the discovery (prepare) cost.
//
// Usage: bench_cxx OUTDIR [blocks] [rounds]
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

extern "C" {
#include "capture/classify/classify.h"
#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "heapgraph.h"
extern const struct hg_classifier _hg_classifier_cxx;
}

struct B0 {
  virtual ~B0() {}
  long a = 1;
};
struct B1 : B0 {
  long b = 2;
};
struct B2 : B1 {
  long c[3] = {3, 4, 5};
};
struct M0 {
  virtual ~M0() {}
  long m = 6;
};
struct M1 : B0, M0 {
  long d = 7;
};
struct V0 : virtual B0 {
  long v = 8;
};

static void *make(unsigned k) {
  switch (k % 6) {
  case 0: return new B0();
  case 1: return new B1();
  case 2: return new B2();
  case 3: return new M0();
  case 4: return new M1();
  default: return new V0();
  }
}

/* A classifier that looks at the word and never matches (identify on the helper) */
static uint32_t noop_identify(void *, const struct hg_cap *, uint64_t, uint64_t, const uint64_t *w,
                              uint32_t n) {
  return n && w[0] == 1 ? 1 : 0;
}

static uint32_t noop_class_of(struct hg_classify_reg *, uint32_t) { return 0; }

static double ms(uint64_t ns) { return ns / 1e6; }

static uint64_t minimum(const std::vector<uint64_t> &v) { return *std::min_element(v.begin(), v.end()); }

static uint64_t median(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  size_t blocks = argc > 2 ? strtoull(argv[2], nullptr, 10) : 400000;
  int rounds = argc > 3 ? atoi(argv[3]) : 11;
  std::vector<void *> keep;
  keep.reserve(blocks);
  static const size_t sizes[6] = {16, 24, 48, 16, 40, 40};
  for (size_t i = 0; i < blocks; i++) {
    if (i % 2) {
      void *p = malloc(sizes[(i / 2) % 6]);
      memset(p, 0, sizes[(i / 2) % 6]);
      keep.push_back(p);
    } else {
      keep.push_back(make((unsigned)(i / 2)));
    }
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_cxx.hgsnap", dir);

  static const struct hg_classifier *const on[] = {&_hg_classifier_cxx, nullptr};
  static const struct hg_classifier *const off[] = {nullptr};
  static const struct hg_classifier noop = {"noop",        nullptr,       nullptr, noop_identify,
                                            noop_class_of, nullptr,       nullptr, nullptr};
  static const struct hg_classifier *const hook[] = {&noop, nullptr};
  static const struct hg_classifier *const *const lists[3] = {on, off, hook};
  const int modes[2] = {HG_MODE_SUSPEND, HG_MODE_FORK};
  const char *mode_name[2] = {"suspend", "fork"};
  printf("bench-cxx: %zu blocks (%zu C++ objects of 6 classes, %zu plain malloc blocks)\n",
         blocks, (blocks + 1) / 2, blocks / 2);
  for (int mi = 0; mi < 2; mi++) {
    std::vector<uint64_t> t_on, t_off, p_on, p_off, w_on, w_off, t_hook;
    uint64_t nodes = 0, unwalkable = 0;
    for (auto *v : {&t_on, &t_off, &p_on, &p_off, &w_on, &w_off, &t_hook}) v->reserve((size_t)rounds);
    for (int r = 0; r < rounds; r++) {
      for (int which = 0; which < 3; which++) {
        _hg_classifiers_override = lists[which];
        hg_options o;
        hg_options_init(&o);
        o.mode = (uint32_t)modes[mi];
        hg_capture_stats st;
        o.stats = &st;
        int rc = hg_capture(path, &o);
        for (int retry = 0; rc == HG_EUNSUPPORTED && retry < 5; retry++) {
          unwalkable++; /* engine could not walk the heap this time: sample dropped */
          rc = hg_capture(path, &o);
        }
        if (rc) {
          fprintf(stderr, "bench-cxx: hg_capture: %s\n", hg_error_string(rc));
          return 1;
        }
        nodes = st.nodes;
        if (which == 2) {
          t_hook.push_back(st.total_ns);
          continue;
        }
        (which ? t_off : t_on).push_back(st.total_ns);
        (which ? p_off : p_on).push_back(st.pause_ns);
        (which ? w_off : w_on).push_back(st.write_ns + st.scan_ns);
      }
    }
    _hg_classifiers_override = nullptr;
    uint64_t a = median(t_on), b = median(t_off);
    printf("bench-cxx %-7s: %llu nodes; capture total median %.1f ms with C++ classification, "
           "%.1f ms without: ratio %.3f (goal <= 1.10); pause %.1f vs %.1f ms; "
           "write+scan %.1f vs %.1f ms\n",
           mode_name[mi], (unsigned long long)nodes, ms(a), ms(b), (double)a / (double)b,
           ms(median(p_on)), ms(median(p_off)), ms(median(w_on)), ms(median(w_off)));
    printf("bench-cxx %-7s: with a no-op classifier %.1f ms: C++ classification itself costs "
           "ratio %.3f over the engine's classifier hook\n",
           mode_name[mi], ms(median(t_hook)), (double)a / (double)median(t_hook));
    printf("bench-cxx %-7s: best of %d: %.1f / %.1f / %.1f ms (on / off / no-op hook): ratio "
           "on/off %.3f, on/hook %.3f\n",
           mode_name[mi], rounds, ms(minimum(t_on)), ms(minimum(t_off)), ms(minimum(t_hook)),
           (double)minimum(t_on) / (double)minimum(t_off),
           (double)minimum(t_on) / (double)minimum(t_hook));
    if (unwalkable)
      printf("bench-cxx %-7s: %llu captures retried (heap reported not walkable)\n",
             mode_name[mi], (unsigned long long)unwalkable);
  }
  // Discovery alone (what prepare adds before the freeze).
  std::vector<uint64_t> disc;
  unsigned types = 0;
  for (int r = 0; r < rounds; r++) {
    hg_cxx_set s;
    hg_cxx_discovery d;
    if (_hg_cxx_set_init(&s)) return 1;
    _hg_cxx_discover(&s, &d);
    types = s.count;
    disc.push_back(d.ns);
    _hg_cxx_set_free(&s);
  }
  printf("bench-cxx discovery: %u type_infos, median %.2f ms\n", types, ms(median(disc)));
  // Verify the on-capture classified the objects (a benchmark of nothing is no benchmark).
  _hg_classifiers_override = on;
  hg_options o;
  hg_options_init(&o);
  o.mode = HG_MODE_SUSPEND;
  hg_capture(path, &o);
  _hg_classifiers_override = nullptr;
  hg_load_error err;
  hg_graph *g = hg_graph_load(path, &err);
  uint64_t classified = 0;
  for (uint32_t n = 0; g && n < g->node_count; n++) classified += g->node_class[n] != 0;
  printf("bench-cxx check: %llu of %zu C++ objects classified\n", (unsigned long long)classified,
         (blocks + 1) / 2);
  hg_graph_free(g);
  for (size_t i = 0; i < keep.size(); i++)
    if (i % 2) free(keep[i]);
  return 0;  // the C++ objects are left to the OS (no virtual dtor needed to time this)
}
