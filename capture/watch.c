/*
 * watch.c — the memory-pressure watcher (public hg_watch_* API): the
 * portable policy (when to capture) and the watcher thread that samples the
 * platform probe, takes captures with hg_capture and calls the app back.
 *
 * The policy functions are pure (unit-tested with a fake clock); the thread
 * runs outside any capture, so it may malloc and use stdio.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/platform.h"
#include "capture/spool.h"
#include "capture/watch.h"

const struct hg_watch_probe *_hg_watch_probe_override;
int (*_hg_watch_capture_override)(const char *path, const struct hg_options *o);

/* ---------------------------------------------------------------- policy */

void _hg_watch_policy_init(struct hg_watch_policy *p, const struct hg_watch_options *o) {
  memset(p, 0, sizeof *p);
  p->threshold = o->footprint_threshold;
  p->avail_threshold = o->available_threshold;
  p->min_interval_ns = (uint64_t)o->min_interval_ms * 1000000u;
  p->max_captures = o->max_captures;
  p->on_pressure = o->on_pressure;
  p->limit_permille = o->version >= 2 ? o->limit_permille : 0;
}

uint32_t _hg_watch_decide(const struct hg_watch_policy *p, uint64_t now_ns,
                          const struct hg_watch_sample *s, int warning) {
  if (p->max_captures && p->captures >= p->max_captures) return HG_WATCH_NONE;
  if (p->have_last && now_ns - p->last_ns < p->min_interval_ns) return HG_WATCH_NONE;
  if (warning) return HG_WATCH_WARNING;
  if (p->on_pressure && s->pressure) return HG_WATCH_PRESSURE;
  if (p->threshold && s->footprint >= p->threshold) return HG_WATCH_FOOTPRINT;
  if (p->avail_threshold && s->have_available && s->available < p->avail_threshold)
    return HG_WATCH_LIMIT;
  if (p->limit_permille && s->limit &&
      s->usage >= s->limit / 1000u * p->limit_permille + s->limit % 1000u * p->limit_permille / 1000u)
    return HG_WATCH_LIMIT;
  return HG_WATCH_NONE;
}

void _hg_watch_set_available(struct hg_watch_sample *s, uint64_t *limit, int have_os,
                             uint64_t os_avail, int have_task, uint64_t task_remaining) {
  /* Both are xnu's memorystatus_available_memory_internal (bsd/kern/
   * kern_memorystatus.c): 0 when the process is not an app, has no limit
   * (macOS, the Simulator, daemons) or is over its limit. So 0 is "unknown"
   * unless a limit was seen: a non-zero answer before (*limit, kept by the
   * probe, = footprint + remaining then). */
  uint64_t avail = have_os && os_avail ? os_avail : have_task ? task_remaining : 0;
  s->have_available = 0;
  s->available = 0;
  if (avail) {
    s->have_available = 1;
    s->available = avail;
    *limit = s->footprint + avail;
  } else if ((have_os || have_task) && *limit) { /* over the limit seen */
    s->have_available = 1;
  }
}

void _hg_watch_fill_limit(struct hg_watch_sample *s) {
  if (s->limit || !s->have_available || !s->footprint) return;
  s->limit = s->footprint + s->available;
  s->usage = s->footprint;
}

void _hg_watch_record(struct hg_watch_policy *p, uint64_t now_ns) {
  p->have_last = 1;
  p->last_ns = now_ns;
  p->captures++;
}

const char *_hg_watch_trigger_name(uint32_t trigger) {
  switch (trigger) {
    case HG_WATCH_FOOTPRINT: return "footprint-threshold";
    case HG_WATCH_PRESSURE: return "memory-pressure";
    case HG_WATCH_WARNING: return "memory-warning";
    case HG_WATCH_LIMIT: return "memory-limit";
    default: return "watch";
  }
}

int _hg_watch_path(char *buf, size_t size, const char *dir, const char *prefix, int64_t pid,
                   uint64_t unix_ms, uint32_t seq) {
  int k = snprintf(buf, size, "%s/%s-%lld-%llu-%u.hgsnap", dir, prefix, (long long)pid,
                   (unsigned long long)unix_ms, seq);
  return k < 0 || (size_t)k >= size ? HG_ELIMIT : 0;
}

/* ---------------------------------------------------------------- thread */

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int running, stop, warning, wake;
  struct hg_watch_options o;
  char *dir, *prefix;
  const struct hg_watch_probe *probe;
  int attempts;
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

void hg_watch_options_init(struct hg_watch_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->version = HG_WATCH_OPTIONS_VERSION;
  o->events = 1;
  o->min_interval_ms = 60000;
  o->poll_interval_ms = 1000;
  o->psi_some_avg10 = 10;
  o->on_pressure = 1;
  o->prefix = "heapgraph";
}

