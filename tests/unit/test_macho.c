/*
 * test_macho.c — machoparse unit tests on images built in memory: LEB128
 * decoding, short library names, every rebase/bind opcode (incl. threaded
 * binds), chained pointer decoding for every format, the loaded-image mode,
 * and malformed inputs (each must fail with an offset, never crash or hang).
 */
#include <string.h>

#include "hg_test.h"
#include "heapgraph.h"
#include "machoparse/macho.h"
#include "machoparse/macho_format.h"
#include "machoparse/macho_internal.h"

#define BASE 0x100000000ull
#define IMG_SIZE 0x3000u
#define LE_OFF 0x2000u

/* ---- A tiny LC_DYLD_INFO image builder ---- */

struct mb {
  uint8_t buf[IMG_SIZE];
  uint32_t at, ncmds;
  uint32_t info_cmd; /* offset of LC_DYLD_INFO_ONLY */
};

static void w32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void w64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void seg(struct mb *m, const char *name, uint64_t vm, uint64_t vms, uint64_t fo, uint64_t fs,
                const char *sect, uint64_t saddr, uint64_t ssize) {
  uint8_t *c = m->buf + m->at;
  uint32_t ns = sect ? 1 : 0;
  w32(c, LC_SEGMENT_64);
  w32(c + 4, 72 + 80 * ns);
  strncpy((char *)c + 8, name, 16);
  w64(c + 24, vm); w64(c + 32, vms); w64(c + 40, fo); w64(c + 48, fs);
  w32(c + 56, 3); w32(c + 60, 3); w32(c + 64, ns);
  if (sect) {
    uint8_t *s = c + 72;
    strncpy((char *)s, sect, 16);
    strncpy((char *)s + 16, name, 16);
    w64(s + 32, saddr); w64(s + 40, ssize); w32(s + 48, (uint32_t)(fo + (saddr - vm)));
  }
  m->at += 72 + 80 * ns;
  m->ncmds++;
}

static void dylib(struct mb *m, const char *path) {
  uint8_t *c = m->buf + m->at;
  uint32_t len = (uint32_t)strlen(path) + 1, size = (24 + len + 7) & ~7u;
  w32(c, LC_LOAD_DYLIB); w32(c + 4, size); w32(c + 8, 24);
  memcpy(c + 24, path, len);
  m->at += size;
  m->ncmds++;
}

/* streams[0..3] = rebase, bind, weak, lazy; placed at LE_OFF + 0x100*i. */
static void build(struct mb *m, const uint8_t *const streams[4], const uint32_t sizes[4]) {
  memset(m, 0, sizeof *m);
  m->at = 32;
  seg(m, "__TEXT", BASE, 0x1000, 0, 0x1000, "__text", BASE + 0x800, 0x100);
  seg(m, "__DATA", BASE + 0x1000, 0x1000, 0x1000, 0x1000, "__data", BASE + 0x1000, 0x1000);
  seg(m, "__LINKEDIT", BASE + 0x2000, 0x1000, LE_OFF, 0x1000, NULL, 0, 0);
  dylib(m, "/usr/lib/libSystem.B.dylib");
  dylib(m, "/usr/lib/libfoo_debug.A.dylib");
  uint8_t *c = m->buf + m->at;
  m->info_cmd = m->at;
  w32(c, LC_DYLD_INFO_ONLY); w32(c + 4, 48);
  for (int i = 0; i < 4; i++) {
    if (!sizes[i]) continue;
    w32(c + 8 + 8 * i, LE_OFF + 0x100u * (uint32_t)i);
    w32(c + 12 + 8 * i, sizes[i]);
    memcpy(m->buf + LE_OFF + 0x100 * i, streams[i], sizes[i]);
  }
  m->at += 48;
  m->ncmds++;
  w32(m->buf, MH_MAGIC_64); w32(m->buf + 4, CPU_TYPE_ARM64); w32(m->buf + 12, 6);
  w32(m->buf + 16, m->ncmds); w32(m->buf + 20, m->at - 32);
}

