/*
 * watch.h — the memory-pressure watcher's internals: the portable policy
 * (watch.c), the platform probe each OS provides (capture/linux/watch_linux.c,
 * capture/darwin/watch_darwin.c), and test hooks.
 */
#ifndef HG_CAPTURE_WATCH_H
#define HG_CAPTURE_WATCH_H

#include <stdint.h>

#include "heapgraph.h"

struct hg_watch_sample {
  uint64_t footprint;       /* bytes (0 = unknown)                         */
  int pressure;             /* 1: the system reported memory pressure      */
  int have_available;       /* 1: available is known                       */
  uint64_t available;       /* bytes the app may still use before its limit */
  uint64_t limit, usage;    /* the nearest limit and the usage it counts
                               (0 = none known; Linux: cgroup, RLIMIT_AS) */
  uint64_t as_headroom;     /* RLIMIT_AS less the address space (0 = no
                               such limit): the capture's scratch reserves
                               address space, so it is cut to fit        */
};

struct hg_watch_policy {
  uint64_t threshold;       /* footprint bytes, 0 = off                    */
  uint64_t avail_threshold; /* available bytes, 0 = off                    */
  uint64_t min_interval_ns;
  uint32_t max_captures;    /* 0 = unlimited                               */
  int on_pressure;
  int have_last;
  uint64_t last_ns;         /* time of the last capture attempt            */
  uint32_t captures;
  uint32_t limit_permille;  /* 0 = off                                     */
};

void _hg_watch_policy_init(struct hg_watch_policy *p, const struct hg_watch_options *o);
/* The trigger (enum hg_watch_trigger) that fires now, or HG_WATCH_NONE:
 * explicit warning first, then pressure, then footprint, then available
 * memory below its threshold; none while the
 * interval since the last attempt has not passed or the limit is reached. */
uint32_t _hg_watch_decide(const struct hg_watch_policy *p, uint64_t now_ns,
                          const struct hg_watch_sample *s, int warning);
/* The app's remaining memory from what the OS said: os_proc_available_memory
 * (have_os) when non-zero, else TASK_VM_INFO limit_bytes_remaining
 * (have_task: the info had revision 4). Both say 0 for "no limit, not an
 * app, or over the limit": a 0 is known (0 bytes) only once a non-zero
 * answer showed a limit; *limit (the caller's, 0 at first) keeps that
 * limit (s->footprint + remaining). Sets s->available / have_available. */
void _hg_watch_set_available(struct hg_watch_sample *s, uint64_t *limit, int have_os,
                             uint64_t os_avail, int have_task, uint64_t task_remaining);
/* Without a limit from the probe (Darwin): footprint + available. */
void _hg_watch_fill_limit(struct hg_watch_sample *s);
/* Records an attempt at now_ns. */
void _hg_watch_record(struct hg_watch_policy *p, uint64_t now_ns);
/* Metadata trigger string of a watch trigger. */
const char *_hg_watch_trigger_name(uint32_t trigger);
/* DIR/PREFIX-PID-UNIXMS-SEQ.hgsnap into buf; 0, or HG_ELIMIT when too long. */
int _hg_watch_path(char *buf, size_t size, const char *dir, const char *prefix, int64_t pid,
                   uint64_t unix_ms, uint32_t seq);

/* What a platform provides. open/close bracket the watcher thread; sample
 * fills footprint and the pressure seen since the previous sample. */
struct hg_watch_probe {
  int (*open)(void *ctx, const struct hg_watch_options *o);
  void (*close)(void *ctx);
  uint64_t (*now_ns)(void *ctx);
  int (*sample)(void *ctx, struct hg_watch_sample *s);
  void *ctx;
};
/* The platform's probe: _hg_watch_plat_probe (capture/platform.h). */
/* Wakes the watcher thread early (a pressure event arrived). */
void _hg_watch_wake(void);

/* Test hooks: a fake probe, and a capture function replacing hg_capture. */
extern const struct hg_watch_probe *_hg_watch_probe_override;
extern int (*_hg_watch_capture_override)(const char *path, const struct hg_options *o);

/* Linux probe parsers (capture/linux/watch_linux.c), exposed for tests. */
int _hg_statm_resident_pages(const char *text, size_t n, uint64_t *pages);
/* "some avg10=12.34 …" -> 1234 (hundredths of a percent). 0 or -1. */
int _hg_psi_some_avg10(const char *text, size_t n, uint32_t *centi);
/* cgroup v2 memory.events: the sum of the "high", "max" and "oom" counts. */
int _hg_memory_events(const char *text, size_t n, uint64_t *sum);
/* The cgroup path of this process from /proc/self/cgroup text: the v2 line
 * ("0::PATH", v2 = 1) or else the v1 memory controller's ("N:memory:PATH",
 * v2 = 0). 0 or -1. */
int _hg_cgroup_path(const char *text, size_t n, char *path, size_t size, int *v2);

#endif
