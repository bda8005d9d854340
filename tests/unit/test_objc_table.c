/*
 * test_objc_table.c — the class table of capture/classify/objc_table.c on synthetic
 * classes: O(1) class-pointer and class-id lookups (open addressing, many
 * classes), instance-size and metaclass checks on blocks, inherited and
 * array ivars, sorting, bounds (overflow counted, never written past).
 */
#include <stdio.h>
#include <string.h>

#include "capture/classify/objc.h"
#include "hg_test.h"

enum { ROOT = 0x1000, A = 0x2000, A_META = 0x2800, B = 0x3000 };

/* Root { Class isa } ; A : Root { id a; int n; id arr[2]; } ;
 * B : A { id b; __weak id w; } plus A's metaclass. Ivars added out of order. */
static int build(struct hg_objc_table *t, struct hg_scratch *s) {
  if (_hg_objc_table_init(t, s, 16, 64, 4096)) return -1;
  uint32_t r = _hg_objc_add_class(t, ROOT, "Root", 8, 0, 0);
  if (r == HG_OBJC_NONE || _hg_objc_add_ivar(t, r, "isa", 0, "#", 0)) return -1;
  uint32_t a = _hg_objc_add_class(t, A, "A", 40, 0, ROOT);
  if (a == HG_OBJC_NONE) return -1;
  if (_hg_objc_add_ivar(t, a, "arr", 24, "[2@]", HG_EDGE_STRONG)) return -1;
  if (_hg_objc_add_ivar(t, a, "a", 8, "@", HG_EDGE_STRONG)) return -1;
  if (_hg_objc_add_ivar(t, a, "n", 16, "i", 0)) return -1;
  if (_hg_objc_add_class(t, A_META, "A", 104, 1, ROOT) == HG_OBJC_NONE) return -1;
  uint32_t b = _hg_objc_add_class(t, B, "_TtC4Demo1B", 56, 0, A);
  if (b == HG_OBJC_NONE) return -1;
  if (_hg_objc_add_ivar(t, b, "w", 48, "@", HG_EDGE_WEAK)) return -1;
  if (_hg_objc_add_ivar(t, b, "b", 40, "@\"A\"", HG_EDGE_STRONG)) return -1;
  return _hg_objc_table_finish(t);
}

static void test_lookup_and_classify(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  REQUIRE(build(&t, &s) == 0);
  uint32_t a = _hg_objc_find(&t, A), b = _hg_objc_find(&t, B), m = _hg_objc_find(&t, A_META);
  REQUIRE(a != HG_OBJC_NONE && b != HG_OBJC_NONE && m != HG_OBJC_NONE);
  CHECK(strcmp(_hg_objc_str(&t, _hg_objc_class_at(&t, a)->name), "A") == 0);
  CHECK_EQ_U(_hg_objc_class_at(&t, b)->super, a);
  CHECK_EQ_U(_hg_objc_class_at(&t, b)->kind, HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_class_at(&t, a)->kind, HG_CLASS_OBJC);
  CHECK_EQ_U(_hg_objc_find(&t, 0x9998), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_find(&t, 0), HG_OBJC_NONE);
  /* blocks: class pointer, size check, metaclass, misaligned, random */
  CHECK_EQ_U(_hg_objc_classify_word(&t, A, 40), a);
  CHECK_EQ_U(_hg_objc_classify_word(&t, A, 48), a);
  CHECK_EQ_U(_hg_objc_classify_word(&t, A, 32), HG_OBJC_NONE);  /* too small */
  CHECK_EQ_U(_hg_objc_classify_word(&t, B, 48), HG_OBJC_NONE);  /* too small */
  CHECK_EQ_U(_hg_objc_classify_word(&t, B, 56), b);
  CHECK_EQ_U(_hg_objc_classify_word(&t, A_META, 4096), HG_OBJC_NONE); /* metaclass */
  CHECK_EQ_U(_hg_objc_classify_word(&t, A + 4, 4096), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_classify_word(&t, 0x123456789abcdef0ull, 4096), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_classify_word(&t, 0, 4096), HG_OBJC_NONE);
  _hg_scratch_free(&s);
}

