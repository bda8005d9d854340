/*
 * capture.c — the portable capture orchestrator behind hg_capture():
 *
 *   prepare (malloc allowed: writer, classifiers, images, allocator probe)
 *   → freeze (park threads; undo and retry while allocator locks are held)
 *   → [fork: child runs the rest, parent thaws at once]
 *   → regions → heap walk → drop cached-free blocks → index
 *   → write nodes → scan edges → scan roots → metadata → finish
 *   → thaw (always, also on every error path).
 *
 * Owns the ordering, the timings and the serialisation of concurrent calls.
 * Knows nothing about Linux or glibc: those live behind capture/platform.h.
 * Everything after the freeze runs without malloc.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "capture/classify/classify.h"
#include "capture/stacks/alloc_record.h"
#include "capture/internal.h"
#include "capture/platform.h"

/* The capture lock: the thread inside hg_capture (0 = none). One atomic
 * word, so that a signal handler re-entering hg_capture on the thread that
 * holds it sees itself as the owner (HG_EBUSY) instead of waiting forever. */
static _Atomic uintptr_t capture_owner;

static int capture_lock(void) {
  uintptr_t me = (uintptr_t)pthread_self();
  for (;;) {
    uintptr_t none = 0;
    if (atomic_compare_exchange_strong(&capture_owner, &none, me)) return 0;
    if (none == me) return HG_EBUSY;
    struct timespec ts = {0, 200000}; /* another thread's capture */
    nanosleep(&ts, NULL);
  }
}

static void capture_unlock(void) { atomic_store(&capture_owner, 0); }

#define DEFAULT_SCRATCH_LIMIT (2ull << 30)

void hg_options_init(struct hg_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->version = HG_OPTIONS_VERSION;
  o->mode = HG_MODE_DEFAULT;
  o->trigger = "manual";
  o->scratch_limit = DEFAULT_SCRATCH_LIMIT;
  o->freeze_timeout_ms = 2000;
  o->busy_retries = 200;
  o->child_timeout_ms = 600000;
  o->helpers = 1;
}

/* ---- metadata ---- */

struct meta_buf {
  struct hg_meta m;
  struct hg_num nums[24];
  char os[128];
  char process[64];
};

static void add_num(struct meta_buf *b, const char *k, uint64_t v) {
  if (b->m.capture_count < sizeof b->nums / sizeof b->nums[0]) {
    b->nums[b->m.capture_count].key = k;
    b->nums[b->m.capture_count].value = v;
    b->m.capture_count++;
  }
}

int _hg_capture_meta(struct hg_cap *c, int final) {
  static struct meta_buf b; /* used under the capture lock or in the child only */
  memset(&b, 0, sizeof b);
  b.m.capture = b.nums;
  if (!final) {
    _hg_plat_describe(&b.m);
    if (c->opt->omit & HG_OMIT_NAMES) b.m.process = NULL;
    b.m.pointer_size = sizeof(void *);
    b.m.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
    b.m.pid = c->pid;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    b.m.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    b.m.trigger = c->opt->trigger ? c->opt->trigger : "manual";
    b.m.app_count = c->opt->app ? c->opt->app_count : 0;
    b.m.app = c->opt->app;
    add_num(&b, "mode_fork", c->mode == HG_MODE_FORK);
    return hg_writer_meta(c->w, &b.m);
  }
  b.m.allocator = c->allocator ? c->allocator : "unknown";
  /* "ok: …" when a heap was listed from the recorder, or some heap (a
   * Darwin zone) was not walked */
  b.m.heap_status = c->heap_status || c->rec_heap || c->heap_reason[0] ? c->heap_reason : "ok";
  add_num(&b, "pause_ns", c->pause_ns);
  add_num(&b, "walk_ns", c->walk_ns);
  add_num(&b, "scan_ns", c->scan_ns);
  add_num(&b, "write_ns", c->write_ns);
  add_num(&b, "scratch_peak_bytes", c->scratch.peak);
  add_num(&b, "nodes", _hg_node_count(c));
  add_num(&b, "edges", c->edges);
  add_num(&b, "roots", c->roots);
  add_num(&b, "threads", _hg_vec_len(&c->threads));
  add_num(&b, "regions", _hg_vec_len(&c->regions));
  add_num(&b, "images", _hg_vec_len(&c->images));
  add_num(&b, "freed_cached_excluded", c->freed_excluded);
  add_num(&b, "heap_errors", c->heap_errors);
  add_num(&b, "busy_retries", c->busy_retries);
  add_num(&b, "scan_helper", (uint64_t)c->helper_used);
  add_num(&b, "prefault_pages", c->prefault_pages);
  add_num(&b, "stacks_unapplied", c->stacks_unapplied); /* 0: not written */
  if (c->images_encrypted) add_num(&b, "images_encrypted", c->images_encrypted);
  if (c->dead_stacks) add_num(&b, "dead_thread_stacks", c->dead_stacks);
  if (c->recorded_blocks) add_num(&b, "recorded_blocks", c->recorded_blocks);
  return hg_writer_meta(c->w, &b.m);
}

