/*
 * alloc_write.c — puts the allocation-stack recorder's state into a snapshot
 * (records 12-15): the stack table with frames as image index + offset, each
 * node's stack id, the large-allocation ring. Runs in the capture (fork child
 * or frozen process): reads the recorder's tables without locks and never
 * calls malloc. Also owns the recorder's global pointer, the fallback
 * hg_stacks_start / hg_stacks_stop of builds without an interposer and the
 * portable part of stop and restart.
 */
#include <string.h>

#include "capture/stacks/alloc_large.h"
#include "capture/stacks/alloc_queue.h"
#include "capture/stacks/alloc_record.h"
#include "capture/internal.h"
#include "heapgraph.h"

struct hg_rec *_hg_rec_global;
const char *_hg_rec_unwinder = "";
void *_hg_hook_malloc;
void *_hg_hook_next_malloc;
size_t (*_hg_hook_usable)(void *);
const char *_hg_hook_allocator = "";

#if !defined(__APPLE__)
/* Overridden by the Linux interposer (capture/stacks/linux_hook.c, in
 * libheapgraph.so and libheapgraph_stacks.a); Darwin's is
 * capture/darwin/alloc_logger.c, always in the library. */
__attribute__((weak)) int hg_stacks_start(const struct hg_stacks_options *o) {
  (void)o;
  return HG_EUNSUPPORTED;
}
/* Nothing can be recording without the interposer. */
__attribute__((weak)) int hg_stacks_stop(void) { return HG_EINVAL; }
#endif

void hg_stacks_options_init(struct hg_stacks_options *o) {
  memset(o, 0, sizeof *o);
  o->version = 1;
  o->max_frames = 32;
  o->budget_bytes = 256ull << 20;
}

int _hg_stacks_setup(struct hg_rec *r, const struct hg_stacks_options *o, int sizes) {
  static int started;
  if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL)) return HG_EBUSY;
  struct hg_stacks_options d;
  if (!o) {
    hg_stacks_options_init(&d);
    o = &d;
  }
  struct hg_rec_config cfg = {o->max_frames, o->budget_bytes, o->sample_bytes, sizes != 0};
  int rc = _hg_rec_init(r, &cfg);
  return rc ? rc : _hg_large_start(o->large_alloc_bytes, o->on_large, o->user);
}

