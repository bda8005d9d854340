/*
 * glibc_heap.c — walks glibc ptmalloc2 heaps of the frozen process: every
 * arena (main_arena found by glibc_detect.c, the others through the ring),
 * every heap of an arena (64 MiB-aligned, heap_info first), and mmapped
 * chunks (found in anonymous mappings by their header, in the shape
 * glibc_detect.c probed). A chunk is a node when the next chunk's
 * PREV_INUSE bit says it is in use; chunks cached in tcaches (all
 * threads') and fastbins (where the layout has them) keep that bit, so
 * their user addresses go to c->freelist and are dropped afterwards.
 *
 * Node address = chunk + 16, node size = usable size (chunk size - 8; for
 * mmapped chunks size - 16, or size - 8 when the size leaves out the
 * header), as malloc_usable_size() reports.
 *
 * Runs frozen: no malloc; every address is checked against the regions
 * before it is read; inconsistencies stop the walk of that heap and are
 * counted (heap_errors), never followed.
 */
#include <string.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

#define CHUNK_HDR 16u
#define MINSIZE 32u
#define PREV_INUSE 1u
#define IS_MMAPPED 2u
#define MAX_ARENAS 4096
#define MAX_LIST 100000000ull
#define PREFETCH_AHEAD 2048u /* bytes of heap fetched ahead of the chunk walk */

enum { SEG_MAIN = 1, SEG_ARENA = 2, SEG_MMAP = 3 };

/* A heap area to walk; first field is the sort key. */
struct area {
  uint64_t first;   /* first chunk                                        */
  uint64_t end;     /* end of the chunk area                               */
  uint64_t top;     /* top chunk of its arena (0 for mmapped)              */
  uint64_t kind;    /* SEG_*                                               */
  uint64_t arena;   /* arena index                                         */
  uint64_t usable;  /* mmapped: the block's usable size                    */
};

struct walk {
  struct hg_cap *c;
  uint64_t arenas[MAX_ARENAS];
  uint32_t narenas;
  struct hg_vec *areas;   /* struct area, in c->work                      */
  size_t areas_mark;
  uint32_t heap_main, heap_arena, heap_mmap;
  uint64_t tc_first;      /* index in c->work of tcache candidates         */
};

static int rd(const struct hg_cap *c, uint64_t a, uint64_t *v) { return _hg_read_word(c, a, v); }

static int is_heap_addr(const struct hg_cap *c, uint64_t a) {
  int64_t i = _hg_region_find(c, a);
  return i >= 0 && ((const struct hg_cregion *)_hg_vec_at(&c->regions, (size_t)i))->kind == HG_RK_HEAP;
}

static void mark_heap(struct hg_cap *c, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->start < hi && r->end > lo && r->kind == HG_RK_OTHER) r->kind = HG_RK_HEAP;
  }
}

static uint64_t reveal(uint64_t pos, uint64_t v) {
  return _hg_glibc.safe_linking ? (pos >> 12) ^ v : v;
}

/* ---- areas ---- */

static int add_area(struct walk *wk, uint64_t first, uint64_t end, uint64_t top, int kind, uint32_t arena) {
  struct area *a = _hg_vec_push(&wk->c->work, sizeof(struct area) / 8);
  if (!a) return HG_ENOMEM;
  a->first = first;
  a->end = end;
  a->top = top;
  a->kind = (uint64_t)kind;
  a->arena = arena;
  a->usable = 0;
  return 0;
}

/* End of an arena's top chunk, validated; 0 if implausible. */
static uint64_t top_end(struct hg_cap *c, uint64_t top) {
  uint64_t sz;
  if ((top & 15) || rd(c, top + 8, &sz)) return 0;
  sz &= ~(uint64_t)7;
  int64_t ri = _hg_region_find(c, top);
  if (ri < 0) return 0;
  const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
  if (top + sz > r->end || sz < MINSIZE - 16) return 0;
  return top + sz;
}

/* The main heap's first chunk: normally at the start of the region that
 * holds top, but the loader may have taken the first bytes of [heap] with
 * sbrk before malloc ran (glibc 2.31 copies GLIBC_TUNABLES there). The
 * first 16-aligned place, within 64 KiB, from which a run of sane chunk
 * sizes (the first with PREV_INUSE) reaches top or goes on for 64 chunks. */