/* ---- records ---- */

static const char *str_at(const struct hg_cap *c, uint32_t off) {
  return off ? (const char *)c->strings.base + off : NULL;
}

/* A mapped file's path, unless hg_options.omit asks to leave paths out
 * (then only kernel names such as "[heap]" or "[anon:…]" stay). */
static const char *region_name(const struct hg_cap *c, uint32_t off) {
  const char *n = str_at(c, off);
  return n && n[0] != '[' && (c->opt->omit & HG_OMIT_PATHS) ? NULL : n;
}

static int write_records(struct hg_cap *c) {
  int rc;
  int no_paths = (c->opt->omit & HG_OMIT_PATHS) != 0, no_names = (c->opt->omit & HG_OMIT_NAMES) != 0;
  for (size_t i = 0; i < _hg_vec_len(&c->regions); i++) {
    const struct hg_cregion *r = _hg_vec_at(&c->regions, i);
    if (r->kind == HG_RK_OWN) continue;
    struct hg_region out = {r->start, r->end - r->start, r->prot, r->tag, region_name(c, r->name),
                            r->rss, r->dirty, r->swap, r->image};
    if ((rc = hg_writer_region(c->w, &out))) return rc;
  }
  for (size_t i = 0; i < _hg_vec_len(&c->images); i++) {
    const struct hg_cimage *im = _hg_vec_at(&c->images, i);
    struct hg_image out = {no_paths ? "" : str_at(c, im->path), im->id_len ? im->id : NULL, im->id_len,
                           im->load_addr, im->bias, im->size};
    if ((rc = hg_writer_image(c->w, &out))) return rc;
  }
  for (size_t i = 0; i < _hg_vec_len(&c->threads); i++) {
    const struct hg_cthread *t = _hg_vec_at(&c->threads, i);
    struct hg_thread out = {t->tid, t->name[0] && !no_names ? t->name : NULL, t->stack_lo, t->stack_hi};
    if ((rc = hg_writer_thread(c->w, &out))) return rc;
  }
  return 0;
}

/* ---- the frozen part ---- */

static void wait_for_pause(struct hg_cap *c) {
  if (!c->shared) return;
  for (int i = 0; i < 20000 && c->shared->pause_ns == 0; i++) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  c->pause_ns = c->shared->pause_ns;
}

int _hg_capture_body(struct hg_cap *c) {
  int rc;
  uint64_t t0 = _hg_now_ns();
  if ((rc = _hg_plat_regions(c))) return rc;
  if ((rc = _hg_plat_threads_finish(c))) return rc;
  if (c->rec_heap) {
    rc = _hg_stacks_heap_walk(c); /* clears heap_status when listed */
    if (rc && rc != HG_EUNSUPPORTED) return rc;
  } else if (!c->heap_status) {
    rc = _hg_plat_heap_walk(c);
    if (rc && rc != HG_EUNSUPPORTED) return rc;
    if (rc == HG_EUNSUPPORTED && !c->heap_status) c->heap_status = HG_EUNSUPPORTED;
  }
  if ((rc = _hg_plat_regions_finish(c))) return rc; /* figures read during the walk */
  if (c->heap_status) { /* never guess: no heap nodes at all */
    _hg_vec_truncate(&c->segments, 0);
    _hg_vec_truncate(&c->nodes, 0);
  }
  uint64_t *fl = (uint64_t *)c->freelist.base;
  _hg_sort_u64key(fl, _hg_vec_len(&c->freelist), sizeof(uint64_t));
  _hg_nodes_drop_freed(c);
  if ((rc = _hg_index_build(c))) return rc;
  uint64_t t1 = _hg_now_ns();
  c->walk_ns = t1 - t0;

  if ((rc = write_records(c))) return rc;
  uint64_t t2 = _hg_now_ns();
  if ((rc = _hg_scan_nodes(c))) return rc; /* nodes (classified once) and edges */
  for (uint32_t i = 0; i < c->nclassifiers; i++) { /* what classifiers add (classify.h) */
    struct hg_classify_reg reg = {c, c->classifier_state[i]};
    if (c->classifiers[i]->meta && (rc = c->classifiers[i]->meta(&reg, c->w))) return rc;
  }
  if ((rc = _hg_scan_roots(c))) return rc;
  if ((rc = _hg_stacks_write(c))) return rc; /* allocation stacks (alloc_write.c) */
  uint64_t t3 = _hg_now_ns();
  c->scan_ns = t3 - t2;
  c->write_ns = t2 - t1;
  return 0;
}

