/*
 * test_cxxabi.c — unit tests of the portable C++ ABI core (cxxabi/): the
 * type_info set, name plausibility, the vptr check on synthetic vtables with
 * a reader that counts and bounds every read, and the Linux discovery on a
 * dlopen()ed libstdc++ (type_infos found by address via dlsym).
 */
#include <dlfcn.h>
#include <string.h>

#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "hg_test.h"
#include "heapgraph.h"

/* ---- a reader over declared memory only ---- */

struct fake_mem {
  uint64_t lo[4], hi[4];
  int n;
  int reads, bad_reads;
};

static int fake_read(void *ctx, uint64_t a, uint64_t *out) {
  struct fake_mem *m = ctx;
  m->reads++;
  for (int i = 0; i < m->n; i++)
    if (a >= m->lo[i] && a + 8 <= m->hi[i]) {
      memcpy(out, (const void *)(uintptr_t)a, 8);
      return 0;
    }
  m->bad_reads++;
  return -1;
}

static void test_plausible(void) {
  const char *good[] = {"4Base", "N12_GLOBAL__N_16HiddenE", "St9exception", "Z4mainE5Local",
                        "3BoxIiE", "N4plug12PlugTemplateILi42EEE",
                        "St23_Sp_counted_ptr_inplaceI6SharedSaIvELN9__gnu_cxx12_Lock_policyE2EE"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    CHECK(_hg_cxx_plausible_name(good[i], strlen(good[i])));
  const char *bad[] = {"", "4", "5Base", "Pi", "i", "hello world", "4Ba\x01s", "0Base",
                       "N10foo bar", "4Base!"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(!_hg_cxx_plausible_name(bad[i], strlen(bad[i])));
  static char longname[HG_CXX_MAX_NAME + 2];
  memset(longname, 'A', sizeof longname - 1);
  longname[0] = 'N';
  CHECK(!_hg_cxx_plausible_name(longname, sizeof longname - 1));
  CHECK(_hg_cxx_plausible_name(longname, HG_CXX_MAX_NAME));
}

static void test_set_basics(void) {
  struct hg_cxx_set s;
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x1000, "4Base", 5), 1);
  CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x1000, "4Base", 5), 0); /* duplicate */
  CHECK_EQ_U(s.duplicates, 1);
  CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x2000, "*N12_GLOBAL__N_16HiddenE", 24), 1);
  CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x3000, "not a name", 10), 0);
  CHECK_EQ_U(s.rejected, 1);
  CHECK(_hg_cxx_set_add_name(&s, 0x3001, "4Base", 5) < 0); /* misaligned */
  CHECK(_hg_cxx_set_add_name(&s, 0, "4Base", 5) < 0);
  struct hg_cxx_type *t = _hg_cxx_set_find(&s, 0x2000);
  REQUIRE(t != NULL);
  CHECK(!strcmp(_hg_cxx_name(&s, t), "N12_GLOBAL__N_16HiddenE")); /* '*' dropped */
  CHECK(_hg_cxx_set_find(&s, 0x3000) == NULL);
  CHECK(_hg_cxx_set_find(&s, 0) == NULL);
  /* Growth well past the initial table, every entry still found. */
  char name[32];
  for (uint64_t i = 0; i < 20000; i++) {
    snprintf(name, sizeof name, "5K%04u", (unsigned)(i % 10000));
    CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x100000 + i * 8, name, strlen(name)), 1);
  }
  CHECK_EQ_U(s.count, 20002);
  int all = 1;
  for (uint64_t i = 0; i < 20000; i++) {
    struct hg_cxx_type *k = _hg_cxx_set_find(&s, 0x100000 + i * 8);
    snprintf(name, sizeof name, "5K%04u", (unsigned)(i % 10000));
    if (!k || strcmp(_hg_cxx_name(&s, k), name)) all = 0;
  }
  CHECK(all);
  CHECK(_hg_cxx_set_find(&s, 0x100000 + 20000 * 8) == NULL);
  _hg_cxx_set_seal(&s);
  CHECK(_hg_cxx_set_add_name(&s, 0x9000, "4Base", 5) < 0); /* sealed */
  _hg_cxx_set_free(&s);
}

