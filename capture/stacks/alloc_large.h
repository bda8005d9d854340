/*
 * alloc_large.h — the large-allocation monitor (portable): every allocation
 * at or above a threshold is pushed, with its stack, into a bounded ring by
 * the allocating thread (no lock-free-breaking call, no malloc), and a
 * monitor thread hands it to the user's callback. The ring's last
 * HG_LARGE_RING events go into the next snapshot (record 15).
 */
#ifndef HG_ALLOC_LARGE_H
#define HG_ALLOC_LARGE_H

#include <stdint.h>

#include "capture/stacks/alloc_record.h"
#include "heapgraph.h"

#define HG_LARGE_RING 256u

/* Maps the ring and starts the monitor thread (fn NULL: a line on stderr).
 * Call outside malloc (it creates a thread). 0 or HG_ENOMEM. */
int _hg_large_start(uint64_t threshold, hg_large_fn fn, void *user);
/* Threshold in bytes, 0 when the monitor is off. */
extern uint64_t _hg_large_threshold;
/* From the allocating thread: records one event (never blocks on the
 * callback; the wake-up is a condition signal). */
void _hg_large_push(uint64_t addr, uint64_t size, uint32_t stack, const uintptr_t *frames,
                    uint32_t n);
/* Copies the ring's events, oldest first, into out (at most cap). */
uint32_t _hg_large_collect(struct hg_large_alloc *out, uint32_t cap);
/* Events reported to the callback so far, and events overwritten before the
 * monitor saw them. */
uint64_t _hg_large_reported(void);
uint64_t _hg_large_lost(void);

#endif
