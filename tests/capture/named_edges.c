/*
 * named_edges.c — the scan's edge naming by classifier halves (classify.h:
 * identify / class_of, edge_identify / edge_map / edge_of), on both scan
 * paths, against a heap whose content is known.
 *
 * A test classifier knows two block types by their first word: "unit.A"
 * (word 1 -> strong "left", word 2 -> weak "right"; its edge map appears
 * only at A's first class_of(), as the ObjC classifier's word maps do) and
 * "unit.B" (word 1 -> strong "next"; no edge map at all, so its words are
 * named by edge_identify()). Plain blocks carry the same kind of pointers.
 * Every capture (fork and suspend mode, with and without the helper
 * thread, whose identify() tokens reach the capturing thread through token
 * slots: 16 of them in the _ring64 build) must name exactly those edges, at
 * the block's start or inside it, leave every other one conservative or
 * interior, and all four snapshots must hold the same nodes and edges. The
 * answers the scan keeps per class and word (namer, edge_of() memo) are
 * what most edges get named from.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/classify/classify.h"
#include "heapgraph.h"
#include "hg_test.h"

#define N 30000
#define MAGIC_A 0xa11ce5a11ce5a000ull
#define MAGIC_B 0xb0b0b0b0b0b0b000ull

static void *blocks[N];
static int interior[N]; /* word 2 points 8 bytes into its target */

/* ---- the test classifier (runs in the capture: no malloc, no stdio) ---- */

struct unit_state {
  uint32_t cls[3];              /* writer class ids by token, 0 = not yet  */
  uint32_t field[4];            /* writer string ids by edge token         */
  uint32_t a_map[4];            /* A's edge tokens by word                 */
  int a_map_ready;              /* published by class_of(A)                */
};
static struct unit_state st;
static int edge_identify_calls, edge_map_calls;

static int u_prepare(struct hg_classify_reg *reg) {
  memset(&st, 0, sizeof st);
  st.a_map[1] = 1;
  st.a_map[2] = 2;
  reg->state = &st;
  return 0;
}

static uint32_t u_identify(void *state, const struct hg_cap *c, uint32_t lane, uint64_t addr,
                           uint64_t size, const uint64_t *w, uint32_t n) {
  (void)state, (void)c, (void)addr, (void)lane;
  if (n < 4 || size < 32) return 0;
  return w[0] == MAGIC_A ? 1 : w[0] == MAGIC_B ? 2 : 0;
}

static uint32_t u_class_of(struct hg_classify_reg *reg, uint32_t token) {
  struct unit_state *s = reg->state;
  if (token < 1 || token > 2) return 0;
  if (!s->cls[token])
    s->cls[token] = _hg_classify_class(reg, token == 1 ? "unit.A" : "unit.B", HG_CLASS_OTHER, 32);
  if (token == 1) __atomic_store_n(&s->a_map_ready, 1, __ATOMIC_RELEASE);
  return s->cls[token];
}

static uint32_t u_edge_identify(void *state, const struct hg_cap *c, uint32_t token,
                                uint64_t off) {
  (void)state, (void)c;
  __atomic_fetch_add(&edge_identify_calls, 1, __ATOMIC_RELAXED);
  if (token == 1) return off == 8 ? 1 : off == 16 ? 2 : 0;
  if (token == 2) return off == 8 ? 3 : 0;
  return 0;
}

static const uint32_t *u_edge_map(void *state, const struct hg_cap *c, uint32_t token,
                                  uint32_t *words) {
  (void)c;
  struct unit_state *s = state;
  __atomic_fetch_add(&edge_map_calls, 1, __ATOMIC_RELAXED);
  *words = 0;
  if (token != 1 || !__atomic_load_n(&s->a_map_ready, __ATOMIC_ACQUIRE)) return NULL;
  *words = 4;
  return s->a_map;
}

static const char *const field_name[4] = {"", "left", "right", "next"};
static const uint32_t field_kind[4] = {0, HG_EDGE_STRONG, HG_EDGE_WEAK, HG_EDGE_STRONG};

static uint32_t u_edge_of(struct hg_classify_reg *reg, uint32_t etok, uint32_t *field) {
  struct unit_state *s = reg->state;
  *field = 0;
  if (etok < 1 || etok > 3) return HG_EDGE_CONSERVATIVE;
  if (!s->field[etok]) s->field[etok] = _hg_classify_string(reg, field_name[etok]);
  *field = s->field[etok];
  return field_kind[etok];
}

static const struct hg_classifier unit_names = {
    .name = "unit-names",
    .prepare = u_prepare,
    .identify = u_identify,
    .class_of = u_class_of,
    .edge_identify = u_edge_identify,
    .edge_map = u_edge_map,
    .edge_of = u_edge_of,
};

/* ---- the heap and the checks ---- */

static uint32_t rnd_state = 12345;
static uint32_t rnd(void) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return rnd_state >> 8;
}

static void build_heap(void) {
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(40); /* 40 usable bytes: 5 words */
    if (!blocks[i]) abort();
    memset(blocks[i], 0, malloc_usable_size(blocks[i]));
  }
  for (int i = 0; i < N; i++) {
    uint64_t *w = blocks[i];
    w[0] = i % 3 == 0 ? MAGIC_A : i % 3 == 1 ? MAGIC_B : 0x1234;
    w[1] = (uint64_t)(uintptr_t)blocks[rnd() % N];
    interior[i] = rnd() % 4 == 0;
    w[2] = (uint64_t)(uintptr_t)blocks[rnd() % N] + (interior[i] ? 8 : 0);
  }
}