static void test_ivars(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  REQUIRE(build(&t, &s) == 0);
  uint32_t a = _hg_objc_find(&t, A), b = _hg_objc_find(&t, B);
  struct hg_objc_ivar *v;
  /* inherited */
  v = _hg_objc_ivar_at(&t, b, 8);
  CHECK(v && strcmp(_hg_objc_str(&t, v->name), "a") == 0 && v->kind == HG_EDGE_STRONG);
  /* not an object ivar / isa / between words */
  CHECK(_hg_objc_ivar_at(&t, b, 16) == NULL);
  CHECK(_hg_objc_ivar_at(&t, b, 0) == NULL);
  CHECK(_hg_objc_ivar_at(&t, b, 12) == NULL);
  /* C array of ids: both elements, not past it */
  v = _hg_objc_ivar_at(&t, b, 24);
  CHECK(v && strcmp(_hg_objc_str(&t, v->name), "arr") == 0 && v->refs == 2);
  CHECK(_hg_objc_ivar_at(&t, b, 32) == v);
  CHECK(_hg_objc_ivar_at(&t, a, 40) == NULL);
  /* own, sorted although added out of order; weak kept */
  v = _hg_objc_ivar_at(&t, b, 40);
  CHECK(v && strcmp(_hg_objc_str(&t, v->name), "b") == 0 && v->kind == HG_EDGE_STRONG);
  v = _hg_objc_ivar_at(&t, b, 48);
  CHECK(v && strcmp(_hg_objc_str(&t, v->name), "w") == 0 && v->kind == HG_EDGE_WEAK);
  CHECK(_hg_objc_ivar_at(&t, b, 56) == NULL);
  CHECK(_hg_objc_ivar_at(&t, b, 1u << 30) == NULL);
  CHECK(_hg_objc_ivar_at(&t, HG_OBJC_NONE, 8) == NULL);
  _hg_scratch_free(&s);
}

static void test_ids(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  REQUIRE(build(&t, &s) == 0);
  uint32_t a = _hg_objc_find(&t, A), b = _hg_objc_find(&t, B);
  CHECK_EQ_U(_hg_objc_find_id(&t, 7), HG_OBJC_NONE);
  CHECK(_hg_objc_bind_id(&t, a, 7) == 0);
  CHECK(_hg_objc_bind_id(&t, b, 3) == 0);
  CHECK_EQ_U(_hg_objc_find_id(&t, 7), a);
  CHECK_EQ_U(_hg_objc_find_id(&t, 3), b);
  CHECK_EQ_U(_hg_objc_find_id(&t, 5), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_find_id(&t, 0), HG_OBJC_NONE);
  CHECK(_hg_objc_bind_id(&t, 999, 9) == HG_EINVAL);
  CHECK(_hg_objc_bind_id(&t, a, 0) == HG_EINVAL);
  _hg_scratch_free(&s);
}

static void test_word_map(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  REQUIRE(build(&t, &s) == 0);
  uint32_t a = _hg_objc_find(&t, A), b = _hg_objc_find(&t, B);
  /* before binding: slow path; after: the map; same answers everywhere */
  for (uint64_t off = 0; off < 80; off += 4) CHECK(_hg_objc_ivar_fast(&t, b, off) == _hg_objc_ivar_at(&t, b, off));
  REQUIRE(_hg_objc_bind_id(&t, b, 11) == 0);
  REQUIRE(_hg_objc_bind_id(&t, a, 12) == 0);
  CHECK_EQ_U(_hg_objc_class_at(&t, b)->map_words, 7);
  CHECK(_hg_objc_class_at(&t, b)->map_first != 0);
  for (uint64_t off = 0; off < 80; off += 4) {
    CHECK(_hg_objc_ivar_fast(&t, b, off) == _hg_objc_ivar_at(&t, b, off));
    CHECK(_hg_objc_ivar_fast(&t, a, off) == _hg_objc_ivar_at(&t, a, off));
  }
  CHECK(_hg_objc_ivar_fast(&t, b, 1ull << 40) == NULL);
  CHECK(_hg_objc_ivar_fast(&t, HG_OBJC_NONE, 8) == NULL);
  _hg_scratch_free(&s);
}

