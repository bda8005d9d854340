/*
 * test_darwin_zones.c — zone_blocks.c on Linux: blocks reported by malloc
 * zones in any order become sorted, non-overlapping segments and nodes;
 * duplicates, overlaps and misaligned blocks are dropped (and counted);
 * adjacent zones sharing one VM region are split correctly; interior
 * pointers resolve through the index.
 */
#include <string.h>
#include <sys/mman.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

static struct hg_cap *new_cap(void) {
  struct hg_cap *c = calloc(1, sizeof *c);
  _hg_scratch_init(&c->scratch, 1ull << 30);
  struct hg_scratch *s = &c->scratch;
  int rc = _hg_vec_init(s, &c->strings, 1, 1 << 16);
  rc |= _hg_vec_init(s, &c->regions, sizeof(struct hg_cregion), 1 << 10);
  rc |= _hg_vec_init(s, &c->segments, sizeof(struct hg_segment), 1 << 10);
  rc |= _hg_vec_init(s, &c->index, 4, 1 << 20);
  if (rc) abort();
  return c;
}

static void free_cap(struct hg_cap *c) {
  _hg_scratch_free(&c->scratch);
  free(c);
}

static void region(struct hg_cap *c, uint64_t lo, uint64_t hi) {
  struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
  r->start = lo;
  r->end = hi;
  r->prot = HG_PROT_READ | HG_PROT_WRITE;
  r->kind = HG_RK_HEAP;
  r->image = HG_NO_OWNER;
}

static const struct hg_segment *seg(const struct hg_cap *c, size_t i) { return _hg_vec_at(&c->segments, i); }

static void test_sorted_segments(void) {
  struct hg_cap *c = new_cap();
  region(c, 0x100000, 0x200000); /* zone 1 (tiny) */
  region(c, 0x300000, 0x400000); /* zone 2 (nano) */
  region(c, 0x500000, 0x508000); /* zone 1 large */
  struct hg_zblock b[] = {
      {0x300020, 16, 2}, {0x100000, 32, 1}, {0x500000, 0x8000, 1}, {0x100040, 48, 1},
      {0x300000, 16, 2}, {0x100020, 16, 1},
  };
  REQUIRE(_hg_zone_blocks_commit(c, b, 6) == 0);
  CHECK_EQ_U(_hg_node_count(c), 6);
  REQUIRE(_hg_vec_len(&c->segments) == 3);
  CHECK_EQ_U(seg(c, 0)->base, 0x100000);
  CHECK_EQ_U(seg(c, 0)->end, 0x200000);
  CHECK_EQ_U(seg(c, 0)->count, 3);
  CHECK_EQ_U(seg(c, 0)->heap_id, 1);
  CHECK_EQ_U(seg(c, 1)->base, 0x300000);
  CHECK_EQ_U(seg(c, 1)->heap_id, 2);
  CHECK_EQ_U(seg(c, 2)->base, 0x500000);
  CHECK_EQ_U(seg(c, 2)->flags, HG_NODE_MALLOC);
  CHECK_EQ_U(c->heap_errors, 0);
  REQUIRE(_hg_index_build(c) == 0);
  CHECK_EQ_U(_hg_index_lookup(c, 0x100000), 0);
  CHECK_EQ_U(_hg_index_lookup(c, 0x100028), 1);  /* interior */
  CHECK_EQ_U(_hg_index_lookup(c, 0x100050), 2);
  CHECK_EQ_U(_hg_index_lookup(c, 0x100070), UINT32_MAX); /* free space in the region */
  CHECK_EQ_U(_hg_index_lookup(c, 0x300008), 3);
  CHECK_EQ_U(_hg_index_lookup(c, 0x300010), UINT32_MAX); /* between two nano blocks */
  CHECK_EQ_U(_hg_index_lookup(c, 0x300020), 4);
  CHECK_EQ_U(_hg_index_lookup(c, 0x507ff8), 5);
  /* macOS x86_64 ObjC tagged pointers (bit 0) are never edges or roots */
  CHECK_EQ_U(_hg_index_lookup(c, 0x100029), 1);
  c->nonptr_mask = 1;
  CHECK_EQ_U(_hg_index_lookup(c, 0x100029), UINT32_MAX);
  CHECK_EQ_U(_hg_index_lookup(c, 0x300021), UINT32_MAX);
  CHECK_EQ_U(_hg_index_lookup(c, 0x100028), 1);
  c->nonptr_mask = 0;
  free_cap(c);
}

