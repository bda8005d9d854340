/*
 * agent.c — attaching to an unmodified program: LD_PRELOAD=libheapgraph.so.
 *
 * Environment:
 *   HEAPGRAPH_OUTPUT   file name; "%p" becomes the pid, "%n" the capture
 *                      number (default "heapgraph-%p-%n.hgsnap")
 *   HEAPGRAPH_SIGNAL   USR1, USR2, … or a number: capture on that signal
 *   HEAPGRAPH_AT_EXIT  1: capture when the program exits (atexit)
 *   HEAPGRAPH_MODE     fork (default) or suspend
 * The agent is active only when HEAPGRAPH_SIGNAL or HEAPGRAPH_AT_EXIT is
 * set. The signal handler only posts a semaphore; a dedicated capture
 * thread does the work. Messages go to stderr, prefixed "heapgraph:".
 *
 * Only in the shared library: nothing references this file, so a static
 * link of libheapgraph.a never pulls it in.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "heapgraph.h"

static sem_t wake;
static char pattern[4096];
static unsigned seq;
static uint32_t mode;

static int parse_signal(const char *s) {
  static const struct { const char *name; int sig; } names[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
      {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"URG", SIGURG}};
  if (!strncasecmp(s, "SIG", 3)) s += 3;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcasecmp(s, names[i].name)) return names[i].sig;
  char *end;
  long v = strtol(s, &end, 10);
  return (*s && !*end && v > 0 && v < 65) ? (int)v : -1;
}

static void expand(char *out, size_t cap, unsigned n) {
  size_t o = 0;
  for (const char *p = pattern; *p && o + 24 < cap; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(out + o, cap - o, "%d", (int)getpid());
      p++;
    } else if (p[0] == '%' && p[1] == 'n') {
      o += (size_t)snprintf(out + o, cap - o, "%u", n);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = 0;
}

static void capture(const char *trigger) {
  char path[4200];
  expand(path, sizeof path, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.mode = mode;
  o.trigger = trigger;
  o.stats = &st;
  int rc = hg_capture(path, &o);
  if (rc == 0 || rc == HG_EUNSUPPORTED)
    fprintf(stderr, "heapgraph: wrote %s (%llu nodes, pause %.1f ms)%s\n", path,
            (unsigned long long)st.nodes, st.pause_ns / 1e6,
            rc ? " without heap nodes: allocator not supported" : "");
  else
    fprintf(stderr, "heapgraph: capture to %s failed: %s\n", path, hg_error_string(rc));
}

static void on_signal(int sig) {
  (void)sig;
  int e = errno;
  sem_post(&wake);
  errno = e;
}

static void *capture_thread(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to app threads */
  for (;;) {
    while (sem_wait(&wake) != 0 && errno == EINTR) {
    }
    capture("signal");
  }
  return NULL;
}

static void at_exit(void) { capture("exit"); }

__attribute__((constructor)) static void agent_init(void) {
  const char *sig = getenv("HEAPGRAPH_SIGNAL");
  const char *ax = getenv("HEAPGRAPH_AT_EXIT");
  const char *out = getenv("HEAPGRAPH_OUTPUT");
  const char *m = getenv("HEAPGRAPH_MODE");
  int want_exit = ax && *ax && strcmp(ax, "0") != 0;
  if ((!sig || !*sig) && !want_exit) return;
  snprintf(pattern, sizeof pattern, "%s", out && *out ? out : "heapgraph-%p-%n.hgsnap");
  mode = (m && !strcmp(m, "suspend")) ? HG_MODE_SUSPEND : HG_MODE_DEFAULT;
  if (sig && *sig) {
    int s = parse_signal(sig);
    pthread_t t;
    if (s < 0 || sem_init(&wake, 0, 0) != 0 || pthread_create(&t, NULL, capture_thread, NULL) != 0) {
      fprintf(stderr, "heapgraph: cannot set up capture on signal '%s'\n", sig);
    } else {
      pthread_detach(t);
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_signal;
      sa.sa_flags = SA_RESTART;
      sigaction(s, &sa, NULL);
    }
  }
  if (want_exit) atexit(at_exit);
}