static uint64_t main_first(struct hg_cap *c, uint64_t lo, uint64_t top, uint64_t end) {
  for (uint64_t first = (lo + 15) & ~(uint64_t)15; first < lo + (64u << 10) && first < top; first += 16) {
    uint64_t p = first, sz;
    int n = 0;
    for (; n < 64 && p < top; n++) {
      if (rd(c, p + 8, &sz) || (n == 0 && !(sz & 1))) break;
      sz &= ~(uint64_t)7;
      if (sz < MINSIZE || (sz & 15) || p + sz > end) break;
      p += sz;
    }
    if (p == top || n == 64) return first;
  }
  return (lo + 15) & ~(uint64_t)15;
}

static int main_areas(struct walk *wk) {
  struct hg_cap *c = wk->c;
  const struct hg_glibc *G = &_hg_glibc;
  uint64_t top;
  if (rd(c, G->main_arena + G->off_top, &top)) return 0;
  if (top == G->main_arena + G->off_bins - 16) return 0; /* never used */
  uint64_t end = top_end(c, top);
  int64_t ri = _hg_region_find(c, top);
  if (!end || ri < 0) {
    c->heap_errors++;
    return 0;
  }
  const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
  uint64_t first = main_first(c, r->start, top, end);
  mark_heap(c, r->start, r->end);
  return add_area(wk, first, end, top, SEG_MAIN, 0);
}

static int arena_areas(struct walk *wk, uint64_t ar, uint32_t index) {
  struct hg_cap *c = wk->c;
  const struct hg_glibc *G = &_hg_glibc;
  uint64_t top, hmask = ~(G->heap_max - 1);
  if (rd(c, ar + G->off_top, &top)) return 0;
  uint64_t tend = top_end(c, top);
  uint64_t first_heap = ar & hmask, info_size = ar - first_heap;
  if (!tend || info_size > 256) {
    c->heap_errors++;
    return 0;
  }
  uint64_t h = top & hmask;
  for (int n = 0; h && n < 65536; n++) {
    uint64_t owner, prev, size;
    if (rd(c, h, &owner) || rd(c, h + 8, &prev) || rd(c, h + 16, &size) || owner != ar ||
        size > G->heap_max) {
      c->heap_errors++;
      return 0;
    }
    uint64_t first = h == first_heap ? ((ar + G->sizeof_state + 15) & ~(uint64_t)15)
                                     : ((h + info_size + 15) & ~(uint64_t)15);
    uint64_t end = (top >= h && top < h + size) ? tend : h + size;
    mark_heap(c, h, h + G->heap_max);
    if (end > first) {
      int rc = add_area(wk, first, end, top, SEG_ARENA, index);
      if (rc) return rc;
    }
    if (h == first_heap) break;
    h = prev;
  }
  return 0;
}

static int list_arenas(struct walk *wk) {
  struct hg_cap *c = wk->c;
  const struct hg_glibc *G = &_hg_glibc;
  uint64_t a = G->main_arena;
  wk->narenas = 0;
  while (wk->narenas < MAX_ARENAS) {
    wk->arenas[wk->narenas++] = a;
    uint64_t next;
    if (rd(c, a + G->off_next, &next)) {
      c->heap_errors++;
      break;
    }
    if (next == G->main_arena) break;
    for (uint32_t i = 0; i < wk->narenas; i++)
      if (wk->arenas[i] == next) return 0; /* a ring that skips main: stop */
    a = next;
  }
  return 0;
}

/* Span (mapping bytes) of an mmapped chunk whose header reads {prev, size}
 * at a page start, and its usable size; 0 if it is no such header. */
static uint64_t mmapped_span(uint64_t prev, uint64_t size, uint64_t *usable) {
  uint64_t sz = size & ~(uint64_t)7;
  int shape = _hg_glibc.mmap_shape;
  if ((size & 7) != IS_MMAPPED || sz < MINSIZE) return 0;
  if (shape != HG_MMAP_LESS_HDR && prev == 0 && (sz & 4095) == 0) {
    *usable = sz - 16;
    return sz;
  }
  /* prev_size holds the chunk's offset in its mapping (0 here) and, in
   * bit 0, whether the mapping uses huge pages */
  if (shape != HG_MMAP_WHOLE && (prev & ~(uint64_t)1) == 0 && ((sz + 16) & 4095) == 0) {
    *usable = sz - 8;
    return sz + 16;
  }
  return 0;
}