static void test_bad_blocks(void) {
  struct hg_cap *c = new_cap();
  region(c, 0x100000, 0x110000);
  struct hg_zblock b[] = {
      {0x100000, 64, 1},
      {0x100000, 64, 1},  /* exact duplicate (wrapper zone): silent */
      {0x100020, 64, 1},  /* overlaps the first: dropped, counted */
      {0x100044, 16, 1},  /* misaligned */
      {0x100080, 0, 1},   /* empty */
      {0x100100, 20, 1},  /* size rounded down to 16 */
      {0x100200, 7, 1},   /* rounds to 0: dropped */
  };
  REQUIRE(_hg_zone_blocks_commit(c, b, 7) == 0);
  CHECK_EQ_U(_hg_node_count(c), 2);
  CHECK_EQ_U(c->heap_errors, 4);
  CHECK_EQ_U(_hg_node_size(c, 1), 16);
  free_cap(c);
}

static void test_two_zones_one_region(void) {
  /* The kernel may coalesce two zones' large allocations into one entry. */
  struct hg_cap *c = new_cap();
  region(c, 0x200000, 0x210000);
  struct hg_zblock b[] = {
      {0x200000, 0x4000, 1}, {0x204000, 0x4000, 2}, {0x208000, 0x4000, 1}, {0x20c000, 0x2000, 1},
  };
  REQUIRE(_hg_zone_blocks_commit(c, b, 4) == 0);
  CHECK_EQ_U(_hg_node_count(c), 4);
  CHECK_EQ_U(c->heap_errors, 0);
  REQUIRE(_hg_vec_len(&c->segments) == 3);
  CHECK_EQ_U(seg(c, 0)->end, 0x204000);
  CHECK_EQ_U(seg(c, 1)->base, 0x204000);
  CHECK_EQ_U(seg(c, 1)->end, 0x208000);
  CHECK_EQ_U(seg(c, 2)->base, 0x208000);
  CHECK_EQ_U(seg(c, 2)->end, 0x210000);
  CHECK_EQ_U(seg(c, 2)->count, 2);
  for (size_t i = 1; i < 3; i++) CHECK(seg(c, i)->base >= seg(c, i - 1)->end);
  REQUIRE(_hg_index_build(c) == 0);
  CHECK_EQ_U(_hg_index_lookup(c, 0x205000), 1);
  CHECK_EQ_U(_hg_index_lookup(c, 0x20d000), 3);
  CHECK_EQ_U(_hg_index_lookup(c, 0x20f000), UINT32_MAX);
  free_cap(c);
}

static void test_no_region(void) {
  /* blocks outside every known region still get a segment of their own */
  struct hg_cap *c = new_cap();
  struct hg_zblock b[] = {{0x900000, 32, 3}, {0x900040, 32, 3}};
  REQUIRE(_hg_zone_blocks_commit(c, b, 2) == 0);
  CHECK_EQ_U(_hg_node_count(c), 2);
  REQUIRE(_hg_vec_len(&c->segments) == 2);
  CHECK_EQ_U(seg(c, 0)->base, 0x900000);
  CHECK_EQ_U(seg(c, 0)->end, 0x900020);
  free_cap(c);
}

static void test_many_random(void) {
  /* 20000 blocks of 3 zones in 3 regions, shuffled: all kept, in order */
  struct hg_cap *c = new_cap();
  region(c, 0x1000000, 0x2000000);
  region(c, 0x2000000, 0x3000000);
  region(c, 0x3000000, 0x4000000);
  size_t n = 20000;
  struct hg_zblock *b = calloc(n, sizeof *b);
  for (size_t i = 0; i < n; i++) {
    size_t r = i % 3;
    b[i].addr = 0x1000000 + r * 0x1000000 + (i / 3) * 64;
    b[i].size = 16 + (i % 3) * 16;
    b[i].heap = r + 1;
  }
  uint64_t x = 88172645463325252ull;
  for (size_t i = n - 1; i > 0; i--) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    size_t j = (size_t)(x % (i + 1));
    struct hg_zblock t = b[i]; b[i] = b[j]; b[j] = t;
  }
  REQUIRE(_hg_zone_blocks_commit(c, b, n) == 0);
  CHECK_EQ_U(_hg_node_count(c), n);
  CHECK_EQ_U(_hg_vec_len(&c->segments), 3);
  CHECK_EQ_U(c->heap_errors, 0);
  free(b);
  free_cap(c);
}