void _hg_watch_wake(void) {
  pthread_mutex_lock(&W.lock);
  W.wake = 1;
  pthread_cond_broadcast(&W.cond);
  pthread_mutex_unlock(&W.lock);
}

/* A capture at the trigger: into the spool (when one is set: free-disk
 * guard first; afterwards gzip + tag + trim, the dropped count taken) or
 * dir, with the device metadata after the app's own key/values. */
static void capture_once(uint32_t trigger, uint32_t seq, const struct hg_watch_sample *smp) {
  char path[4096], queued[4400];
  path[0] = 0;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
  struct hg_spool *sp = W.o.version >= 2 ? W.o.spool : NULL;
  const char *dir = sp ? hg_spool_dir(sp) : W.dir;
  int rc = _hg_watch_path(path, sizeof path, dir, W.prefix, (int64_t)getpid(), ms, seq);
  struct hg_spool_stats ss = {0, 0, 0, 0};
  if (sp) hg_spool_stats(sp, &ss);
  if (rc == 0) {
    struct hg_options opt;
    if (W.o.capture) opt = *W.o.capture;
    else hg_options_init(&opt);
    opt.trigger = _hg_watch_trigger_name(trigger);
    /* every scratch array reserves up to scratch_limit of address space
     * (about ten of them): under RLIMIT_AS they must fit the headroom */
    if (smp->as_headroom && opt.scratch_limit > smp->as_headroom / 12)
      opt.scratch_limit = smp->as_headroom / 12 > 1 ? smp->as_headroom / 12 : 1;
    static struct _hg_device_kv dev; /* the watcher thread's only */
    static struct hg_kv kv[HG_DEVICE_KV + 64];
    size_t n = 0;
    for (size_t i = 0; opt.app && i < opt.app_count && n < 64; i++) kv[n++] = opt.app[i];
    _hg_device_collect(&dev, W.o.version >= 2 ? W.o.device : NULL, sp, opt.omit, smp->footprint,
                       smp->limit, ss.dropped);
    for (int i = 0; i < dev.n; i++) kv[n++] = dev.kv[i];
    opt.app = kv;
    opt.app_count = n;
    rc = _hg_watch_capture_override ? _hg_watch_capture_override(path, &opt) : hg_capture(path, &opt);
  }
  if (sp && (rc == 0 || rc == HG_EUNSUPPORTED)) {
    if (ss.dropped) _hg_spool_took_dropped(sp, ss.dropped);
    if (_hg_spool_add(sp, path, queued, sizeof queued) == 0 && strlen(queued) < sizeof path)
      memcpy(path, queued, strlen(queued) + 1);
  }
  if (W.o.callback) W.o.callback(path, rc, trigger, W.o.user);
}

/* The capture policy (with a spool: its state) and the spool's free-disk
 * guard; HG_POLICY_CAPTURE or why not. */
static int policy_allows(struct _hg_policy *pol, uint64_t now_ns) {
  struct hg_spool *sp = W.o.version >= 2 ? W.o.spool : NULL;
  const struct hg_policy_options *po = W.o.version >= 2 ? W.o.policy : NULL;
  const char *ver = W.o.version >= 2 && W.o.device && W.o.device->version == HG_DEVICE_INFO_VERSION
                        ? W.o.device->app_version : NULL;
  int v = HG_POLICY_CAPTURE;
  if (po && pol->o.once_per_session && pol->captured) return HG_POLICY_SESSION; /* no state file read */
  if (po) {
    int fg, batt, chg;
    _hg_device_get_state(&fg, &batt, &chg);
    uint64_t now_s = (uint64_t)time(NULL);
    uint32_t used = sp ? _hg_policy_count(sp, ver, pol->o.period_days, now_s) : 0;
    int sampled = _hg_policy_sampled(sp ? hg_spool_install_id(sp) : "", pol->o.sample_permille);
    v = _hg_policy_fire(pol, now_ns, used, sampled, batt, chg);
    if (v == HG_POLICY_CAPTURE && sp) _hg_policy_record(sp, ver, pol->o.period_days, now_s);
  }
  if (v == HG_POLICY_CAPTURE && sp && _hg_spool_free_bytes(sp) < sp->l.min_free_bytes) v = HG_POLICY_DISK;
  return v;
}

