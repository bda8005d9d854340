/*
 * helper.c — one helper thread for the frozen part of a capture (Linux).
 *
 * The capture may hand work to a second core while the heap is frozen: in
 * the forked child (a one-thread process) or in suspend mode (every other
 * thread parked). pthread_create is not usable there — it may malloc and
 * take locks a parked thread holds — so the thread is made with clone() on
 * a stack from capture scratch (counted in the budget), with every signal
 * blocked (an application signal must never run a handler on it). It shares
 * the creator's TLS, so the code it runs must not touch TLS or libc: plain
 * memory reads/writes and _hg_plat_wait/_hg_plat_wake/_hg_plat_yield, which
 * use raw system calls (no errno). It is always joined before its stack goes away.
 *
 * Not available under AddressSanitizer (its instrumentation keeps
 * per-thread state in TLS) or on other architectures: the caller then does
 * the work itself. Never calls malloc.
 */
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HG_NO_HELPER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HG_NO_HELPER 1
#endif
#if !defined(__x86_64__) && !defined(__aarch64__)
#define HG_NO_HELPER 1
#endif

#define STACK_BYTES (64u * 1024u)

long _hg_linux_syscall4(long nr, long a, long b, long c, long d) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
#else
  (void)nr, (void)a, (void)b, (void)c, (void)d;
  return -38; /* -ENOSYS */
#endif
}

static long raw_futex(volatile uint32_t *addr, int op, uint32_t val) {
  return _hg_linux_syscall4(SYS_futex, (long)(uintptr_t)addr, op, (long)val, 0); /* no timeout */
}

void _hg_plat_yield(void) { _hg_linux_syscall4(SYS_sched_yield, 0, 0, 0, 0); }

void _hg_plat_wait(volatile uint32_t *addr, uint32_t val) {
  raw_futex(addr, FUTEX_WAIT_PRIVATE, val);
}

void _hg_plat_wake(volatile uint32_t *addr) { raw_futex(addr, FUTEX_WAKE_PRIVATE, 1); }

static struct {
  volatile uint32_t tid;  /* cleared (and woken) by the kernel at exit     */
  void (*fn)(void *);
  void *arg;
  long apart;             /* the creator's CPU when it started the helper, or -1 */
  volatile long ran_on;   /* the helper's CPU after move_apart(), or -1        */
} hp = {.apart = -1, .ran_on = -1}; /* one capture at a time (capture lock), one helper at a time */

#ifndef HG_NO_HELPER
static long current_cpu(void) {
  unsigned cpu = 0;
  return _hg_linux_syscall4(SYS_getcpu, (long)(uintptr_t)&cpu, 0, 0, 0) == 0 ? (long)cpu : -1;
}

/* Keeps the helper off the CPU its creator runs on. A new thread starts
 * where the scheduler finds room; with every CPU busy (the app's other
 * threads, another process) that is often its creator's CPU, and a pair of
 * runnable threads on one CPU against one on the other is balanced in the
 * load balancer's eyes, so the two would share one core for the whole
 * capture (issue 33: helper / one core 0.97-1.12 with the other core busy).
 * Only the helper's own mask changes, and it dies at the join; without
 * another allowed CPU, or when a call fails, it stays where it is. Raw
 * system calls: it runs on the helper. */
static void move_apart(void) {
  if (hp.apart < 0) return;
  unsigned long mask[16] = {0};
  long n = _hg_linux_syscall4(SYS_sched_getaffinity, 0, (long)sizeof mask, (long)(uintptr_t)mask, 0);
  if (n <= 0 || hp.apart >= n * 8) return;
  mask[hp.apart / 64] &= ~(1ul << (hp.apart % 64));
  int any = 0;
  for (long k = 0; k < n / 8; k++) any |= mask[k] != 0;
  if (any) _hg_linux_syscall4(SYS_sched_setaffinity, 0, n, (long)(uintptr_t)mask, 0);
}

static int trampoline(void *unused) {
  (void)unused;
  move_apart();
  hp.ran_on = current_cpu();
  hp.fn(hp.arg);
  return 0; /* glibc's clone() ends the thread with SYS_exit */
}
#endif

int _hg_plat_helper_available(const struct hg_cap *c) {
#ifdef HG_NO_HELPER
  (void)c;
  return 0;
#else
  return c->opt && c->opt->helpers != 0;
#endif
}

int _hg_plat_helper_start(struct hg_cap *c, void (*fn)(void *), void *arg) {
#ifdef HG_NO_HELPER
  (void)c, (void)fn, (void)arg;
  return HG_EUNSUPPORTED;
#else
  if (hp.tid) return HG_EINTERNAL;
  if (!_hg_plat_helper_available(c)) return HG_EUNSUPPORTED;
  struct hg_vec *stk = &c->helper_stack; /* one per capture, reused */
  if (!stk->base && _hg_vec_init(&c->scratch, stk, 1, STACK_BYTES)) return HG_ENOMEM;
  if (!stk->used && !_hg_vec_push(stk, STACK_BYTES)) return HG_ENOMEM;
  hp.fn = fn;
  hp.arg = arg;
  hp.apart = current_cpu();
  hp.ran_on = -1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the helper */
  hp.tid = 1;
  int tid = clone(trampoline, stk->base + STACK_BYTES,
                  CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                      CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
                  NULL, (pid_t *)&hp.tid, NULL, (pid_t *)&hp.tid);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (tid <= 0) {
    hp.tid = 0;
    return HG_EUNSUPPORTED;
  }
  return 0;
#endif
}

void _hg_linux_helper_cpus(long *creator, long *helper) {
  *creator = hp.apart;
  *helper = hp.ran_on;
}

void _hg_plat_helper_join(struct hg_cap *c) {
  (void)c;
  for (;;) {
    uint32_t t = hp.tid;
    if (!t) break;
    raw_futex(&hp.tid, FUTEX_WAIT, t); /* CLEARTID wakes shared, not private */
  }
}
