/*
 * test_objc_apple.c — the Apple-runtime facts the ObjC classifier decides
 * on, with synthetic inputs on Linux: isa masks per runtime architecture
 * and OS (objc4 isa.h, limited to the OS's MACH_VM_MAX_ADDRESS), the
 * runtime architecture from a Mach-O header, signed isas (arm64e Swift
 * metadata pointers, ObjC nonpointer isas with signature bits), class_ro_t
 * facts read through a fake memory (realized / rw_ext / signed / hostile),
 * where the ARC layouts start, and readable Swift class names.
 */
#include <string.h>

#include "capture/classify/objc.h"
#include "capture/classify/swift.h"
#include "hg_test.h"

static void test_masks_per_os(void) {
  struct hg_objc_isa m;
  /* arm64e on iOS: ISA_MASK 0x007ffffffffffff8 & coveringMask(0xFC0000000 - 1) */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64E, HG_OBJC_OS_IOS) == 0);
  CHECK_EQ_U(m.class_mask, 0x0000000ffffffff8ull);
  /* signed raw pointers: the VA bits only (T0SZ_BOOT 25, xnu
   * osfmk/arm64/proc_reg.h), the low bits kept: ptrauth_strip clears
   * only the signature, and what is signed need not be 8-byte aligned */
  CHECK_EQ_U(m.ptr_mask, 0x0000007fffffffffull);
  /* arm64e on macOS: coveringMask(0x7FFFFE000000 - 1) */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64E, HG_OBJC_OS_MACOS) == 0);
  CHECK_EQ_U(m.class_mask, 0x00007ffffffffff8ull);
  CHECK_EQ_U(m.ptr_mask, 0x00007fffffffffffull);
  /* arm64 simulator: the ptrauth layout, unsigned pointers */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_SIMULATOR) == 0);
  CHECK_EQ_U(m.magic_mask, 1);
  CHECK_EQ_U(m.class_mask, 0x00007ffffffffff8ull);
  CHECK_EQ_U(m.ptr_mask, 0);
  /* arm64 device */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_IOS) == 0);
  CHECK_EQ_U(m.class_mask, 0x0000000ffffffff8ull);
  CHECK_EQ_U(m.magic_value, 0x000001a000000001ull);
  CHECK_EQ_U(m.ptr_mask, 0);
  /* x86_64: low-bit tags on macOS, high-bit in the simulator */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_X86_64, HG_OBJC_OS_MACOS) == 0);
  CHECK_EQ_U(m.tag_mask, 1);
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_X86_64, HG_OBJC_OS_SIMULATOR) == 0);
  CHECK_EQ_U(m.tag_mask, 1ull << 63);
  CHECK(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, 0) == HG_EINVAL);
}

static void test_nonptr_mask(void) {
  struct hg_objc_isa m;
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_X86_64, HG_OBJC_OS_MACOS) == 0);
  CHECK_EQ_U(_hg_objc_nonptr_mask(m.tag_mask), 1);
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_IOS) == 0);
  CHECK_EQ_U(_hg_objc_nonptr_mask(m.tag_mask), 0); /* bit 63: never in the heap span */
  CHECK_EQ_U(_hg_objc_nonptr_mask(0), 0);
}

static void test_runtime_arch(void) {
  CHECK_EQ_U(_hg_objc_arch_of(0x0100000c, 2), HG_OBJC_ARCH_ARM64E);
  CHECK_EQ_U(_hg_objc_arch_of(0x0100000c, 0x80000002u), HG_OBJC_ARCH_ARM64E); /* PTRAUTH_ABI cap */
  CHECK_EQ_U(_hg_objc_arch_of(0x0100000c, 0), HG_OBJC_ARCH_ARM64);
  CHECK_EQ_U(_hg_objc_arch_of(0x01000007, 3), HG_OBJC_ARCH_X86_64);
  CHECK_EQ_U(_hg_objc_arch_of(0x01000007, 0x80000003u), HG_OBJC_ARCH_X86_64);
  CHECK_EQ_U(_hg_objc_arch_of(12, 9), 0); /* 32-bit arm */
}

