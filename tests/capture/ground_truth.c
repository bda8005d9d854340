/*
 * ground_truth.c — capture test against a heap whose content is known.
 *
 * The main thread and three worker threads (so several arenas) allocate
 * tiny, small, large and mmapped blocks (of several sizes), free a known
 * subset so that freed chunks sit in tcaches (full and not), fastbins
 * (glibc < 2.43), the unsorted bin and small/large bins, and plant pointers
 * (start and interior) between live blocks. Then the process captures
 * itself in fork mode and in suspend mode and checks: every live block is a
 * node with its exact usable size, no freed block is a node, every planted
 * pointer is an edge with the right offset and kind, every block that must
 * be mmapped is a node flagged so, and the regions' figures (Rss, dirty:
 * in fork mode the helper reads them during the walk) are those of a
 * mapping written all over and of one never touched. The glibc matrix (make check-matrix)
 * runs it on every glibc our users run.
 */
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

#define MAX_BLOCKS 4096
#define NWORKERS 3
#define MMAPPED_MIN (1u << 20) /* blocks this big are always mmapped here */

struct block { void *p; size_t usable; };
struct plant { void *src; size_t off; void *dst; int interior; };

static struct block live[MAX_BLOCKS];
static size_t nlive;
static uintptr_t freed[MAX_BLOCKS];
static size_t nfreed;
static struct plant plants[MAX_BLOCKS];
static size_t nplants;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready, finish;

static void *take(size_t n) {
  void *p = malloc(n);
  memset(p, 0, malloc_usable_size(p));
  return p;
}

static void keep(void *p) {
  pthread_mutex_lock(&lock);
  live[nlive].p = p;
  live[nlive].usable = malloc_usable_size(p);
  nlive++;
  pthread_mutex_unlock(&lock);
}

static void drop(void *p) {
  pthread_mutex_lock(&lock);
  freed[nfreed++] = (uintptr_t)p;
  pthread_mutex_unlock(&lock);
  free(p);
}

/* One thread's share: sizes chosen to avoid the 24-byte class the capture's
 * own allocator probe uses. */
static void populate(int salt) {
  void *tmp[64];
  size_t tiny[] = {8, 40, 72}, small[] = {120, 200, 500, 1000}, large[] = {1500, 3000, 20000, 70000};
  for (int r = 0; r < 6; r++) {
    for (size_t i = 0; i < 3; i++) keep(take(tiny[i] + (size_t)salt));
    for (size_t i = 0; i < 4; i++) keep(take(small[i]));
    for (size_t i = 0; i < 4; i++) keep(take(large[i]));
  }
  /* tcache: three of each (stays below the 7-entry cap) */
  for (int k = 0; k < 3; k++) {
    tmp[0] = take(40); tmp[1] = take(200); tmp[2] = take(500);
    keep(take(16)); /* guard */
    drop(tmp[0]); drop(tmp[1]); drop(tmp[2]);
  }
  /* fastbins: twenty of one fast size fill its tcache bin (7 entries, 16
   * from glibc 2.43) and the rest go to the fastbin (or, without fastbins,
   * to the unsorted bin, coalesced) */
  for (int k = 0; k < 20; k++) tmp[k] = take(56);
  keep(take(16));
  for (int k = 0; k < 20; k++) drop(tmp[k]);
  /* unsorted / small / large bins: non-tcache sizes separated by guards */
  for (int k = 0; k < 4; k++) {
    tmp[3 * k] = take(1500);
    keep(take(16));
    tmp[3 * k + 1] = take(3000);
    keep(take(16));
    tmp[3 * k + 2] = take(20000);
    keep(take(16));
  }
  for (int k = 0; k < 12; k++) drop(tmp[k]);
  keep(take(100000 - 1)); /* sorts the unsorted bin into small/large bins */
  tmp[0] = take(2500);
  keep(take(16));
  drop(tmp[0]);           /* stays in the unsorted bin */
  /* mmapped: whether these are depends on other threads (freeing an
   * mmapped chunk raises the mmap threshold to its size) */
  for (int k = 0; k < 3; k++) keep(take(300000 + 4096 * (size_t)k));
  tmp[0] = take(400000);
  drop(tmp[0]);
  /* ... these always are (above any threshold raised here); freeing a
   * block above 32 MiB leaves the threshold alone (only its header page
   * is touched) */
  keep(take(MMAPPED_MIN + (size_t)salt));
  keep(take(3 * MMAPPED_MIN + 100));
  drop(malloc(40u << 20));
}