static void test_ranges(void) {
  struct hg_cxx_set s;
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  CHECK(_hg_cxx_set_add_ro_range(&s, 0x5000, 0x4000) < 0);
  CHECK_EQ_U(_hg_cxx_set_add_ro_range(&s, 0x3000, 0x4000), 0);
  CHECK_EQ_U(_hg_cxx_set_add_ro_range(&s, 0x1000, 0x2000), 0);
  CHECK_EQ_U(_hg_cxx_set_add_ro_range(&s, 0x2000, 0x2800), 0); /* touches: merged */
  _hg_cxx_set_seal(&s);
  CHECK_EQ_U(s.nro, 2);
  CHECK(_hg_cxx_in_ro(&s, 0x1000, 8));
  CHECK(_hg_cxx_in_ro(&s, 0x1ff8, 16)); /* spans the merged boundary */
  CHECK(!_hg_cxx_in_ro(&s, 0x27f8, 16));
  CHECK(!_hg_cxx_in_ro(&s, 0xff8, 8));
  CHECK(!_hg_cxx_in_ro(&s, 0x2800, 8));
  CHECK(_hg_cxx_in_ro(&s, 0x3ff8, 8));
  CHECK(!_hg_cxx_in_ro(&s, 0x3ff8, 16));
  CHECK(!_hg_cxx_in_ro(&s, UINT64_MAX - 4, 8));
  _hg_cxx_set_free(&s);
}

/* Moving a sealed set into a caller's buffer (what the capture does with
 * its scratch): a right-sized table, every entry and range still found. */
static void test_compact(void) {
  struct hg_cxx_set s;
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  char name[32];
  for (uint64_t i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "5K%04u", (unsigned)i);
    CHECK_EQ_U(_hg_cxx_set_add_name(&s, 0x40000 + i * 24, name, strlen(name)), 1);
  }
  REQUIRE(_hg_cxx_set_add_ro_range(&s, 0x1000, 0x2000) == 0);
  REQUIRE(_hg_cxx_set_add_image_range(&s, 0x1000, 0x3000) == 0);
  CHECK(_hg_cxx_set_compact(&s, name, sizeof name) < 0); /* not sealed */
  _hg_cxx_set_seal(&s);
  size_t need = _hg_cxx_set_compact_size(&s);
  CHECK(need < (size_t)s.cap * sizeof(struct hg_cxx_type)); /* table shrinks to 1024 slots */
  CHECK(_hg_cxx_set_compact(&s, name, sizeof name) < 0); /* too small */
  uint64_t *buf = malloc(need);
  REQUIRE(buf != NULL);
  REQUIRE(_hg_cxx_set_compact(&s, buf, need) == 0);
  CHECK(s.external);
  CHECK_EQ_U(s.count, 300);
  CHECK_EQ_U(s.cap, 1024);
  int all = 1;
  for (uint64_t i = 0; i < 300; i++) {
    struct hg_cxx_type *t = _hg_cxx_set_find(&s, 0x40000 + i * 24);
    snprintf(name, sizeof name, "5K%04u", (unsigned)i);
    if (!t || strcmp(_hg_cxx_name(&s, t), name)) all = 0;
  }
  CHECK(all);
  CHECK(_hg_cxx_set_find(&s, 0x40000 + 300 * 24) == NULL);
  CHECK(_hg_cxx_in_ro(&s, 0x1ff8, 8));
  CHECK(!_hg_cxx_in_ro(&s, 0x2000, 8));
  CHECK(_hg_cxx_in_image(&s, 0x2ff8, 8));
  _hg_cxx_set_free(&s); /* leaves the caller's buffer alone */
  free(buf);
}

/* Synthetic image: a type_info {meta, name} with its name, and a vtable
 * {offset-to-top, &type_info, f1, f2}, plus a secondary vtable {-16, ti, f}. */
static uint64_t img[64] __attribute__((aligned(16)));

static void test_add_by_pointer(void) {
  struct hg_cxx_set s;
  struct fake_mem m = {{(uint64_t)(uintptr_t)img}, {(uint64_t)(uintptr_t)(img + 64)}, 1, 0, 0};
  memset(img, 0, sizeof img);
  memcpy(&img[10], "7Derived", 9);
  memset(&img[60], 'A', 32); /* no NUL before the image ends */
  memcpy(&img[60], "4Tail", 5);
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  REQUIRE(_hg_cxx_set_add_image_range(&s, m.lo[0], m.hi[0]) == 0);
  uint64_t name = (uint64_t)(uintptr_t)&img[10];
  CHECK_EQ_U(_hg_cxx_set_add(&s, 0x10000, name, fake_read, &m), 1);
  CHECK_EQ_U(_hg_cxx_set_add(&s, 0x10008, name | (1ull << 63), fake_read, &m), 1); /* Apple bit */
  CHECK_EQ_U(_hg_cxx_set_add(&s, 0x10010, name + 1, fake_read, &m), 0); /* "Derived": no */
  CHECK_EQ_U(_hg_cxx_set_add(&s, 0x10018, (uint64_t)(uintptr_t)&img[60], fake_read, &m), 0);
  CHECK_EQ_U(_hg_cxx_set_add(&s, 0x10020, 0x10, fake_read, &m), 0); /* outside the image */
  CHECK_EQ_U(m.bad_reads, 0);                                       /* never asked to */
  struct hg_cxx_type *t = _hg_cxx_set_find(&s, 0x10008);
  REQUIRE(t != NULL);
  CHECK(!strcmp(_hg_cxx_name(&s, t), "7Derived"));
  _hg_cxx_set_free(&s);
}

