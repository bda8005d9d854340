/*
 * park_signal.c — hg_options.suspend_signal takes over only signals that
 * are safe to take over, and never changes how the program dies (issue 18,
 * item 4):
 *   - fault, termination, job-control and glibc-internal signals: HG_EINVAL;
 *   - a signal the program already handles: HG_EINVAL (its handler kept);
 *   - SIGUSR1 / SIGRTMIN+n with the default action: captures work;
 *   - afterwards kill() or raise() of that signal still kills the program
 *     with it (checked in child processes), and an ignored one stays ignored.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

static char path[256];
static volatile int stop;

static void *idle(void *arg) {
  (void)arg;
  while (!stop) usleep(1000);
  return NULL;
}

static int capture_with(int sig, uint32_t mode) {
  struct hg_options o;
  hg_options_init(&o);
  o.suspend_signal = sig;
  o.mode = mode;
  return hg_capture(path, &o);
}

static void test_refused(void) {
  const int bad[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGTERM, SIGINT, SIGQUIT,
                     SIGHUP, SIGKILL, SIGSTOP, SIGTSTP, SIGCONT, SIGCHLD, SIGPIPE, SIGALRM, SIGPROF,
                     SIGWINCH, SIGURG, 32, 33, -1, 65, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = capture_with(bad[i], HG_MODE_SUSPEND);
    if (rc != HG_EINVAL) fprintf(stderr, "signal %d: %d\n", bad[i], rc);
    CHECK_EQ_U(rc, HG_EINVAL);
  }
  CHECK(access(path, F_OK) != 0); /* no file left */
}

static volatile int app_usr2;
static void app_handler(int sig) { (void)sig; app_usr2++; }

static void test_program_handler_kept(void) {
  signal(SIGUSR2, app_handler);
  CHECK_EQ_U(capture_with(SIGUSR2, HG_MODE_SUSPEND), HG_EINVAL);
  raise(SIGUSR2);
  CHECK_EQ_U(app_usr2, 1);
  signal(SIGUSR2, SIG_DFL);
}

static void test_allowed(void) {
  CHECK_EQ_U(capture_with(SIGUSR1, HG_MODE_SUSPEND), 0);
  CHECK_EQ_U(capture_with(SIGUSR1, HG_MODE_FORK), 0);
  CHECK_EQ_U(capture_with(SIGRTMIN + 7, HG_MODE_SUSPEND), 0);
  CHECK_EQ_U(capture_with(0, HG_MODE_SUSPEND), 0);
}

/* In a child: capture with SIG parking the threads, then deliver SIG the
 * way `how` says; returns the child's wait status. */
static int child_dies(int sig, int how, int ignore) {
  pid_t pid = fork();
  if (pid == 0) {
    if (ignore) signal(sig, SIG_IGN);
    pthread_t t; /* a thread to park: the signal is really used */
    pthread_create(&t, NULL, idle, NULL);
    if (capture_with(sig, HG_MODE_SUSPEND) != 0) _exit(10);
    if (how == 0) kill(getpid(), sig);
    else raise(sig);
    usleep(100000);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void test_dies_as_before(void) {
  int sigs[] = {SIGUSR1, SIGRTMIN + 4};
  for (int i = 0; i < 2; i++)
    for (int how = 0; how < 2; how++) {
      int st = child_dies(sigs[i], how, 0);
      if (!WIFSIGNALED(st) || WTERMSIG(st) != sigs[i])
        fprintf(stderr, "signal %d via %s: status %#x\n", sigs[i], how ? "raise" : "kill", st);
      CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i]);
    }
  int st = child_dies(SIGUSR1, 0, 1); /* ignored before: still ignored */
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  snprintf(path, sizeof path, "/tmp/hg_park_signal_%d.hgsnap", (int)getpid());
  pthread_t t;
  pthread_create(&t, NULL, idle, NULL);
  RUN(test_refused);
  RUN(test_program_handler_kept);
  RUN(test_allowed);
  RUN(test_dies_as_before);
  stop = 1;
  pthread_join(t, NULL);
  unlink(path);
  return hg_test_done();
}