static void *worker(void *arg) {
  populate((int)(intptr_t)arg * 8);
  pthread_mutex_lock(&lock);
  ready++;
  pthread_cond_broadcast(&cond);
  while (!finish) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void plant_pointers(void) {
  for (size_t i = 0; i + 1 < nlive; i++) {
    struct block *s = &live[i], *d = &live[(i * 7 + 3) % nlive];
    size_t off = 8 * (i % 3);
    if (off + 8 > s->usable) continue;
    int interior = (i % 4) == 1 && d->usable > 16;
    void *target = interior ? (char *)d->p + 16 : d->p;
    memcpy((char *)s->p + off, &target, sizeof target);
    plants[nplants++] = (struct plant){s->p, off, d->p, interior};
  }
}

static int64_t node_at(const struct hg_graph *g, void *p) {
  int64_t n = hg_graph_find(g, (uint64_t)(uintptr_t)p);
  if (n < 0 || g->node_addr[n] != (uint64_t)(uintptr_t)p) return -1;
  return n;
}

static const char *mode_name;

/* bss well past the file's pages (an anonymous mapping): its words are
 * global roots, each reported once and not again as OTHER */
#define BSS_WORDS 8192
static void *bss_roots[BSS_WORDS];
static void plant_bss(void) {
  for (size_t i = 0; i < BSS_WORDS; i += 512) bss_roots[i] = live[(i / 512) % nlive].p;
}

/* Two mappings with known figures: one written all over, one never read.
 * Each between two inaccessible guards, so that the kernel never merges it
 * with a neighbour: its region is exactly it. */
#define FIG_BYTES (256u * 1024u)
static char *fig_touched, *fig_untouched;
static char *isolated(int prot) {
  char *g = mmap(NULL, 3 * FIG_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g == MAP_FAILED || mprotect(g + FIG_BYTES, FIG_BYTES, prot)) return MAP_FAILED;
  return g + FIG_BYTES;
}
static void make_figures(void) {
  fig_touched = isolated(PROT_READ | PROT_WRITE);
  fig_untouched = isolated(PROT_READ | PROT_WRITE);
  if (fig_touched != MAP_FAILED) memset(fig_touched, 0x5a, FIG_BYTES);
}

static const struct hg_region *region_of(const struct hg_graph *g, const void *p) {
  for (uint32_t i = 0; i < g->region_count; i++)
    if ((uintptr_t)p >= g->regions[i].start && (uintptr_t)p - g->regions[i].start < g->regions[i].size)
      return &g->regions[i];
  return NULL;
}

static void check_figures(const struct hg_graph *g) {
  REQUIRE(fig_touched != MAP_FAILED && fig_untouched != MAP_FAILED);
  const struct hg_region *t = region_of(g, fig_touched), *u = region_of(g, fig_untouched);
  REQUIRE(t && u);
  if (t->resident != FIG_BYTES || t->dirty != FIG_BYTES)
    fprintf(stderr, "%s: written mapping [%#llx, +%llu): resident %llu, dirty %llu\n", mode_name,
            (unsigned long long)t->start, (unsigned long long)t->size, (unsigned long long)t->resident,
            (unsigned long long)t->dirty);
  CHECK(t->start == (uintptr_t)fig_touched && t->size == FIG_BYTES);
  CHECK_EQ_U(t->resident, FIG_BYTES);
  CHECK_EQ_U(t->dirty, FIG_BYTES);
  CHECK(u->start == (uintptr_t)fig_untouched && u->size == FIG_BYTES);
  CHECK_EQ_U(u->resident, 0);
  const struct hg_region *h = NULL;
  for (uint32_t i = 0; i < g->region_count; i++)
    if (g->regions[i].name && !strcmp(g->regions[i].name, "[heap]")) h = &g->regions[i];
  CHECK(h && h->resident > 0 && h->dirty > 0);
}

static void check_snapshot(const char *path) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  if (!g) fprintf(stderr, "%s: load: %s\n", mode_name, err.message);
  REQUIRE(g != NULL);
  size_t missing = 0, badsize = 0, freed_found = 0, edges_missing = 0, kind_bad = 0;
  size_t mmapped_want = 0, mmapped_flagged = 0;
  for (size_t i = 0; i < nlive; i++) {
    int64_t n = node_at(g, live[i].p);
    mmapped_want += live[i].usable >= MMAPPED_MIN;
    if (n < 0) {
      if (missing++ < 5) fprintf(stderr, "%s: live %p (%zu) missing\n", mode_name, live[i].p, live[i].usable);
      continue;
    }
    mmapped_flagged += live[i].usable >= MMAPPED_MIN && (g->node_flags[n] & HG_NODE_MMAPPED);
    if (g->node_size[n] != live[i].usable) {
      if (badsize++ < 5)
        fprintf(stderr, "%s: %p size %llu, want %zu\n", mode_name, live[i].p,
                (unsigned long long)g->node_size[n], live[i].usable);
    }
  }
  for (size_t i = 0; i < nfreed; i++) {
    int64_t n = hg_graph_find(g, freed[i]);
    if (n >= 0 && g->node_addr[n] == freed[i]) {
      int reused = 0;
      for (size_t k = 0; k < nlive; k++) reused |= (uintptr_t)live[k].p == freed[i];
      if (!reused && freed_found++ < 5)
        fprintf(stderr, "%s: freed %#lx reported (size %llu)\n", mode_name, (unsigned long)freed[i],
                (unsigned long long)g->node_size[n]);
    }
  }
  for (size_t i = 0; i < nplants; i++) {
    int64_t s = node_at(g, plants[i].src), d = node_at(g, plants[i].dst);
    if (s < 0 || d < 0) {
      edges_missing++;
      continue;
    }
    int found = 0;
    for (uint32_t e = g->edge_start[s]; e < g->edge_start[s + 1]; e++) {
      if (g->edge_offset[e] != plants[i].off) continue;
      found = g->edge_target[e] == (uint32_t)d;
      if (found && g->edge_kind[e] != (plants[i].interior ? HG_EDGE_INTERIOR : HG_EDGE_CONSERVATIVE))
        kind_bad++;
    }
    if (!found && edges_missing++ < 5)
      fprintf(stderr, "%s: edge %p+%zu -> %p missing\n", mode_name, plants[i].src, plants[i].off, plants[i].dst);
  }
  size_t global_roots = 0, bss_global = 0, bss_other = 0, bss_want = 0;
  uint64_t bss_lo = (uint64_t)(uintptr_t)bss_roots, bss_hi = bss_lo + sizeof bss_roots;
  for (uint32_t r = 0; r < g->root_count; r++) {
    global_roots += g->roots[r].kind == HG_ROOT_GLOBAL;
    if (g->roots[r].addr < bss_lo || g->roots[r].addr >= bss_hi) continue;
    bss_global += g->roots[r].kind == HG_ROOT_GLOBAL;
    bss_other += g->roots[r].kind != HG_ROOT_GLOBAL;
  }
  for (size_t i = 0; i < BSS_WORDS; i++) bss_want += bss_roots[i] != NULL;
  fprintf(stderr, "%s: bss roots: %zu global, %zu other, %zu planted\n", mode_name, bss_global, bss_other, bss_want);
  fprintf(stderr, "%s: %u nodes, %u edges, %u roots (%zu global), %u threads, %u regions, %u images; "
          "live %zu freed %zu plants %zu\n", mode_name, g->node_count, g->edge_count, g->root_count,
          global_roots, g->thread_count, g->region_count, g->image_count, nlive, nfreed, nplants);
  CHECK_EQ_U(missing, 0);
  CHECK_EQ_U(badsize, 0);
  CHECK_EQ_U(freed_found, 0);
  CHECK_EQ_U(edges_missing, 0);
  CHECK_EQ_U(kind_bad, 0);
  CHECK_EQ_U(mmapped_want, 2 * (NWORKERS + 1));
  CHECK_EQ_U(mmapped_flagged, mmapped_want);
  CHECK(g->thread_count >= NWORKERS + 1);
  CHECK(global_roots > 0);
  CHECK(bss_want > 0);
  CHECK_EQ_U(bss_global, bss_want);
  CHECK_EQ_U(bss_other, 0);
  CHECK(g->meta.heap_status && !strcmp(g->meta.heap_status, "ok"));
  check_figures(g);
  hg_graph_free(g);
}