/* After the heap is no longer needed: metadata (with the pause, known by
 * now in both modes), trailer, fsync, rename. */
static int capture_finish(struct hg_cap *c) {
  wait_for_pause(c);
  uint64_t t4 = _hg_now_ns();
  int rc;
  if ((rc = _hg_capture_meta(c, 1))) return rc;
  if ((rc = hg_writer_finish(c->w))) return rc;
  c->write_ns += _hg_now_ns() - t4;
  return c->heap_status ? c->heap_status : 0;
}

/* ---- prepare ---- */

static int init_vectors(struct hg_cap *c) {
  struct hg_scratch *s = &c->scratch;
  int rc = 0;
  rc = rc ? rc : _hg_vec_init(s, &c->strings, 1, 64u << 20);
  rc = rc ? rc : _hg_vec_init(s, &c->regions, sizeof(struct hg_cregion), 1u << 20);
  rc = rc ? rc : _hg_vec_init(s, &c->images, sizeof(struct hg_cimage), 1u << 16);
  rc = rc ? rc : _hg_vec_init(s, &c->ranges, sizeof(struct hg_crange), 1u << 18);
  rc = rc ? rc : _hg_vec_init(s, &c->not_roots, sizeof(struct hg_crange), 1u << 16);
  rc = rc ? rc : _hg_vec_init(s, &c->threads, sizeof(struct hg_cthread), 1u << 16);
  rc = rc ? rc : _hg_vec_init(s, &c->segments, sizeof(struct hg_segment), 1u << 24);
  rc = rc ? rc : _hg_vec_init(s, &c->nodes, sizeof(struct hg_cnode), (size_t)UINT32_MAX);
  rc = rc ? rc : _hg_vec_init(s, &c->index, 4, (size_t)UINT32_MAX);
  rc = rc ? rc : _hg_vec_init(s, &c->freelist, 8, 1u << 28);
  rc = rc ? rc : _hg_vec_init(s, &c->work, 8, 1u << 28);
  if (!rc && !_hg_str_add(&c->strings, "", 0)) rc = HG_ENOMEM;
  return rc;
}

/* A classifier whose prepare() returns < 0 sits this capture out alone:
 * the ones after it still run (kept slots are compacted, in list order). */
static void classifiers_prepare(struct hg_cap *c) {
  const struct hg_classifier *const *list =
      _hg_classifiers_override ? _hg_classifiers_override : _hg_classifiers;
  c->nclassifiers = 0;
  for (size_t i = 0; list[i] && c->nclassifiers < HG_MAX_CLASSIFIERS; i++) {
    const struct hg_classifier *k = list[i];
    struct hg_classify_reg reg = {c, NULL};
    if (k->prepare && k->prepare(&reg) < 0) continue;
    c->classifiers[c->nclassifiers] = k;
    c->classifier_state[c->nclassifiers] = reg.state;
    c->nclassifiers++;
  }
}

static void classifiers_finish(struct hg_cap *c) {
  for (uint32_t i = 0; i < c->nclassifiers; i++) {
    struct hg_classify_reg reg = {c, c->classifier_state[i]};
    if (c->classifiers[i]->finish) c->classifiers[i]->finish(&reg);
  }
}

static void fill_stats(struct hg_cap *c, struct hg_capture_stats *st) {
  st->pause_ns = c->pause_ns;
  st->walk_ns = c->walk_ns;
  st->scan_ns = c->scan_ns;
  st->write_ns = c->write_ns;
  st->scratch_peak_bytes = c->scratch.peak;
  st->nodes = _hg_node_count(c);
  st->edges = c->edges;
  st->roots = c->roots;
  st->threads = _hg_vec_len(&c->threads);
  st->regions = _hg_vec_len(&c->regions);
  st->images = _hg_vec_len(&c->images);
  st->file_bytes = c->w ? hg_writer_bytes(c->w) : 0;
  st->busy_retries = c->busy_retries;
  st->heap_status = c->heap_status;
}

/* Child side of fork mode: run the body, hand results to the parent. */
static int fork_body(struct hg_cap *c) {
  int rc = _hg_capture_body(c);
  if (!rc) rc = capture_finish(c);
  fill_stats(c, &c->shared->stats);
  return rc;
}