static void test_check(void) {
  struct hg_cxx_set s;
  memset(img, 0, sizeof img);
  uint64_t base = (uint64_t)(uintptr_t)img;
  uint64_t ti = base + 8 * 2;     /* type_info at img[2..3]          */
  memcpy(&img[40], "7Derived", 9);
  img[2] = 0x1234;                /* meta vtable + 16 (not checked)  */
  img[3] = base + 8 * 40;
  img[8] = 0;                     /* primary vtable: img[8..11]      */
  img[9] = ti;
  img[10] = 0xf1;
  img[11] = 0xf2;
  img[12] = (uint64_t)-16;        /* secondary vtable: img[12..14]   */
  img[13] = ti;
  img[14] = 0xf3;
  img[16] = 0;                    /* vtable naming an unknown ti     */
  img[17] = base + 8 * 30;
  img[18] = 0xf4;
  struct fake_mem m = {{base}, {base + 8 * 32}, 1, 0, 0}; /* only the first 32 words readable */
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  REQUIRE(_hg_cxx_set_add_image_range(&s, base, base + sizeof img) == 0);
  REQUIRE(_hg_cxx_set_add_ro_range(&s, base, base + 8 * 32) == 0);
  REQUIRE(_hg_cxx_set_add_name(&s, ti, "7Derived", 8) == 1);
  _hg_cxx_set_seal(&s);
  uint64_t vptr = base + 8 * 10;
  struct hg_cxx_type *t = _hg_cxx_check(&s, vptr, fake_read, &m);
  REQUIRE(t != NULL);
  CHECK(!strcmp(_hg_cxx_name(&s, t), "7Derived"));
  CHECK(_hg_cxx_check(&s, vptr + 8, fake_read, &m) == NULL);  /* [-2] is the ti   */
  CHECK(_hg_cxx_check(&s, vptr - 8, fake_read, &m) == NULL);  /* wrong offset     */
  CHECK(_hg_cxx_check(&s, vptr + 1, fake_read, &m) == NULL);  /* misaligned       */
  CHECK(_hg_cxx_check(&s, base + 8 * 14, fake_read, &m) == NULL); /* offset-to-top */
  CHECK(_hg_cxx_check(&s, base + 8 * 18, fake_read, &m) == NULL); /* unknown ti    */
  CHECK(_hg_cxx_check(&s, base + 8, fake_read, &m) == NULL);  /* [-2] before range */
  CHECK(_hg_cxx_check(&s, base + 8 * 31, fake_read, &m) == NULL); /* runs past end */
  CHECK(_hg_cxx_check(&s, 0, fake_read, &m) == NULL);
  CHECK(_hg_cxx_check(&s, UINT64_MAX - 7, fake_read, &m) == NULL);
  CHECK(_hg_cxx_check(&s, ti, fake_read, &m) == NULL);      /* pointer to the ti  */
  CHECK(_hg_cxx_check(&s, base + 8 * 40, fake_read, &m) == NULL); /* to its name */
  CHECK_EQ_U(m.bad_reads, 0); /* nothing outside the read-only ranges was read */
  /* A reader that refuses (the page went away) makes the check fail safely. */
  struct fake_mem none = {{0}, {0}, 0, 0, 0};
  CHECK(_hg_cxx_check(&s, vptr, fake_read, &none) == NULL);
  CHECK(none.reads >= 1);
  /* The same vtable outside any read-only range is never trusted. */
  struct hg_cxx_set s2;
  REQUIRE(_hg_cxx_set_init(&s2) == 0);
  REQUIRE(_hg_cxx_set_add_name(&s2, ti, "7Derived", 8) == 1);
  _hg_cxx_set_seal(&s2);
  int before = m.reads;
  CHECK(_hg_cxx_check(&s2, vptr, fake_read, &m) == NULL);
  CHECK_EQ_U(m.reads, before); /* rejected before any read */
  _hg_cxx_set_free(&s2);
  _hg_cxx_set_free(&s);
}