static char path[256];

#define HELPER_POSSIBLE (!HG_TEST_ASAN) /* capture/linux/helper.c: no helper under ASan */

static uint64_t meta_num(const struct hg_graph *g, const char *key) {
  for (size_t i = 0; i < g->meta.capture_count; i++)
    if (!strcmp(g->meta.capture[i].key, key)) return g->meta.capture[i].value;
  return UINT64_MAX;
}

static uint32_t helpers = 1; /* hg_options.helpers of the next capture */

static void capture_mode(uint32_t mode) {
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.mode = mode;
  o.stats = &st;
  o.helpers = helpers;
  int rc = hg_capture(path, &o);
  if (rc) fprintf(stderr, "%s: hg_capture: %d %s\n", mode_name, rc, hg_error_string(rc));
  if (rc == HG_EUNSUPPORTED) {
    struct hg_graph *g = hg_graph_load(path, NULL);
    if (g) fprintf(stderr, "%s: heap_status: %s\n", mode_name, g->meta.heap_status);
    hg_graph_free(g);
  }
  REQUIRE(rc == 0);
  fprintf(stderr, "%s: pause %.3f ms, walk %.3f ms, scan %.3f ms, write %.3f ms, scratch %llu B\n",
          mode_name, st.pause_ns / 1e6, st.walk_ns / 1e6, st.scan_ns / 1e6, st.write_ns / 1e6,
          (unsigned long long)st.scratch_peak_bytes);
  CHECK(st.nodes >= nlive);
  check_snapshot(path);
  /* the scan ran on the path asked for: pipelined with a helper thread, or
   * on the capturing thread alone (and the walk was prefaulted in fork
   * mode only when a helper was allowed) */
  struct hg_graph *g = hg_graph_load(path, NULL);
  REQUIRE(g != NULL);
  CHECK_EQ_U(meta_num(g, "scan_helper"), helpers && HELPER_POSSIBLE ? 1 : 0);
  /* prefaulting is best effort: on a busy machine the walk of this small
   * heap may end before the helper touched a page */
  if (mode == HG_MODE_FORK && helpers && HELPER_POSSIBLE) CHECK(meta_num(g, "prefault_pages") != UINT64_MAX);
  else CHECK_EQ_U(meta_num(g, "prefault_pages"), 0);
  hg_graph_free(g);
}