/* ---- ranges typed IN_USE | REGION (item 3 of issue 27) ----
 * A fake scalable zone enumerator, called as libmalloc-792.41.1 calls the
 * recorder: src/magazine_large.c large_in_use_enumerator reports every
 * large block as one range typed MALLOC_PTR_IN_USE_RANGE_TYPE |
 * MALLOC_PTR_REGION_RANGE_TYPE (a block that is its own VM region); tiny
 * regions come as MALLOC_PTR_REGION_RANGE_TYPE and their blocks as
 * MALLOC_PTR_IN_USE_RANGE_TYPE (magazine_tiny.c tiny_in_use_enumerator);
 * src/xzone_malloc/xzone_introspect.c xzm_ptr_in_use_enumerator does the
 * same for large/huge chunks. ADMIN ranges are metadata. */
static void fake_scalable_enumerator(struct hg_cap *c, struct hg_zclaims *cl, uint64_t heap) {
  struct hg_vmrange admin = {0x0f0000, 0x4000};
  struct hg_vmrange tiny_region = {0x100000, 0x100000};
  struct hg_vmrange tiny[] = {{0x100000, 32}, {0x100040, 16}};
  struct hg_vmrange large[] = {{0x500000, 0x8000}, {0x600000, 0x20000}};
  REQUIRE(_hg_zone_ranges_add(c, cl, heap, HG_MALLOC_ADMIN_REGION, &admin, 1) == 0);
  REQUIRE(_hg_zone_ranges_add(c, cl, heap, HG_MALLOC_PTR_REGION, &tiny_region, 1) == 0);
  REQUIRE(_hg_zone_ranges_add(c, cl, heap, HG_MALLOC_PTR_IN_USE, tiny, 2) == 0);
  REQUIRE(_hg_zone_ranges_add(c, cl, heap, HG_MALLOC_PTR_IN_USE | HG_MALLOC_PTR_REGION, large,
                              2) == 0);
}

static void test_large_in_use_region_ranges(void) {
  struct hg_cap *c = new_cap();
  REQUIRE(_hg_vec_init(&c->scratch, &c->work, 8, 1 << 16) == 0);
  region(c, 0x0f0000, 0x0f4000);
  region(c, 0x100000, 0x200000);
  region(c, 0x500000, 0x508000);
  region(c, 0x600000, 0x620000);
  region(c, 0x700000, 0x710000); /* an unwalked zone's region */
  struct hg_zrange tab[8];
  struct hg_zclaims cl = {tab, 0, 8, 0};
  fake_scalable_enumerator(c, &cl, 1);
  struct hg_zblock *b = (struct hg_zblock *)_hg_vec_at(&c->work, 0);
  size_t n = _hg_vec_len(&c->work) * 8 / sizeof *b;
  CHECK_EQ_U(n, 4); /* two tiny blocks and both large blocks */
  REQUIRE(_hg_zone_blocks_commit(c, b, n) == 0);
  CHECK_EQ_U(_hg_node_count(c), 4);
  CHECK_EQ_U(cl.n, 3); /* the tiny region and both large blocks */
  CHECK_EQ_U(cl.overflow, 0);
  /* the large blocks are nodes (not roots, not lost): their regions stay heap */
  _hg_zone_demote_unwalked(c, cl.r, cl.n);
  const struct hg_cregion *r = _hg_vec_at(&c->regions, 2);
  CHECK_EQ_U(r->kind, HG_RK_HEAP);
  r = _hg_vec_at(&c->regions, 4);
  CHECK_EQ_U(r->kind, HG_RK_OTHER); /* unwalked: scanned as roots */
  r = _hg_vec_at(&c->regions, 0);
  CHECK_EQ_U(r->kind, HG_RK_OTHER); /* admin range: not claimed */
  REQUIRE(_hg_index_build(c) == 0);
  CHECK_EQ_U(_hg_index_lookup(c, 0x600000 + 0x1000), 3); /* interior of the 2nd large block */
  /* the claims table overflows loudly, blocks still recorded */
  struct hg_zclaims tiny_cl = {tab, 0, 1, 0};
  struct hg_vmrange two[] = {{0x800000, 0x4000}, {0x900000, 0x4000}};
  REQUIRE(_hg_zone_ranges_add(c, &tiny_cl, 1, HG_MALLOC_PTR_IN_USE | HG_MALLOC_PTR_REGION, two,
                              2) == 0);
  CHECK_EQ_U(tiny_cl.overflow, 1);
  CHECK_EQ_U(_hg_vec_len(&c->work) * 8 / sizeof *b, 6);
  free_cap(c);
}

int main(void) {
  RUN(test_sorted_segments);
  RUN(test_bad_blocks);
  RUN(test_two_zones_one_region);
  RUN(test_no_region);
  RUN(test_many_random);
  RUN(test_large_in_use_region_ranges);
  return hg_test_done();
}
