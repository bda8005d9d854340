/*
 * thread_set.c — suspending every thread of a task until the set is
 * stable, as plain logic over four operations (list, suspend, resume,
 * release) so that the races are unit-tested on Linux with a fake task.
 *
 * The kernel may create threads at any moment (workqueue threads for
 * kevents and dispatch: xnu bsd/kern/kern_event.c, pthread_workqueue), so
 * one task_threads + thread_suspend pass is not enough: passes repeat until
 * one lists no thread outside the held set (every listed thread is then
 * suspended, and a suspended thread creates nothing). A thread that dies
 * between list and suspend is dropped. Past the deadline, or with more
 * threads than the table holds, every held thread is resumed and the
 * caller gets HG_ETIMEOUT / HG_ELIMIT. _hg_tset_changed, asked after each
 * zone's enumeration, tells whether the kernel made a thread meanwhile
 * (the walk is then redone: zone_policy.c _hg_zones_walk_stable).
 *
 * Pure: fixed caller-provided tables, no malloc.
 */
#include "capture/darwin_portable/darwin_portable.h"

static int held(const struct hg_tset *s, uint32_t id) {
  for (uint32_t i = 0; i < s->nheld; i++)
    if (s->held[i] == id) return 1;
  return 0;
}

int _hg_tset_pass(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx) {
  uint32_t n = 0;
  int rc = o->list(ctx, s->scratch, s->scratch_max, &n);
  s->passes++;
  if (rc) return rc;
  if (n > s->scratch_max) { /* list() released what did not fit */
    for (uint32_t i = 0; i < s->scratch_max; i++) o->release(ctx, s->scratch[i]);
    return HG_ELIMIT;
  }
  int added = 0;
  rc = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t t = s->scratch[i];
    int keep = 0;
    if (!rc && t != s->self && !held(s, t)) {
      if (s->nheld >= s->max) {
        rc = HG_ELIMIT;
      } else if (o->suspend(ctx, t) == 0) {
        s->held[s->nheld++] = t;
        keep = 1;
        added++;
      } /* else: the thread ended meanwhile */
    }
    if (!keep) o->release(ctx, t);
  }
  return rc ? rc : added;
}

void _hg_tset_thaw(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx) {
  for (uint32_t i = 0; i < s->nheld; i++) {
    o->resume(ctx, s->held[i]);
    o->release(ctx, s->held[i]);
  }
  s->nheld = 0;
}

int _hg_tset_freeze(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx, uint64_t deadline) {
  s->nheld = 0;
  s->passes = 0;
  for (;;) {
    int added = _hg_tset_pass(s, o, ctx);
    if (added < 0) {
      _hg_tset_thaw(s, o, ctx);
      return added;
    }
    if (added == 0) return 0; /* stable: nobody new since the last pass */
    if (o->now(ctx) > deadline) {
      _hg_tset_thaw(s, o, ctx);
      return HG_ETIMEOUT;
    }
  }
}

int _hg_tset_changed(struct hg_tset *s, const struct hg_tset_ops *o, void *ctx) {
  uint32_t n = 0;
  int rc = o->list(ctx, s->scratch, s->scratch_max, &n);
  s->passes++;
  if (rc) return rc;
  uint32_t kept = n < s->scratch_max ? n : s->scratch_max;
  int changed = n > s->scratch_max; /* more threads than we can hold: not ours */
  for (uint32_t i = 0; i < kept; i++) {
    uint32_t t = s->scratch[i];
    if (t != s->self && !held(s, t)) changed = 1;
    o->release(ctx, t);
  }
  return changed;
}
