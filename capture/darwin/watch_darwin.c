/*
 * watch_darwin.c — the watcher's probe on Darwin: footprint =
 * phys_footprint from task_info(TASK_VM_INFO) (the number jetsam compares
 * with the app's limit); pressure = a DISPATCH_SOURCE_TYPE_MEMORYPRESSURE
 * source (warning or critical) on a global queue, latched until the next
 * sample and waking the watcher at once; available = what the app may still
 * use before its jetsam limit: os_proc_available_memory (os/proc.h, iOS 13+,
 * not on macOS), else TASK_VM_INFO limit_bytes_remaining (revision 4+,
 * mach/task_info.h); both are 0 without a limit (macOS, Simulator, daemons)
 * and over it, so a 0 counts only after a limit was seen (DP.limit, see
 * _hg_watch_set_available). Time is mach_absolute_time.
 */
#include <dispatch/dispatch.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <TargetConditionals.h>
#include <stdatomic.h>
#if TARGET_OS_IPHONE
#include <os/proc.h>
#endif

#include "capture/platform.h"
#include "capture/watch.h"

struct darwin_probe {
  dispatch_source_t source;
  _Atomic int pressure;
  mach_timebase_info_data_t tb;
  uint64_t limit; /* footprint + remaining at the last non-zero answer */
};
static struct darwin_probe DP;

static void on_pressure(void *ctx) {
  struct darwin_probe *p = ctx;
  unsigned long level = dispatch_source_get_data(p->source);
  if (level & (DISPATCH_MEMORYPRESSURE_WARN | DISPATCH_MEMORYPRESSURE_CRITICAL)) {
    atomic_store(&p->pressure, 1);
    _hg_watch_wake();
  }
}

static int dp_open(void *ctx, const struct hg_watch_options *o) {
  struct darwin_probe *p = ctx;
  mach_timebase_info(&p->tb);
  atomic_store(&p->pressure, 0);
  p->limit = 0;
  if (!o->on_pressure) return 0;
  p->source = dispatch_source_create(DISPATCH_SOURCE_TYPE_MEMORYPRESSURE, 0,
                                     DISPATCH_MEMORYPRESSURE_WARN | DISPATCH_MEMORYPRESSURE_CRITICAL,
                                     dispatch_get_global_queue(QOS_CLASS_UTILITY, 0));
  if (!p->source) return HG_EUNSUPPORTED;
  dispatch_set_context(p->source, p);
  dispatch_source_set_event_handler_f(p->source, on_pressure);
  dispatch_resume(p->source);
  return 0;
}

static void dp_close(void *ctx) {
  struct darwin_probe *p = ctx;
  if (p->source) {
    dispatch_source_cancel(p->source);
    dispatch_release(p->source);
    p->source = NULL;
  }
}

static uint64_t dp_now(void *ctx) {
  struct darwin_probe *p = ctx;
  uint64_t t = mach_absolute_time();
  if (!p->tb.denom) return t;
  return t / p->tb.denom * p->tb.numer + t % p->tb.denom * p->tb.numer / p->tb.denom;
}

static int dp_sample(void *ctx, struct hg_watch_sample *s) {
  struct darwin_probe *p = ctx;
  task_vm_info_data_t info;
  mach_msg_type_number_t count = TASK_VM_INFO_COUNT;
  int have_info = task_info(mach_task_self(), TASK_VM_INFO, (task_info_t)&info, &count) ==
                  KERN_SUCCESS;
  if (have_info && count >= TASK_VM_INFO_REV1_COUNT) s->footprint = info.phys_footprint;
#if TARGET_OS_IPHONE
  uint64_t os_avail = (uint64_t)os_proc_available_memory();
  int have_os = 1;
#else
  uint64_t os_avail = 0;
  int have_os = 0;
#endif
  _hg_watch_set_available(s, &p->limit, have_os, os_avail, have_info && count >= TASK_VM_INFO_REV4_COUNT,
                          have_info && count >= TASK_VM_INFO_REV4_COUNT ? info.limit_bytes_remaining
                                                                        : 0);
  s->pressure = atomic_exchange(&p->pressure, 0);
  return 0;
}

static const struct hg_watch_probe probe = {dp_open, dp_close, dp_now, dp_sample, &DP};

const struct hg_watch_probe *_hg_watch_plat_probe(void) { return &probe; }
