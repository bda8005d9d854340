/*
 * arena_lock.c — the capturing thread holds glibc's arena locks across the
 * freeze, so that no parked thread can be inside a locked malloc section
 * (Linux, glibc ptmalloc2 found by glibc_detect.c).
 *
 * glibc's fork() does the same in its atfork handler: it takes every arena
 * mutex, main_arena first and then along the `next` ring. We take them in
 * that order too, before any thread is parked. No deadlock is possible:
 * glibc never waits for one arena lock while it holds another (malloc,
 * free, realloc and malloc_trim hold one at a time; a new arena is locked
 * with no other arena lock held), fork() takes them in our order, and every
 * wait here is bounded by a deadline, after which all locks taken are
 * given back and the caller falls back to freezing and checking (a thread
 * that holds an arena lock forever — say its own signal handler re-entered
 * malloc — costs the budget, never a hang).
 *
 * The lock word is glibc's low-level lock (an int at offset 0 of
 * malloc_state, every version 2.26–2.43): 0 free, 1 taken, 2 taken with
 * waiters; unlocking swaps in 0 and wakes one waiter when it was 2. A
 * thread that loops realloc on big blocks releases its arena for only
 * nanoseconds between copies, so a sleeping waiter would lose the lock to
 * it every time: we mark the lock contended (2), so that the holder's
 * unlock goes into the kernel to wake a waiter (microseconds), and spin
 * reading the word meanwhile; the swap from 0 then wins almost always.
 * Spinning is bounded (SPIN_NS) and alternates with futex sleeps.
 *
 * While it holds them, the capturing thread blocks every signal but the
 * fault signals: a program's handler that calls malloc (not allowed by
 * POSIX, but common) would otherwise deadlock on a lock its own thread
 * holds, with every other thread waiting behind it.
 *
 * No malloc; reads of the arena ring go through process_vm_readv first.
 */
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

#define MAX_HELD 1024
#define SPIN_NS 2000000ull /* spin at most 2 ms at a time, then sleep 1 ms */

static uint64_t held[MAX_HELD]; /* used under the capture lock */
static uint32_t nheld;
static sigset_t saved_mask;
static int mask_saved;

static int readable_word(uint64_t addr, uint64_t *out) {
  struct iovec local = {out, sizeof *out}, remote = {(void *)(uintptr_t)addr, sizeof *out};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *out ? 0 : -1;
}

static long futex(_Atomic int *w, int op, int val, const struct timespec *ts) {
  return syscall(SYS_futex, (int *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

static int lock_one(_Atomic int *w, uint64_t deadline) {
  int zero = 0;
  if (atomic_compare_exchange_strong(w, &zero, 1)) return 0;
  for (;;) {
    uint64_t spin_end = _hg_now_ns() + SPIN_NS;
    if (spin_end > deadline) spin_end = deadline;
    for (uint32_t i = 0;; i++) {
      if (atomic_load_explicit(w, memory_order_relaxed) != 2 || (i & 255) == 0) {
        if (atomic_exchange(w, 2) == 0) return 0;
      }
      __builtin_ia32_pause();
      if ((i & 1023) == 0 && _hg_now_ns() > spin_end) break;
    }
    uint64_t now = _hg_now_ns();
    if (now > deadline) return -1;
    struct timespec ts = {0, 1000000};
    futex(w, FUTEX_WAIT, 2, &ts);
    if (atomic_exchange(w, 2) == 0) return 0;
  }
}

static void unlock_one(_Atomic int *w) {
  if (atomic_exchange(w, 0) == 2) futex(w, FUTEX_WAKE, 1, NULL);
}

void _hg_linux_arenas_unlock(void) {
  while (nheld) unlock_one((_Atomic int *)(uintptr_t)held[--nheld]);
  if (mask_saved) {
    mask_saved = 0;
    pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
  }
}

static void block_signals(void) {
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&all, faults[i]);
  if (pthread_sigmask(SIG_BLOCK, &all, &saved_mask) == 0) mask_saved = 1;
}

int _hg_linux_arenas_lock(uint64_t deadline) {
  const struct hg_glibc *G = &_hg_glibc;
  if (!G->ok || nheld) return G->ok ? 0 : -1;
  block_signals();
  uint64_t a = G->main_arena;
  for (uint32_t n = 0; n < MAX_HELD; n++) {
    uint64_t w;
    if (readable_word(a, &w) != 0) break; /* the walk reports the damage */
    if (lock_one((_Atomic int *)(uintptr_t)a, deadline) != 0) {
      _hg_linux_arenas_unlock();
      return -1;
    }
    held[nheld++] = a;
    uint64_t next;
    if (readable_word(a + G->off_next, &next) != 0 || !next || next == G->main_arena) return 0;
    a = next;
  }
  return 0;
}

int _hg_linux_arena_held(uint64_t arena) {
  for (uint32_t i = 0; i < nheld; i++)
    if (held[i] == arena) return 1;
  return 0;
}