static void test_signed_isas(void) {
  struct hg_objc_isa m;
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64E, HG_OBJC_OS_IOS) == 0);
  const uint64_t cls = 0x00000001f0a3c128ull;
  /* ObjC nonpointer isa: signature in shiftcls_and_sig above bit 36,
   * extra_rc at 56.. */
  uint64_t isa = cls | 1ull | (0x2bcdull << 39) | (3ull << 56);
  CHECK_EQ_U(_hg_objc_isa_class(&m, isa), cls);
  /* Swift HeapObject.metadata: a raw, signed pointer (bit 0 clear) */
  const uint64_t meta = 0x0000000282a0c4f0ull;
  CHECK_EQ_U(_hg_objc_isa_class(&m, meta | (0x4e21ull << 39)), meta);
  CHECK_EQ_U(_hg_objc_isa_class(&m, (meta | 4) | (0x4e21ull << 39)), 0); /* misaligned */
  /* an arm64 process signs nothing: raw pointers are taken as they are */
  REQUIRE(_hg_objc_isa_apple(&m, HG_OBJC_ARCH_ARM64, HG_OBJC_OS_IOS) == 0);
  CHECK_EQ_U(_hg_objc_isa_class(&m, meta | (0x4e21ull << 39)), meta | (0x4e21ull << 39));
}

/* ---- a fake memory for class data ---- */

struct fake_mem {
  uint64_t base;
  uint8_t b[4096];
  int reads;
};

static int fm_read(void *ctx, uint64_t addr, void *out, size_t n) {
  struct fake_mem *m = ctx;
  m->reads++;
  if (addr < m->base || addr - m->base > sizeof m->b || n > sizeof m->b - (addr - m->base))
    return 1;
  memcpy(out, m->b + (addr - m->base), n);
  return 0;
}

static void put64(struct fake_mem *m, uint64_t addr, uint64_t v) { memcpy(m->b + (addr - m->base), &v, 8); }
static void put32(struct fake_mem *m, uint64_t addr, uint32_t v) { memcpy(m->b + (addr - m->base), &v, 4); }

#define BASE 0x100000000ull
#define CLS (BASE + 0x100)
#define RW (BASE + 0x400)
#define EXT (BASE + 0x600)
#define RO (BASE + 0x800)

static void layout(struct fake_mem *m, uint64_t bits_flags, uint64_t ro_or_ext, uint32_t start,
                   uint32_t size) {
  memset(m, 0, sizeof *m);
  m->base = BASE;
  put64(m, CLS + 32, RW | bits_flags);
  put32(m, RW, 0x80000000u | 0x19u); /* RW_REALIZED | others */
  put64(m, RW + 8, ro_or_ext);
  put64(m, EXT, RO);
  put32(m, RO, 0x84);
  put32(m, RO + 4, start);
  put32(m, RO + 8, size);
}

static void test_class_data(void) {
  struct hg_objc_data_masks k = {0x00007ffffffffff8ull, 0, 1u | 2u};
  struct hg_objc_ro ro;
  struct fake_mem m;
  layout(&m, 0, RO, 12, 40);
  REQUIRE(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == 0);
  CHECK_EQ_U(ro.instance_start, 12);
  CHECK_EQ_U(ro.instance_size, 40);
  CHECK_EQ_U(ro.ro_flags, 0x84);
  CHECK(!ro.swift);
  /* through a class_rw_ext_t, with the Swift stable bit */
  layout(&m, 2, EXT | 1, 16, 48);
  REQUIRE(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == 0);
  CHECK_EQ_U(ro.instance_start, 16);
  CHECK(ro.swift);
  /* arm64e: signed ro / rw_ext pointers */
  struct hg_objc_data_masks ke = {0x0000007ffffffff8ull, 0x0000007ffffffff8ull, 3};
  layout(&m, 1, (EXT | 1) | (0x1234ull << 40), 8, 24);
  put64(&m, EXT, RO | (0x77ull << 48));
  REQUIRE(_hg_objc_class_data(CLS, &ke, fm_read, &m, &ro) == 0);
  CHECK_EQ_U(ro.instance_start, 8);
  CHECK(ro.swift); /* legacy Swift bit */
  /* hostile: not realized, unreadable, inconsistent, misaligned, no mask */
  layout(&m, 0, RO, 12, 40);
  put32(&m, RW, 0x19);
  CHECK(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == HG_EFORMAT);
  layout(&m, 0, 0xdead0000ull, 12, 40);
  CHECK(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == HG_EFORMAT);
  layout(&m, 0, RO, 48, 40); /* start past size */
  CHECK(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == HG_EFORMAT);
  layout(&m, 0, RO, 0, 1u << 30); /* absurd size */
  CHECK(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == HG_EFORMAT);
  layout(&m, 0, RO, 12, 40);
  put64(&m, CLS + 32, 0);
  CHECK(_hg_objc_class_data(CLS, &k, fm_read, &m, &ro) == HG_EFORMAT);
  CHECK(_hg_objc_class_data(CLS + 4, &k, fm_read, &m, &ro) == HG_EINVAL);
  CHECK(_hg_objc_class_data(0x10, &k, fm_read, &m, &ro) == HG_EFORMAT);
  struct hg_objc_data_masks none = {0, 0, 0};
  CHECK(_hg_objc_class_data(CLS, &none, fm_read, &m, &ro) == HG_EINVAL);
}

