/*
 * platform.h — the small interface every capture backend implements
 * (capture/linux/, capture/darwin/). capture.c orders the steps;
 * these functions do the OS and allocator specific parts. All return 0 or a
 * negative HG_E* code and fill the vectors of struct hg_cap.
 *
 * Rules for implementers:
 *   - _before freeze_ functions may call malloc and take runtime locks;
 *   - everything after _hg_plat_freeze() and until _hg_plat_thaw() runs with
 *     other threads parked (maybe inside malloc): no malloc, no stdio, no
 *     locks another thread may hold; memory comes from capture scratch.
 *   - every read of process memory is validated with _hg_readable() first.
 */
#ifndef HG_CAPTURE_PLATFORM_H
#define HG_CAPTURE_PLATFORM_H

#include "capture/internal.h"

struct hg_cxx_set;
struct hg_cxx_discovery;
struct hg_watch_probe;

/* ---- before freeze (malloc allowed) ---- */

/* Registers, stack pointer and TLS of the calling thread, taken at
 * hg_capture() entry so that the capture's own frames are not scanned. */
void _hg_plat_self_context(struct hg_cthread *t);

/* Platform defaults and static facts: platform/arch/os strings into meta. */
void _hg_plat_describe(struct hg_meta *m);
/* Loaded images into c->images, their writable data into c->ranges. */
int _hg_plat_images(struct hg_cap *c);
/* Identifies the allocator and whatever needs runtime calls (probing).
 * Sets c->heap_status/heap_reason when the heap cannot be walked. */
int _hg_plat_heap_prepare(struct hg_cap *c);
/* Mode the platform uses for HG_MODE_DEFAULT. */
int _hg_plat_default_mode(void);
/* 1 if the calling thread is running a signal handler (hg_capture is not
 * async-signal-safe and refuses), 0 if not or not known on this platform. */
int _hg_plat_in_signal_handler(void);
/* C++ discovery (_hg_cxx_discover in classify_cxx.c, which zeroes d, times
 * it and seals the set): adds every loaded image's ranges and type_infos to
 * the set (cxxabi/cxxabi.h), counting into d. Takes the loader lock, reads
 * image memory. Linux: linux/elf_typeinfo.c (ELF), Darwin:
 * darwin/macho_typeinfo.c (Mach-O). 0 or a negative HG_E* code. */
int _hg_plat_cxx_images(struct hg_cxx_set *s, struct hg_cxx_discovery *d);
/* The memory-pressure watcher's probe (watch.h): footprint and pressure
 * samples. Linux: linux/watch_linux.c, Darwin: darwin/watch_darwin.c. */
const struct hg_watch_probe *_hg_watch_plat_probe(void);

/* ---- freeze / thaw ---- */

/* Parks every other thread, saving registers into c->threads (plus the
 * calling thread). HG_ETIMEOUT when one does not park in time (all are
 * released again before returning). */
int _hg_plat_freeze(struct hg_cap *c);
/* Releases the parked threads. Always safe to call after freeze. */
void _hg_plat_thaw(struct hg_cap *c);
/* 1 if an allocator lock is held by a parked thread (retry later). */
int _hg_plat_heap_busy(struct hg_cap *c);

/* ---- while frozen (no malloc) ---- */

/* VM regions into c->regions, sorted; marks stacks/images/own memory. */
int _hg_plat_regions(struct hg_cap *c);
/* After the heap walk: the regions' figures (Rss, dirty, swap) when
 * _hg_plat_regions left them for later (Linux fork mode reads them on the
 * helper thread during the walk). */
int _hg_plat_regions_finish(struct hg_cap *c);
/* Thread names, stack ranges (needs regions). */
int _hg_plat_threads_finish(struct hg_cap *c);
/* Walks the heap: segments and nodes (in address order) and the freelist
 * of blocks that look allocated but are cached free. HG_EUNSUPPORTED with
 * c->heap_reason when nothing could be walked. */
int _hg_plat_heap_walk(struct hg_cap *c);

/* ---- a helper thread (while frozen) ---- */

/* Runs fn(arg) on a second thread of the capturing process (or of the fork
 * child), if the platform can and hg_options.helpers allows. fn may do
 * nothing but read and write memory and call _hg_plat_wait/_wake/_yield:
 * no libc, no malloc, no TLS. One helper at a time; 0, or < 0 when there is
 * none (the caller then does the work itself). */
int _hg_plat_helper_start(struct hg_cap *c, void (*fn)(void *), void *arg);
/* Whether _hg_plat_helper_start can start one at all (platform, build,
 * hg_options.helpers): callers skip preparing work for it otherwise. */
int _hg_plat_helper_available(const struct hg_cap *c);
/* Waits until the helper's fn has returned. Safe to call when none runs. */
void _hg_plat_helper_join(struct hg_cap *c);
/* Sleeps while *addr == val (may wake spuriously); wakes one sleeper;
 * gives the core away (the other thread may be waiting for it). */
void _hg_plat_wait(volatile uint32_t *addr, uint32_t val);
void _hg_plat_wake(volatile uint32_t *addr);
void _hg_plat_yield(void);

/* ---- fork mode ---- */

/* Runs body(c) in a copy-on-write child of the frozen process; calls
 * _hg_plat_thaw() in the parent as soon as the child exists; waits for the
 * child and returns body's result. HG_EUNSUPPORTED if the platform cannot. */
int _hg_plat_fork_run(struct hg_cap *c, int (*body)(struct hg_cap *));
/* Whether _hg_plat_fork_run can fork here (1) or not (0): hg_capture
 * rejects an explicit HG_MODE_FORK at entry otherwise (HG_EUNSUPPORTED, no
 * file written). The Darwin backend never forks (a forked child inherits
 * no Mach port rights, and its walk needs the task's). */
int _hg_plat_can_fork(void);

#endif