static int64_t edge_at(const struct hg_graph *g, uint32_t n, uint64_t off) {
  for (uint32_t e = g->edge_start[n]; e < g->edge_start[n + 1]; e++)
    if (g->edge_offset[e] == off) return e;
  return -1;
}

/* The expected kind and field of block i's edge at word `word` (1 or 2). */
static void expect(int i, int word, uint32_t *kind, const char **field) {
  int at_start = word == 1 || !interior[i];
  *kind = at_start ? HG_EDGE_CONSERVATIVE : HG_EDGE_INTERIOR;
  *field = NULL;
  if (i % 3 == 0) {
    *kind = word == 1 ? HG_EDGE_STRONG : HG_EDGE_WEAK;
    *field = word == 1 ? "left" : "right";
  } else if (i % 3 == 1 && word == 1) {
    *kind = HG_EDGE_STRONG;
    *field = "next";
  }
}

static void check_graph(const struct hg_graph *g) {
  unsigned named = 0, bad_class = 0, bad_edge = 0;
  for (int i = 0; i < N; i++) {
    int64_t n = hg_graph_find(g, (uint64_t)(uintptr_t)blocks[i]);
    CHECK(n >= 0);
    if (n < 0) return;
    const char *cname = hg_graph_node_class_name(g, (uint32_t)n);
    const char *want = i % 3 == 0 ? "unit.A" : i % 3 == 1 ? "unit.B" : NULL;
    if (want ? !cname || strcmp(cname, want) : cname != NULL) bad_class++;
    for (int word = 1; word <= 2; word++) {
      int64_t e = edge_at(g, (uint32_t)n, 8u * (unsigned)word);
      uint32_t kind;
      const char *field;
      expect(i, word, &kind, &field);
      const char *got = e >= 0 ? hg_graph_edge_field(g, (uint32_t)e) : NULL;
      if (e < 0 || g->edge_kind[e] != kind || (field ? !got || strcmp(got, field) : got != NULL))
        bad_edge++;
      named += field != NULL && e >= 0 && got != NULL;
    }
  }
  CHECK_EQ_U(bad_class, 0);
  CHECK_EQ_U(bad_edge, 0);
  CHECK_EQ_U(named, (N + 2) / 3 * 2 + (N + 1) / 3);
}

/* The test's blocks have the same edges (offset, target, kind, field) in
 * both snapshots (the rest of the heap changes between captures: the
 * snapshots loaded so far live in it). */
static void check_same(const struct hg_graph *a, const struct hg_graph *b) {
  unsigned diff = 0;
  for (int i = 0; i < N; i++) {
    int64_t na = hg_graph_find(a, (uint64_t)(uintptr_t)blocks[i]);
    int64_t nb = hg_graph_find(b, (uint64_t)(uintptr_t)blocks[i]);
    if (na < 0 || nb < 0) {
      diff++;
      continue;
    }
    uint32_t ea = a->edge_start[na], eb = b->edge_start[nb];
    if (a->edge_start[na + 1] - ea != b->edge_start[nb + 1] - eb) {
      diff++;
      continue;
    }
    for (; ea < a->edge_start[na + 1]; ea++, eb++) {
      const char *fa = hg_graph_edge_field(a, ea), *fb = hg_graph_edge_field(b, eb);
      diff += a->edge_offset[ea] != b->edge_offset[eb] ||
              a->node_addr[a->edge_target[ea]] != b->node_addr[b->edge_target[eb]] ||
              a->edge_kind[ea] != b->edge_kind[eb] || (fa ? !fb || strcmp(fa, fb) : fb != NULL);
    }
  }
  CHECK_EQ_U(diff, 0);
}

static struct hg_graph *graphs[4]; /* fork/suspend x helpers 0/1 */

static void capture(uint32_t mode, uint32_t helpers, struct hg_graph **out) {
  static const struct hg_classifier *const list[] = {&unit_names, NULL};
  char path[256];
  snprintf(path, sizeof path, "/tmp/hg_named_edges_%d.hgsnap", (int)getpid());
  struct hg_options o;
  hg_options_init(&o);
  o.mode = mode;
  o.helpers = helpers;
  edge_identify_calls = edge_map_calls = 0;
  _hg_classifiers_override = list;
  int rc = hg_capture(path, &o);
  _hg_classifiers_override = NULL;
  REQUIRE(rc == 0);
  if (mode == HG_MODE_SUSPEND) { /* the halves ran in this process */
    CHECK(edge_map_calls > 0);
    CHECK(edge_identify_calls > 0); /* B has no map; A's comes late */
  }
  *out = hg_graph_load(path, NULL);
  unlink(path);
  REQUIRE(*out != NULL);
  check_graph(*out);
}

static void test_fork_alone(void) { capture(HG_MODE_FORK, 0, &graphs[0]); }
static void test_fork_helper(void) { capture(HG_MODE_FORK, 1, &graphs[1]); }
static void test_suspend_alone(void) { capture(HG_MODE_SUSPEND, 0, &graphs[2]); }
static void test_suspend_helper(void) { capture(HG_MODE_SUSPEND, 1, &graphs[3]); }

static void test_same_output(void) {
  for (int k = 0; k < 4; k++) REQUIRE(graphs[k] != NULL);
  for (int k = 1; k < 4; k++) check_same(graphs[0], graphs[k]);
}

int main(void) {
  build_heap();
  RUN(test_fork_alone);
  RUN(test_fork_helper);
  RUN(test_suspend_alone);
  RUN(test_suspend_helper);
  RUN(test_same_output);
  for (int k = 0; k < 4; k++) hg_graph_free(graphs[k]);
  for (int i = 0; i < N; i++) free(blocks[i]);
  return hg_test_done();
}
