/*
 * jobs.c — the analyses' one way to use a second core: a job runs on a
 * helper thread when one can be started, else on the calling thread at
 * once. Jobs given to it write disjoint memory, so no result depends on
 * whether a thread was had (see graph/analysis.h).
 */
#include "graph/analysis.h"

void _hg_job_start(struct _hg_job *j, void *(*fn)(void *), void *arg, int want_thread) {
  j->threaded = want_thread && pthread_create(&j->th, NULL, fn, arg) == 0;
  if (!j->threaded) fn(arg);
}

void _hg_job_wait(struct _hg_job *j) {
  if (j->threaded) pthread_join(j->th, NULL);
  j->threaded = 0;
}