int _hg_stacks_halt(struct hg_rec *r, int *on) {
  if (!__atomic_exchange_n(on, 0, __ATOMIC_ACQ_REL)) return HG_EINVAL; /* not recording */
  uint32_t ok = 0; /* "stopped", unless the budget ran out before */
  __atomic_compare_exchange_n(&r->status, &ok, 2u, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  return 0;
}

int _hg_stacks_resume(struct hg_rec *r, int *on) {
  uint32_t stopped = 2;
  if (__atomic_exchange_n(on, 1, __ATOMIC_ACQ_REL)) return HG_EBUSY;
  __atomic_compare_exchange_n(&r->status, &stopped, 0u, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  return 0;
}

int _hg_stacks_busy(void) {
  struct hg_rec *r = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  if (!r) return 0;
  if (r->queue && __atomic_load_n(&r->queue->lock, __ATOMIC_ACQUIRE)) return 1;
  /* a thread caught between a map update and its per-stack figures */
  for (unsigned i = 0; i < (1u << r->shard_bits); i++)
    if (__atomic_load_n(&r->shards[i].lock, __ATOMIC_ACQUIRE)) return 1;
  return 0;
}

uint64_t _hg_stacks_flush(void) {
  struct hg_rec *r = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  if (!r || !r->queue) return 0;
  _hg_rq_flush(r->queue, r);
  return _hg_rq_pending(r->queue); /* tickets of frozen threads, not filled */
}

void _hg_stacks_pause(int on) {
  struct hg_rec *r = __atomic_load_n(&_hg_rec_global, __ATOMIC_ACQUIRE);
  if (r && r->queue) __atomic_store_n(&r->queue->pause, on, __ATOMIC_RELEASE);
}

#define MAX_IMAGES 8192u
static uint32_t by_addr[MAX_IMAGES]; /* image indices sorted by load_addr */

static uint32_t sort_images(const struct hg_cap *c) {
  uint32_t n = (uint32_t)_hg_vec_len(&c->images);
  if (n > MAX_IMAGES) n = MAX_IMAGES;
  const struct hg_cimage *im = (const struct hg_cimage *)c->images.base;
  for (uint32_t i = 0; i < n; i++) { /* insertion sort: no qsort (it may malloc) */
    uint32_t j = i;
    while (j && im[by_addr[j - 1]].load_addr > im[i].load_addr) {
      by_addr[j] = by_addr[j - 1];
      j--;
    }
    by_addr[j] = i;
  }
  return n;
}

static struct hg_stack_frame frame_of(const struct hg_cap *c, uint32_t n, uintptr_t pc) {
  const struct hg_cimage *im = (const struct hg_cimage *)c->images.base;
  uint32_t lo = 0, hi = n; /* last image with load_addr <= pc */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (im[by_addr[mid]].load_addr <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo) {
    const struct hg_cimage *x = &im[by_addr[lo - 1]];
    if (pc - x->load_addr < x->size) return (struct hg_stack_frame){by_addr[lo - 1], pc - x->load_addr};
  }
  return (struct hg_stack_frame){HG_NO_OWNER, pc};
}

static uint32_t ids[16384];
#define LOOKAHEAD 16u /* live-map slots prefetched ahead of the node written */

/* Node i of segment s: its stack id (0 outside malloc segments), and the
 * live-map slot of the node LOOKAHEAD on started (each lookup is a cache
 * miss: prefetched ones overlap). */
static inline uint32_t node_stack(const struct hg_rec *r, const struct hg_cap *c, const struct hg_segment *s,
                                  uint32_t i) {
  return (s->flags & HG_NODE_MALLOC) ? _hg_rec_lookup(r, (uintptr_t)_hg_node_addr(c, s, i)) : 0;
}
static inline void node_prefetch(const struct hg_rec *r, const struct hg_cap *c, const struct hg_segment *s,
                                 uint32_t i) {
  if ((s->flags & HG_NODE_MALLOC) && i + LOOKAHEAD < s->first + s->count)
    _hg_rec_prefetch(r, (uintptr_t)_hg_node_addr(c, s, i + LOOKAHEAD));
}

uint32_t _hg_stacks_ahead(struct hg_cap *c, uint32_t n) {
  struct hg_rec *r = _hg_rec_global;
  if (!r || c->ids_off) return 0;
  if (!c->stack_ids.base && _hg_vec_init(&c->scratch, &c->stack_ids, 4, (size_t)UINT32_MAX)) {
    c->ids_off = 1;
    return 0;
  }
  const struct hg_segment *seg = (const struct hg_segment *)c->segments.base;
  size_t nseg = _hg_vec_len(&c->segments);
  uint32_t k = 0, i = c->ids_done;
  while (k < n && c->ids_seg < nseg) {
    const struct hg_segment *s = &seg[c->ids_seg];
    uint32_t end = s->first + s->count;
    if (i < s->first || i > end) { /* nodes are numbered through the segments in order */
      c->ids_off = 1;
      return 0;
    }
    uint32_t m = end - i < n - k ? end - i : n - k;
    if (!m) {
      c->ids_seg++;
      continue;
    }
    uint32_t *out = _hg_vec_push(&c->stack_ids, m);
    if (!out) {
      c->ids_off = 1; /* the scratch budget: _hg_stacks_write looks them up */
      _hg_vec_truncate(&c->stack_ids, 0);
      c->ids_done = 0;
      return 0;
    }
    for (uint32_t j = 0; j < m; j++, i++) {
      node_prefetch(r, c, s, i);
      out[j] = node_stack(r, c, s, i);
    }
    k += m;
    c->ids_done = i;
  }
  return k;
}

static const char *status_text(uint32_t s) {
  return s == 1 ? "budget-exhausted" : s == 2 ? "stopped" : "ok";
}

int _hg_stacks_write(struct hg_cap *c) {
  struct hg_rec *r = _hg_rec_global;
  if (!r) return 0;
  int rc;
  uint64_t map_b = 0;
  for (unsigned i = 0; i < HG_REC_SHARDS; i++) map_b += __atomic_load_n(&r->shards[i].cap, __ATOMIC_RELAXED) * 8;
  struct hg_stack_info si = {r->max_frames, r->sample_bytes, r->budget, _hg_rec_mem(r), map_b,
                             __atomic_load_n(&r->live, __ATOMIC_RELAXED),
                             __atomic_load_n(&r->dropped, __ATOMIC_RELAXED),
                             status_text(__atomic_load_n(&r->status, __ATOMIC_RELAXED)),
                             _hg_rec_unwinder};
  if ((rc = hg_writer_stack_info(c->w, &si))) return rc;
  uint32_t nim = sort_images(c), ns = _hg_rec_stack_count(r);
  struct hg_stack_frame fr[HG_REC_MAX_FRAMES];
  for (uint32_t id = 1; id <= ns; id++) {
    const struct hg_rec_stack *s = _hg_rec_stack(r, id);
    for (uint32_t k = 0; k < s->nframes; k++) fr[k] = frame_of(c, nim, s->frames[k]);
    const struct hg_rec_count *cnt = _hg_rec_count(r, id);
    uint64_t cfx = __atomic_load_n(&cnt->count_fx, __ATOMIC_RELAXED);
    struct hg_stack st = {(cfx + HG_REC_FX / 2) / HG_REC_FX, __atomic_load_n(&cnt->bytes, __ATOMIC_RELAXED),
                          s->nframes, fr};
    if ((rc = hg_writer_stack(c->w, &st))) return rc;
  }
  /* node i of the writer is the i-th node of the segments, in order */
  uint32_t total = _hg_node_count(c);
  uint32_t done = c->ids_off ? 0 : c->ids_done;
  const uint32_t *pre = (const uint32_t *)c->stack_ids.base;
  if (total == hg_writer_node_count(c->w)) {
    uint32_t fill = 0, first = 0;
    const struct hg_segment *seg = (const struct hg_segment *)c->segments.base;
    for (size_t si_ = 0; si_ < _hg_vec_len(&c->segments); si_++) {
      const struct hg_segment *s = &seg[si_];
      for (uint32_t i = s->first; i < s->first + s->count; i++) {
        /* most were looked up while the scan waited (_hg_stacks_ahead) */
        if (i + LOOKAHEAD >= done) node_prefetch(r, c, s, i);
        uint32_t id = i < done ? pre[i] : node_stack(r, c, s, i);
        ids[fill++] = id <= ns ? id : 0;
        if (fill == sizeof ids / sizeof ids[0]) {
          if ((rc = hg_writer_node_stacks(c->w, first, fill, ids))) return rc;
          first += fill;
          fill = 0;
        }
      }
    }
    if (fill && (rc = hg_writer_node_stacks(c->w, first, fill, ids))) return rc;
  }
  struct hg_large_alloc la[HG_LARGE_RING];
  uint32_t nl = _hg_large_collect(la, HG_LARGE_RING);
  for (uint32_t i = 0; i < nl; i++) {
    if (la[i].stack > ns) la[i].stack = 0;
    if ((rc = hg_writer_large_alloc(c->w, &la[i]))) return rc;
  }
  return 0;
}
