/*
 * test_darwin_recorded.c — zone_recorded.c on Linux: the blocks of malloc
 * zones that the freeze protocol does not walk, listed from the allocation
 * recorder's live map (with the sizes the Darwin hook keeps), end to end
 * through segments, demotion, the scan and the snapshot.
 *
 * A fake process as a Darwin one looks to the capture:
 *   - a scalable zone (walked): its tiny region (user_tag MALLOC_TINY 2,
 *     malloc regions: darwin_tags.c) reported by its enumerator as a REGION
 *     range with IN_USE ranges for its blocks (magazine_tiny.c
 *     tiny_in_use_enumerator reports both: zone_ranges.c);
 *   - a nano v2 zone whose layout was not recognised (not walked): its
 *     region tagged MALLOC_NANO (11: nano_malloc_common.c
 *     _nano_common_map_vm_space, VM_MAKE_TAG(VM_MEMORY_MALLOC_NANO));
 *   - a zone without zone_locked (not walked) in plain VM_ALLOCATE memory
 *     (tag 0: anonymous "other");
 *   - a thread stack.
 * The live map (alloc_record.c with sizes) holds what the hook saw after
 * recording started: blocks of all three zones, a stale entry in the walked
 * zone (freed unlogged: malloc_destroy_zone), an entry in the stack and one
 * in unmapped memory. A nano block allocated before recording started is
 * in no list: the pointer it holds must still be a root, never a leak.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "capture/ptrindex.h"
#include "capture/stacks/alloc_record.h"
#include "heapgraph.h"
#include "hg_test.h"

#define PAGE 4096u
#define TINY_TAG 2u

static uint8_t *mem; /* [tiny 16 KiB][nano 16 KiB][custom 16 KiB][stack 16 KiB] */
static uint64_t tiny, nano, custom, stack;

static struct hg_cap *new_cap(struct hg_options *o) {
  struct hg_cap *c = calloc(1, sizeof *c);
  if (!c) abort();
  hg_options_init(o);
  o->helpers = 0;
  c->opt = o;
  _hg_scratch_init(&c->scratch, 1ull << 30);
  struct hg_scratch *s = &c->scratch;
  int rc = _hg_vec_init(s, &c->strings, 1, 1 << 16);
  rc |= _hg_vec_init(s, &c->regions, sizeof(struct hg_cregion), 64);
  rc |= _hg_vec_init(s, &c->segments, sizeof(struct hg_segment), 64);
  rc |= _hg_vec_init(s, &c->index, 4, 1 << 20);
  rc |= _hg_vec_init(s, &c->work, 8, 1 << 20);
  rc |= _hg_vec_init(s, &c->ranges, sizeof(struct hg_crange), 4);
  rc |= _hg_vec_init(s, &c->not_roots, sizeof(struct hg_crange), 4);
  rc |= _hg_vec_init(s, &c->threads, sizeof(struct hg_cthread), 4);
  if (rc) abort();
  return c;
}

static void region(struct hg_cap *c, uint64_t lo, uint32_t tag, uint32_t kind) {
  struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
  r->start = lo;
  r->end = lo + 4 * PAGE;
  r->prot = HG_PROT_READ | HG_PROT_WRITE;
  r->tag = tag;
  r->kind = kind;
  r->image = HG_NO_OWNER;
  r->rss = 4 * PAGE;
  r->flags = HG_RF_ANON; /* Darwin: internal VM objects only */
}

static void put(uint64_t addr, uint64_t word_off, uint64_t v) { ((uint64_t *)(uintptr_t)addr)[word_off] = v; }

