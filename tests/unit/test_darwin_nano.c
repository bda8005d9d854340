/*
 * test_darwin_nano.c — nano_walk.c on Linux, on a fake nano v2 region laid
 * out as libmalloc-792.41.1 src/nanov2_zone.h says (iOS address structure:
 * 3 arena bits, 12 block bits, 14 offset bits; 16 KiB blocks; the arena's
 * metadata block at the arena's logical address ^ aslr_cookie_aligned,
 * holding one nanov2_block_meta_t {next_slot:11, free_count:10,
 * gen_count:10, in_use:1} per block at nanov2_block_index_to_meta_index;
 * free slots as nanov2_free_slot_t {double_free_guard, next_slot}), with
 * the in-use slots nanov2_malloc.c nanov2_ptr_in_use_enumerator would
 * report: full and bump blocks by count, free-list blocks by walking the
 * list (1-based next_slot, ended by SLOT_BUMP, a loop ends the walk),
 * madvised/guard/never-used blocks skipped, the metablock's own entry
 * skipped. Every read goes through the fake map, which refuses unmapped
 * addresses.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

#define REGION 0x280000000ull /* 512 MiB aligned, as nano regions are */
#define COOKIE 0x5a3u
#define BUMP 0x7fbu
#define FULL 0x7fcu

struct page {
  uint64_t addr;
  uint8_t *mem;
};
struct fake_mem {
  struct page p[16];
  uint32_t n;
  uint32_t refused;
};

static const void *fm_map(void *ctx, uint64_t addr, uint64_t len) {
  struct fake_mem *m = ctx;
  for (uint32_t i = 0; i < m->n; i++)
    if (addr >= m->p[i].addr && addr + len <= m->p[i].addr + HG_NANO_BLOCK_SIZE)
      return m->p[i].mem + (addr - m->p[i].addr);
  m->refused++;
  return NULL;
}

static uint8_t *fm_add(struct fake_mem *m, uint64_t addr) {
  uint8_t *b = calloc(1, HG_NANO_BLOCK_SIZE);
  m->p[m->n].addr = addr;
  m->p[m->n].mem = b;
  m->n++;
  return b;
}

static uint32_t b2m(uint32_t b) { return ((b >> 6) | (b << 6)) & 0xfffu; }

/* nanov2_block_meta_t as the compiler lays out its bitfields (LSB first) */
static uint32_t meta(uint32_t next, uint32_t free_count, uint32_t in_use) {
  return next | free_count << 11 | 1u << 21 /* gen_count */ | in_use << 31;
}

struct seen {
  uint64_t addr[4096], size[4096];
  uint32_t n, regions;
};

static int sink_block(void *ctx, uint64_t a, uint64_t z) {
  struct seen *s = ctx;
  if (s->n < 4096) {
    s->addr[s->n] = a;
    s->size[s->n] = z;
  }
  s->n++;
  return 0;
}

static int sink_region(void *ctx, uint64_t a, uint64_t z) {
  struct seen *s = ctx;
  (void)a;
  CHECK_EQ_U(z, HG_NANO_BLOCK_SIZE);
  s->regions++;
  return 0;
}

static uint64_t block_addr(uint32_t logical) {
  return REGION + (uint64_t)(logical ^ COOKIE) * HG_NANO_BLOCK_SIZE;
}

static void set_meta(uint8_t *mb, uint32_t logical, uint32_t v) {
  uint32_t mi = b2m(logical ^ COOKIE);
  memcpy(mb + 4u * mi, &v, 4);
}

static void set_next(uint8_t *blk, uint32_t slot, uint32_t slot_size, uint64_t next) {
  memcpy(blk + (uint64_t)slot * slot_size + 8, &next, 8); /* nanov2_free_slot_t.next_slot */
  uint64_t guard = 0x1234; /* double_free_guard: not read by the enumerator */
  memcpy(blk + (uint64_t)slot * slot_size, &guard, 8);
}

static int has(const struct seen *s, uint64_t a, uint64_t z) {
  for (uint32_t i = 0; i < s->n && i < 4096; i++)
    if (s->addr[i] == a && s->size[i] == z) return 1;
  return 0;
}

