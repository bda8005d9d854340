/*
 * fork.c — fork mode for Linux, and the backend's static facts.
 *
 * While every other thread is parked, the capturing thread makes a
 * copy-on-write child with a raw clone syscall: glibc's fork() would run
 * its atfork handlers, which take every arena lock and would deadlock on a
 * lock held by a parked thread. The child therefore never calls malloc or
 * stdio; it walks and writes, reports through one shared page and leaves
 * with _exit. The parent releases the threads as soon as the child exists
 * and waits for the result. The child is created without an exit signal, so
 * an application's SIGCHLD handler or wait(-1) never sees it (we reap it
 * with __WCLONE — once it has reported, lazily: see reap_pending).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

void _hg_plat_describe(struct hg_meta *m) {
  static struct utsname u; /* static: its strings outlive this call */
  static char comm[32];
  m->platform = "linux";
  m->arch = "x86_64";
  if (uname(&u) == 0) m->os_version = u.release;
  int fd = open("/proc/self/comm", 0);
  if (fd >= 0) {
    ssize_t k = read(fd, comm, sizeof comm - 1);
    close(fd);
    comm[k > 0 ? k : 0] = 0;
    char *nl = strchr(comm, '\n');
    if (nl) *nl = 0;
    m->process = comm;
  }
}

int _hg_plat_default_mode(void) { return HG_MODE_FORK; }

/* A child that reported its result but had not finished exiting: the
 * kernel tearing down its copy of the address space takes ~10 ms per
 * million heap blocks, which the caller need not wait for. It is reaped at
 * the next capture (one at a time: the capture lock). */
static long pending_child;

static void reap_pending(int block) {
  if (!pending_child) return;
  int status;
  long w;
  do {
    w = waitpid((pid_t)pending_child, &status, __WCLONE | (block ? 0 : WNOHANG));
  } while (w < 0 && errno == EINTR);
  if (w != 0) pending_child = 0; /* reaped, or gone (ECHILD) */
}

int _hg_plat_can_fork(void) { return 1; }

int _hg_plat_fork_run(struct hg_cap *c, int (*body)(struct hg_cap *)) {
  reap_pending(1); /* the previous capture's child exited long ago */
  struct hg_fork_shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    _hg_plat_thaw(c);
    return HG_ENOMEM;
  }
  memset(sh, 0, sizeof *sh);
  c->shared = sh;
  c->own_lo[c->own_count] = (uint64_t)(uintptr_t)sh;
  c->own_hi[c->own_count++] = (uint64_t)(uintptr_t)sh + 4096;
  long pid = syscall(SYS_clone, 0 /* no exit signal */, NULL, NULL, NULL, NULL);
  if (pid == 0) {
    int rc = body(c);
    sh->rc = rc;
    __atomic_store_n(&sh->done, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &sh->done, FUTEX_WAKE, 1, NULL, NULL, 0);
    _exit(0);
  }
  _hg_plat_thaw(c);
  uint64_t pause = _hg_now_ns() - c->t_freeze;
  c->pause_ns = pause ? pause : 1;
  sh->pause_ns = c->pause_ns;
  if (pid < 0) return HG_ENOMEM;
  uint64_t deadline = _hg_now_ns() + (uint64_t)c->opt->child_timeout_ms * 1000000u;
  int rc = HG_EINTERNAL, status = 0;
  for (;;) {
    if (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) {
      rc = sh->rc;
      break;
    }
    long w = waitpid((pid_t)pid, &status, WNOHANG | __WCLONE);
    if (w == pid) { /* died without reporting */
      if (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) rc = sh->rc;
      pid = 0;
      break;
    }
    if (c->opt->child_timeout_ms && _hg_now_ns() > deadline) {
      kill((pid_t)pid, SIGKILL);
      rc = HG_ECHILDTIME;
      break;
    }
    struct timespec ts = {0, 2000000};
    syscall(SYS_futex, &sh->done, FUTEX_WAIT, 0, &ts, NULL, 0);
  }
  if (pid > 0 && rc != HG_ECHILDTIME && __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) {
    pending_child = pid; /* done: reap now if it is gone, else next time */
    reap_pending(0);
  } else if (pid > 0) {
    while (waitpid((pid_t)pid, &status, __WCLONE) < 0 && errno == EINTR) {
    }
  }
  return rc;
}
