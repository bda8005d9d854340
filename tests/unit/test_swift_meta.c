/*
 * test_swift_meta.c — the Swift reflection parser on the Linux layout
 * (no ObjC interop: descriptor at +40 of class metadata), in a fake
 * memory: descriptors and their dotted names (module, nested, anonymous
 * parents skipped), generic arguments read from the metadata
 * (Zoo.Box<Zoo.Node>, Swift.Int), field records by index with generic
 * parameter references, closure capture layouts, and hostile input
 * (unreadable, absurd counts, wrong kinds). Real swiftc output is tested
 * by tests/swift/run_swift.sh.
 */
#include <string.h>

#include "capture/classify/swift_meta.h"
#include "hg_test.h"

#define BASE 0x200000ull
struct mem {
  uint8_t b[8192];
};
static struct mem M;
static uint64_t str_at;

static int rd(void *ctx, uint64_t addr, void *out, size_t n) {
  (void)ctx;
  if (addr < BASE || addr - BASE > sizeof M.b || n > sizeof M.b - (addr - BASE)) return 1;
  memcpy(out, M.b + (addr - BASE), n);
  return 0;
}
static void p32(uint64_t a, uint32_t v) { memcpy(M.b + (a - BASE), &v, 4); }
static void p64(uint64_t a, uint64_t v) { memcpy(M.b + (a - BASE), &v, 8); }
static void rel(uint64_t at, uint64_t target) { p32(at, target ? (uint32_t)(target - at) : 0); }
static uint64_t str(const char *s) {
  uint64_t a = str_at;
  memcpy(M.b + (a - BASE), s, strlen(s) + 1);
  str_at += (strlen(s) + 8) & ~7ull;
  return a;
}

#define MOD (BASE + 0x100)    /* module Zoo                                 */
#define ANON (BASE + 0x140)   /* an anonymous context (private types)       */
#define OUTER (BASE + 0x180)  /* class Zoo.Outer                            */
#define INNER (BASE + 0x200)  /* class Zoo.Outer.Inner                      */
#define BOX (BASE + 0x280)    /* generic class Zoo.Box<T>                   */
#define INT (BASE + 0x300)    /* struct Swift.Int (module Swift)            */
#define SMOD (BASE + 0x340)
#define FD (BASE + 0x380)     /* Box's fields                               */
#define MBOX (BASE + 0x600)   /* metadata Box<Inner>                        */
#define MINNER (BASE + 0x700) /* metadata Inner                             */
#define MINT (BASE + 0x780)   /* metadata Int                               */
#define CTX (BASE + 0x800)    /* closure context metadata                   */
#define CD (BASE + 0x840)     /* its capture descriptor                     */

static int known(void *ctx, uint64_t d) {
  (void)ctx;
  return d == OUTER || d == INNER || d == BOX || d == INT;
}

