/*
 * test_swift_macho.c — the Darwin path of the Swift parser on records
 * from real swiftc output: an arm64 iOS dylib linked (ld64.lld) from
 * tests/swift/macho/{stdlib,classes}.swift compiled by the trixie root's swiftc
 * (tests/swift/run_swift.sh). Opens it with machoparse, finds the class
 * metadata by symbol ($ss4NodeCN …), reads its stored properties with
 * _hg_swift_fields through a reader that resolves rebased pointers
 * (macho_read_pointer), and checks names and kinds: strong, weak, unowned,
 * unowned(unsafe), a value and a closure (not an ivar reference), an
 * inherited class's own fields.
 *
 * usage: test_swift_macho DYLIB [ARM64E_OBJECT]
 *   ARM64E_OBJECT: checked to be an arm64e Mach-O object (lld cannot link it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/classify/swift.h"
#include "hg_test.h"
#include "machoparse/macho.h"
#include "unit/test_format_util.h" /* fmt_read */

static struct macho_image img;

static int rd(void *ctx, uint64_t addr, void *out, size_t n) {
  (void)ctx;
  if (n == 8) { /* pointers: through the image's fixups */
    uint64_t t;
    struct macho_error err;
    if (macho_read_pointer(&img, addr, &t, NULL, &err) == 0) {
      memcpy(out, &t, 8);
      return 0;
    }
  }
  const struct macho_segment *s = macho_segment_at(&img, addr);
  if (!s || addr + n > s->vmaddr + s->filesize) return 1;
  const uint8_t *p = macho_bytes(&img, s->fileoff + (addr - s->vmaddr), n);
  if (!p) return 1;
  memcpy(out, p, n);
  return 0;
}

static uint64_t symbol(const char *name) {
  struct macho_symbol_iter it;
  struct macho_symbol sym;
  macho_symbols_begin(&it, &img);
  while (macho_symbols_next(&it, &sym) == 1)
    if (sym.name && !strcmp(sym.name, name)) return sym.addr;
  return 0;
}

struct got {
  char name[16][32];
  uint32_t kind[16];
  int n;
};
static int keep(void *arg, const char *name, size_t len, uint32_t kind) {
  struct got *g = arg;
  if (g->n >= 16 || len >= 32) return -1;
  memcpy(g->name[g->n], name, len);
  g->name[g->n][len] = 0;
  g->kind[g->n++] = kind;
  return 0;
}
static int kind_of(const struct got *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (!strcmp(g->name[i], name)) return (int)g->kind[i];
  return -1;
}

static const char *dylib, *obj_e;

static void test_real_records(void) {
  size_t size;
  uint8_t *data = fmt_read(dylib, &size);
  REQUIRE(data != NULL);
  REQUIRE(macho_open_file(&img, data, size, NULL) == 0);
  CHECK(!strcmp(img.arch, "arm64"));
  struct got g;
  uint64_t node = symbol("_$ss4NodeCN"), dog = symbol("_$ss3DogCN"), animal = symbol("_$ss6AnimalCN");
  REQUIRE(node && dog && animal);
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_fields(node, 0, rd, NULL, keep, &g) == 6);
  CHECK(!strcmp(g.name[0], "next")); /* declaration order */
  CHECK_EQ_U(kind_of(&g, "next"), HG_EDGE_STRONG);
  CHECK_EQ_U(kind_of(&g, "parent"), HG_EDGE_WEAK);
  CHECK_EQ_U(kind_of(&g, "root"), HG_EDGE_UNOWNED);
  CHECK_EQ_U(kind_of(&g, "raw"), HG_EDGE_UNOWNED);
  CHECK_EQ_U(kind_of(&g, "count"), 0);
  CHECK_EQ_U(kind_of(&g, "handler"), 0); /* the context is its second word */
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_fields(dog, 0, rd, NULL, keep, &g) == 1); /* own fields only */
  CHECK_EQ_U(kind_of(&g, "bone"), HG_EDGE_STRONG);
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_fields(animal, 0, rd, NULL, keep, &g) == 1);
  CHECK_EQ_U(kind_of(&g, "friend"), HG_EDGE_STRONG);
  /* the descriptor and its name through the shared parser */
  const struct hg_swift_abi abi = {HG_SWIFT_DESC_INTEROP, 48, 0};
  uint64_t desc;
  char name[64];
  REQUIRE(_hg_swift_class_desc(&abi, dog, rd, NULL, &desc) == 0);
  CHECK(_hg_swift_context_name(desc, 0, rd, NULL, name, sizeof name) > 0 && !strcmp(name, "Swift.Dog"));
  /* the Linux offset (+40) is not a descriptor on Darwin */
  const struct hg_swift_abi lin = {HG_SWIFT_DESC_NATIVE, 24, 0};
  CHECK(_hg_swift_class_desc(&lin, dog, rd, NULL, &desc) != 0);
  free(data);
}

static void test_arm64e_object(void) {
  size_t size;
  uint8_t *data = fmt_read(obj_e, &size);
  REQUIRE(data != NULL);
  struct macho_image o;
  REQUIRE(macho_open_file(&o, data, size, NULL) == 0);
  CHECK(!strcmp(o.arch, "arm64e"));
  CHECK_EQ_U(o.filetype, 1); /* MH_OBJECT */
  int fieldmd = 0;
  for (uint32_t i = 0; i < o.section_count; i++) {
    struct macho_section s;
    if (macho_section_get(&o, i, &s) == 0 && !strcmp(s.sectname, "__swift5_fieldmd")) fieldmd = 1;
  }
  CHECK(fieldmd);
  free(data);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_swift_macho DYLIB [ARM64E_OBJECT]\n");
    return 2;
  }
  dylib = argv[1];
  obj_e = argc > 2 ? argv[2] : NULL;
  RUN(test_real_records);
  if (obj_e) RUN(test_arm64e_object);
  return hg_test_done();
}