static void test_many_classes(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 256u << 20);
  struct hg_objc_table t;
  enum { N = 20000 };
  REQUIRE(_hg_objc_table_init(&t, &s, N, N, 16u << 20) == 0);
  /* clustered, 16-aligned pointers like real class data */
  for (uint32_t i = 0; i < N; i++) {
    char name[32];
    snprintf(name, sizeof name, "C%u", i);
    uint64_t p = 0x7f0000000000ull + (uint64_t)i * 48;
    REQUIRE(_hg_objc_add_class(&t, p, name, 16 + (i % 7) * 8, i % 2, 0) == i);
  }
  REQUIRE(_hg_objc_table_finish(&t) == 0);
  unsigned found = 0, wrong = 0;
  for (uint32_t i = 0; i < N; i++) {
    uint64_t p = 0x7f0000000000ull + (uint64_t)i * 48;
    found += _hg_objc_find(&t, p) == i;
    wrong += _hg_objc_find(&t, p + 16) != HG_OBJC_NONE; /* between classes */
    if (i < N / 2) CHECK(_hg_objc_bind_id(&t, i, 100000 + i) == 0);
  }
  CHECK_EQ_U(found, N);
  CHECK_EQ_U(wrong, 0);
  unsigned ids = 0;
  for (uint32_t i = 0; i < N / 2; i++) ids += _hg_objc_find_id(&t, 100000 + i) == i;
  CHECK_EQ_U(ids, N / 2);
  CHECK_EQ_U(_hg_objc_find_id(&t, 100000 + N), HG_OBJC_NONE);
  _hg_scratch_free(&s);
}

static void test_bounds(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  /* the reservation is page-rounded: fill it and see the overflow counted */
  REQUIRE(_hg_objc_table_init(&t, &s, 4, 2, 64) == 0);
  size_t cap = t.classes.cap / sizeof(struct hg_objc_class);
  uint32_t added = 0;
  for (uint32_t i = 0; i < cap + 3; i++)
    if (_hg_objc_add_class(&t, 0x1000 + 16ull * i, "K", 8, 0, 0) != HG_OBJC_NONE) added++;
  CHECK_EQ_U(added, cap);
  CHECK_EQ_U(t.overflow, 3);
  /* ivars only on the last class; nothing after finish */
  CHECK(_hg_objc_add_ivar(&t, 0, "x", 8, "@", HG_EDGE_STRONG) == HG_EINVAL);
  REQUIRE(_hg_objc_table_finish(&t) == 0);
  CHECK_EQ_U(_hg_objc_add_class(&t, 0x99990, "L", 8, 0, 0), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_find(&t, 0x1000), 0);
  _hg_scratch_free(&s);
  /* a budget too small for the reservations: init fails cleanly */
  _hg_scratch_init(&s, 0);
  CHECK(_hg_objc_table_init(&t, &s, 4, 2, 64) != 0 || _hg_objc_table_finish(&t) != 0);
  _hg_scratch_free(&s);
}

static void test_apple_masks(void) {
  struct hg_scratch s;
  _hg_scratch_init(&s, 64u << 20);
  struct hg_objc_table t;
  REQUIRE(_hg_objc_table_init(&t, &s, 4, 4, 256) == 0);
  const uint64_t cls = 0x0000000100008000ull;
  uint32_t c = _hg_objc_add_class(&t, cls, "NSThing", 32, 0, 0);
  REQUIRE(c != HG_OBJC_NONE);
  REQUIRE(_hg_objc_table_finish(&t) == 0);
  REQUIRE(_hg_objc_isa_apple(&t.isa, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_IOS) == 0);
  uint64_t isa = cls | 0x000001a000000001ull | (7ull << 45);
  CHECK_EQ_U(_hg_objc_classify_word(&t, isa, 32), c);
  CHECK_EQ_U(_hg_objc_classify_word(&t, isa, 24), HG_OBJC_NONE);
  CHECK_EQ_U(_hg_objc_classify_word(&t, cls | 0x000002a000000001ull, 32), HG_OBJC_NONE);
  _hg_scratch_free(&s);
}

int main(void) {
  RUN(test_lookup_and_classify);
  RUN(test_ivars);
  RUN(test_ids);
  RUN(test_word_map);
  RUN(test_many_classes);
  RUN(test_bounds);
  RUN(test_apple_masks);
  return hg_test_done();
}