static void test_nano_region(void) {
  struct fake_mem m;
  memset(&m, 0, sizeof m);
  struct hg_nano_layout L;
  memset(&L, 0, sizeof L);
  L.first_region = REGION;
  L.next_arena = REGION + HG_NANO_ARENA_SIZE; /* one arena in use */
  L.aslr_cookie = COOKIE;
  L.max_regions = HG_NANO_MAX_REGIONS;
  _hg_nano_default_units(L.units);
  REQUIRE(_hg_nano_layout_check(&L) == 0);
  /* the metadata block: logical block 0 of the arena */
  uint8_t *mb = fm_add(&m, REGION ^ ((uint64_t)COOKIE << 14));
  CHECK_EQ_U(REGION ^ ((uint64_t)COOKIE << 14), block_addr(0));
  set_meta(mb, 0, 0xffff0000u); /* its own entry: the region linkage (next_region_offset 0: one region, as on iOS) */

  /* A: 16-byte class (logical block 1), bump: 5 slots ever used, none freed */
  set_meta(mb, 1, meta(BUMP, 1024 - 5 - 1, 1));
  /* B: 48-byte class (logical 768 = 2*64 + 10*64), 10 slots used, slots 7,
   * 5, 2 freed in that order: list 8 -> 6 -> 3 -> BUMP (1-based) */
  uint8_t *bb = fm_add(&m, block_addr(768));
  set_meta(mb, 768, meta(8, 341 - 10 + 3 - 1, 1));
  set_next(bb, 7, 48, 6);
  set_next(bb, 5, 48, 3);
  set_next(bb, 2, 48, BUMP);
  /* C: 256-byte class (logical 3968, the last 2 units), full */
  set_meta(mb, 3968, meta(FULL, 0, 0));
  /* D, E, F: madvised, guard, never used: skipped */
  set_meta(mb, 2, meta(0x7ff, 0, 0));
  set_meta(mb, 3, meta(0x7fa, 0, 0));
  set_meta(mb, 4, 0);
  /* G: 32-byte class (logical 200), a free list that loops on slot 1 */
  uint8_t *gb = fm_add(&m, block_addr(200));
  set_meta(mb, 200, meta(2, 512 - 4 + 2 - 1, 1));
  set_next(gb, 1, 32, 2);
  /* H: 64-byte class (logical 1500), free-list block whose memory is not mapped */
  set_meta(mb, 1500, meta(3, 200, 1));

  struct seen *s = calloc(1, sizeof *s);
  struct hg_nano_sink sink = {sink_block, sink_region, s};
  struct hg_nano_stats st;
  REQUIRE(_hg_nano_walk(&L, fm_map, &m, &sink, &st) == 0);
  CHECK_EQ_U(st.regions, 1);
  CHECK_EQ_U(st.blocks_active, 5); /* A B C G H */
  CHECK_EQ_U(s->regions, 5);
  CHECK_EQ_U(st.unreadable, 1);    /* H */
  CHECK_EQ_U(st.bad_lists, 1);     /* G */
  CHECK_EQ_U(s->n, 5 + 7 + 64 + 2);
  CHECK_EQ_U(st.slots, s->n);
  for (uint32_t i = 0; i < 5; i++) CHECK(has(s, block_addr(1) + 16u * i, 16));
  CHECK(!has(s, block_addr(1) + 16u * 5, 16));
  static const uint32_t live_b[] = {0, 1, 3, 4, 6, 8, 9};
  for (uint32_t i = 0; i < 7; i++) CHECK(has(s, block_addr(768) + 48u * live_b[i], 48));
  CHECK(!has(s, block_addr(768) + 48u * 2, 48));
  CHECK(!has(s, block_addr(768) + 48u * 7, 48));
  CHECK(!has(s, block_addr(768) + 48u * 10, 48));
  CHECK(has(s, block_addr(3968), 256) && has(s, block_addr(3968) + 63u * 256, 256));
  CHECK(has(s, block_addr(200), 32) && has(s, block_addr(200) + 64, 32)); /* G: slots 0, 2 */
  CHECK(!has(s, block_addr(200) + 32, 32));
  CHECK(!has(s, block_addr(2), 16) && !has(s, block_addr(0), 16));

  /* the metablock not mapped: nothing, counted */
  struct fake_mem empty;
  memset(&empty, 0, sizeof empty);
  memset(s, 0, sizeof *s);
  REQUIRE(_hg_nano_walk(&L, fm_map, &empty, &sink, &st) == 0);
  CHECK_EQ_U(s->n, 0);
  CHECK(st.unreadable >= 1);
  /* hostile layouts are refused before any read */
  struct hg_nano_layout bad = L;
  bad.units[3]++;
  CHECK(_hg_nano_walk(&bad, fm_map, &m, &sink, &st) == HG_EFORMAT);
  bad = L;
  bad.first_region += 0x4000;
  CHECK(_hg_nano_layout_check(&bad) == HG_EFORMAT);
  bad = L;
  bad.aslr_cookie = 0x1000;
  CHECK(_hg_nano_layout_check(&bad) == HG_EFORMAT);
  free(s);
  for (uint32_t i = 0; i < m.n; i++) free(m.p[i].mem);
}

