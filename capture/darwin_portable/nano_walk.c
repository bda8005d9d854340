/*
 * nano_walk.c — the live blocks of libmalloc's nano v2 zone (every block
 * <= 256 bytes on iOS <= 18.3 and wherever nano v2 is the default zone),
 * read from its own metadata with bounded stack memory and no allocation:
 * libmalloc's nanov2_ptr_in_use_enumerator, for an in-process zone, takes
 * its free-slot bitmap from helper_zone->calloc (an allocation while the
 * process is frozen), so this walker mirrors it instead.
 *
 * Mirrors libmalloc-792.41.1 (apple-oss-distributions/libmalloc):
 *   src/nanov2_zone.h   the address structure (iOS: 3 arena bits, 12 block
 *                       bits, 14 offset bits; 16 KiB blocks, 64 MiB arenas,
 *                       512 MiB regions), nanov2_block_meta_t (next_slot:11,
 *                       free_count:10, gen_count:10, in_use:1; the SLOT_*
 *                       values), nanov2_free_slot_t {double_free_guard,
 *                       next_slot}, nanov2_region_linkage_t, and
 *                       nanozonev2_t (the fields after the zone's first page)
 *   src/nanov2_malloc.c nanov2_ptr_in_use_enumerator (the walk itself),
 *                       nanov2_block_index_to_meta_index, the metablock at
 *                       the arena's logical address ^ aslr_cookie_aligned
 *                       (nanov2_metablock_address_for_ptr), size classes by
 *                       logical block (ptr_offset_to_size_class, built by
 *                       nanov2_configure_once from block_units_by_size_class),
 *                       slots_by_size_class, nanov2_is_block_active,
 *                       nanov2_limit_arena_for_region, the region linkage in
 *                       the first arena's metablock.
 *
 * Every byte read goes through the caller's map(), which says whether the
 * range is mapped and readable (the Darwin side checks the VM regions of
 * the capture); a metablock or block that is not readable is skipped and
 * counted, a free list that loops or leaves the block ends its walk (as
 * the enumerator does). Portable: unit-tested on Linux on a fake region
 * laid out as nanov2_zone.h says (tests/unit/test_darwin_nano.c).
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

#define META_NEXT(m) ((m) & 0x7ffu)
#define META_FREE(m) (((m) >> 11) & 0x3ffu)
#define SLOT_NULL 0u
#define SLOT_GUARD 0x7fau
#define SLOT_BUMP 0x7fbu
#define SLOT_FULL 0x7fcu
#define SLOT_MADVISING 0x7feu
#define SLOT_MADVISED 0x7ffu
#define MAX_SLOTS (HG_NANO_BLOCK_SIZE / 16u)
#define BLOCK_INDEX_MASK (HG_NANO_BLOCKS_PER_ARENA - 1u)

/* nanov2_block_index_to_meta_index (its own inverse) */
static uint32_t b2m(uint32_t b) { return ((b >> 6) | (b << 6)) & 0xfffu; }

