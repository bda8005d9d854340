/*
 * test_darwin_imagefile.c — image_file.c with real Mach-O files made here
 * (clang++-14 + ld64.lld-16 -fixup_chains, built by mk/macho.mk into
 * $BUILD/macho-fixtures): each file is "loaded" by copying its segments to
 * their vmaddrs at a slide in a buffer; machoparse refuses the loaded
 * image's chained fixups, the file's slice with the loaded LC_UUID is
 * found (thin and fat, the other slice and a stale file refused), and its
 * class type_infos come out at vmaddr + slide with the names of
 * tests/macho/classes.cpp. A FairPlay-encrypted image (lld -encryptable:
 * LC_ENCRYPTION_INFO_64 over __TEXT from 0x4000, as the App Store then
 * sets cryptid 1 and encrypts that range on disk; xnu
 * EXTERNAL_HEADERS/mach-o/loader.h encryption_info_command_64): the names
 * come from the loaded (decrypted) image, never from the file's ciphertext.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

static uint8_t *slurp(const char *name, uint64_t *size) {
  char path[512];
  const char *b = getenv("BUILD");
  snprintf(path, sizeof path, "%s/macho-fixtures/%s", b && *b ? b : "build", name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "missing fixture %s (make check builds it)\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *size = (uint64_t)n;
  return p;
}

/* A slice "loaded" the way dyld maps it: segments at vmaddr + slide. */
struct loaded {
  uint8_t *mem;
  uint64_t slide;
  struct macho_image img;
};

static struct macho_image fimg;

static int load(struct loaded *l, const uint8_t *file, uint64_t size, const char *arch) {
  if (macho_open_file(&fimg, file, size, arch) != 0) return -1;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t k = 0; k < fimg.segment_count; k++) {
    const struct macho_segment *g = &fimg.segments[k];
    if (!g->vmsize || !g->initprot) continue;
    if (g->vmaddr < lo) lo = g->vmaddr;
    if (g->vmaddr + g->vmsize > hi) hi = g->vmaddr + g->vmsize;
  }
  l->mem = calloc(1, (size_t)(hi - lo));
  if (!l->mem) return -1;
  for (uint32_t k = 0; k < fimg.segment_count; k++) {
    const struct macho_segment *g = &fimg.segments[k];
    if (!g->vmsize || !g->initprot || !g->filesize) continue;
    memcpy(l->mem + (g->vmaddr - lo), fimg.header + g->fileoff, (size_t)g->filesize);
  }
  l->slide = (uint64_t)(uintptr_t)l->mem - lo;
  return macho_open_loaded(&l->img, l->mem, l->slide);
}

struct names {
  char name[16][64];
  uint64_t addr[16];
  int n;
};

static int collect(void *ctx, uint64_t ti, const char *name, size_t len) {
  struct names *x = ctx;
  if (x->n >= 16 || len >= 64) return HG_ELIMIT;
  memcpy(x->name[x->n], name, len);
  x->name[x->n][len] = 0;
  x->addr[x->n++] = ti;
  return 0;
}

static int has(const struct names *x, const char *name) {
  for (int i = 0; i < x->n; i++)
    if (!strcmp(x->name[i], name)) return 1;
  return 0;
}

