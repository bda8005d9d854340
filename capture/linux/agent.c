/*
 * agent.c — attaching to an unmodified program: LD_PRELOAD=libheapgraph.so.
 *
 * Environment:
 *   HEAPGRAPH_OUTPUT   file name; "%p" becomes the pid, "%n" the capture
 *                      number (default "heapgraph-%p-%n.hgsnap")
 *   HEAPGRAPH_SIGNAL   USR1, USR2, RTMIN+n, RTMAX-n or a number: capture
 *                      on that signal (only those; never RTMIN+4, which
 *                      parks threads, nor one the program already handles)
 *   HEAPGRAPH_AT_EXIT  1/yes/true/on: capture when the program exits
 *   HEAPGRAPH_MODE     fork (default) or suspend
 *   HEAPGRAPH_OMIT     paths, names, device, all (or "paths,names"): leave file
 *                      paths, thread and process names and/or the watcher's
 *                      device ids out (hg_options.omit)
 *   HEAPGRAPH_FOLLOW_CHILDREN  1/yes/true/on: child processes capture too
 *   HEAPGRAPH_PID      the traced process (set by `heapgraph run`, else by
 *                      the first process the agent starts in; inherited)
 *   HEAPGRAPH_WATCH*, HEAPGRAPH_SPOOL*, HEAPGRAPH_UPLOAD_*: capture when
 *                      memory runs short, spool, upload (agent_watch.c)
 * A bad value is reported and turns the agent off.
 * Processes (output_rule): only the traced process captures — the pid
 * HEAPGRAPH_PID names, across exec, so a wrapper that execs the program
 * hands it over. Its children (fork, with or without exec) do not: the
 * first fork() of each program it runs says so on stderr (an atfork
 * handler; posix_spawn and vfork run none, nor does the capture's own
 * clone), and so does its exit message. With HEAPGRAPH_FOLLOW_CHILDREN each
 * process captures to its own file: a child's pid is inserted before the
 * name's extension when the pattern has no %p (app.hgsnap -> app.PID.hgsnap).
 * The agent is active only when HEAPGRAPH_SIGNAL, HEAPGRAPH_AT_EXIT or a
 * watch/upload variable is set. The signal handler only posts a semaphore; a dedicated capture
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

#include "capture/internal.h"
#include "capture/linux/agent_watch.h"
#include "capture/signal_names.h"
#include "heapgraph.h"

static sem_t wake;
static char pattern[4096];
static unsigned seq;
static uint32_t mode, omit;
static pid_t traced; /* HEAPGRAPH_PID */
static int follow;   /* HEAPGRAPH_FOLLOW_CHILDREN */

/* "paths", "names", "device", "all" or a comma list of them: HG_OMIT_* flags; -1 for
 * anything else. */
static int parse_omit(const char *s) {
  int flags = 0;
  while (*s) {
    size_t n = strcspn(s, ",");
    if (n == 5 && !strncmp(s, "paths", 5)) flags |= HG_OMIT_PATHS;
    else if (n == 5 && !strncmp(s, "names", 5)) flags |= HG_OMIT_NAMES;
    else if (n == 6 && !strncmp(s, "device", 6)) flags |= HG_OMIT_DEVICE;
    else if (n == 3 && !strncmp(s, "all", 3)) flags |= HG_OMIT_PATHS | HG_OMIT_NAMES | HG_OMIT_DEVICE;
    else return -1;
    s += n + (s[n] == ',');
  }
  return flags;
}

/* 1 for 1/yes/true/on, 0 for 0/no/false/off or empty, -1 otherwise. */
static int parse_bool(const char *s) {
  static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false", "off", ""};
  for (size_t i = 0; i < 4; i++)
    if (!strcasecmp(s, yes[i])) return 1;
  for (size_t i = 0; i < 5; i++)
    if (!strcasecmp(s, no[i])) return 0;
  return -1;
}

/* Where a child's ".PID" goes in a pattern without %p: before the
 * extension of the file name (after the last '/'), or at the end. */
static const char *pid_spot(void) {
  if (getpid() == traced || strstr(pattern, "%p")) return NULL;
  const char *base = strrchr(pattern, '/'), *dot;
  base = base ? base + 1 : pattern;
  dot = strrchr(base, '.');
  return dot && dot != base ? dot : pattern + strlen(pattern);
}

