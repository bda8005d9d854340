/*
 * signal_names.h — which signals heapgraph may take over, and their names
 * (header-only: the library's thread parking and agent, and the CLI's
 * `run --signal` / `capture --pid --signal` share one definition).
 *
 * Taken over: SIGUSR1, SIGUSR2 and the real-time signals glibc leaves to
 * programs (SIGRTMIN…SIGRTMAX). Never a fault signal (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT: a handler that returns would
 * re-run the faulting instruction forever), a termination request
 * (SIGTERM, SIGINT, SIGQUIT, SIGHUP), job control, SIGKILL/SIGSTOP,
 * SIGCHLD, SIGPIPE, SIGALRM, SIGPROF, SIGXCPU/SIGXFSZ, SIGWINCH/SIGURG
 * (programs use them), nor glibc's internal 32 and 33.
 */
#ifndef HG_CAPTURE_SIGNAL_NAMES_H
#define HG_CAPTURE_SIGNAL_NAMES_H

#include <signal.h>
#include <stdlib.h>
#include <strings.h>

#define HG_PARK_SIGNAL_OFFSET 4 /* default park signal: SIGRTMIN + 4 */

static inline int _hg_signal_usable(int sig) {
#ifdef SIGRTMIN
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return 1;
#endif
  return sig == SIGUSR1 || sig == SIGUSR2;
}

/* USR1, USR2, RTMIN, RTMIN+n, RTMAX, RTMAX-n (with or without SIG, any
 * case) or a number, when usable and not the default park signal (a
 * capture trigger must not be it); -1 otherwise. */
static inline int _hg_trigger_signal(const char *s) {
  if (!s || !*s) return -1;
  if (!strncasecmp(s, "SIG", 3)) s += 3;
  int sig = -1;
  char *end = NULL;
  if (!strcasecmp(s, "USR1")) sig = SIGUSR1;
  else if (!strcasecmp(s, "USR2")) sig = SIGUSR2;
#ifdef SIGRTMIN
  else if (!strncasecmp(s, "RTMIN", 5) && (!s[5] || s[5] == '+'))
    sig = SIGRTMIN + (s[5] ? (int)strtol(s + 6, &end, 10) : 0);
  else if (!strncasecmp(s, "RTMAX", 5) && (!s[5] || s[5] == '-'))
    sig = SIGRTMAX - (s[5] ? (int)strtol(s + 6, &end, 10) : 0);
#endif
  else if (*s >= '0' && *s <= '9') sig = (int)strtol(s, &end, 10);
  if (end && (*end || end == s)) return -1;
#ifdef SIGRTMIN
  if (sig == SIGRTMIN + HG_PARK_SIGNAL_OFFSET) return -1;
#endif
  return _hg_signal_usable(sig) ? sig : -1;
}

#endif