static void test_layout_start(void) {
  struct hg_objc_ro ro = {0, 12, 40, 0};
  /* word_align(instanceStart) = 16, even though the first ivar (an
   * over-aligned one) sits at 32: the old guess said 32 */
  ro.instance_start = 8;
  ro.instance_size = 48;
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 1, 48, 16), 8);
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 0, 48, 16), 16); /* without class data */
  ro.instance_start = 12;
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 1, 48, 12), 16);
  /* class data that disagrees with the public size is not trusted */
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 1, 64, 24), 24);
  /* nor one that starts past the first ivar */
  ro.instance_start = 40;
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 1, 48, 16), 16);
  CHECK_EQ_U(_hg_objc_layout_start(&ro, 0, 48, UINT64_MAX), 0);
}

/* ---- Swift field records in a fake memory ---- */

/* Context descriptors are 4-byte aligned (swift lib/IRGen/Linking.cpp,
 * LinkEntity::getAlignment: NominalTypeDescriptor -> Alignment(4)), so a
 * class may put them at 4 mod 8: desc_off moves both descriptors there. */
static uint64_t desc_off;
#define DESC (BASE + 0xa00 + desc_off)
#define FD (BASE + 0xb00)
#define CDESC (BASE + 0xc00 + desc_off)
#define SDESC (BASE + 0xc40)
#define IPTR (BASE + 0xc80)
#define STRS (BASE + 0xd00)

static uint64_t str_at;

static void put_rel(struct fake_mem *m, uint64_t at, uint64_t target) {
  put32(m, at, target ? (uint32_t)(int32_t)(int64_t)(target - at) : 0);
}

static uint64_t put_str(struct fake_mem *m, const char *s, size_t n) {
  uint64_t a = str_at;
  memcpy(m->b + (a - m->base), s, n);
  m->b[a - m->base + n] = 0;
  str_at += (n + 8) & ~7ull;
  return a;
}

/* A symbolic reference string: marker, rel32 to target, then a suffix. */
static uint64_t put_sym(struct fake_mem *m, char marker, uint64_t target, const char *suffix) {
  uint64_t a = str_at;
  m->b[a - m->base] = (uint8_t)marker;
  put_rel(m, a + 1, target);
  size_t k = strlen(suffix);
  memcpy(m->b + (a - m->base) + 5, suffix, k + 1);
  str_at += (5 + k + 8) & ~7ull;
  return a;
}

struct got_fields {
  char name[16][32];
  uint32_t kind[16];
  int n;
};

static int got_field(void *arg, const char *name, size_t len, uint32_t kind) {
  struct got_fields *g = arg;
  if (g->n >= 16 || len >= 32) return -1;
  memcpy(g->name[g->n], name, len);
  g->name[g->n][len] = 0;
  g->kind[g->n++] = kind;
  return 0;
}

static int kind_of(const struct got_fields *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (!strcmp(g->name[i], name)) return (int)g->kind[i];
  return -1;
}

static void swift_class(struct fake_mem *m, uint64_t desc_sig) {
  memset(m, 0, sizeof *m);
  m->base = BASE;
  str_at = STRS;
  put64(m, CLS + 64, DESC | desc_sig);
  put32(m, DESC, 0x00000050u | 16u); /* class descriptor */
  put_rel(m, DESC + 16, FD);
  put32(m, CDESC, 0x10u | 0x40u);    /* a class */
  put32(m, SDESC, 0x11u);            /* a struct */
  put64(m, IPTR, CDESC | desc_sig);  /* indirect, signed on arm64e */
  struct {
    const char *name;
    uint64_t type;
  } f[11];
  f[0].name = "delegate", f[0].type = put_str(m, "5MyApp8DelegateCSgXw", 20);
  f[1].name = "next", f[1].type = put_str(m, "5MyApp4NodeCSg", 14);
  f[2].name = "count", f[2].type = put_str(m, "Si", 2);
  f[3].name = "owner", f[3].type = put_sym(m, 1, CDESC, "");
  f[4].name = "point", f[4].type = put_sym(m, 1, SDESC, "");
  f[5].name = "any", f[5].type = put_str(m, "yXl", 3);
  f[6].name = "parent", f[6].type = put_str(m, "5MyApp4NodeCXo", 14);
  f[7].name = "view", f[7].type = put_str(m, "So6UIViewC", 10);
  f[8].name = "boss", f[8].type = put_sym(m, 2, IPTR, "");
  f[9].name = "opt", f[9].type = put_sym(m, 1, CDESC, "Sg");
  f[10].name = NULL, f[10].type = put_str(m, "Si", 2); /* no name: skipped */
  put32(m, FD + 8, 1u | (12u << 16)); /* kind 1 (class), record size 12 */
  put32(m, FD + 12, 11);
  for (int i = 0; i < 11; i++) {
    uint64_t rec = FD + 16 + (uint64_t)i * 12;
    put32(m, rec, 2); /* IsVar */
    put_rel(m, rec + 4, f[i].type);
    put_rel(m, rec + 8, f[i].name ? put_str(m, f[i].name, strlen(f[i].name)) : 0);
  }
}