/* Where mmapped chunks cannot start inside region r (sets [*lo, *hi), or
 * returns 0): the kernel merges a chunk's mapping with an adjacent
 * anonymous read-write one — an arena heap's used part, or a thread stack
 * (whose guard is a mapping of its own only before glibc 2.42) — so such
 * regions are searched too, less the heap areas (heaps[0..nheaps), sorted)
 * and less each stack up to its thread descriptor. */
static int claimed(const struct hg_cap *c, const struct hg_cregion *r, const struct area *heaps,
                   size_t nheaps, uint64_t p, uint64_t *lo, uint64_t *hi) {
  *lo = *hi = 0;
  if (r->kind == HG_RK_STACK) {
    for (size_t i = 0; i < _hg_vec_len(&c->threads); i++) {
      const struct hg_cthread *t = _hg_vec_at(&c->threads, i);
      if (t->tls_hi > r->start && t->tls_hi <= r->end && t->tls_hi > *hi) *hi = t->tls_hi;
    }
    *lo = r->start;
    *hi = (*hi + 4095) & ~(uint64_t)4095;
    if (!*hi) *hi = r->end; /* the main thread's stack: nothing else is there */
    return p < *hi;
  }
  for (size_t k = 0; k < nheaps; k++) /* few: one per heap */
    if (heaps[k].end > p && heaps[k].first < r->end) {
      *lo = heaps[k].first & ~(uint64_t)4095;
      *hi = (heaps[k].end + 4095) & ~(uint64_t)4095;
      return 1;
    }
  return 0;
}

/* Mmapped chunks: page-aligned headers {prev_size 0, size | IS_MMAPPED} in
 * anonymous private read-write mappings nobody else claims (see claimed). */
static int mmapped_areas(struct walk *wk, size_t heaps_mark) {
  struct hg_cap *c = wk->c;
  const char *names = (const char *)c->strings.base;
  size_t nheaps = (_hg_vec_len(&c->work) - heaps_mark) / (sizeof(struct area) / 8);
  _hg_sort_u64key(_hg_vec_at(&c->work, heaps_mark), nheaps, sizeof(struct area));
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->kind == HG_RK_OWN || r->kind == HG_RK_IMAGE ||
        (r->prot & (HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED)) != (HG_PROT_READ | HG_PROT_WRITE))
      continue;
    if (r->name && strncmp(names + r->name, "[anon:", 6) != 0) continue;
    if (_hg_region_untouched(r) || _hg_region_reservation(r)) continue;
    uint64_t run_end = r->start, p = r->start, cl_lo = 0, cl_hi = 0;
    int check = r->kind != HG_RK_OTHER;
    while (p + 4096 <= r->end) {
      if (check && p >= cl_hi) {
        const struct area *heaps = _hg_vec_at(&c->work, heaps_mark);
        if (!claimed(c, r, heaps, nheaps, p, &cl_lo, &cl_hi)) cl_lo = cl_hi = r->end;
      }
      if (check && p >= cl_lo && p < cl_hi) {
        p = cl_hi;
        continue;
      }
      if (p >= run_end) { /* headers of resident pages only: sparse reservations stay cheap */
        if (!_hg_next_resident(&p, r->end, &run_end)) break;
        continue;
      }
      uint64_t prev, size, usable = 0, span;
      if (rd(c, p, &prev) || rd(c, p + 8, &size)) break;
      if ((span = mmapped_span(prev, size, &usable)) && p + span <= r->end &&
          (!check || p + span <= cl_lo)) {
        int rc = add_area(wk, p, p + span, 0, SEG_MMAP, 0);
        if (rc) return rc;
        ((struct area *)_hg_vec_at(&c->work, _hg_vec_len(&c->work) - sizeof(struct area) / 8))->usable = usable;
        p += span;
      } else {
        p += 4096;
      }
    }
  }
  return 0;
}

/* ---- chunk walk ---- */