static int freeze_when_quiet(struct hg_cap *c) {
  for (uint32_t attempt = 0;; attempt++) {
    c->t_freeze = _hg_now_ns();
    int rc = _hg_plat_freeze(c);
    if (rc) return rc;
    /* a thread frozen while it updates the allocation-stack tables (a
     * queue batch, a live-map shard) counts as a busy heap: the capture
     * would read figures that disagree with the map */
    if (c->heap_status || (!_hg_plat_heap_busy(c) && !_hg_stacks_busy())) {
      c->stacks_unapplied = _hg_stacks_flush();
      return 0;
    }
    _hg_plat_thaw(c);
    c->busy_retries++;
    uint64_t budget = (uint64_t)(c->opt->freeze_timeout_ms ? c->opt->freeze_timeout_ms : 2000) * 1000000u;
    if (attempt >= c->opt->busy_retries || _hg_now_ns() - c->t_start > budget) return HG_EBUSY;
    struct timespec ts = {0, 50000L * (attempt < 20 ? attempt + 1 : 20)};
    nanosleep(&ts, NULL);
  }
}

static char heap_note[320]; /* under the capture lock */
const char *_hg_capture_heap_note(void) { return heap_note; }

static int run(struct hg_cap *c, const char *path) {
  int rc;
  if ((rc = init_vectors(c))) return rc;
  if ((rc = hg_writer_open(&c->w, path))) return rc;
  if ((rc = _hg_capture_meta(c, 0))) return rc;
  classifiers_prepare(c);
  if ((rc = _hg_plat_images(c))) return rc;
  if ((rc = _hg_plat_heap_prepare(c))) return rc;
  _hg_stacks_heap_plan(c);
  if (c->rec_heap)
    snprintf(heap_note, sizeof heap_note, "blocks of %s listed from the allocation recorder (its heap is not walked)",
             c->allocator);
  else snprintf(heap_note, sizeof heap_note, "%s", c->heap_reason);
  if ((rc = freeze_when_quiet(c))) return rc;
  if (c->mode == HG_MODE_FORK) {
    rc = _hg_plat_fork_run(c, fork_body); /* thaws in the parent */
    return rc;
  }
  rc = _hg_capture_body(c);
  _hg_plat_thaw(c); /* the file's trailer and fsync need no frozen heap */
  c->pause_ns = _hg_now_ns() - c->t_freeze;
  return rc ? rc : capture_finish(c);
}

int hg_capture(const char *path, const struct hg_options *o) {
  struct hg_options def;
  if (!o) {
    hg_options_init(&def);
    o = &def;
  }
  if (!path || !*path || o->version != HG_OPTIONS_VERSION || o->mode > HG_MODE_SUSPEND)
    return HG_EINVAL;
  if (o->mode == HG_MODE_FORK && !_hg_plat_can_fork()) return HG_EUNSUPPORTED; /* before any file */
  /* not async-signal-safe: refused from a signal handler (which may have
   * interrupted malloc or this thread's own capture) */
  if (_hg_plat_in_signal_handler()) return HG_EBUSY;
  if (capture_lock()) return HG_EBUSY;
  uint64_t t_start = _hg_now_ns();
  struct hg_cap *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
  if (c == MAP_FAILED) {
    capture_unlock();
    return HG_ENOMEM;
  }
  memset(c, 0, sizeof *c);
  _hg_plat_self_context(&c->self);
  c->opt = o;
  c->pid = (int64_t)getpid();
  c->mode = o->mode == HG_MODE_DEFAULT ? _hg_plat_default_mode() : (int)o->mode;
  _hg_scratch_init(&c->scratch, o->scratch_limit ? o->scratch_limit : DEFAULT_SCRATCH_LIMIT);
  c->t_start = t_start;

  _hg_stacks_pause(1); /* the recorder's queue: no drain caught mid-batch */
  int rc = run(c, path);
  _hg_stacks_pause(0);

  struct hg_capture_stats st;
  memset(&st, 0, sizeof st);
  if (c->mode == HG_MODE_FORK && c->shared) {
    st = c->shared->stats;
    st.pause_ns = c->pause_ns;
  } else {
    fill_stats(c, &st);
  }
  classifiers_finish(c);
  if (c->w) hg_writer_close(c->w);
  if (c->shared) munmap(c->shared, 4096);
  _hg_scratch_free(&c->scratch);
  munmap(c, sizeof *c);
  st.total_ns = _hg_now_ns() - t_start;
  st.version = HG_CAPTURE_STATS_VERSION;
  if (o->stats) *o->stats = st;
  capture_unlock();
  return rc;
}
