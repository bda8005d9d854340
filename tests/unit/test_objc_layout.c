/*
 * test_objc_layout.c — the portable decoders of capture/classify/objc_layout.c:
 * Apple ivar layout strings (skip/scan nibbles), ivar type encodings, and
 * the strength an ivar gets from its class's strong and weak layouts.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/classify/objc.h"
#include "hg_test.h"

static void test_layout_basic(void) {
  /* skip 0 scan 2: words 0, 1 */
  const uint8_t a[] = {0x02, 0x00};
  CHECK(_hg_objc_layout_has(a, sizeof a, 0));
  CHECK(_hg_objc_layout_has(a, sizeof a, 1));
  CHECK(!_hg_objc_layout_has(a, sizeof a, 2));
  /* skip 1 scan 2 (words 1, 2), skip 3 scan 1 (word 6) */
  const uint8_t b[] = {0x12, 0x31, 0x00};
  const int want[] = {0, 1, 1, 0, 0, 0, 1, 0, 0};
  for (unsigned w = 0; w < sizeof want / sizeof want[0]; w++)
    CHECK_EQ_U(_hg_objc_layout_has(b, sizeof b, w), want[w]);
  CHECK(!_hg_objc_layout_has(b, sizeof b, 1000000));
}

static void test_layout_nibbles(void) {
  /* full nibbles: skip 15 scan 0, then skip 0 scan 15: words 15 .. 29 */
  const uint8_t a[] = {0xf0, 0x0f, 0x00};
  for (unsigned w = 0; w < 40; w++)
    CHECK_EQ_U(_hg_objc_layout_has(a, sizeof a, w), w >= 15 && w < 30);
  uint8_t bits[40];
  CHECK_EQ_U(_hg_objc_layout_expand(a, sizeof a, bits, 40), 30);
  for (unsigned w = 0; w < 40; w++) CHECK_EQ_U(bits[w], w >= 15 && w < 30);
  /* expansion into a shorter bitmap stays in bounds, reports the length */
  uint8_t small[4];
  CHECK_EQ_U(_hg_objc_layout_expand(a, sizeof a, small, 4), 30);
  for (unsigned w = 0; w < 4; w++) CHECK_EQ_U(small[w], 0);
}

static void test_layout_empty_and_null(void) {
  const uint8_t e[] = {0x00, 0x11};
  for (unsigned w = 0; w < 4; w++) {
    CHECK(!_hg_objc_layout_has(NULL, 100, w));
    CHECK(!_hg_objc_layout_has(e, sizeof e, w)); /* ends at the first 0 */
  }
  uint8_t bits[4] = {9, 9, 9, 9};
  CHECK_EQ_U(_hg_objc_layout_expand(NULL, 10, bits, 4), 0);
  for (unsigned w = 0; w < 4; w++) CHECK_EQ_U(bits[w], 0);
}

static void test_layout_unterminated(void) {
  /* exactly two bytes, no terminator: the decoder must stop at max_len
   * (ASan would catch an over-read of this heap block) */
  uint8_t *a = malloc(2);
  REQUIRE(a);
  a[0] = 0x11; /* word 1 */
  a[1] = 0x11; /* word 3 */
  CHECK(!_hg_objc_layout_has(a, 2, 0));
  CHECK(_hg_objc_layout_has(a, 2, 1));
  CHECK(!_hg_objc_layout_has(a, 2, 2));
  CHECK(_hg_objc_layout_has(a, 2, 3));
  CHECK(!_hg_objc_layout_has(a, 2, 4));
  CHECK(!_hg_objc_layout_has(a, 1, 3)); /* cut after one byte */
  uint8_t bits[8];
  CHECK_EQ_U(_hg_objc_layout_expand(a, 2, bits, 8), 4);
  CHECK_EQ_U(bits[1] + bits[3], 2);
  free(a);
}

static void test_type_refs(void) {
  CHECK_EQ_U(_hg_objc_type_refs("@"), 1);
  CHECK_EQ_U(_hg_objc_type_refs("@\"NSString\""), 1);
  CHECK_EQ_U(_hg_objc_type_refs("@?"), 1);
  CHECK_EQ_U(_hg_objc_type_refs("r@"), 1);
  CHECK_EQ_U(_hg_objc_type_refs("[3@]"), 3);
  CHECK_EQ_U(_hg_objc_type_refs("[12@\"Child\"]"), 12);
  CHECK_EQ_U(_hg_objc_type_refs("[0@]"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("[99999999@]"), 0); /* bounded */
  CHECK_EQ_U(_hg_objc_type_refs("[3i]"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("[@]"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("[3"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("^@"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("#"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("i"), 0);
  CHECK_EQ_U(_hg_objc_type_refs("{S=@@}"), 0);
  CHECK_EQ_U(_hg_objc_type_refs(""), 0);
  CHECK_EQ_U(_hg_objc_type_refs(NULL), 0);
}

/* An ARC class whose own ivars start at 8: id a (8), int x (16),
 * __weak id w (24), id b (32), __unsafe_unretained id u (40):
 * strong layout "\x01\x21" (words 0 and 3), weak "\x21" (word 2). */
static void test_ivar_kind_arc(void) {
  const uint8_t strong[] = {0x01, 0x21, 0x00}, weak[] = {0x21, 0x00};
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 8, 8, strong, weak), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_objc_ivar_kind("i", 16, 8, strong, weak), 0);
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 24, 8, strong, weak), HG_EDGE_WEAK);
  CHECK_EQ_U(_hg_objc_ivar_kind("@\"B\"", 32, 8, strong, weak), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 40, 8, strong, weak), HG_EDGE_UNOWNED);
  /* only a weak layout (a class with weak ivars and no strong ones) */
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 24, 8, NULL, weak), HG_EDGE_WEAK);
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 8, 8, NULL, weak), HG_EDGE_UNOWNED);
  /* a strong word whose type is not '@' (e.g. __strong void *, Swift "") */
  CHECK_EQ_U(_hg_objc_ivar_kind("", 32, 8, strong, weak), HG_EDGE_STRONG);
  /* before the class's own ivars or misaligned: not in its layouts */
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 0, 8, strong, weak), HG_EDGE_UNOWNED);
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 12, 8, strong, weak), HG_EDGE_UNOWNED);
}

static void test_ivar_kind_no_layout(void) {
  /* GNU runtime and Apple MRR classes: object types are strong */
  CHECK_EQ_U(_hg_objc_ivar_kind("@", 8, 8, NULL, NULL), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_objc_ivar_kind("[4@]", 16, 8, NULL, NULL), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_objc_ivar_kind("^@", 8, 8, NULL, NULL), 0);
  CHECK_EQ_U(_hg_objc_ivar_kind("#", 0, 0, NULL, NULL), 0);
  CHECK_EQ_U(_hg_objc_ivar_kind(NULL, 0, 0, NULL, NULL), 0);
}

int main(void) {
  RUN(test_layout_basic);
  RUN(test_layout_nibbles);
  RUN(test_layout_empty_and_null);
  RUN(test_layout_unterminated);
  RUN(test_type_refs);
  RUN(test_ivar_kind_arc);
  RUN(test_ivar_kind_no_layout);
  return hg_test_done();
}