static void test_swift_fields(void) {
  struct fake_mem m;
  struct got_fields g;
  swift_class(&m, 0);
  memset(&g, 0, sizeof g);
  REQUIRE(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == 10);
  CHECK(!strcmp(g.name[0], "delegate")); /* declaration order */
  CHECK_EQ_U(kind_of(&g, "delegate"), HG_EDGE_WEAK);
  CHECK_EQ_U(kind_of(&g, "next"), HG_EDGE_STRONG);
  CHECK_EQ_U(kind_of(&g, "count"), 0);
  CHECK_EQ_U(kind_of(&g, "owner"), HG_EDGE_STRONG); /* symbolic: a class */
  CHECK_EQ_U(kind_of(&g, "point"), 0);              /* symbolic: a struct */
  CHECK_EQ_U(kind_of(&g, "any"), HG_EDGE_STRONG);
  CHECK_EQ_U(kind_of(&g, "parent"), HG_EDGE_UNOWNED);
  CHECK_EQ_U(kind_of(&g, "view"), HG_EDGE_STRONG);
  CHECK_EQ_U(kind_of(&g, "boss"), HG_EDGE_STRONG);  /* indirect symbolic */
  CHECK_EQ_U(kind_of(&g, "opt"), HG_EDGE_STRONG);
  /* arm64e: Description and the indirect pointer are signed */
  swift_class(&m, 0x1234ull << 40);
  memset(&g, 0, sizeof g);
  REQUIRE(_hg_swift_fields(CLS, 0x0000007fffffffffull, fm_read, &m, got_field, &g) == 10);
  CHECK_EQ_U(kind_of(&g, "boss"), HG_EDGE_STRONG);
  /* no reflection metadata: no fields, no error */
  swift_class(&m, 0);
  put32(&m, DESC + 16, 0);
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == 0);
  /* hostile: a struct descriptor, absurd counts and sizes, unreadable */
  swift_class(&m, 0);
  put32(&m, DESC, 17);
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == HG_EFORMAT);
  swift_class(&m, 0);
  put32(&m, FD + 12, 1u << 20);
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == HG_EFORMAT);
  swift_class(&m, 0);
  put32(&m, FD + 8, 1u | (4u << 16));
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == HG_EFORMAT);
  swift_class(&m, 0);
  put64(&m, CLS + 64, 0xdead00000000ull);
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == HG_EFORMAT);
  swift_class(&m, 0);
  put_rel(&m, FD + 16 + 8, BASE + 0x10000); /* a name out of reach: skipped */
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == 9);
  CHECK(_hg_swift_fields(CLS + 1, 0, fm_read, &m, got_field, &g) == HG_EINVAL);
  /* the callback stops the walk */
  swift_class(&m, 0);
  memset(&g, 0, sizeof g);
  g.n = 16;
  CHECK(_hg_swift_fields(CLS, 0, fm_read, &m, got_field, &g) == -1);
  /* mangled types alone */
  CHECK_EQ_U(_hg_swift_type_kind("Sg", 2, 0, NULL, NULL, 0), 0);
  CHECK_EQ_U(_hg_swift_type_kind("SiSg", 4, 0, NULL, NULL, 0), 0);
  /* Array, Dictionary, Set: one reference to their storage object */
  CHECK_EQ_U(_hg_swift_type_kind("SaySiG", 6, 0, NULL, NULL, 0), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_swift_type_kind("SDySSSiG", 8, 0, NULL, NULL, 0), HG_EDGE_STRONG);
  /* a bound generic class; a generic struct is not a reference */
  CHECK_EQ_U(_hg_swift_type_kind("4Main3BoxCySiGSg", 16, 0, NULL, NULL, 0), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_swift_type_kind("4Main5OuterC3BoxCySiG", 21, 0, NULL, NULL, 0), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_swift_type_kind("4Main4PairVySiG", 15, 0, NULL, NULL, 0), 0);
  CHECK_EQ_U(_hg_swift_type_kind("4MainySiG", 9, 0, NULL, NULL, 0), 0);
  /* an escaping closure: its context, strongly, in the second word */
  CHECK_EQ_U(_hg_swift_type_kind("yycSg", 5, 0, NULL, NULL, 0), HG_EDGE_STRONG | HG_SWIFT_SECOND_WORD);
  CHECK_EQ_U(_hg_swift_type_kind("\x01" "abcd", 5, 0, NULL, NULL, 0), 0); /* no reader */
  CHECK_EQ_U(_hg_swift_type_kind("5MyApp1AC", 9, 0, NULL, NULL, 0), HG_EDGE_STRONG);
  CHECK_EQ_U(_hg_swift_type_kind("5MyApp1ACXu", 11, 0, NULL, NULL, 0), HG_EDGE_UNOWNED);
}