static void check_image(const char *fixture, const char *arch) {
  uint64_t size = 0;
  uint8_t *file = slurp(fixture, &size);
  REQUIRE(file);
  struct loaded l;
  REQUIRE(load(&l, file, size, arch) == 0);
  REQUIRE(l.img.has_uuid && l.img.has_chained);
  struct names x;
  memset(&x, 0, sizeof x);
  /* the loaded image's chained fixups were consumed: refused */
  CHECK(_hg_macho_typeinfos(&l.img, NULL, l.slide, collect, &x, NULL) == HG_EFORMAT);
  CHECK_EQ_U(x.n, 0);
  /* the file's slice with the loaded UUID */
  struct macho_image m;
  REQUIRE(_hg_macho_open_matching(&m, file, size, l.img.uuid) == 0);
  CHECK(!memcmp(m.uuid, l.img.uuid, 16));
  CHECK(!strcmp(m.arch, l.img.arch));
  struct hg_typeinfo_stats ts;
  int found = _hg_macho_typeinfos(&m, &l.img, l.slide, collect, &x, &ts);
  CHECK_EQ_U(found, 10); /* the class, si_class and vmi_class lines of classes.expected */
  CHECK_EQ_U(ts.candidates, 10);
  CHECK_EQ_U(ts.cryptid, 0);
  CHECK(has(&x, "4Base"));
  CHECK(has(&x, "5Other"));
  CHECK(has(&x, "7Derived"));
  CHECK(has(&x, "N2ns5Outer5InnerE"));
  CHECK(has(&x, "7Diamond"));
  CHECK(has(&x, "4TmplIiE"));
  /* each at its address in the "process": inside the loaded data */
  uint64_t span = 0;
  for (uint32_t k = 0; k < l.img.segment_count; k++)
    if (l.img.segments[k].vmaddr + l.img.segments[k].vmsize > span)
      span = l.img.segments[k].vmaddr + l.img.segments[k].vmsize;
  for (int i = 0; i < x.n; i++) {
    CHECK(x.addr[i] > (uint64_t)(uintptr_t)l.mem);
    CHECK(x.addr[i] < span + l.slide);
    CHECK((x.addr[i] & 7) == 0);
  }
  /* a file replaced on disk since (another UUID): refused */
  uint8_t other[16];
  memcpy(other, l.img.uuid, 16);
  other[0] ^= 0xff;
  CHECK(_hg_macho_open_matching(&m, file, size, other) == HG_ENOTFOUND);
  /* hostile: a truncated copy never matches and never crashes */
  for (uint64_t cut = 0; cut < size; cut += size / 61 + 1)
    CHECK(_hg_macho_open_matching(&m, file, cut, l.img.uuid) != 0 || cut == size);
  free(l.mem);
  free(file);
}

static void test_thin_arm64(void) { check_image("chained-dylib-arm64", NULL); }
static void test_thin_x86_64(void) { check_image("chained-dylib-x86_64", NULL); }
static void test_exe(void) { check_image("chained-exe-arm64", NULL); }

/* A fat file: the slice is chosen by UUID, not by name or order. */
static void test_fat(void) {
  check_image("fat-chained-dylib", "arm64");
  check_image("fat-chained-dylib", "x86_64");
  uint64_t size = 0, tsize = 0;
  uint8_t *fat = slurp("fat-chained-dylib", &size);
  uint8_t *thin = slurp("chained-exe-arm64", &tsize);
  REQUIRE(fat && thin);
  struct macho_image m, t;
  REQUIRE(macho_open_file(&t, thin, tsize, NULL) == 0);
  CHECK(_hg_macho_open_matching(&m, fat, size, t.uuid) == HG_ENOTFOUND); /* another image */
  free(fat);
  free(thin);
}

/* Classic LC_DYLD_INFO images are read in memory as before (no file
 * needed: the binds are intact; test_macho covers their names, which need
 * dyld's rebases that this fake load does not apply). */
static void test_unchained(void) {
  uint64_t size = 0;
  uint8_t *file = slurp("dylib-arm64", &size);
  REQUIRE(file);
  struct loaded l;
  REQUIRE(load(&l, file, size, NULL) == 0);
  CHECK(!l.img.has_chained);
  struct names x;
  memset(&x, 0, sizeof x);
  CHECK(_hg_macho_typeinfos(&l.img, NULL, l.slide, collect, &x, NULL) >= 0);
  free(l.mem);
  free(file);
}

/* The file offset of load command `cmd` in a thin 64-bit Mach-O, or 0. */
static size_t find_lc(const uint8_t *f, uint64_t size, uint32_t cmd) {
  uint32_t ncmds, sizeofcmds;
  memcpy(&ncmds, f + 16, 4);
  memcpy(&sizeofcmds, f + 20, 4);
  size_t at = 32;
  for (uint32_t i = 0; i < ncmds && at + 8 <= 32 + (size_t)sizeofcmds && at + 8 <= size; i++) {
    uint32_t c, n;
    memcpy(&c, f + at, 4);
    memcpy(&n, f + at + 4, 4);
    if (c == cmd) return at;
    if (n < 8) break;
    at += n;
  }
  return 0;
}

