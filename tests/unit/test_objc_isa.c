/*
 * test_objc_isa.c — isa decoding of capture/classify/objc_isa.c on synthetic isa
 * words: the GNU runtime's plain isa, Apple's non-pointer isa on arm64,
 * arm64e and x86_64 (class mask, magic check, raw pointers), tagged
 * pointers, and the Swift class-name test.
 */
#include "capture/classify/objc.h"
#include "hg_test.h"

static void test_plain(void) {
  struct hg_objc_isa m;
  _hg_objc_isa_plain(&m);
  CHECK_EQ_U(_hg_objc_isa_class(&m, 0x55aa00001000ull), 0x55aa00001000ull);
  CHECK_EQ_U(_hg_objc_isa_class(&m, 0x55aa00001004ull), 0); /* misaligned */
  CHECK_EQ_U(_hg_objc_isa_class(&m, 0), 0);
  CHECK(!_hg_objc_is_tagged(&m, 0x55aa00001001ull)); /* GNU: no tagged pointers */
}

static void test_arm64(void) {
  struct hg_objc_isa m;
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_IOS) == 0);
  const uint64_t cls = 0x0000000100008000ull; /* fits shiftcls (33 bits << 3) */
  /* nonpointer isa: magic, has_cxx_dtor (bit 2), weakly_referenced (bit 42),
   * extra_rc 5 (bits 45..63) */
  uint64_t isa = cls | 0x000001a000000001ull | 4ull | (1ull << 42) | (5ull << 45);
  CHECK_EQ_U(_hg_objc_isa_class(&m, isa), cls);
  /* a large retain count reaches bit 63, the tag bit: still an isa */
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 0x000001a000000001ull | (0x7ffffull << 45)), cls);
  /* wrong magic */
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 0x000003f000000001ull), 0);
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 1ull), 0);
  /* raw class pointer (non-pointer isa off) */
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls), cls);
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 2ull), 0);
  /* tagged pointers: top bit */
  CHECK(_hg_objc_is_tagged(&m, 0x8000000000000a27ull));
  CHECK(!_hg_objc_is_tagged(&m, cls));
}

static void test_arm64e(void) {
  struct hg_objc_isa m;
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64E, HG_OBJC_OS_MACOS) == 0);
  const uint64_t cls = 0x00000001f0a3c128ull & ~7ull;
  uint64_t isa = cls | 1ull | (1ull << 56); /* nonpointer + refcount bits */
  CHECK_EQ_U(_hg_objc_isa_class(&m, isa), cls);
  /* the runtime's narrower objc_debug_isa_class_mask strips signature bits */
  m.class_mask = 0x0000000ffffffff8ull;
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 1ull | (0x3full << 48)), cls);
}

static void test_x86_64(void) {
  struct hg_objc_isa m;
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_X86_64, HG_OBJC_OS_MACOS) == 0);
  const uint64_t cls = 0x00007fff8a3c1230ull;
  uint64_t isa = cls | 0x001d800000000001ull | (3ull << 56) | 2ull; /* rc, has_assoc */
  CHECK_EQ_U(_hg_objc_isa_class(&m, isa), cls);
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls | 0x001f800000000001ull), 0); /* bad magic */
  CHECK_EQ_U(_hg_objc_isa_class(&m, cls), cls);                       /* raw */
  /* macOS x86_64 tags with the low bit: a nonpointer isa has it too, which
   * is why isa decoding never asks "tagged?" */
  CHECK(_hg_objc_is_tagged(&m, 0x0000000000000127ull));
  CHECK(!_hg_objc_is_tagged(&m, cls));
}

static void test_bad_arch(void) {
  struct hg_objc_isa m;
  CHECK(_hg_objc_isa_apple(&m, 99, HG_OBJC_OS_IOS) == HG_EINVAL);
}

static void test_swift_names(void) {
  CHECK_EQ_U(_hg_objc_name_kind("_TtC7MyApp10ViewModel"), HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_name_kind("_TtCs12_SwiftObject"), HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_name_kind("_TtGC7MyApp3BoxSi_"), HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_name_kind("$s7MyApp3FooCN"), HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_name_kind("_$s7MyApp3FooC"), HG_CLASS_SWIFT);
  CHECK_EQ_U(_hg_objc_name_kind("NSObject"), HG_CLASS_OBJC);
  CHECK_EQ_U(_hg_objc_name_kind("_Tt"), HG_CLASS_OBJC);
  CHECK_EQ_U(_hg_objc_name_kind("_NSZombie_"), HG_CLASS_OBJC);
  CHECK_EQ_U(_hg_objc_name_kind(NULL), HG_CLASS_OBJC);
}

int main(void) {
  RUN(test_plain);
  RUN(test_arm64);
  RUN(test_arm64e);
  RUN(test_x86_64);
  RUN(test_bad_arch);
  RUN(test_swift_names);
  return hg_test_done();
}