/* arm64e, the runtime's own mask: a signed Description and a signed
 * indirect pointer to descriptors at 4 mod 8 (4-byte aligned, see above)
 * are read where they are, not 4 bytes early. */
static void test_swift_fields_arm64e_align4(void) {
  struct hg_objc_isa im;
  REQUIRE(_hg_objc_isa_apple(&im, HG_OBJC_ARCH_ARM64E, HG_OBJC_OS_IOS) == 0);
  struct fake_mem m;
  struct got_fields g;
  desc_off = 4;
  swift_class(&m, 0x1234ull << 40);
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_fields(CLS, im.ptr_mask, fm_read, &m, got_field, &g) == 10);
  CHECK_EQ_U(kind_of(&g, "owner"), HG_EDGE_STRONG);
  CHECK_EQ_U(kind_of(&g, "boss"), HG_EDGE_STRONG); /* \x02 -> IPTR -> CDESC (4 mod 8) */
  CHECK_EQ_U(kind_of(&g, "point"), 0);
  /* the raw isa path keeps rejecting misaligned metadata */
  CHECK_EQ_U(_hg_objc_isa_class(&im, (CLS + 4) | (0x4e21ull << 39)), 0);
  CHECK_EQ_U(_hg_objc_isa_class(&im, CLS | (0x4e21ull << 39)), CLS);
  desc_off = 0;
}

static void test_swift_readable(void) {
  char buf[64];
  CHECK(!strcmp(_hg_swift_readable_name("_TtC5MyApp9ViewModel", buf, sizeof buf), "MyApp.ViewModel"));
  CHECK(!strcmp(_hg_swift_readable_name("_TtCC5MyApp5Outer5Inner", buf, sizeof buf),
                "MyApp.Outer.Inner"));
  CHECK(!strcmp(_hg_swift_readable_name("_TtCs12_SwiftObject", buf, sizeof buf), "Swift._SwiftObject"));
  CHECK(!strcmp(_hg_swift_readable_name("_TtC5MyAppP33_0123456789ABCDEF0123456789ABCDEF4Impl", buf,
                                        sizeof buf),
                "MyApp.Impl"));
  /* anything else comes back unchanged */
  const char *g = "_TtGC5MyApp3BoxSi_";
  CHECK(_hg_swift_readable_name(g, buf, sizeof buf) == g);
  const char *o = "NSObject";
  CHECK(_hg_swift_readable_name(o, buf, sizeof buf) == o);
  const char *bad = "_TtC9MyApp"; /* length past the end */
  CHECK(_hg_swift_readable_name(bad, buf, sizeof buf) == bad);
  const char *tail = "_TtC5MyApp4ViewXYZ";
  CHECK(_hg_swift_readable_name(tail, buf, sizeof buf) == tail);
  char tiny[6];
  const char *n = "_TtC5MyApp9ViewModel";
  CHECK(_hg_swift_readable_name(n, tiny, sizeof tiny) == n); /* no overflow */
  CHECK(_hg_swift_readable_name(NULL, buf, sizeof buf) == NULL);
}

int main(void) {
  RUN(test_masks_per_os);
  RUN(test_nonptr_mask);
  RUN(test_runtime_arch);
  RUN(test_signed_isas);
  RUN(test_class_data);
  RUN(test_layout_start);
  RUN(test_swift_fields);
  RUN(test_swift_fields_arm64e_align4);
  RUN(test_swift_readable);
  return hg_test_done();
}