static void expand(char *out, size_t cap, unsigned n) {
  size_t o = 0;
  const char *spot = pid_spot();
  for (const char *p = pattern;; p++) {
    if (p == spot && o + 24 < cap) o += (size_t)snprintf(out + o, cap - o, ".%d", (int)getpid());
    if (!*p || o + 24 >= cap) break;
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

static char fork_note[160];
static int fork_noted;

/* In the traced process, after its first fork(): one line, by write(2)
 * (fork may be called where stdio is not safe). */
static void on_fork(void) {
  if (getpid() != traced || __atomic_exchange_n(&fork_noted, 1, __ATOMIC_RELAXED)) return;
  ssize_t k = write(2, fork_note, strlen(fork_note));
  (void)k;
}

static void capture(const char *trigger) {
  if (!follow && getpid() != traced) return; /* a child: output_rule above */
  char path[4200];
  expand(path, sizeof path, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.mode = mode;
  o.omit = omit;
  o.trigger = trigger;
  o.stats = &st;
  int rc = hg_capture(path, &o);
  const char *kids = !follow && __atomic_load_n(&fork_noted, __ATOMIC_RELAXED)
                         ? "; its child processes were not captured (heapgraph run --follow-children)"
                         : "";
  if (rc == 0 || rc == HG_EUNSUPPORTED)
    fprintf(stderr, "heapgraph: wrote %s (%llu nodes, pause %.1f ms, pid %d)%s%s%s\n", path,
            (unsigned long long)st.nodes, st.pause_ns / 1e6, (int)getpid(),
            rc ? " without heap nodes: " : *_hg_capture_heap_note() ? ": " : "", _hg_capture_heap_note(), kids);
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

/* A bad environment value disables the agent with a message: capturing in
 * a way the user did not ask for is worse than not capturing. */
__attribute__((constructor)) static void agent_init(void) {
  const char *sig = getenv("HEAPGRAPH_SIGNAL");
  const char *ax = getenv("HEAPGRAPH_AT_EXIT");
  const char *out = getenv("HEAPGRAPH_OUTPUT");
  const char *m = getenv("HEAPGRAPH_MODE");
  int want_exit = ax ? parse_bool(ax) : 0;
  const char *wv = getenv("HEAPGRAPH_WATCH"), *wr = getenv("HEAPGRAPH_WATCH_RSS"),
             *wf = getenv("HEAPGRAPH_WATCH_LIMIT_FRACTION"), *wu = getenv("HEAPGRAPH_UPLOAD_URL");
  int want_watch = (wv && *wv) || (wr && *wr) || (wf && *wf) || (wu && *wu);
  if ((!sig || !*sig) && want_exit == 0 && !want_watch) return;
  if (want_exit < 0) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_AT_EXIT='%s' is not 1/yes/true/on or 0/no/false/off; agent off\n", ax);
    return;
  }
  if (m && *m && strcmp(m, "fork") && strcmp(m, "suspend") && strcmp(m, "default")) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_MODE='%s' is not fork or suspend; agent off\n", m);
    return;
  }
  mode = (m && !strcmp(m, "suspend")) ? HG_MODE_SUSPEND : (m && !strcmp(m, "fork")) ? HG_MODE_FORK : HG_MODE_DEFAULT;
  const char *om = getenv("HEAPGRAPH_OMIT");
  int of = om ? parse_omit(om) : 0;
  if (of < 0) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_OMIT='%s' is not paths, names, device, all or a comma list; agent off\n", om);
    return;
  }
  omit = (uint32_t)of;
  const char *fc = getenv("HEAPGRAPH_FOLLOW_CHILDREN"), *tp = getenv("HEAPGRAPH_PID");
  follow = fc ? parse_bool(fc) : 0;
  if (follow < 0) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_FOLLOW_CHILDREN='%s' is not 1/yes/true/on or 0/no/false/off; agent off\n", fc);
    return;
  }
  char *end = NULL;
  long tv = tp && *tp ? strtol(tp, &end, 10) : 0;
  if (tv > 0 && end && !*end) {
    traced = (pid_t)tv;
  } else { /* the first process the agent starts in: its children inherit this */
    char buf[24];
    traced = getpid();
    snprintf(buf, sizeof buf, "%d", (int)traced);
    setenv("HEAPGRAPH_PID", buf, 1);
  }
  if (!follow) {
    snprintf(fork_note, sizeof fork_note,
             "heapgraph: pid %d started a child process; only pid %d is captured "
             "(heapgraph run --follow-children)\n", (int)traced, (int)traced);
    pthread_atfork(NULL, on_fork, NULL);
  }
  if (out && strlen(out) >= sizeof pattern) {
    fprintf(stderr, "heapgraph: HEAPGRAPH_OUTPUT is longer than %zu bytes; agent off\n", sizeof pattern - 1);
    return;
  }
  snprintf(pattern, sizeof pattern, "%s", out && *out ? out : "heapgraph-%p-%n.hgsnap");
  if (sig && *sig) {
    int s = _hg_trigger_signal(sig);
    if (s < 0) {
      fprintf(stderr, "heapgraph: HEAPGRAPH_SIGNAL='%s' cannot be used: allowed are USR1, USR2 and "
                      "RTMIN…RTMAX except RTMIN+4 (never a fault, termination or job-control signal); agent off\n", sig);
      return;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    pthread_t t;
    if (sigaction(s, NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) {
      fprintf(stderr, "heapgraph: signal %d already has a handler; capture on signal off\n", s);
    } else if (sem_init(&wake, 0, 0) != 0 || pthread_create(&t, NULL, capture_thread, NULL) != 0) {
      fprintf(stderr, "heapgraph: cannot start the capture thread; capture on signal off\n");
    } else if (pthread_detach(t), sigaction(s, &sa, NULL) != 0) {
      fprintf(stderr, "heapgraph: cannot install the handler for signal %d: %s\n", s, strerror(errno));
    }
  }
  if (want_exit == 1 && atexit(at_exit) != 0) fprintf(stderr, "heapgraph: atexit failed\n");
  /* the watcher follows the same rule as the other triggers: the traced
   * process only, unless every process captures */
  if (want_watch && (follow || getpid() == traced)) _hg_agent_watch_init(mode, omit);
}
