/*
 * describe.c — the Darwin backend's static facts: platform, OS version,
 * architecture and process name; suspend mode as the default; no fork mode
 * (a forked child of a multithreaded Darwin process may not touch Mach
 * ports or libmalloc, so the frozen copy could not be walked safely).
 *
 * Runs before the freeze (sysctlbyname may take locks).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"

void _hg_plat_describe(struct hg_meta *m) {
  static char os[64];
  size_t n = sizeof os - 1;
  m->platform = "darwin";
#if defined(__aarch64__) || defined(__arm64__)
#if defined(__arm64e__)
  m->arch = "arm64e";
#else
  m->arch = "arm64";
#endif
#else
  m->arch = "x86_64";
#endif
  if (sysctlbyname("kern.osproductversion", os, &n, NULL, 0) == 0) {
    os[n < sizeof os ? n : sizeof os - 1] = 0;
    m->os_version = os;
  }
  m->process = getprogname();
}

int _hg_plat_default_mode(void) { return HG_MODE_SUSPEND; }

int _hg_plat_can_fork(void) { return 0; }

/* Not detected on Darwin yet (no signal-frame check): 0. */
int _hg_plat_in_signal_handler(void) { return 0; }

int _hg_plat_fork_run(struct hg_cap *c, int (*body)(struct hg_cap *)) {
  (void)body;
  _hg_plat_thaw(c);
  return HG_EUNSUPPORTED;
}