static void test_recorded_blocks(void) {
  mem = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  memset(mem, 0, 16 * PAGE);
  tiny = (uint64_t)(uintptr_t)mem;
  nano = tiny + 4 * PAGE;
  custom = nano + 4 * PAGE;
  stack = custom + 4 * PAGE;
  struct hg_options o;
  struct hg_cap *c = new_cap(&o);
  region(c, tiny, TINY_TAG, HG_RK_HEAP);
  region(c, nano, HG_VM_MEMORY_MALLOC_NANO, HG_RK_HEAP);
  region(c, custom, 0, HG_RK_OTHER);
  region(c, stack, 30, HG_RK_STACK);
  char path[96];
  snprintf(path, sizeof path, "/tmp/hg_test_recorded_%d.hgsnap", (int)getpid());
  uint32_t h_tiny = 0, h_nano = 0, h_custom = 0;
  REQUIRE(hg_writer_open(&c->w, path) == 0);
  REQUIRE(hg_writer_heap(c->w, "MallocHelperZone", &h_tiny) == 0);
  REQUIRE(hg_writer_heap(c->w, "DefaultMallocZone (not walked: nano v2)", &h_nano) == 0);
  REQUIRE(hg_writer_heap(c->w, "custom (not walked: no zone_locked)", &h_custom) == 0);

  /* the walked zone's enumerator: its region, two blocks */
  static struct hg_zrange claimed[4];
  struct hg_zclaims cl = {claimed, 0, 4, 0};
  struct hg_vmrange treg = {tiny, 4 * PAGE}, tblk[2] = {{tiny, 32}, {tiny + 64, 48}};
  REQUIRE(_hg_zone_ranges_add(c, &cl, h_tiny, HG_MALLOC_PTR_REGION, &treg, 1) == 0);
  REQUIRE(_hg_zone_ranges_add(c, &cl, h_tiny, HG_MALLOC_PTR_IN_USE, tblk, 2) == 0);

  /* the live map: sizes as malloc_size gave them at allocation */
  static struct hg_rec r;
  struct hg_rec_config cfg = {8, 0, 0, 1};
  REQUIRE(_hg_rec_init(&r, &cfg) == 0);
  uintptr_t f = 0x1234;
  uint32_t id = _hg_rec_intern(&r, &f, 1);
  uint64_t n1 = nano, n2 = nano + 64 /* before recording */, n3 = nano + 256, c1 = custom + 32;
  _hg_rec_add(&r, tiny, 32, id);          /* walked zone's: found by its walk   */
  _hg_rec_add(&r, tiny + 512, 64, id);    /* stale (freed unlogged)             */
  _hg_rec_add(&r, n1, 48, id);
  _hg_rec_add(&r, n3, 32, id);
  _hg_rec_add(&r, c1, 4096, id);          /* spans pages: one region            */
  _hg_rec_add(&r, stack + 128, 64, id);   /* not heap memory                    */
  _hg_rec_add(&r, stack + 64 * PAGE, 64, id); /* unmapped                       */
  _hg_rec_add(&r, custom + 4 * PAGE - 32, 64, id); /* runs past its region      */
  /* pointers: n1 -> c1 (an edge), the unlisted n2 -> n3 (a root), c1 -> n1 */
  put(n1, 1, c1);
  put(n2, 0, n3 + 8);
  put(c1, 3, n1);

  struct hg_zrec_plan plan = {h_nano, h_custom};
  struct hg_zrec_stats st;
  REQUIRE(_hg_zone_recorded_collect(c, &r, 0, claimed, cl.n, &plan, &st) == 0);
  CHECK_EQ_U(st.listed, 3);
  CHECK_EQ_U(st.in_walked, 2);
  CHECK_EQ_U(st.unreadable, 3);
  CHECK_EQ_U(st.unowned, 0);
  const struct hg_cregion *rg = (const struct hg_cregion *)c->regions.base;
  CHECK(rg[0].flags & HG_RF_ZWALKED);
  CHECK(!(rg[1].flags & HG_RF_ZWALKED));

  /* segments: the walked zone's, then the recorded ones */
  struct hg_zblock *b = (struct hg_zblock *)c->work.base;
  size_t nb = _hg_vec_len(&c->work) * 8 / sizeof *b;
  CHECK_EQ_U(nb, 5);
  REQUIRE(_hg_zone_blocks_commit(c, b, nb) == 0);
  CHECK_EQ_U(c->heap_errors, 0);
  REQUIRE(_hg_vec_len(&c->segments) == 3);
  const struct hg_segment *s = (const struct hg_segment *)c->segments.base;
  CHECK_EQ_U(s[0].recorded, 0);
  CHECK_EQ_U(s[0].heap_id, h_tiny);
  CHECK_EQ_U(s[1].recorded, 1);
  CHECK_EQ_U(s[1].heap_id, h_nano);
  CHECK_EQ_U(s[1].count, 2);
  CHECK_EQ_U(s[2].recorded, 1);
  CHECK_EQ_U(s[2].heap_id, h_custom);
  /* the nano region holds only recorded blocks: still root memory */
  CHECK_EQ_U(_hg_zone_demote_unwalked(c, claimed, cl.n), 1);
  CHECK_EQ_U(rg[0].kind, HG_RK_HEAP);
  CHECK_EQ_U(rg[1].kind, HG_RK_OTHER);

  /* scan: nodes and edges, then roots around the recorded nodes */
  REQUIRE(_hg_index_build(c) == 0);
  REQUIRE(_hg_scan_nodes(c) == 0);
  REQUIRE(_hg_scan_roots(c) == 0);
  REQUIRE(hg_writer_finish(c->w) == 0);
  hg_writer_close(c->w);
  struct hg_graph *g = hg_graph_load(path, NULL);
  unlink(path);
  REQUIRE(g);
  REQUIRE(g->node_count == 5);
  /* node order: tiny, tiny+64, n1, n3, c1 */
  CHECK_EQ_U(g->node_addr[2], n1);
  CHECK_EQ_U(g->node_size[2], 48);
  CHECK_EQ_U(g->node_addr[4], c1);
  CHECK_EQ_U(g->node_size[4], 4096);
  CHECK_EQ_U(g->node_heap[3], h_nano);
  CHECK_EQ_U(g->node_heap[4], h_custom);
  int n1_c1 = 0, c1_n1 = 0;
  for (uint32_t e = g->edge_start[2]; e < g->edge_start[3]; e++) n1_c1 += g->edge_target[e] == 4;
  for (uint32_t e = g->edge_start[4]; e < g->edge_start[5]; e++) c1_n1 += g->edge_target[e] == 2;
  CHECK_EQ_U(n1_c1, 1);
  CHECK_EQ_U(c1_n1, 1);
  /* the unlisted block's word is a root (to n3); the listed blocks' words
   * are edges only, never roots */
  uint32_t roots_n3 = 0, roots_in_nodes = 0;
  for (uint32_t i = 0; i < g->root_count; i++) {
    const struct hg_root *rt = &g->roots[i];
    if (rt->addr == n2 && rt->target == 3 && rt->kind == HG_ROOT_OTHER) roots_n3++;
    if ((rt->addr >= n1 && rt->addr < n1 + 48) || (rt->addr >= c1 && rt->addr < c1 + 4096)) roots_in_nodes++;
  }
  CHECK_EQ_U(roots_n3, 1);
  CHECK_EQ_U(roots_in_nodes, 0);
  CHECK_EQ_U(g->root_count, 1);
  hg_graph_free(g);
  _hg_rec_destroy(&r);
  _hg_scratch_free(&c->scratch);
  free(c);
  munmap(mem, 16 * PAGE);
}

