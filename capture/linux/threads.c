/*
 * threads.c — parking and releasing the other threads of the process, and
 * their registers, stack and TLS ranges (Linux, x86_64).
 *
 * Each thread is sent a signal (tgkill); the handler saves the interrupted
 * registers (general purpose + XMM) into a slot of a persistent mmap'd
 * table, reports itself parked and waits on a futex until released. New
 * threads are found by re-listing /proc/self/task until the list is stable.
 * A thread that does not park within the time limit aborts the freeze and
 * every thread is released. The handler stays installed after the first
 * capture (a late, pending signal must never hit the default action, which
 * would kill the process); outside a capture it returns at once, and a
 * signal no capture sent (a kill from outside, the program's own raise) is
 * passed on to the disposition it replaced (ignored, or the default action
 * restored and the signal re-sent: the program dies as it would have).
 * Only SIGUSR1/2 and SIGRTMIN…SIGRTMAX are taken, and never from a
 * handler the program installed (capture/signal_names.h, setup).
 *
 * Never calls malloc: the handler is async-signal-safe; the capturing side
 * uses raw syscalls (getdents64, tgkill, futex) and capture scratch.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"
#include "capture/root_clip.h"
#include "capture/signal_names.h"

#define MAX_SLOTS 8192u
#define TCB_BYTES 2304u   /* covers struct pthread (TCB) on x86_64 glibc    */

struct slot {
  _Atomic uint64_t tid;
  _Atomic uint32_t parked_gen;
  uint32_t gone;
  uint32_t nregs;
  uint64_t sp, tcb;
  uint64_t regs[HG_MAX_REGS];
};

static struct slot *slots;
static _Atomic uint32_t nslots, active_gen, release_gen, in_handler, parked_count;
static uint32_t gen_counter;
static size_t tls_static_size;
static int tls_probed;

void _hg_linux_slots_range(uint64_t *lo, uint64_t *hi) {
  *lo = (uint64_t)(uintptr_t)slots;
  *hi = slots ? *lo + MAX_SLOTS * sizeof(struct slot) : 0;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static void save_regs(struct slot *s, const ucontext_t *uc) {
  uint32_t n = 0;
  for (int i = 0; i < NGREG && n < HG_MAX_REGS; i++) s->regs[n++] = (uint64_t)uc->uc_mcontext.gregs[i];
  if (uc->uc_mcontext.fpregs) {
    const struct _libc_fpstate *fp = uc->uc_mcontext.fpregs;
    for (int i = 0; i < 16 && n + 2 <= HG_MAX_REGS; i++) {
      uint64_t lo, hi;
      memcpy(&lo, &fp->_xmm[i].element[0], 8);
      memcpy(&hi, &fp->_xmm[i].element[2], 8);
      s->regs[n++] = lo;
      s->regs[n++] = hi;
    }
  }
  s->nregs = n;
  s->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
}

static int prev_ignored[65]; /* the disposition we replaced was SIG_IGN */
/* park signals sent and not yet handled (a real-time one queues; a standard
 * one coalesces, so this may stay above 0: then a program's own raise() of
 * it is swallowed, never the other way round) */
static _Atomic uint32_t signals_due;

/* A park signal that did not come from a capture (another process's kill,
 * a program's raise): handled as before we took the signal over — ignored,
 * or the default action (the program dies as it would have). */
static void pass_on(int sig) {
  if (prev_ignored[sig]) return;
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  sigaction(sig, &d, NULL);
  syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig); /* delivered on return */
}