/* macOS (NANOV2_REGION_BITS 15, nanov2_zone.h): several 512 MiB regions,
 * chained by next_region_offset (in regions) in the metablock entry of the
 * region's first arena (nanov2_region_linkage_for_region); a region that
 * is not the current one is walked to its end, the current one up to
 * current_region_next_arena (nanov2_limit_arena_for_region). */
static void test_nano_two_regions(void) {
  struct fake_mem m;
  memset(&m, 0, sizeof m);
  uint64_t r2 = REGION + 3 * HG_NANO_REGION_SIZE;
  struct hg_nano_layout L;
  memset(&L, 0, sizeof L);
  L.first_region = REGION;
  L.next_arena = r2 + HG_NANO_ARENA_SIZE;
  L.aslr_cookie = COOKIE;
  L.max_regions = HG_NANO_MAX_REGIONS;
  _hg_nano_default_units(L.units);
  uint64_t x = (uint64_t)COOKIE << 14;
  uint8_t *mb1 = NULL;
  for (uint64_t a = 0; a < 8; a++) {
    uint8_t *mb = fm_add(&m, (REGION + a * HG_NANO_ARENA_SIZE) ^ x);
    if (a == 0) mb1 = mb;
  }
  uint32_t link = 3; /* next_region_offset: three regions further */
  memcpy(mb1 + 4u * b2m(COOKIE), &link, 4);
  /* region 1, arena 5: one full 128-byte block (class 7: logical 2816 = 64 * (2+10+11+10+5+3+3)) */
  uint8_t *mb15 = m.p[5].mem;
  set_meta(mb15, 2816, meta(FULL, 0, 1));
  /* region 2 (current), arena 0: one bump 16-byte block with 3 slots used */
  uint8_t *mb2 = fm_add(&m, r2 ^ x);
  set_meta(mb2, 1, meta(BUMP, 1024 - 3 - 1, 1));
  struct seen *s = calloc(1, sizeof *s);
  struct hg_nano_sink sink = {sink_block, NULL, s};
  struct hg_nano_stats st;
  REQUIRE(_hg_nano_walk(&L, fm_map, &m, &sink, &st) == 0);
  CHECK_EQ_U(st.regions, 2);
  CHECK_EQ_U(st.unreadable, 0);
  CHECK_EQ_U(s->n, 128 + 3);
  uint64_t b1 = REGION + 5 * HG_NANO_ARENA_SIZE + (uint64_t)(2816 ^ COOKIE) * HG_NANO_BLOCK_SIZE;
  CHECK(has(s, b1, 128) && has(s, b1 + 127u * 128, 128));
  CHECK(has(s, r2 + (uint64_t)(1 ^ COOKIE) * HG_NANO_BLOCK_SIZE + 32, 16));
  /* next_region_offset 0: the chain ends after region 1 */
  link = 0;
  memcpy(mb1 + 4u * b2m(COOKIE), &link, 4);
  memset(s, 0, sizeof *s);
  REQUIRE(_hg_nano_walk(&L, fm_map, &m, &sink, &st) == 0);
  CHECK_EQ_U(st.regions, 1); /* offset 0: the chain ends */
  free(s);
  for (uint32_t i = 0; i < m.n; i++) free(m.p[i].mem);
}