static void test_fork(void) { mode_name = "fork"; helpers = 1; capture_mode(HG_MODE_FORK); }
static void test_suspend(void) { mode_name = "suspend"; helpers = 1; capture_mode(HG_MODE_SUSPEND); }
/* the same without a helper thread: the one-thread scan */
static void test_fork_alone(void) { mode_name = "fork/alone"; helpers = 0; capture_mode(HG_MODE_FORK); }
static void test_suspend_alone(void) {
  mode_name = "suspend/alone";
  helpers = 0;
  capture_mode(HG_MODE_SUSPEND);
}

int main(int argc, char **argv) {
  snprintf(path, sizeof path, "%s/hg_ground_truth_%d.hgsnap", argc > 1 ? argv[1] : "/tmp", (int)getpid());
  /* warm-up: one-time lazy allocations of libc/ld.so (dlopen state …)
   * happen now, not inside the blocks this test frees */
  struct hg_options wo;
  hg_options_init(&wo);
  wo.mode = HG_MODE_SUSPEND;
  hg_capture(path, &wo);
  unlink(path);
  pthread_t th[NWORKERS];
  for (int i = 0; i < NWORKERS; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 1));
  populate(0);
  pthread_mutex_lock(&lock);
  while (ready < NWORKERS) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  plant_pointers();
  plant_bss();
  make_figures();
  RUN(test_fork);
  RUN(test_suspend);
  RUN(test_fork_alone);
  RUN(test_suspend_alone);
  pthread_mutex_lock(&lock);
  finish = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < NWORKERS; i++) pthread_join(th[i], NULL);
  unlink(path);
  return hg_test_done();
}