static int collect(const struct macho_image *img, unsigned src, struct macho_fixup *out, int max,
                   struct macho_fixup_iter *it) {
  struct macho_fixup f;
  int n = 0, rc;
  macho_fixups_begin(it, img, src);
  while ((rc = macho_fixups_next(it, &f)) > 0)
    if (n < max) out[n++] = f;
  return rc < 0 ? rc : n;
}

/* ---- LEB128 ---- */

static void test_leb(void) {
  uint64_t u = 0;
  int64_t s = 0;
  uint32_t pos = 0;
  static const uint8_t a[] = {0xe5, 0x8e, 0x26};
  CHECK(macho_uleb(a, 3, &pos, &u) == 0 && u == 624485 && pos == 3);
  static const uint8_t b[] = {0xc0, 0xbb, 0x78};
  pos = 0;
  CHECK(macho_sleb(b, 3, &pos, &s) == 0 && s == -123456);
  static const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  pos = 0;
  CHECK(macho_uleb(max, 10, &pos, &u) == 0 && u == UINT64_MAX);
  static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  pos = 0;
  CHECK(macho_uleb(over, 10, &pos, &u) == -2);
  static const uint8_t trunc[] = {0x80, 0x80};
  pos = 0;
  CHECK(macho_uleb(trunc, 2, &pos, &u) == -1);
  static const uint8_t padded[] = {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  pos = 0;
  CHECK(macho_uleb(padded, 11, &pos, &u) == 0 && u == 1);
  static const uint8_t m1[] = {0x7f};
  pos = 0;
  CHECK(macho_sleb(m1, 1, &pos, &s) == 0 && s == -1);
  static const uint8_t smin[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
  pos = 0;
  CHECK(macho_sleb(smin, 10, &pos, &s) == 0 && s == INT64_MIN);
}

static void test_short_names(void) {
  char b[64];
  CHECK(!strcmp(macho_dylib_short_name("/usr/lib/libSystem.B.dylib", b, sizeof b), "libSystem"));
  CHECK(!strcmp(macho_dylib_short_name("/usr/lib/libc++abi.dylib", b, sizeof b), "libc++abi"));
  CHECK(!strcmp(macho_dylib_short_name("@rpath/libfoo_debug.A.dylib", b, sizeof b), "libfoo"));
  CHECK(!strcmp(macho_dylib_short_name(
      "/System/Library/Frameworks/Foundation.framework/Versions/C/Foundation", b, sizeof b), "Foundation"));
  CHECK(!strcmp(macho_dylib_short_name("/S/L/F/UIKit.framework/UIKit", b, sizeof b), "UIKit"));
  CHECK(!strcmp(macho_dylib_short_name("/usr/lib/QT.A.qtx", b, sizeof b), "QT"));
  CHECK(!strcmp(macho_dylib_short_name("weird", b, sizeof b), "weird"));
}

/* ---- Opcodes ---- */

static const uint8_t rebase_ops[] = {
    0x11,             /* SET_TYPE_IMM pointer                        */
    0x21, 0x00,       /* SET_SEGMENT_AND_OFFSET_ULEB seg 1, 0        */
    0x52,             /* DO_REBASE_IMM_TIMES 2      -> 0x00, 0x08     */
    0x41,             /* ADD_ADDR_IMM_SCALED 1      -> at 0x18        */
    0x60, 0x02,       /* DO_REBASE_ULEB_TIMES 2     -> 0x18, 0x20     */
    0x30, 0x08,       /* ADD_ADDR_ULEB 8            -> at 0x30        */
    0x70, 0x08,       /* DO_REBASE_ADD_ADDR_ULEB 8  -> 0x30, at 0x40  */
    0x80, 0x03, 0x08, /* ULEB_TIMES_SKIPPING 3, 8   -> 0x40,0x50,0x60 */
    0x00};
static const uint64_t rebase_want[] = {0x00, 0x08, 0x18, 0x20, 0x30, 0x40, 0x50, 0x60};

static const uint8_t bind_ops[] = {
    0x11, 0x40, '_', 'a', 0, 0x51, 0x71, 0x00, 0x90,        /* lib1 _a @0x00         */
    0x20, 0x02, 0x41, '_', 'b', 0, 0x60, 0x7c, 0x90,        /* lib2 _b weak -4 @0x08 */
    0x3e, 0x40, '_', 'c', 0, 0x60, 0x10,                    /* flat _c +16           */
    0xa0, 0x08,                                             /* @0x10, then +16       */
    0xb1,                                                   /* @0x20, then +16       */
    0xc0, 0x02, 0x08,                                       /* @0x30, @0x40          */
    0x30, 0x40, '_', 's', 0, 0x60, 0x00, 0x90,              /* self _s @0x50         */
    0x3f, 0x40, '_', 'm', 0, 0x80, 0x08, 0x90,              /* main _m @0x60         */
    0x00};

static void test_opcodes(void) {
  static const uint8_t weak_ops[] = {0x40, '_', 'w', 0, 0x51, 0x71, 0x70, 0x90,
                                     0x48, '_', 'S', 0, 0x00};
  static const uint8_t lazy_ops[] = {0x71, 0x80, 0x01, 0x11, 0x40, '_', 'l', '1', 0, 0x90, 0x00,
                                     0x71, 0x88, 0x01, 0x12, 0x40, '_', 'l', '2', 0, 0x90, 0x00};
  const uint8_t *streams[4] = {rebase_ops, bind_ops, weak_ops, lazy_ops};
  uint32_t sizes[4] = {sizeof rebase_ops, sizeof bind_ops, sizeof weak_ops, sizeof lazy_ops};
  static struct mb m;
  build(&m, streams, sizes);
  static struct macho_image img;
  REQUIRE(macho_open_file(&img, m.buf, sizeof m.buf, NULL) == 0);
  CHECK(!strcmp(img.arch, "arm64"));
  CHECK_EQ_U(img.dylib_count, 2);
  CHECK_EQ_U(img.base_vmaddr, BASE);
  struct macho_fixup f[32];
  struct macho_fixup_iter it;
  int n = collect(&img, MACHO_SRC_REBASE, f, 32, &it);
  REQUIRE(n == 8);
  for (int i = 0; i < n; i++) {
    CHECK_EQ_U(f[i].vmaddr, BASE + 0x1000 + rebase_want[i]);
    CHECK_EQ_U(f[i].kind, MACHO_FIXUP_REBASE);
    CHECK_EQ_U(f[i].file_off, 0x1000 + rebase_want[i]);
  }
  n = collect(&img, MACHO_SRC_BIND, f, 32, &it);
  REQUIRE(n == 8);
  static const struct { uint64_t off; int64_t ord, add; const char *sym; int weak; } want[] = {
      {0x00, 1, 0, "_a", 0},  {0x08, 2, -4, "_b", 1}, {0x10, -2, 16, "_c", 0}, {0x20, -2, 16, "_c", 0},
      {0x30, -2, 16, "_c", 0}, {0x40, -2, 16, "_c", 0}, {0x50, 0, 0, "_s", 0},  {0x60, -1, 0, "_m", 0}};
  for (int i = 0; i < n; i++) {
    CHECK_EQ_U(f[i].vmaddr, BASE + 0x1000 + want[i].off);
    CHECK(f[i].ordinal == want[i].ord);
    CHECK(f[i].addend == want[i].add);
    CHECK(!strcmp(f[i].symbol, want[i].sym));
    CHECK(!!(f[i].flags & MACHO_FIXUP_WEAK_IMPORT) == want[i].weak);
    CHECK_EQ_U(f[i].type, 1);
  }
  n = collect(&img, MACHO_SRC_WEAK_BIND, f, 32, &it);
  REQUIRE(n == 2);
  CHECK_EQ_U(f[0].vmaddr, BASE + 0x1070);
  CHECK(f[1].flags & MACHO_FIXUP_STRONG);
  CHECK(!strcmp(f[1].symbol, "_S"));
  n = collect(&img, MACHO_SRC_LAZY_BIND, f, 32, &it);
  REQUIRE(n == 2);
  CHECK_EQ_U(f[0].vmaddr, BASE + 0x1080);
  CHECK_EQ_U(f[1].vmaddr, BASE + 0x1088);
  CHECK(f[1].ordinal == 2 && !strcmp(f[1].symbol, "_l2"));
  n = collect(&img, MACHO_SRC_ALL, f, 32, &it);
  CHECK_EQ_U(n, 20);
  struct macho_section s;
  CHECK(macho_section_at(&img, 1, BASE + 0x1010, &s) == 0 && !strcmp(s.sectname, "__data"));
  CHECK(!strcmp(macho_dylib_name(&img, 2), "/usr/lib/libfoo_debug.A.dylib"));
  CHECK(macho_dylib_name(&img, 3) == NULL && macho_dylib_name(&img, 0) == NULL);
}

/* Threaded binds: ordinal table + THREADED_APPLY over arm64e chain entries. */
static void test_threaded(void) {
  static const uint8_t ops[] = {
      0xd0, 0x03,                                   /* table size 3                 */
      0x40, '_', 'x', 0, 0x11, 0x51, 0x90,          /* [0] lib1 _x                  */
      0x41, '_', 'y', 0, 0x12, 0x60, 0x10, 0x90,    /* [1] lib2 _y weak +16         */
      0x40, '_', 'z', 0, 0x3f, 0x60, 0x00, 0x90,    /* [2] main _z                  */
      0x71, 0x10, 0xd1, 0x00};                      /* apply at __DATA+0x10         */
  const uint8_t *streams[4] = {NULL, ops, NULL, NULL};
  uint32_t sizes[4] = {0, sizeof ops, 0, 0};
  static struct mb m;
  build(&m, streams, sizes);
  uint8_t *d = m.buf + 0x1000;
  /* 0x10: bind [1] addend 4, next 1; 0x18: rebase vmaddr BASE+0x800 high8 0x80, next 2;
     0x28: auth bind [0] key 2 div 0x77 addrdiv, next 1; 0x30: auth rebase +0x900, end. */
  w64(d + 0x10, 1 | (4ull << 32) | (1ull << 51) | (1ull << 62));
  w64(d + 0x18, (BASE + 0x800) | (0x80ull << 43) | (2ull << 51));
  w64(d + 0x28, 0 | (0x77ull << 32) | (1ull << 48) | (2ull << 49) | (1ull << 51) | (3ull << 62));
  w64(d + 0x30, 0x900 | (5ull << 32) | (1ull << 63));
  static struct macho_image img;
  REQUIRE(macho_open_file(&img, m.buf, sizeof m.buf, NULL) == 0);
  CHECK(img.threaded);
  struct macho_fixup f[8];
  struct macho_fixup_iter it;
  int n = collect(&img, MACHO_SRC_BIND, f, 8, &it);
  REQUIRE(n == 4);
  CHECK(f[0].kind == MACHO_FIXUP_BIND && !strcmp(f[0].symbol, "_y") && f[0].addend == 20 &&
        f[0].ordinal == 2 && (f[0].flags & MACHO_FIXUP_WEAK_IMPORT));
  CHECK(f[1].kind == MACHO_FIXUP_REBASE && f[1].target == ((BASE + 0x800) | (0x80ull << 56)));
  CHECK(f[2].kind == MACHO_FIXUP_BIND && !strcmp(f[2].symbol, "_x") && (f[2].flags & MACHO_FIXUP_AUTH) &&
        f[2].key == 2 && f[2].diversity == 0x77 && (f[2].flags & MACHO_FIXUP_ADDR_DIV));
  CHECK(f[3].kind == MACHO_FIXUP_REBASE && f[3].target == BASE + 0x900 && f[3].diversity == 5);
  uint64_t t, v;
  struct macho_error e;
  CHECK(macho_read_pointer(&img, BASE + 0x1018, &t, &v, &e) == 0 && t == BASE + 0x800 && (v >> 63));
  CHECK(macho_read_pointer(&img, BASE + 0x1010, &t, &v, &e) == HG_EFORMAT);
  /* An ordinal past the table is an error naming an offset. */
  w64(d + 0x10, 7 | (1ull << 51) | (1ull << 62));
  REQUIRE(macho_open_file(&img, m.buf, sizeof m.buf, NULL) == 0);
  CHECK(collect(&img, MACHO_SRC_BIND, f, 8, &it) == HG_EFORMAT);
  CHECK(strstr(it.err.message, "ordinal table") && strstr(it.err.message, "offset 0x"));
}

/* ---- Chained pointer decoding ---- */

static void test_chained_decode(void) {
  struct macho_fixup f;
  uint64_t next;
  memset(&f, 0, sizeof f);
  CHECK(macho_chained_decode(CHAINED_PTR_64, 5 | (16ull << 24) | (3ull << 51) | (1ull << 63), BASE, &f,
                             &next) == 0);
  CHECK(f.kind == MACHO_FIXUP_BIND && f.ordinal == 5 && f.addend == 16 && next == 12);
  macho_chained_decode(CHAINED_PTR_64_OFFSET, 0x4000 | (0x80ull << 36) | (0xfffull << 51), BASE, &f, &next);
  CHECK(f.kind == MACHO_FIXUP_REBASE && f.target == ((BASE + 0x4000) | (0x80ull << 56)) && next == 0xfff * 4);
  macho_chained_decode(CHAINED_PTR_64, BASE + 8, BASE, &f, &next);
  CHECK(f.target == BASE + 8 && next == 0);
  macho_chained_decode(CHAINED_PTR_ARM64E, 7 | (0x7ffffull << 32) | (1ull << 51) | (1ull << 62), BASE, &f, &next);
  CHECK(f.kind == MACHO_FIXUP_BIND && f.ordinal == 7 && f.addend == -1 && next == 8);
  macho_chained_decode(CHAINED_PTR_ARM64E_USERLAND24, 0xabcdef | (1ull << 62) | (1ull << 63), BASE, &f, &next);
  CHECK(f.kind == MACHO_FIXUP_BIND && f.ordinal == 0xabcdef && (f.flags & MACHO_FIXUP_AUTH));
  macho_chained_decode(CHAINED_PTR_ARM64E, 0xabcdef | (1ull << 62), BASE, &f, &next);
  CHECK(f.ordinal == 0xcdef);
  macho_chained_decode(CHAINED_PTR_ARM64E_USERLAND, 0x1234 | (0x12ull << 43), BASE, &f, &next);
  CHECK(f.kind == MACHO_FIXUP_REBASE && f.target == ((BASE + 0x1234) | (0x12ull << 56)));
  macho_chained_decode(CHAINED_PTR_ARM64E, BASE + 0x1234, BASE, &f, &next);
  CHECK(f.target == BASE + 0x1234);
  CHECK(macho_chained_decode(99, 0, BASE, &f, &next) == HG_EUNSUPPORTED);
}

/* ---- Loaded mode: segments laid out by vmaddr, slide applied ---- */

static void test_loaded(void) {
  const uint8_t *streams[4] = {rebase_ops, bind_ops, NULL, NULL};
  uint32_t sizes[4] = {sizeof rebase_ops, sizeof bind_ops, 0, 0};
  static struct mb m;
  build(&m, streams, sizes);
  /* Put __LINKEDIT at a different vm distance than its file offset. */
  uint8_t *le_cmd = m.buf + 32 + 152 + 152;
  w64(le_cmd + 24, BASE + 0x5000);
  static uint8_t mem[0x6000];
  memcpy(mem, m.buf, 0x2000);
  memcpy(mem + 0x5000, m.buf + LE_OFF, 0x1000);
  uint64_t slide = 0x4000;
  w64(mem + 0x1018, BASE + 0x800 + slide); /* a rebased live pointer */
  static struct macho_image fimg, limg;
  REQUIRE(macho_open_file(&fimg, m.buf, sizeof m.buf, NULL) == 0);
  REQUIRE(macho_open_loaded(&limg, mem, slide) == 0);
  struct macho_fixup a[32], b[32];
  struct macho_fixup_iter it;
  int na = collect(&fimg, MACHO_SRC_REBASE | MACHO_SRC_BIND, a, 32, &it);
  int nb = collect(&limg, MACHO_SRC_REBASE | MACHO_SRC_BIND, b, 32, &it);
  CHECK(na == 16 && nb == na);
  for (int i = 0; i < na && i < nb; i++) {
    CHECK_EQ_U(a[i].vmaddr, b[i].vmaddr);
    CHECK(a[i].symbol == b[i].symbol || !strcmp(a[i].symbol, b[i].symbol));
  }
  uint64_t t;
  struct macho_error e;
  CHECK(macho_read_pointer(&limg, BASE + 0x1018, &t, NULL, &e) == 0 && t == BASE + 0x800);
  CHECK(!strcmp(macho_dylib_name(&limg, 1), "/usr/lib/libSystem.B.dylib"));
}

/* ---- Malformed ---- */

static int open_and_walk(const uint8_t *buf, size_t size, struct macho_error *err) {
  static struct macho_image img;
  int rc = macho_open_file(&img, buf, size, NULL);
  if (rc) { *err = img.err; return rc; }
  struct macho_fixup f[64];
  struct macho_fixup_iter it;
  rc = collect(&img, MACHO_SRC_ALL, f, 64, &it);
  if (rc < 0) *err = it.err;
  return rc < 0 ? rc : 0;
}

static void expect_fail(const uint8_t *bind, uint32_t size, const char *what) {
  const uint8_t *streams[4] = {rebase_ops, bind, NULL, NULL};
  uint32_t sizes[4] = {sizeof rebase_ops, size, 0, 0};
  static struct mb m;
  build(&m, streams, sizes);
  struct macho_error e;
  memset(&e, 0, sizeof e);
  int rc = open_and_walk(m.buf, sizeof m.buf, &e);
  if (rc >= 0 || !strstr(e.message, "offset 0x"))
    fprintf(stderr, "  %s: rc %d '%s'\n", what, rc, e.message);
  CHECK(rc < 0);
  CHECK(strstr(e.message, "offset 0x") != NULL);
}

static void test_malformed_opcodes(void) {
  static const uint8_t bad_op[] = {0xe0};
  expect_fail(bad_op, sizeof bad_op, "bad opcode");
  static const uint8_t bad_ord[] = {0x13, 0x40, 'x', 0, 0x71, 0, 0x90};
  expect_fail(bad_ord, sizeof bad_ord, "bad ordinal");
  static const uint8_t bad_ord_uleb[] = {0x20, 0xff, 0xff, 0x03, 0x00};
  expect_fail(bad_ord_uleb, sizeof bad_ord_uleb, "bad ordinal uleb");
  static const uint8_t bad_special[] = {0x3a, 0x00};
  expect_fail(bad_special, sizeof bad_special, "bad special ordinal");
  static const uint8_t bad_seg[] = {0x11, 0x40, 'x', 0, 0x79, 0x00, 0x90};
  expect_fail(bad_seg, sizeof bad_seg, "bad segment");
  static const uint8_t outside[] = {0x11, 0x40, 'x', 0, 0x71, 0x80, 0x20, 0x90};
  expect_fail(outside, sizeof outside, "outside segment");
  static const uint8_t no_sym[] = {0x11, 0x71, 0x00, 0x90};
  expect_fail(no_sym, sizeof no_sym, "bind without symbol");
  static const uint8_t no_seg[] = {0x11, 0x40, 'x', 0, 0x90};
  expect_fail(no_seg, sizeof no_seg, "bind without segment");
  static const uint8_t uleb_over[] = {0x71, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  expect_fail(uleb_over, sizeof uleb_over, "uleb overflow");
  static const uint8_t uleb_trunc[] = {0x71, 0x80, 0x80};
  expect_fail(uleb_trunc, sizeof uleb_trunc, "uleb truncated");
  static const uint8_t unterminated[] = {0x40, 'a', 'b', 'c'};
  expect_fail(unterminated, sizeof unterminated, "unterminated symbol");
  /* ULEB_TIMES_SKIPPING with 2^64-1 times and skip -8: same slot forever. */
  static const uint8_t runaway[] = {0x11, 0x40, 'x', 0, 0x51, 0x71, 0x00, 0xc0,
                                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                    0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  expect_fail(runaway, sizeof runaway, "runaway loop");
  static const uint8_t table_big[] = {0xd0, 0x80, 0x80, 0x04};
  expect_fail(table_big, sizeof table_big, "threaded table too big");
  static const uint8_t table_over[] = {0xd0, 0x01, 0x40, 'x', 0, 0x11, 0x90, 0x90};
  expect_fail(table_over, sizeof table_over, "threaded table overflow");
  static const uint8_t apply_noseg[] = {0xd0, 0x01, 0xd1};
  expect_fail(apply_noseg, sizeof apply_noseg, "apply without segment");
  static const uint8_t bad_sub[] = {0xd5};
  expect_fail(bad_sub, sizeof bad_sub, "bad threaded subopcode");
  static const uint8_t bad_type[] = {0x57};
  expect_fail(bad_type, sizeof bad_type, "bad bind type");
}

static void test_malformed_headers(void) {
  static struct mb m;
  const uint8_t *streams[4] = {rebase_ops, bind_ops, NULL, NULL};
  uint32_t sizes[4] = {sizeof rebase_ops, sizeof bind_ops, 0, 0};
  build(&m, streams, sizes);
  struct macho_error e;
  /* Every truncation fails cleanly (or succeeds) and never reads past. */
  static uint8_t cut[IMG_SIZE];
  for (uint32_t n = 0; n < IMG_SIZE; n += (n < 600 ? 1 : 97)) {
    memcpy(cut, m.buf, n);
    memset(&e, 0, sizeof e);
    int rc = open_and_walk(cut, n, &e);
    if (rc) CHECK(strstr(e.message, "offset 0x") != NULL);
  }
  static uint8_t bad[IMG_SIZE];
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad + 20, 0xfffffff0);                     /* sizeofcmds past the end */
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EFORMAT);
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad + 32 + 4, 12);                         /* cmdsize too small for a segment */
  CHECK(open_and_walk(bad, IMG_SIZE, &e) < 0);
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad + 32 + 64, 0x10000000);                /* nsects past the command */
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EFORMAT);
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad + m.info_cmd + 16, 0x7ffffff0);        /* bind offset past the end */
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EFORMAT && strstr(e.message, "bind opcodes"));
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad, MH_MAGIC);
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EUNSUPPORTED && strstr(e.message, "32-bit"));
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad + 4, 18);                              /* ppc */
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EUNSUPPORTED);
  memcpy(bad, m.buf, IMG_SIZE);
  w32(bad, 0x12345678);
  CHECK(open_and_walk(bad, IMG_SIZE, &e) == HG_EFORMAT && strstr(e.message, "not a Mach-O"));
  /* Fat: arch selection masks capability bits; missing arch and bad slices fail. */
  static uint8_t fat[0x1000 + IMG_SIZE];
  memset(fat, 0, sizeof fat);
  static const uint8_t hdr[] = {0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 1, 0x01, 0, 0, 0x0c, 0x80, 0, 0, 0,
                                0, 0, 0x10, 0, 0, 0, 0x30, 0, 0, 0, 0, 12};
  memcpy(fat, hdr, sizeof hdr);
  memcpy(fat + 0x1000, m.buf, IMG_SIZE);
  static struct macho_image img;
  CHECK(macho_open_file(&img, fat, sizeof fat, "arm64") == 0 && img.slice_off == 0x1000);
  CHECK(macho_open_file(&img, fat, sizeof fat, "x86_64") == HG_ENOTFOUND);
  const char *names[4];
  CHECK(macho_fat_archs(fat, sizeof fat, names, 4, &e) == 1 && !strcmp(names[0], "arm64"));
  fat[22] = 0x40;                                /* slice size past the end */
  CHECK(macho_open_file(&img, fat, sizeof fat, "arm64") == HG_EFORMAT);
  fat[7] = 0;                                    /* zero slices */
  CHECK(macho_open_file(&img, fat, sizeof fat, NULL) == HG_EFORMAT);
}

int main(void) {
  RUN(test_leb);
  RUN(test_short_names);
  RUN(test_opcodes);
  RUN(test_threaded);
  RUN(test_chained_decode);
  RUN(test_loaded);
  RUN(test_malformed_opcodes);
  RUN(test_malformed_headers);
  return hg_test_done();
}