HG_NO_ASAN static int walk_area(struct walk *wk, const struct area *a) {
  struct hg_cap *c = wk->c;
  int rc;
  if (a->kind == SEG_MMAP) {
    if ((rc = _hg_seg_begin(c, a->first, a->end, HG_NODE_MALLOC | HG_NODE_MMAPPED, wk->heap_mmap)))
      return rc;
    rc = _hg_node_add(c, a->first + CHUNK_HDR, a->usable);
    _hg_seg_end(c);
    return rc;
  }
  uint32_t heap = a->kind == SEG_MAIN ? wk->heap_main : wk->heap_arena;
  if ((rc = _hg_seg_begin(c, a->first, a->end, HG_NODE_MALLOC, heap))) return rc;
  /* The area is validated once; headers inside it are then read directly
   * (a header at the very end falls back to the checked read). */
  int whole = _hg_readable(c, a->first, a->end - a->first);
  uint64_t p = a->first, sz, nsz;
  uint64_t ahead = p; /* next line to prefetch: the chunk chain is a chain
                       * of dependent loads, but it runs forward through
                       * contiguous memory, so lines ahead can be fetched */
  while (p < a->end && p != a->top) {
    if (whole) {
      uint64_t want = p + PREFETCH_AHEAD;
      if (ahead < p) ahead = p;
      for (; ahead < want && ahead < a->end; ahead += 64) __builtin_prefetch((const void *)(uintptr_t)ahead);
      sz = *(const volatile uint64_t *)(uintptr_t)(p + 8);
    }
    else if (rd(c, p + 8, &sz)) break;
    sz &= ~(uint64_t)7;
    if (sz < MINSIZE) break; /* fencepost ending a non-top heap */
    if ((sz & 15) || p + sz > a->end || p + sz < p) {
      c->heap_errors++;
      break;
    }
    if (whole && p + sz + 16 <= a->end) nsz = *(const volatile uint64_t *)(uintptr_t)(p + sz + 8);
    else if (rd(c, p + sz + 8, &nsz)) {
      c->heap_errors++;
      break;
    }
    if (nsz & PREV_INUSE) {
      if ((rc = _hg_node_add(c, p + CHUNK_HDR, sz - 8))) break;
      if (_hg_glibc.tcache_chunk && sz - _hg_glibc.tcache_chunk <= 16) { /* see find_tcache */
        uint64_t *cand = _hg_vec_push(&c->work, 1);
        if (!cand) {
          rc = HG_ENOMEM;
          break;
        }
        *cand = p + CHUNK_HDR;
      }
    }
    p += sz;
  }
  _hg_seg_end(c);
  return rc;
}

/* ---- cached-free chunks ---- */

static int push_free(struct hg_cap *c, uint64_t mem) {
  uint64_t *f = _hg_vec_push(&c->freelist, 1);
  if (!f) return HG_ENOMEM;
  *f = mem;
  return 0;
}

static int fastbins(struct walk *wk, uint64_t ar) {
  struct hg_cap *c = wk->c;
  const struct hg_glibc *G = &_hg_glibc;
  for (uint32_t i = 0; i < G->nfastbins; i++) {
    uint64_t p, want = MINSIZE + 16u * i;
    if (rd(c, ar + G->off_fastbins + 8u * i, &p)) return 0;
    for (uint64_t n = 0; p && n < MAX_LIST; n++) {
      uint64_t sz, fd;
      if ((p & 15) || !is_heap_addr(c, p) || rd(c, p + 8, &sz) || (sz & ~(uint64_t)7) != want ||
          rd(c, p + CHUNK_HDR, &fd)) {
        c->heap_errors++;
        break;
      }
      int rc = push_free(c, p + CHUNK_HDR);
      if (rc) return rc;
      p = reveal(p + CHUNK_HDR, fd);
    }
  }
  return 0;
}

/* Bin i of a tcache holds chunks of exactly 32 + 16 i bytes (the first 64
 * bins); glibc 2.43's 12 further bins hold ranges of larger sizes, bin
 * 64 + log2(size) - log2(1040). */
static int tcache_size_ok(uint32_t i, uint64_t sz) {
  if (i < 64) return sz == MINSIZE + 16u * i;
  if (sz <= MINSIZE + 16u * 63 || sz >= (1ull << 31)) return 0;
  return 64u + (uint32_t)__builtin_clz(MINSIZE + 16u * 63) - (uint32_t)__builtin_clz((uint32_t)sz) == i;
}

/* One tcache entry at e: a heap chunk of the bin's size whose key marks it
 * cached (the process key, or the tcache struct m itself before 2.34). */
static int tcache_entry_ok(struct hg_cap *c, uint64_t m, uint32_t i, uint64_t e, uint64_t *next) {
  uint64_t sz, key;
  return !(e & 15) && is_heap_addr(c, e) && !rd(c, e - 8, &sz) &&
         tcache_size_ok(i, sz & ~(uint64_t)7) && !rd(c, e, next) && !rd(c, e + 8, &key) &&
         (key == _hg_glibc.tcache_key || key == m);
}