/* Random first words against a real discovered set: never a type, never a
 * read outside the read-only ranges. Image data carries ASan redzones
 * between globals: reading them is the point here, not a bug. */
__attribute__((no_sanitize_address)) static uint64_t peek(uint64_t a) {
  return *(const volatile uint64_t *)(uintptr_t)a;
}

static int real_read(void *ctx, uint64_t a, uint64_t *out) {
  const struct hg_cxx_set *s = ctx;
  if ((a & 7) || !_hg_cxx_in_ro(s, a, 8)) return -1;
  *out = peek(a);
  return 0;
}

static void test_discover_libstdcxx(void) {
  void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != NULL);
  void *ti_exc = dlsym(h, "_ZTISt9exception");          /* __class_type_info  */
  void *ti_rt = dlsym(h, "_ZTISt13runtime_error");      /* __si_class_type_info */
  void *ti_ios = dlsym(h, "_ZTISt9basic_iosIcSt11char_traitsIcEE"); /* __vmi_…  */
  void *ti_ptr = dlsym(h, "_ZTIPKc");                   /* pointer type: not a class */
  void *ti_int = dlsym(h, "_ZTIi");                     /* fundamental: not a class */
  void *vt_rt = dlsym(h, "_ZTVSt13runtime_error");
  REQUIRE(ti_exc && ti_rt && ti_ios && vt_rt);
  struct hg_cxx_set s;
  struct hg_cxx_discovery d;
  REQUIRE(_hg_cxx_set_init(&s) == 0);
  CHECK_EQ_U(_hg_cxx_discover(&s, &d), 0);
  printf("discovery: %u type_infos, %u images (symbolic %u, scanned %u, structural %u), "
         "%.2f ms\n", s.count, d.images, d.images_symbolic, d.images_scanned,
         d.images_structural, d.ns / 1e6);
  CHECK(s.sealed);
  CHECK(s.count >= 100);
  struct hg_cxx_type *t = _hg_cxx_set_find(&s, (uint64_t)(uintptr_t)ti_exc);
  CHECK(t && !strcmp(_hg_cxx_name(&s, t), "St9exception"));
  t = _hg_cxx_set_find(&s, (uint64_t)(uintptr_t)ti_rt);
  CHECK(t && !strcmp(_hg_cxx_name(&s, t), "St13runtime_error"));
  t = _hg_cxx_set_find(&s, (uint64_t)(uintptr_t)ti_ios);
  CHECK(t && !strcmp(_hg_cxx_name(&s, t), "St9basic_iosIcSt11char_traitsIcEE"));
  if (ti_ptr) CHECK(_hg_cxx_set_find(&s, (uint64_t)(uintptr_t)ti_ptr) == NULL);
  if (ti_int) CHECK(_hg_cxx_set_find(&s, (uint64_t)(uintptr_t)ti_int) == NULL);
  /* The runtime_error vtable's address point classifies; other offsets don't. */
  uint64_t vptr = (uint64_t)(uintptr_t)vt_rt + 16;
  t = _hg_cxx_check(&s, vptr, real_read, &s);
  CHECK(t && !strcmp(_hg_cxx_name(&s, t), "St13runtime_error"));
  for (int k = -3; k <= 4; k++)
    if (k) CHECK(_hg_cxx_check(&s, vptr + 8 * (uint64_t)k, real_read, &s) == NULL);
  uint64_t x = 0x2545F4914F6CDD1Dull;
  int hits = 0;
  for (int i = 0; i < 200000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (_hg_cxx_check(&s, x & ~7ull, real_read, &s)) hits++;
    /* words near real read-only data, where a lucky hit is likeliest */
    uint64_t near = s.ro[x % s.nro].lo + ((x >> 20) % 65536) * 8;
    if (_hg_cxx_check(&s, near, real_read, &s) && near % 8 == 0) {
      uint64_t top = peek(near - 16), ti = peek(near - 8);
      if (top != 0 || !_hg_cxx_set_find(&s, ti)) hits++; /* must be a real vtable */
    }
  }
  CHECK_EQ_U(hits, 0);
  _hg_cxx_set_free(&s);
  dlclose(h);
}

int main(void) {
  RUN(test_plausible);
  RUN(test_set_basics);
  RUN(test_ranges);
  RUN(test_compact);
  RUN(test_add_by_pointer);
  RUN(test_check);
  RUN(test_discover_libstdcxx);
  return hg_test_done();
}