static void handler(int sig, siginfo_t *si, void *uctx) {
  int saved_errno = errno;
  /* ours: sent by this process with tgkill, and one of ours still due */
  int ours = si && si->si_code == SI_TKILL && si->si_pid == getpid();
  if (ours) {
    uint32_t due = atomic_load(&signals_due);
    while (due && !atomic_compare_exchange_weak(&signals_due, &due, due - 1)) {
    }
    ours = due != 0;
  }
  if (!ours) {
    pass_on(sig);
    errno = saved_errno;
    return;
  }
  atomic_fetch_add(&in_handler, 1);
  uint32_t gen = atomic_load(&active_gen);
  if (gen && slots) {
    uint64_t tid = (uint64_t)syscall(SYS_gettid);
    uint32_t n = atomic_load(&nslots);
    struct slot *s = NULL;
    for (uint32_t i = 0; i < n; i++)
      if (atomic_load(&slots[i].tid) == tid) s = &slots[i];
    if (s && atomic_load(&s->parked_gen) != gen) {
      save_regs(s, uctx);
      s->tcb = (uint64_t)pthread_self();
      atomic_store(&s->parked_gen, gen);
      atomic_fetch_add(&parked_count, 1);
      futex(&parked_count, FUTEX_WAKE_PRIVATE, 1, NULL);
      for (;;) {
        uint32_t r = atomic_load(&release_gen);
        if (r == gen || atomic_load(&active_gen) != gen) break;
        struct timespec ts = {0, 100000000};
        futex(&release_gen, FUTEX_WAIT_PRIVATE, r, &ts);
      }
    }
  }
  atomic_fetch_sub(&in_handler, 1);
  errno = saved_errno;
}

