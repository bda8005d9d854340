/*
 * jobs.c — the analyses' one way to use a second core: a job runs on a
 * helper thread when one can be started, else on the calling thread at
 * once. Jobs given to it write disjoint memory, so no result depends on
 * whether a thread was had (see graph/analysis.h).
 *
 * A long job (_hg_job_start_long) holds the second core until it ends: the
 * thread that started it runs its own later jobs inline meanwhile, so two
 * analyses beside each other (the fleet summary's retention search beside
 * the dominators) do not share one core between three threads, where a
 * helper that lost its core would stall every level the dominators wait
 * for. Only the starting thread is affected (thread-local), and only until
 * the long job returns or lets the core go (_hg_job_release).
 */
#include "graph/analysis.h"

static _Thread_local struct _hg_job *held; /* a long job of this thread, or NULL */

void _hg_job_start(struct _hg_job *j, void *(*fn)(void *), void *arg, int want_thread) {
  if (want_thread && held && !__atomic_load_n(&held->done, __ATOMIC_ACQUIRE)) want_thread = 0;
  j->threaded = want_thread && pthread_create(&j->th, NULL, fn, arg) == 0;
  if (!j->threaded) fn(arg);
}

static void *long_main(void *arg) {
  struct _hg_job *j = arg;
  j->fn(j->arg);
  __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

void _hg_job_start_long(struct _hg_job *j, void *(*fn)(void *), void *arg) {
  j->fn = fn;
  j->arg = arg;
  j->done = 0;
  j->threaded = pthread_create(&j->th, NULL, long_main, j) == 0;
  if (!j->threaded) {
    long_main(j);
    return;
  }
  held = j;
}

void _hg_job_release(struct _hg_job *j) { __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE); }

void _hg_job_wait(struct _hg_job *j) {
  if (j->threaded) pthread_join(j->th, NULL);
  j->threaded = 0;
  if (held == j) held = NULL;
}