static int active(uint32_t m) {
  uint32_t n = META_NEXT(m);
  return n != SLOT_NULL && n != SLOT_MADVISING && n != SLOT_MADVISED && n != SLOT_GUARD;
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

int _hg_nano_layout_check(const struct hg_nano_layout *L) {
  uint32_t sum = 0;
  for (uint32_t i = 0; i < HG_NANO_SIZE_CLASSES; i++) sum += L->units[i];
  if (sum != HG_NANO_BLOCKS_PER_ARENA / 64u || L->units[0] == 0) return HG_EFORMAT;
  if (L->aslr_cookie > BLOCK_INDEX_MASK) return HG_EFORMAT;
  if (!L->first_region || (L->first_region & (HG_NANO_REGION_SIZE - 1))) return HG_EFORMAT;
  if (L->next_arena <= L->first_region || (L->next_arena & (HG_NANO_ARENA_SIZE - 1)))
    return HG_EFORMAT;
  return 0;
}

/* The defaults of nanov2_malloc.c block_units_by_size_class. */
void _hg_nano_default_units(uint8_t units[HG_NANO_SIZE_CLASSES]) {
  static const uint8_t u[HG_NANO_SIZE_CLASSES] = {2, 10, 11, 10, 5, 3, 3, 4,
                                                  3, 2,  2,  2,  2, 2, 1, 2};
  memcpy(units, u, sizeof u);
}

int _hg_nano_units_parse(const char *s, uint8_t units[HG_NANO_SIZE_CLASSES]) {
  /* nanov2_malloc.c nanov2_set_blocks_by_size_class (MallocNanoSizeClassBlocks):
   * 16 decimal counts (malloc_common.c malloc_common_convert_to_long: digits
   * only) separated by commas, each <= 64, summing to 64; else ignored */
  uint8_t u[HG_NANO_SIZE_CLASSES];
  uint32_t total = 0;
  if (!s) return HG_EINVAL;
  for (uint32_t i = 0; i < HG_NANO_SIZE_CLASSES; i++) {
    const char *start = s;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9' && v <= 64) v = v * 10 + (uint64_t)(*s++ - '0');
    char sep = i == HG_NANO_SIZE_CLASSES - 1 ? '\0' : ',';
    if (s == start || *s != sep || v > 64) return HG_EINVAL;
    u[i] = (uint8_t)v;
    total += (uint32_t)v;
    s++;
  }
  if (total != HG_NANO_BLOCKS_PER_ARENA / 64u) return HG_EINVAL;
  memcpy(units, u, sizeof u);
  return 0;
}

int _hg_nano_layout_from_zone(const uint8_t *zone, size_t avail, uint64_t page_max,
                              uint64_t helper, struct hg_nano_layout *out) {
  /* nanozonev2_t: malloc_zone_t padded to PAGE_MAX_SIZE, then
   * current_block[16][64] (pointers), current_block_lock[16][64]
   * (os_unfair_lock, 4 bytes), uint16_t delegate_allocations, unsigned
   * debug_flags, then the fields read here */
  uint64_t base = page_max + 16u * 64u * 8u + 16u * 64u * 4u;
  uint64_t o_cookie = base + 8, o_aligned = base + 16, o_helper = base + 32;
  uint64_t o_first = base + 48, o_next = base + 56;
  if (!zone || avail < o_next + 8) return HG_EFORMAT;
  uint64_t cookie = rd64(zone + o_cookie), aligned = rd64(zone + o_aligned);
  /* nanov2_malloc.c nanov2_create_zone: cookie = entropy >> (64 - 12),
   * aligned = cookie << NANOV2_OFFSET_BITS: a layout check by itself */
  if (cookie > BLOCK_INDEX_MASK || aligned != cookie << 14) return HG_EFORMAT;
  if (helper && rd64(zone + o_helper) != helper) return HG_EFORMAT;
  memset(out, 0, sizeof *out);
  out->aslr_cookie = (uint32_t)cookie;
  out->first_region = rd64(zone + o_first);
  out->next_arena = rd64(zone + o_next);
  out->max_regions = HG_NANO_MAX_REGIONS;
  _hg_nano_default_units(out->units);
  return _hg_nano_layout_check(out);
}

struct walk {
  const struct hg_nano_layout *L;
  hg_nano_map_fn map;
  void *mctx;
  const struct hg_nano_sink *s;
  struct hg_nano_stats *st;
  uint8_t class_of_unit[HG_NANO_BLOCKS_PER_ARENA / 64u];
};

/* One active block: its in-use slots, as the enumerator finds them. */
static int walk_block(struct walk *w, uint64_t block, uint32_t meta, uint32_t sc) {
  uint32_t slot_size = (sc + 1) * 16u, slot_count = HG_NANO_BLOCK_SIZE / slot_size;
  uint32_t next = META_NEXT(meta), free_count = META_FREE(meta);
  int rc;
  if (w->s->region && (rc = w->s->region(w->s->ctx, block, HG_NANO_BLOCK_SIZE)) < 0) return rc;
  if (next == SLOT_BUMP || next == SLOT_FULL) {
    int64_t n = next == SLOT_BUMP ? (int64_t)slot_count - free_count - 1 : slot_count;
    for (int64_t i = 0; i < n; i++) {
      if ((rc = w->s->block(w->s->ctx, block + (uint64_t)i * slot_size, slot_size)) < 0) return rc;
      w->st->slots++;
    }
    return 0;
  }
  const uint8_t *b = w->map(w->mctx, block, HG_NANO_BLOCK_SIZE);
  if (!b) {
    w->st->unreadable++;
    return 0;
  }
  uint64_t notfree[MAX_SLOTS / 64]; /* 1 = not (yet) seen on the free list */
  memset(notfree, 0, sizeof notfree);
  for (uint32_t i = 0; i < slot_count; i++) notfree[i / 64] |= 1ull << (i % 64);
  uint32_t on_list = 0;
  while (next != SLOT_BUMP) {
    int64_t k = (int64_t)next - 1; /* 1-based */
    if (k < 0 || k >= slot_count || !(notfree[k / 64] >> (k % 64) & 1)) {
      w->st->bad_lists += k >= 0 && k < slot_count; /* a loop: the enumerator stops too */
      break;
    }
    notfree[k / 64] &= ~(1ull << (k % 64));
    next = (uint16_t)rd64(b + (uint64_t)k * slot_size + 8); /* nanov2_free_slot_t.next_slot */
    on_list++;
  }
  int64_t used = (int64_t)slot_count - (free_count + 1) + on_list; /* ever allocated */
  for (uint32_t i = 0; i < slot_count && (int64_t)i < used; i++) {
    if (!(notfree[i / 64] >> (i % 64) & 1)) continue;
    if ((rc = w->s->block(w->s->ctx, block + (uint64_t)i * slot_size, slot_size)) < 0) return rc;
    w->st->slots++;
  }
  return 0;
}

static int walk_arena(struct walk *w, uint64_t arena) {
  const struct hg_nano_layout *L = w->L;
  uint64_t aligned = (uint64_t)L->aslr_cookie << 14;
  const uint8_t *mb = w->map(w->mctx, arena ^ aligned, HG_NANO_BLOCK_SIZE);
  if (!mb) {
    w->st->unreadable++;
    return 0;
  }
  uint32_t self = b2m(L->aslr_cookie);
  for (uint32_t i = 0; i < HG_NANO_BLOCKS_PER_ARENA; i++) {
    if (i == self) continue; /* the metadata block */
    uint32_t m = __atomic_load_n((const uint32_t *)(mb + 4u * i), __ATOMIC_RELAXED);
    if (!active(m)) continue;
    uint32_t bi = b2m(i); /* meta index -> block index */
    uint32_t sc = w->class_of_unit[(bi ^ L->aslr_cookie) >> 6];
    w->st->blocks_active++;
    int rc = walk_block(w, arena + (uint64_t)bi * HG_NANO_BLOCK_SIZE, m, sc);
    if (rc < 0) return rc;
  }
  return 0;
}

int _hg_nano_walk(const struct hg_nano_layout *L, hg_nano_map_fn map, void *mctx,
                  const struct hg_nano_sink *s, struct hg_nano_stats *st) {
  struct walk w = {L, map, mctx, s, st, {0}};
  memset(st, 0, sizeof *st);
  if (_hg_nano_layout_check(L)) return HG_EFORMAT;
  uint32_t u = 0;
  for (uint32_t c = 0; c < HG_NANO_SIZE_CLASSES; c++)
    for (uint32_t k = 0; k < L->units[c]; k++) w.class_of_unit[u++] = (uint8_t)c;
  uint64_t aligned = (uint64_t)L->aslr_cookie << 14;
  uint64_t current = (L->next_arena - 1) & ~(uint64_t)(HG_NANO_REGION_SIZE - 1);
  uint64_t region = L->first_region;
  uint32_t max = L->max_regions ? L->max_regions : 1;
  for (uint32_t r = 0; region && r < max; r++) {
    uint64_t limit = region == current ? L->next_arena : region + HG_NANO_REGION_SIZE;
    for (uint64_t a = region; a < limit && a >= region; a += HG_NANO_ARENA_SIZE) {
      int rc = walk_arena(&w, a);
      if (rc < 0) return rc;
    }
    st->regions++;
    /* nanov2_region_linkage_for_region: the metablock entry of the first arena */
    const uint8_t *mb = map(mctx, region ^ aligned, HG_NANO_BLOCK_SIZE);
    if (!mb) {
      st->unreadable++;
      break;
    }
    uint16_t off;
    memcpy(&off, mb + 4u * b2m(L->aslr_cookie), 2);
    uint64_t nr = region + (uint64_t)off * HG_NANO_REGION_SIZE;
    region = off && nr > region ? nr : 0;
  }
  return 0;
}
