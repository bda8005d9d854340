/*
 * helper.c — the Darwin backend has no helper thread yet: a thread made
 * while every other thread is suspended would have to come from
 * pthread_create (locks a suspended thread may hold) or a raw Mach thread
 * without a pthread (libsystem calls on it are unsafe). The portable code
 * then does the work on the capturing thread. A pre-created pthread,
 * excluded from the suspension, is the way to add one.
 */
#include "capture/platform.h"

int _hg_plat_helper_available(const struct hg_cap *c) {
  (void)c;
  return 0;
}

int _hg_plat_helper_start(struct hg_cap *c, void (*fn)(void *), void *arg) {
  (void)c, (void)fn, (void)arg;
  return HG_EUNSUPPORTED;
}

void _hg_plat_helper_join(struct hg_cap *c) { (void)c; }

void _hg_plat_wait(volatile uint32_t *addr, uint32_t val) { (void)addr, (void)val; }

void _hg_plat_wake(volatile uint32_t *addr) { (void)addr; }

void _hg_plat_yield(void) {}