/* A tcache_perthread_struct candidate at mem m: uint16 counts[n], then
 * entries[n] (user pointers; their `next` is protected, `key` at +8). The
 * counts are not used: before 2.43 they count entries, since then free
 * slots. Lists are bounded by their validation and 65,536 hops. */
static int tcache(struct walk *wk, uint64_t m) {
  struct hg_cap *c = wk->c;
  const struct hg_glibc *G = &_hg_glibc;
  uint64_t entries = m + 2u * G->tcache_bins, e, nx;
  /* validate every head before trusting the struct */
  for (uint32_t i = 0; i < G->tcache_bins; i++) {
    if (rd(c, entries + 8u * i, &e)) return 0;
    if (e && !tcache_entry_ok(c, m, i, e, &nx))
      return 0; /* not a tcache (or a damaged one): leave its blocks alone */
  }
  for (uint32_t i = 0; i < G->tcache_bins; i++) {
    if (rd(c, entries + 8u * i, &e)) return 0;
    for (uint64_t n = 0; e && n < 65536; n++) {
      if (!tcache_entry_ok(c, m, i, e, &nx)) {
        c->heap_errors++;
        break;
      }
      int rc = push_free(c, e);
      if (rc) return rc;
      e = reveal(e, nx);
    }
  }
  return 0;
}

static uint32_t heap_id(struct hg_cap *c, const char *name) {
  uint32_t id = 0;
  if (hg_writer_heap(c->w, name, &id) != 0) return 0;
  return id;
}

int _hg_plat_heap_walk(struct hg_cap *c) {
  if (!_hg_glibc.ok) {
    if (!c->heap_status) {
      c->heap_status = HG_EUNSUPPORTED;
      strcpy(c->heap_reason, "unsupported allocator");
    }
    return HG_EUNSUPPORTED;
  }
  static struct walk wk; /* big (arena list); used under the capture lock */
  memset(&wk, 0, sizeof wk);
  wk.c = c;
  int rc;
  size_t mark = _hg_vec_len(&c->work);
  if ((rc = list_arenas(&wk))) return rc;
  for (uint32_t i = 0; i < wk.narenas; i++) { /* allocator state: never roots */
    struct hg_crange *r = _hg_vec_push(&c->not_roots, 1);
    if (!r) return HG_ENOMEM;
    *r = (struct hg_crange){wk.arenas[i], wk.arenas[i] + _hg_glibc.sizeof_state, 0, HG_NO_OWNER};
  }
  if ((rc = main_areas(&wk))) return rc;
  for (uint32_t i = 1; i < wk.narenas; i++)
    if ((rc = arena_areas(&wk, wk.arenas[i], i))) return rc;
  if ((rc = mmapped_areas(&wk, mark))) return rc;
  size_t nareas = (_hg_vec_len(&c->work) - mark) / (sizeof(struct area) / 8);
  struct area *areas = _hg_vec_at(&c->work, mark);
  _hg_sort_u64key(areas, nareas, sizeof(struct area));

  wk.heap_main = heap_id(c, "glibc main_arena");
  wk.heap_arena = wk.narenas > 1 ? heap_id(c, "glibc arenas") : 0;
  wk.heap_mmap = heap_id(c, "glibc mmapped chunks");
  size_t cand_mark = _hg_vec_len(&c->work);
  uint64_t prev_end = 0;
  /* fork mode: pages are touched ahead of the walk on another core */
  _hg_prefault_start(c, &areas[0].first, nareas, sizeof(struct area) / 8);
  for (size_t i = 0; i < nareas; i++) {
    areas = _hg_vec_at(&c->work, mark); /* stable: the vector never moves */
    if (areas[i].first < prev_end) { /* overlapping claims: keep the first */
      c->heap_errors++;
      continue;
    }
    if ((rc = walk_area(&wk, &areas[i]))) break;
    prev_end = areas[i].end;
  }
  c->prefault_pages = _hg_prefault_stop(c);
  if (rc) return rc;
  size_t ncand = _hg_vec_len(&c->work) - cand_mark;
  for (uint32_t i = 0; i < wk.narenas; i++)
    if ((rc = fastbins(&wk, wk.arenas[i]))) return rc;
  for (size_t i = 0; i < ncand; i++) {
    uint64_t m = *(uint64_t *)_hg_vec_at(&c->work, cand_mark + i);
    if ((rc = tcache(&wk, m))) return rc;
  }
  _hg_vec_truncate(&c->work, mark);
  return 0;
}
