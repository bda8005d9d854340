/*
 * in_handler.c — whether the calling thread is running a signal handler
 * (_hg_plat_in_signal_handler, capture/platform.h)
 * (hg_capture is not async-signal-safe: from a handler that interrupted
 * malloc, its own malloc calls would deadlock on the arena lock or corrupt
 * the thread's tcache). Cheap enough to ask on every capture.
 *
 * Linux x86_64: a handler runs on a signal frame the kernel pushed onto the
 * thread's stack (or its alternate stack), whose first word is the return
 * address `sa_restorer` (glibc's __restore_rt; x86_64 requires one). We ask
 * the kernel for the restorers of the installed handlers (none installed:
 * no handler can be running), then look for one of them on the live stack
 * above our frame, confirmed by the frame's shape: the ucontext after it
 * has uc_link 0 and its fpregs pointer just above the frame (where the
 * kernel puts the FP state), and more signals blocked now than the frame
 * says were before the handler. Reads go through process_vm_readv (never a
 * fault). A handler running on the alternate stack is told by sigaltstack.
 * Other Linux architectures: not detected, returns 0 (Darwin: darwin/describe.c).
 */
#include "capture/platform.h"

#if defined(__x86_64__)
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

extern void *__libc_stack_end; /* ld.so: the main thread's initial stack top */

#define MAX_SCAN (8u << 20)
#define FRAME_FP_MAX (64u << 10) /* fpregs lies at most this far above the frame */

static int read_mem(uint64_t addr, void *out, size_t n) {
  struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* The kernel's frame: return address, ucontext (uc_flags, uc_link,
 * uc_stack: 3 words, sigcontext: 23 words then the fpstate pointer and 8
 * reserved, uc_sigmask: the mask before the handler). While a handler runs
 * its signal (and sa_mask) is blocked on top of that mask (unless
 * SA_NODEFER with an empty sa_mask: missed); a stale copy of a frame left
 * in reused stack memory would normally show today's mask unchanged. */
static int frame_at(uint64_t p, uint64_t blocked) {
  uint64_t w[39];
  if (read_mem(p, w, sizeof w)) return 0;
  uint64_t uc_link = w[2], fpregs = w[29], before = w[38];
  return uc_link == 0 && fpregs > p && fpregs - p < FRAME_FP_MAX && (blocked & before) == before &&
         blocked != before;
}

int _hg_plat_in_signal_handler(void) {
  stack_t ss;
  if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) return 1;
  uint64_t restorer[4];
  int nr = 0;
  for (int s = 1; s < 65; s++) {
    struct sigaction sa;
    if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa) != 0) continue;
    if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
      continue;
    uint64_t r = (uint64_t)(uintptr_t)sa.sa_restorer;
    int known = !r;
    for (int i = 0; i < nr; i++) known |= restorer[i] == r;
    if (!known && nr < 4) restorer[nr++] = r;
  }
  if (!nr) return 0; /* no handler installed: none can be running */
  sigset_t mask;
  if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0) return 0;
  uint64_t blocked = 0; /* the kernel's 64-signal mask */
  for (int s = 1; s < 65; s++)
    if (sigismember(&mask, s) == 1) blocked |= 1ull << (s - 1);
  uint64_t lo = (uint64_t)(uintptr_t)__builtin_frame_address(0);
  uint64_t hi = syscall(SYS_gettid) == getpid() ? (uint64_t)(uintptr_t)__libc_stack_end
                                                : (uint64_t)(uintptr_t)pthread_self();
  if (hi <= lo || hi - lo > MAX_SCAN) hi = lo + MAX_SCAN;
  uint64_t buf[512];
  for (uint64_t a = lo & ~7ull; a < hi; a += sizeof buf) {
    size_t n = hi - a < sizeof buf ? (size_t)(hi - a) & ~7u : sizeof buf;
    if (!n || read_mem(a, buf, n)) {
      /* the end of the mapping: read what is left word by word */
      size_t k = 0;
      while (k < n && read_mem(a + k, &buf[k / 8], 8) == 0) k += 8;
      n = k;
      hi = a + k;
    }
    for (size_t i = 0; i < n / 8; i++)
      for (int r = 0; r < nr; r++)
        if (buf[i] == restorer[r] && frame_at(a + 8 * i, blocked)) return 1;
  }
  return 0;
}
#else
int _hg_plat_in_signal_handler(void) { return 0; }
#endif