static int setup(int sig) {
  if (!slots) {
    void *m = mmap(NULL, MAX_SLOTS * sizeof(struct slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return HG_ENOMEM;
    madvise(m, MAX_SLOTS * sizeof(struct slot), MADV_DONTDUMP);
    slots = m;
  }
  if (!_hg_signal_usable(sig)) return HG_EINVAL; /* capture/signal_names.h */
  /* asked every capture: the program may have changed it since */
  struct sigaction sa, old;
  if (sigaction(sig, NULL, &old) != 0) return HG_EINVAL;
  if (!((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == handler)) {
    /* never take over a handler of the program's (or the agent's) */
    if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
      return HG_EINVAL;
    prev_ignored[sig] = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) return HG_EINVAL;
  }
  if (!tls_probed) { /* dlsym takes the loader lock: before anyone parks */
    void (*get)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
    size_t size = 0, align = 0;
    if (get) get(&size, &align);
    tls_static_size = size;
    tls_probed = 1;
  }
  return 0;
}

/* ---- /proc/self/task without opendir (which mallocs) ---- */

struct dirent64_raw {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

int _hg_linux_list_tids(void (*fn)(void *arg, uint64_t tid), void *arg) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return HG_EIO;
  char buf[4096] __attribute__((aligned(8)));
  for (;;) {
    long k = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (k <= 0) break;
    for (long pos = 0; pos < k;) {
      struct dirent64_raw *d = (struct dirent64_raw *)(buf + pos);
      uint64_t tid = 0;
      int ok = d->name[0] != 0;
      for (const char *p = d->name; *p; p++) {
        if (*p < '0' || *p > '9') ok = 0;
        else tid = tid * 10 + (uint64_t)(*p - '0');
      }
      if (ok) fn(arg, tid);
      pos += d->reclen;
    }
  }
  close(fd);
  return 0;
}

struct freeze_pass {
  uint64_t self;
  int sig;
  uint32_t added;
  int overflow;
};

static void add_tid(void *arg, uint64_t tid) {
  struct freeze_pass *p = arg;
  if (tid == p->self) return;
  uint32_t n = atomic_load(&nslots);
  for (uint32_t i = 0; i < n; i++)
    if (atomic_load(&slots[i].tid) == tid) return;
  if (n >= MAX_SLOTS) {
    p->overflow = 1;
    return;
  }
  struct slot *s = &slots[n];
  atomic_store(&s->parked_gen, 0);
  s->gone = 0;
  s->nregs = 0;
  atomic_store(&s->tid, tid);
  atomic_store(&nslots, n + 1);
  atomic_fetch_add(&signals_due, 1);
  if (syscall(SYS_tgkill, getpid(), (pid_t)tid, p->sig) != 0) {
    s->gone = 1;
    atomic_fetch_sub(&signals_due, 1);
  }
  p->added++;
}

/* Not parked yet: re-sent the signal (`resend`), since a thread running
 * flat out in user space can sit on a pending signal for a long time. */
static int all_parked(uint32_t gen, int sig, int resend) {
  uint32_t n = atomic_load(&nslots);
  int done = 1;
  for (uint32_t i = 0; i < n; i++) {
    struct slot *s = &slots[i];
    if (s->gone || atomic_load(&s->parked_gen) == gen) continue;
    if (resend) atomic_fetch_add(&signals_due, 1);
    if (syscall(SYS_tgkill, getpid(), (pid_t)s->tid, resend ? sig : 0) != 0 && errno == ESRCH) {
      s->gone = 1; /* exited before it could park */
      continue;
    }
    done = 0;
  }
  return done;
}

static void release(uint32_t gen) {
  atomic_store(&release_gen, gen);
  futex(&release_gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
  atomic_store(&active_gen, 0);
  _hg_linux_arenas_unlock(); /* the threads waiting for them may run on */
  /* No waiting for the handlers to return: on a busy machine the released
   * threads may need many time slices to get there, and nothing depends on
   * it (a handler still running sees release_gen == its gen, or a newer
   * active_gen, and leaves; the slot table is never unmapped). */
}

static uint32_t cur_gen;

__attribute__((noinline)) void _hg_plat_self_context(struct hg_cthread *t) {
  ucontext_t uc;
  getcontext(&uc);
  struct slot tmp;
  memset(&tmp, 0, sizeof tmp);
  save_regs(&tmp, &uc);
  memset(t, 0, sizeof *t);
  t->tid = (uint64_t)syscall(SYS_gettid);
  t->self = 1;
  /* the caller's stack pointer at the call: our own locals are not scanned */
  t->sp = (uint64_t)(uintptr_t)__builtin_frame_address(0) + 16;
  t->nregs = tmp.nregs;
  memcpy(t->regs, tmp.regs, sizeof t->regs);
  uint64_t tcb = (uint64_t)pthread_self();
  t->tls_lo = tcb;
  t->tls_hi = tcb + TCB_BYTES;
}

static void self_thread(struct hg_cap *c, uint64_t self) {
  struct hg_cthread *t = _hg_vec_push(&c->threads, 1);
  if (!t) return;
  *t = c->self;
  t->tid = self;
  t->tls_lo = t->tls_hi - TCB_BYTES - tls_static_size;
}

int _hg_plat_freeze(struct hg_cap *c) {
  int sig = c->opt->suspend_signal ? c->opt->suspend_signal : SIGRTMIN + HG_PARK_SIGNAL_OFFSET;
  int rc = setup(sig);
  if (rc) return rc;
  uint64_t budget = (uint64_t)(c->opt->freeze_timeout_ms ? c->opt->freeze_timeout_ms : 2000) * 1000000u;
  /* arena locks first (arena_lock.c), within the first half of the capture's
   * freeze budget; without them the caller checks and re-freezes */
  _hg_linux_arenas_lock(c->t_start + budget / 2);
  if (++gen_counter == 0) gen_counter = 1;
  uint32_t gen = cur_gen = gen_counter;
  atomic_store(&nslots, 0);
  atomic_store(&parked_count, 0);
  atomic_store(&active_gen, gen);
  _hg_vec_truncate(&c->threads, 0);
  struct freeze_pass p = {(uint64_t)syscall(SYS_gettid), sig, 0, 0};
  uint64_t deadline = _hg_now_ns() + budget;
  for (;;) {
    p.added = 0;
    if (_hg_linux_list_tids(add_tid, &p) != 0 || p.overflow) {
      release(gen);
      return p.overflow ? HG_ELIMIT : HG_EIO;
    }
    /* A signal sent is never lost (a real-time one is even queued once per
     * send, and each extra one would interrupt the thread's sleep again
     * later): re-sent only after ~100 ms without parking. */
    for (uint32_t round = 1; !all_parked(gen, sig, round % 1000 == 0); round++) {
      if (_hg_now_ns() > deadline) {
        release(gen);
        return HG_ETIMEOUT;
      }
      uint32_t seen = atomic_load(&parked_count);
      struct timespec ts = {0, 100000};
      futex(&parked_count, FUTEX_WAIT_PRIVATE, seen, &ts);
    }
    if (p.added == 0) break;
  }
  self_thread(c, p.self);
  uint32_t n = atomic_load(&nslots);
  for (uint32_t i = 0; i < n; i++) {
    struct slot *s = &slots[i];
    if (s->gone) continue;
    struct hg_cthread *t = _hg_vec_push(&c->threads, 1);
    if (!t) {
      release(gen);
      return HG_ENOMEM;
    }
    t->tid = s->tid;
    t->sp = s->sp;
    t->nregs = s->nregs;
    memcpy(t->regs, s->regs, sizeof t->regs);
    t->tls_lo = s->tcb - tls_static_size;
    t->tls_hi = s->tcb + TCB_BYTES;
  }
  return 0;
}

void _hg_plat_thaw(struct hg_cap *c) {
  (void)c;
  if (cur_gen && atomic_load(&active_gen) == cur_gen) release(cur_gen);
}

static size_t put_dec(char *p, uint64_t v) {
  char digits[24];
  size_t k = 0, n = 0;
  do digits[k++] = (char)('0' + v % 10); while ((v /= 10) && k < 23);
  while (k) p[n++] = digits[--k];
  return n;
}

/* Names come from the captured process (in fork mode the child's own
 * /proc/self has only the child). */
static void read_name(struct hg_cthread *t, uint64_t pid) {
  char path[80] = "/proc/";
  size_t n = strlen(path);
  n += put_dec(path + n, pid);
  memcpy(path + n, "/task/", 6);
  n += 6;
  n += put_dec(path + n, t->tid);
  memcpy(path + n, "/comm", 6);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t r = read(fd, t->name, sizeof t->name - 1);
  close(fd);
  if (r <= 0) r = 0;
  t->name[r] = 0;
  char *nl = memchr(t->name, '\n', (size_t)r);
  if (nl) *nl = 0;
}

/* A thread that exited leaves its stack to glibc's cache of stacks for
 * reuse (nptl/allocatestack.c, up to 40 MiB of them), or mapped until it
 * is joined. Each stack block [mem, mem + size) has its guard at the
 * bottom and the thread descriptor at the top,
 * pd = (mem + size - TLS_TCB_SIZE) & ~static_tls_align_m1, whose tcbhead_t
 * has tcb (word 0) and self (word 2) pointing at pd itself, and whose
 * stackblock and stackblock_size (two adjacent words, nptl/descr.h) are mem
 * and size. When a descriptor is no live thread's, everything below it in
 * its block (the dead thread's frames and static TLS) is stale: it holds
 * addresses of blocks that thread once handled, which conservatively
 * rooted a leaked block at a reused address (issue 26: tcmalloc, jemalloc).
 * That range is not scanned for roots (c->not_roots); the descriptor is (an
 * unjoined thread's result, its dtv). The blocks of one anonymous mapping
 * are followed from its top down through stackblock: up to glibc 2.41 each
 * block is a mapping of its own above a PROT_NONE guard mapping; from 2.42
 * on Linux 6.13+ guards are MADV_GUARD_INSTALL ranges and adjacent stacks
 * share one mapping. Only resident pages are read (a guard page never is). */
#define PD_SEARCH 8192u  /* from a block's end: TLS_TCB_SIZE + alignment */
#define PD_WORDS 512u    /* words of the descriptor searched for stackblock */

HG_NO_ASAN static uint64_t find_pd(uint64_t lo, uint64_t top) {
  for (uint64_t page = (top - 1) & ~(uint64_t)4095; page >= lo && page + PD_SEARCH >= top; page -= 4096) {
    uint64_t a = page, end;
    if (!_hg_next_resident(&a, page + 4096, &end) || a != page) continue;
    uint64_t hi = page + 4096 < top ? page + 4096 : top;
    for (uint64_t pd = (hi - 24) & ~(uint64_t)63; pd >= page; pd -= 64) {
      const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)pd;
      if (w[0] == pd && w[2] == pd) return pd;
    }
  }
  return 0;
}

/* mem of pd's block that ends at top (stackblock + stackblock_size == top),
 * or 0 */
HG_NO_ASAN static uint64_t block_start(uint64_t pd, uint64_t top) {
  const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)pd;
  for (uint32_t k = 3; k + 1 < PD_WORDS && pd + 8 * (k + 2) <= top; k++) {
    uint64_t mem = w[k], size = w[k + 1];
    if (mem < pd && size >= 16384 && !(size & 4095) && mem + size == top) return mem;
  }
  return 0;
}

static int live_tcb(const struct hg_cap *c, uint64_t pd) {
  for (size_t i = 0; i < _hg_vec_len(&c->threads); i++) {
    const struct hg_cthread *t = _hg_vec_at(&c->threads, i);
    if (t->tls_hi - TCB_BYTES == pd) return 1;
  }
  return 0;
}

static int not_roots(struct hg_cap *c, uint64_t lo, uint64_t hi) {
  struct hg_crange *g = _hg_vec_push(&c->not_roots, 1);
  if (!g) return HG_ENOMEM;
  *g = (struct hg_crange){lo, hi, HG_ROOT_OTHER, HG_NO_OWNER};
  c->dead_stacks++;
  return 0;
}

static int dead_stacks(struct hg_cap *c, size_t ri) {
  const struct hg_cregion *r = _hg_vec_at(&c->regions, ri);
  if (r->kind != HG_RK_OTHER || !(r->flags & HG_RF_ANON) || _hg_region_untouched(r) ||
      (r->prot & (HG_PROT_READ | HG_PROT_WRITE | HG_PROT_SHARED)) != (HG_PROT_READ | HG_PROT_WRITE) ||
      r->end - r->start <= PD_SEARCH)
    return 0;
  const struct hg_cregion *g = ri ? _hg_vec_at(&c->regions, ri - 1) : NULL;
  int guard_below = g && g->end == r->start && !(g->prot & (HG_PROT_READ | HG_PROT_WRITE | HG_PROT_EXEC));
  uint64_t top = r->end;
  while (top - r->start > PD_SEARCH) {
    uint64_t pd = find_pd(r->start, top);
    if (!pd) return 0;
    uint64_t mem = block_start(pd, top);
    int live = live_tcb(c, pd);
    if (!mem) { /* no stackblock found: only a block that is the whole mapping */
      return !live && top == r->end && guard_below ? not_roots(c, r->start, pd) : 0;
    }
    int rc = live ? 0 : not_roots(c, mem > r->start ? mem : r->start, pd);
    if (rc || mem <= r->start) return rc;
    top = mem;
  }
  return 0;
}

/* Stack and TLS ranges, kept off the dead stack below SP less the red zone
 * (capture/root_clip.c); the TLS range becomes a root range (c->ranges),
 * so that the scan of other anonymous memory skips it too (the main
 * thread's TLS lies in such memory). */
int _hg_plat_threads_finish(struct hg_cap *c) {
  size_t n = _hg_vec_len(&c->threads);
  for (size_t ri = 0; ri < _hg_vec_len(&c->regions); ri++) {
    int rc = dead_stacks(c, ri);
    if (rc) return rc;
  }
  for (size_t i = 0; i < n; i++) {
    struct hg_cthread *t = _hg_vec_at(&c->threads, i);
    read_name(t, (uint64_t)c->pid);
    uint64_t red = t->self ? 0 : 128; /* x86-64 red zone below SP */
    struct hg_root_clip k;
    memset(&k, 0, sizeof k);
    int64_t ri = _hg_region_find(c, t->sp);
    if (ri < 0) ri = _hg_region_find(c, t->sp - red);
    if (ri >= 0) {
      struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
      if (r->kind != HG_RK_OWN) r->kind = HG_RK_STACK;
      k.map_lo = r->start;
      k.map_hi = r->end;
      k.live_lo = t->sp - red;
    }
    int64_t ti = _hg_region_find(c, t->tls_hi - TCB_BYTES);
    if (ti >= 0) {
      const struct hg_cregion *tr = _hg_vec_at(&c->regions, (size_t)ti);
      k.tls_lo = t->tls_lo < tr->start || t->tls_lo > t->tls_hi ? tr->start : t->tls_lo;
      k.tls_hi = t->tls_hi > tr->end ? tr->end : t->tls_hi;
      /* The thread descriptor ends its stack block. With glibc 2.42+ on
       * Linux 6.13+ guard pages are MADV_GUARD_INSTALL ranges, not mappings
       * of their own, so adjacent stacks share one mapping and reading past
       * the descriptor faults on the next block's guard. */
      if (k.tls_hi > k.map_lo && k.tls_hi < k.map_hi) k.map_hi = k.tls_hi;
    }
    _hg_clip_thread_roots(&k);
    t->stack_lo = k.stack_lo;
    t->stack_hi = k.stack_hi;
    t->tls_lo = t->tls_hi = 0;
    if (k.tls_hi > k.tls_lo) {
      struct hg_crange *g = _hg_vec_push(&c->ranges, 1);
      if (!g) return HG_ENOMEM;
      *g = (struct hg_crange){k.tls_lo, k.tls_hi, HG_ROOT_TLS, (uint32_t)i};
    }
  }
  return 0;
}