static void build(void) {
  memset(&M, 0, sizeof M);
  str_at = BASE + 0x1000;
  p32(MOD, 0);
  rel(MOD + 8, str("Zoo"));
  p32(SMOD, 0);
  rel(SMOD + 8, str("Swift"));
  p32(ANON, 2);
  rel(ANON + 4, MOD);
  p32(OUTER, 16);
  rel(OUTER + 4, ANON); /* private: an anonymous parent, skipped */
  rel(OUTER + 8, str("Outer"));
  p32(INNER, 16);
  rel(INNER + 4, OUTER);
  rel(INNER + 8, str("Inner"));
  /* Box<T>: generic class, 2 fields; metadata positive size 12 words, 3
   * immediate members (1 argument, 2 field offsets): argument at word 9 */
  p32(BOX, 16 | HG_SWIFT_DESC_GENERIC);
  rel(BOX + 4, MOD);
  rel(BOX + 8, str("Box"));
  rel(BOX + 16, FD);
  p32(BOX + 28, 12);
  p32(BOX + 32, 3);
  p32(BOX + 36, 2);
  p32(BOX + 40, 10);
  p32(BOX + 52, 1 | (0u << 16)); /* NumParams 1, NumRequirements 0 */
  p32(BOX + 56, 1);              /* NumKeyArguments 1 */
  p32(INT, 17);
  rel(INT + 4, SMOD);
  rel(INT + 8, str("Int"));
  /* Box's field descriptor: value: T ("x"), other: AnyObject? ("yXlSg"), n: Int */
  p32(FD + 8, 1u | (12u << 16));
  p32(FD + 12, 3);
  const char *names[3] = {"value", "other", "n"}, *types[3] = {"x", "yXlSg", "Si"};
  for (int i = 0; i < 3; i++) {
    rel(FD + 16 + 12 * i + 4, str(types[i]));
    rel(FD + 16 + 12 * i + 8, str(names[i]));
  }
  p64(MBOX, 0);
  p64(MBOX + 40, BOX);
  p64(MBOX + 8 * 9, MINNER);
  p64(MINNER, 0);
  p64(MINNER + 40, INNER);
  p64(MINT, 0x200);
  p64(MINT + 8, INT);
  /* a closure context: captures Inner (a class), Int, a closure, Zoo.Pair (unknown) */
  p64(CTX, 0x400);
  p32(CTX + 8, 16);
  p64(CTX + 16, CD);
  p32(CD, 4);
  const char *caps[4] = {"3Zoo5OuterC5InnerC", "Si", "yycSg", "3Zoo4PairV"};
  for (int i = 0; i < 4; i++) rel(CD + 12 + 4 * i, str(caps[i]));
}

static void test_desc_and_names(void) {
  build();
  struct hg_swift_desc d;
  REQUIRE(_hg_swift_desc_read(BOX, 0, rd, NULL, &d) == 0);
  CHECK_EQ_U(d.num_fields, 2);
  CHECK_EQ_U(d.fovo, 10);
  CHECK_EQ_U(d.generic_off, 9);
  CHECK_EQ_U(d.num_params, 1);
  CHECK(d.fields == FD);
  REQUIRE(_hg_swift_desc_read(INT, 0, rd, NULL, &d) == 0);
  CHECK_EQ_U(d.generic_off, 2);
  CHECK(_hg_swift_desc_read(MOD, 0, rd, NULL, &d) == HG_EFORMAT); /* a module is no type */
  CHECK(_hg_swift_desc_read(BASE + 0x10000, 0, rd, NULL, &d) == HG_EFORMAT);
  char buf[128];
  CHECK(_hg_swift_context_name(INNER, 0, rd, NULL, buf, sizeof buf) == 15 &&
        !strcmp(buf, "Zoo.Outer.Inner"));
  CHECK(_hg_swift_context_name(INNER, 0, rd, NULL, buf, 8) == -1); /* too small */
  struct hg_swift_names nm = {rd, known, NULL};
  size_t at = 0;
  REQUIRE(_hg_swift_meta_name(&nm, MBOX, BOX, 0, buf, sizeof buf, &at) == 0);
  CHECK(!strcmp(buf, "Zoo.Box<Zoo.Outer.Inner>"));
  p64(MBOX + 8 * 9, MINT);
  at = 0;
  REQUIRE(_hg_swift_meta_name(&nm, MBOX, BOX, 0, buf, sizeof buf, &at) == 0);
  CHECK(!strcmp(buf, "Zoo.Box<Swift.Int>"));
  p64(MBOX + 8 * 9, BASE + 0x4000); /* an argument that is no known type */
  at = 0;
  REQUIRE(_hg_swift_meta_name(&nm, MBOX, BOX, 0, buf, sizeof buf, &at) == 0);
  CHECK(!strcmp(buf, "Zoo.Box<?>"));
  p64(MBOX + 8 * 9, MBOX); /* itself: bounded depth */
  at = 0;
  REQUIRE(_hg_swift_meta_name(&nm, MBOX, BOX, 0, buf, sizeof buf, &at) == 0);
  CHECK(!strcmp(buf, "Zoo.Box<Zoo.Box<Zoo.Box<Zoo.Box<…>>>>"));
  /* a cycle of parents ends, also one of nameless contexts */
  rel(OUTER + 4, INNER);
  CHECK(_hg_swift_context_name(INNER, 0, rd, NULL, buf, sizeof buf) == -1);
  rel(ANON + 4, ANON);
  CHECK(_hg_swift_context_name(ANON, 0, rd, NULL, buf, sizeof buf) == -1);
}