/* A block in memory no refused zone could own (only nano refused, the
 * block in plain VM memory) is dropped as freed-unlogged; a recorder
 * without sizes (the Linux layout) lists nothing. */
static void test_unowned_and_no_sizes(void) {
  uint8_t *m = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  uint64_t a = (uint64_t)(uintptr_t)m;
  struct hg_options o;
  struct hg_cap *c = new_cap(&o);
  region(c, a, 0, HG_RK_OTHER);
  region(c, a + 4 * PAGE, HG_VM_MEMORY_MALLOC_NANO, HG_RK_HEAP);
  static struct hg_rec r;
  struct hg_rec_config cfg = {8, 0, 0, 1};
  REQUIRE(_hg_rec_init(&r, &cfg) == 0);
  uintptr_t f = 1;
  uint32_t id = _hg_rec_intern(&r, &f, 1);
  _hg_rec_add(&r, a + 64, 32, id);
  _hg_rec_add(&r, a + 4 * PAGE + 16, 16, id);
  struct hg_zrec_plan plan = {7, HG_ZREC_NONE};
  struct hg_zrec_stats st;
  REQUIRE(_hg_zone_recorded_collect(c, &r, 0, NULL, 0, &plan, &st) == 0);
  CHECK_EQ_U(st.listed, 1);
  CHECK_EQ_U(st.unowned, 1);
  const struct hg_zblock *b = (const struct hg_zblock *)c->work.base;
  CHECK_EQ_U(b[0].addr, a + 4 * PAGE + 16);
  CHECK_EQ_U(b[0].heap, 7 | HG_ZBLOCK_RECORDED);
  _hg_rec_destroy(&r);
  REQUIRE(_hg_rec_init(&r, NULL) == 0);
  CHECK(_hg_zone_recorded_collect(c, &r, 0, NULL, 0, &plan, &st) == HG_EUNSUPPORTED);
  CHECK(_hg_zone_recorded_collect(c, NULL, 0, NULL, 0, &plan, &st) == HG_EUNSUPPORTED);
  _hg_rec_destroy(&r);
  _hg_scratch_free(&c->scratch);
  free(c);
  munmap(m, 8 * PAGE);
}

/* What the snapshot says: the same field (heap_status) as Linux's
 * unwalked heaps, "ok: …" since other zones were walked; the heap names. */