static void *watch_main(void *arg) {
  (void)arg;
  /* attach this thread to a malloc arena now, while there is address space:
   * a thread whose first malloc comes near RLIMIT_AS gets no arena heap
   * (64 MiB reserved) and every block mmapped on its own, which the glibc
   * layout probe cannot use (it read such a block after free unmapped it) */
  free(*(void *volatile *)&(void *){malloc(64)});
  const struct hg_watch_probe *pr = W.probe;
  struct hg_watch_policy pol;
  _hg_watch_policy_init(&pol, &W.o);
  static struct _hg_policy cp;
  _hg_policy_init(&cp, W.o.version >= 2 ? W.o.policy : NULL);
  int last_verdict = -1;
  uint32_t seq = 0;
  pthread_mutex_lock(&W.lock);
  while (!W.stop) {
    int warning = W.warning;
    W.warning = 0;
    W.wake = 0;
    pthread_mutex_unlock(&W.lock);

    struct hg_watch_sample s;
    memset(&s, 0, sizeof s);
    if (pr->sample) pr->sample(pr->ctx, &s);
    _hg_watch_fill_limit(&s);
    uint64_t now = pr->now_ns(pr->ctx);
    uint32_t t = _hg_watch_decide(&pol, now, &s, warning);
    int verdict = t != HG_WATCH_NONE ? policy_allows(&cp, now) : -1;
    if (verdict > HG_POLICY_WAIT_FIRES && verdict != last_verdict)
      fprintf(stderr, "heapgraph: watch: %s fired, no capture: %s\n", _hg_watch_trigger_name(t),
              _hg_policy_reason(verdict));
    if (verdict >= 0) last_verdict = verdict;
    if (verdict == HG_POLICY_CAPTURE) {
      _hg_watch_record(&pol, now);
      capture_once(t, ++seq, &s);
      pthread_mutex_lock(&W.lock);
      W.attempts++;
      pthread_mutex_unlock(&W.lock);
    }

    pthread_mutex_lock(&W.lock);
    if (W.stop || W.wake || W.warning) continue;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)W.o.poll_interval_ms * 1000000u;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    while (!W.stop && !W.wake && !W.warning)
      if (pthread_cond_timedwait(&W.cond, &W.lock, &until) == ETIMEDOUT) break;
  }
  pthread_mutex_unlock(&W.lock);
  return NULL;
}

int hg_watch_start(const struct hg_watch_options *o) {
  if (!o || (o->version != 1 && o->version != HG_WATCH_OPTIONS_VERSION)) return HG_EINVAL;
  int v2 = o->version >= 2;
  if ((!o->dir || !*o->dir) && !(v2 && o->spool)) return HG_EINVAL;
  if (v2 && o->policy && o->policy->version != HG_POLICY_OPTIONS_VERSION) return HG_EINVAL;
  pthread_mutex_lock(&W.lock);
  if (W.running) {
    pthread_mutex_unlock(&W.lock);
    return HG_EBUSY;
  }
  memset(&W.o, 0, sizeof W.o);
  /* a version-1 caller's struct ends at reserved[] */
  memcpy(&W.o, o, v2 ? sizeof *o : offsetof(struct hg_watch_options, reserved) + sizeof o->reserved);
  if (!W.o.poll_interval_ms) W.o.poll_interval_ms = 1000;
  W.dir = strdup(o->dir && *o->dir ? o->dir : hg_spool_dir(o->spool));
  W.prefix = strdup(o->prefix && *o->prefix ? o->prefix : "heapgraph");
  W.o.dir = W.dir;
  W.o.prefix = W.prefix;
  W.probe = _hg_watch_probe_override ? _hg_watch_probe_override : _hg_watch_plat_probe();
  W.stop = W.warning = W.wake = 0;
  W.attempts = 0;
  int rc = 0;
  if (!W.dir || !W.prefix) rc = HG_ENOMEM;
  if (!rc && W.probe->open) rc = W.probe->open(W.probe->ctx, &W.o);
  if (!rc && pthread_create(&W.thread, NULL, watch_main, NULL) != 0) {
    if (W.probe->close) W.probe->close(W.probe->ctx);
    rc = HG_ENOMEM;
  }
  if (rc) {
    free(W.dir);
    free(W.prefix);
    W.dir = W.prefix = NULL;
  } else {
    W.running = 1;
  }
  pthread_mutex_unlock(&W.lock);
  return rc;
}

int hg_watch_stop(void) {
  pthread_mutex_lock(&W.lock);
  if (!W.running || pthread_equal(pthread_self(), W.thread)) { /* not from the callback */
    pthread_mutex_unlock(&W.lock);
    return HG_EINVAL;
  }
  W.stop = 1;
  pthread_cond_broadcast(&W.cond);
  pthread_mutex_unlock(&W.lock);
  pthread_join(W.thread, NULL);
  pthread_mutex_lock(&W.lock);
  if (W.probe->close) W.probe->close(W.probe->ctx);
  free(W.dir);
  free(W.prefix);
  W.dir = W.prefix = NULL;
  W.running = 0;
  int n = W.attempts;
  pthread_mutex_unlock(&W.lock);
  return n;
}

int hg_watch_memory_warning(void) {
  pthread_mutex_lock(&W.lock);
  int rc = W.running ? 0 : HG_EINVAL;
  if (W.running) {
    W.warning = 1;
    pthread_cond_broadcast(&W.cond);
  }
  pthread_mutex_unlock(&W.lock);
  return rc;
}