/* nanozonev2_t read from the zone's bytes: a fake zone laid out as
 * nanov2_zone.h says (malloc_zone_t padded to PAGE_MAX_SIZE 16 KiB on
 * arm64, current_block[16][64], current_block_lock[16][64] of 4-byte
 * os_unfair_lock, delegate_allocations, debug_flags, aslr_cookie,
 * aslr_cookie_aligned = cookie << 14 (nanov2_create_zone),
 * slot_freelist_cookie, helper_zone, blocks_lock, regions_lock,
 * first_region_base, current_region_next_arena). */
static void test_nano_layout_from_zone(void) {
  size_t size = 16384 + 12288 + 64;
  uint8_t *z = calloc(1, size);
  uint64_t base = 16384 + 12288, v;
  v = COOKIE;
  memcpy(z + base + 8, &v, 8);
  v = (uint64_t)COOKIE << 14;
  memcpy(z + base + 16, &v, 8);
  v = 0xabcdef00;
  memcpy(z + base + 32, &v, 8); /* helper_zone */
  v = REGION;
  memcpy(z + base + 48, &v, 8);
  v = REGION + 2 * HG_NANO_ARENA_SIZE;
  memcpy(z + base + 56, &v, 8);
  struct hg_nano_layout L;
  REQUIRE(_hg_nano_layout_from_zone(z, size, 16384, 0xabcdef00, &L) == 0);
  CHECK_EQ_U(L.aslr_cookie, COOKIE);
  CHECK_EQ_U(L.first_region, REGION);
  CHECK_EQ_U(L.next_arena, REGION + 2 * HG_NANO_ARENA_SIZE);
  CHECK_EQ_U(L.units[0], 2);
  CHECK_EQ_U(L.units[15], 2);
  /* another helper, a 4 KiB page guess, a short buffer: not recognised */
  CHECK(_hg_nano_layout_from_zone(z, size, 16384, 0x1111, &L) == HG_EFORMAT);
  CHECK(_hg_nano_layout_from_zone(z, size, 4096, 0xabcdef00, &L) == HG_EFORMAT);
  CHECK(_hg_nano_layout_from_zone(z, base + 40, 16384, 0xabcdef00, &L) == HG_EFORMAT);
  free(z);
}

/* MallocNanoSizeClassBlocks as nanov2_malloc.c nanov2_set_blocks_by_size_class
 * takes it (its own example value), and values it ignores. */
static void test_nano_units_env(void) {
  uint8_t u[HG_NANO_SIZE_CLASSES];
  _hg_nano_default_units(u);
  REQUIRE(_hg_nano_units_parse("2,7,6,6,6,5,5,5,5,2,2,2,2,2,6,1", u) == 0);
  CHECK_EQ_U(u[1], 7);
  CHECK_EQ_U(u[14], 6);
  CHECK_EQ_U(u[15], 1);
  uint8_t d[HG_NANO_SIZE_CLASSES];
  _hg_nano_default_units(d);
  memcpy(u, d, sizeof u);
  CHECK(_hg_nano_units_parse("2,7,6,6,6,5,5,5,5,2,2,2,2,2,6,2", u) == HG_EINVAL); /* sum 65 */
  CHECK(_hg_nano_units_parse("2,7,6,6,6,5,5,5,5,2,2,2,2,2,6", u) == HG_EINVAL);   /* 15 */
  CHECK(_hg_nano_units_parse("2,7,6,6,6,5,5,5,5,2,2,2,2,2,6,1,", u) == HG_EINVAL);
  CHECK(_hg_nano_units_parse("65,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0", u) == HG_EINVAL);
  CHECK(_hg_nano_units_parse("99999999999999999999,0", u) == HG_EINVAL);
  CHECK(_hg_nano_units_parse("", u) == HG_EINVAL);
  CHECK(_hg_nano_units_parse(NULL, u) == HG_EINVAL);
  CHECK(!memcmp(u, d, sizeof u)); /* untouched */
}

int main(void) {
  RUN(test_nano_units_env);
  RUN(test_nano_region);
  RUN(test_nano_two_regions);
  RUN(test_nano_layout_from_zone);
  return hg_test_done();
}