static void test_notes(void) {
  char buf[320], name[160];
  CHECK(!strcmp(_hg_zone_recorded_note(buf, sizeof buf, "DefaultMallocZone", NULL),
                "ok: DefaultMallocZone not walked, their blocks are the allocation recorder's"));
  _hg_zone_recorded_note(buf, sizeof buf, "DefaultMallocZone, custom", _hg_stacks_unlisted_why(NULL, HG_MODE_SUSPEND));
  CHECK(strstr(buf, "ok: DefaultMallocZone, custom not walked (their blocks are not heap nodes): ") == buf);
  CHECK(strstr(buf, "hg_stacks_start") != NULL);
  static struct hg_rec r;
  struct hg_rec_config sampled = {8, 0, 4096, 1}, sized = {8, 0, 0, 1};
  REQUIRE(_hg_rec_init(&r, &sampled) == 0);
  CHECK(strstr(_hg_stacks_unlisted_why(&r, HG_MODE_SUSPEND), "samples") != NULL);
  _hg_rec_destroy(&r);
  REQUIRE(_hg_rec_init(&r, &sized) == 0);
  CHECK(_hg_stacks_unlisted_why(&r, HG_MODE_SUSPEND) == NULL); /* Darwin: suspend mode is fine */
  _hg_rec_destroy(&r);
  CHECK(!strcmp(_hg_zone_heap_name("DefaultMallocZone", HG_ZONE_NANO, 1, name, sizeof name),
                "DefaultMallocZone (not walked: nano v2: its enumerator allocates, its layout was not "
                "recognised; blocks listed from the allocation recorder)"));
  CHECK(!strcmp(_hg_zone_heap_name("MallocHelperZone", HG_ZONE_WALK, 1, name, sizeof name), "MallocHelperZone"));
}

/* Which heaps take the listed blocks, from zones as libmalloc makes them
 * (facts as in test_darwin_freeze.c): nano v2 next to its helper
 * (malloc.c:1650-1670 names them) with an unrecognised layout, the helper
 * (scalable, zone_locked, version 13), an xzone (walked), a custom zone
 * without zone_locked and one without an enumerator. */
static void test_plan(void) {
  struct hg_zone_facts f[] = {
      {"DefaultMallocZone", 13, 1, 1, 1, 0, 0}, /* nano v2, layout not recognised */
      {"MallocHelperZone", 13, 1, 1, 1, 0, 0},
      {"xzone", 16, 1, 1, 1, HG_MALLOC_ZONE_TYPE_XZONE, 0},
      {"custom", 10, 1, 0, 1, 0, 0},            /* zone_locked NULL */
      {NULL, 10, 0, 1, 1, 0, 0},                /* no enumerator, no name */
  };
  uint8_t plans[5];
  uint32_t heaps[5] = {11, 12, 13, 14, 15};
  const char *names[5];
  for (int i = 0; i < 5; i++) {
    plans[i] = (uint8_t)_hg_zone_plan(&f[i]);
    names[i] = f[i].name;
  }
  CHECK_EQ_U(plans[0], HG_ZONE_NANO);
  CHECK_EQ_U(plans[2], HG_ZONE_XZONE);
  char list[160];
  struct hg_zrec_plan p;
  int shared = -1;
  CHECK_EQ_U(_hg_zone_recorded_plan(plans, heaps, names, 5, &p, &shared, list, sizeof list), 3);
  CHECK(!strcmp(list, "DefaultMallocZone, custom, malloc zone"));
  CHECK_EQ_U(p.nano_heap, 11);
  CHECK_EQ_U(p.other_heap, HG_ZREC_NONE); /* two others: the caller's shared heap */
  CHECK_EQ_U(shared, 1);
  /* one other: its own heap */
  CHECK_EQ_U(_hg_zone_recorded_plan(plans, heaps, names, 4, &p, &shared, list, sizeof list), 2);
  CHECK_EQ_U(p.other_heap, 14);
  CHECK_EQ_U(shared, 0);
  /* everything walked: nothing to list, an empty list */
  CHECK_EQ_U(_hg_zone_recorded_plan(plans + 1, heaps + 1, names + 1, 2, &p, &shared, list, sizeof list), 0);
  CHECK(!strcmp(list, "") && p.nano_heap == HG_ZREC_NONE && p.other_heap == HG_ZREC_NONE);
  /* a short buffer is cut, never overrun */
  char small[8];
  _hg_zone_recorded_plan(plans, heaps, names, 5, &p, &shared, small, sizeof small);
  CHECK_EQ_U(strlen(small), 7);
}

int main(void) {
  RUN(test_plan);
  RUN(test_recorded_blocks);
  RUN(test_unowned_and_no_sizes);
  RUN(test_notes);
  return hg_test_done();
}