struct got {
  char name[8][16];
  uint32_t index[8], kind[8];
  uint64_t off[8];
  int n;
};
static int rec(void *arg, uint32_t index, const char *name, size_t len, uint32_t kind) {
  struct got *g = arg;
  if (g->n >= 8 || len >= 16) return -1;
  memcpy(g->name[g->n], name, len);
  g->name[g->n][len] = 0;
  g->index[g->n] = index;
  g->kind[g->n++] = kind;
  return 0;
}
static int cap(void *arg, uint32_t index, uint64_t offset, uint32_t kind) {
  struct got *g = arg;
  if (g->n >= 8) return -1;
  g->index[g->n] = index;
  g->off[g->n] = offset;
  g->kind[g->n++] = kind;
  return 0;
}

static void test_fields_and_captures(void) {
  build();
  struct got g;
  memset(&g, 0, sizeof g);
  REQUIRE(_hg_swift_fd_fields(FD, 0, rd, NULL, rec, &g) == 3);
  CHECK(!strcmp(g.name[0], "value") && g.kind[0] == HG_SWIFT_PARAM); /* parameter 0 */
  CHECK(!strcmp(g.name[1], "other") && g.kind[1] == HG_EDGE_STRONG && g.index[1] == 1);
  CHECK(!strcmp(g.name[2], "n") && g.kind[2] == 0 && g.index[2] == 2);
  CHECK_EQ_U(_hg_swift_type_kind("q_", 2, 0, NULL, NULL, 0), HG_SWIFT_PARAM | (1u << 16));
  CHECK_EQ_U(_hg_swift_type_kind("q0_", 3, 0, NULL, NULL, 0), HG_SWIFT_PARAM | (2u << 16));
  CHECK_EQ_U(_hg_swift_type_kind("qa_", 3, 0, NULL, NULL, 0), 0);
  /* hostile: too many fields, records too small */
  p32(FD + 12, 1u << 20);
  CHECK(_hg_swift_fd_fields(FD, 0, rd, NULL, rec, &g) == HG_EFORMAT);
  p32(FD + 12, 3);
  p32(FD + 8, 1u | (8u << 16));
  CHECK(_hg_swift_fd_fields(FD, 0, rd, NULL, rec, &g) == HG_EFORMAT);
  /* captures: the class at 16, the Int at 24 skipped, the closure at 32
   * with its context at 40 (its second word), then a struct of unknown size ends the layout */
  struct hg_swift_names nm = {rd, known, NULL};
  memset(&g, 0, sizeof g);
  REQUIRE(_hg_swift_captures(&nm, CTX, cap, &g) == 2);
  CHECK(g.index[0] == 0 && g.off[0] == 16 && g.kind[0] == HG_EDGE_STRONG);
  CHECK(g.index[1] == 2 && g.off[1] == 40 && g.kind[1] == HG_EDGE_STRONG);
  p32(CD + 8, 1); /* generic bindings first: sizes unknown, nothing named */
  memset(&g, 0, sizeof g);
  CHECK(_hg_swift_captures(&nm, CTX, cap, &g) == 0 && g.n == 0);
  p32(CD + 8, 0);
  p32(CD, 100000); /* absurd count */
  CHECK(_hg_swift_captures(&nm, CTX, cap, &g) == 0);
  p64(CTX + 16, 0); /* no reflection metadata */
  CHECK(_hg_swift_captures(&nm, CTX, cap, &g) == 0);
}

int main(void) {
  RUN(test_desc_and_names);
  RUN(test_fields_and_captures);
  return hg_test_done();
}