static void test_encrypted(void) {
  uint64_t size = 0;
  uint8_t *plain = slurp("chained-encryptable-dylib-arm64", &size);
  REQUIRE(plain);
  size_t lc = find_lc(plain, size, 0x2c); /* LC_ENCRYPTION_INFO_64 */
  REQUIRE(lc != 0);
  uint32_t cryptoff, cryptsize, one = 1;
  memcpy(&cryptoff, plain + lc + 8, 4);
  memcpy(&cryptsize, plain + lc + 12, 4);
  REQUIRE(cryptoff >= 0x1000 && cryptsize > 0 && (uint64_t)cryptoff + cryptsize <= size);
  memcpy(plain + lc + 16, &one, 4); /* what the App Store ships: cryptid 1 */
  /* the process sees the decrypted pages (and cryptid 1 in its header) */
  struct loaded l;
  REQUIRE(load(&l, plain, size, NULL) == 0);
  struct hg_macho_crypt cr;
  REQUIRE(_hg_macho_crypt_info(l.img.header, 32 + l.img.sizeofcmds, &cr) == 0);
  CHECK(cr.present && cr.cryptid == 1 && cr.cryptoff == cryptoff && cr.cryptsize == cryptsize);
  /* the disk holds ciphertext over [cryptoff, +cryptsize) */
  uint8_t *disk = malloc((size_t)size);
  REQUIRE(disk);
  memcpy(disk, plain, (size_t)size);
  for (uint32_t i = 0; i < cryptsize; i++) disk[cryptoff + i] = (uint8_t)(disk[cryptoff + i] * 167u + 0x3bu + i);
  struct macho_image m;
  REQUIRE(_hg_macho_open_matching(&m, disk, size, l.img.uuid) == 0);
  struct names x;
  memset(&x, 0, sizeof x);
  struct hg_typeinfo_stats ts;
  CHECK_EQ_U(_hg_macho_typeinfos(&m, &l.img, l.slide, collect, &x, &ts), 10);
  CHECK_EQ_U(ts.cryptid, 1);
  CHECK_EQ_U(ts.names_memory, 10);
  CHECK(has(&x, "4Base") && has(&x, "7Derived") && has(&x, "N2ns5Outer5InnerE") &&
        has(&x, "4TmplIiE") && has(&x, "7Diamond"));
  /* without the process's copy: no ciphertext passed off as a name */
  memset(&x, 0, sizeof x);
  CHECK_EQ_U(_hg_macho_typeinfos(&m, NULL, l.slide, collect, &x, &ts), 0);
  CHECK_EQ_U(ts.names_unreadable, 10);
  CHECK_EQ_U(x.n, 0);
  /* cryptid 0 (a development build): the file's names are trusted */
  uint32_t zero = 0;
  memcpy(plain + lc + 16, &zero, 4);
  REQUIRE(_hg_macho_open_matching(&m, plain, size, l.img.uuid) == 0);
  CHECK_EQ_U(_hg_macho_typeinfos(&m, NULL, l.slide, collect, &x, &ts), 10);
  CHECK(has(&x, "4Base"));
  /* hostile headers: bounded, never past avail */
  CHECK(_hg_macho_crypt_info(plain, 31, &cr) == HG_EFORMAT);
  CHECK(_hg_macho_crypt_info(plain, 32 + l.img.sizeofcmds - 1, &cr) == HG_EFORMAT);
  uint8_t bad[64];
  memcpy(bad, plain, 32);
  uint32_t v = 1, sz = 32, big = 0xfffffff0u;
  memcpy(bad + 16, &v, 4);  /* ncmds 1 */
  memcpy(bad + 20, &sz, 4); /* sizeofcmds 32 */
  memset(bad + 32, 0, 32);
  memcpy(bad + 36, &big, 4); /* cmdsize past the end */
  CHECK(_hg_macho_crypt_info(bad, sizeof bad, &cr) == HG_EFORMAT);
  memcpy(bad + 36, &v, 4); /* cmdsize 1 < 8 */
  CHECK(_hg_macho_crypt_info(bad, sizeof bad, &cr) == HG_EFORMAT);
  free(disk);
  free(l.mem);
  free(plain);
}

int main(void) {
  RUN(test_thin_arm64);
  RUN(test_thin_x86_64);
  RUN(test_exe);
  RUN(test_fat);
  RUN(test_unchained);
  RUN(test_encrypted);
  return hg_test_done();
}
