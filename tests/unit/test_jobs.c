/*
 * test_jobs.c — graph/jobs.c: a job runs on a helper thread when asked;
 * while a long job (_hg_job_start_long) of this thread runs, this thread's
 * jobs run inline; once it has returned or released the core
 * (_hg_job_release), or on another thread, they do not.
 */
#include <pthread.h>
#include <sched.h>

#include "graph/analysis.h"
#include "hg_test.h"

struct where {
  pthread_t tid;
  int ran;
};

static void *record(void *arg) {
  struct where *w = arg;
  w->tid = pthread_self();
  w->ran = 1;
  return NULL;
}

static int go;
static void *spin(void *arg) { /* the long job: holds until told */
  (void)arg;
  while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) sched_yield();
  return NULL;
}

static void *other_thread(void *arg) { /* a thread that holds no long job */
  struct where *w = arg;
  struct _hg_job j;
  _hg_job_start(&j, record, w, 1);
  _hg_job_wait(&j);
  w->ran = w->ran && !pthread_equal(w->tid, pthread_self());
  return NULL;
}

static void test_long_job_holds_the_core(void) {
  struct _hg_job lj, j;
  struct where w = {0}, o = {0};
  go = 0;
  _hg_job_start_long(&lj, spin, NULL);
  REQUIRE(lj.threaded);
  /* Held: inline, done on return. */
  _hg_job_start(&j, record, &w, 1);
  CHECK(w.ran);
  CHECK(pthread_equal(w.tid, pthread_self()));
  CHECK(!j.threaded);
  _hg_job_wait(&j);
  /* Another thread is not held. */
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, other_thread, &o) == 0);
  pthread_join(th, NULL);
  CHECK(o.ran);
  /* Once the long job has returned, jobs get threads again (before the wait). */
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&lj.done, __ATOMIC_ACQUIRE)) sched_yield();
  w = (struct where){0};
  _hg_job_start(&j, record, &w, 1);
  _hg_job_wait(&j);
  CHECK(w.ran);
  CHECK(!pthread_equal(w.tid, pthread_self()));
  _hg_job_wait(&lj);
  /* And after it. */
  w = (struct where){0};
  _hg_job_start(&j, record, &w, 1);
  _hg_job_wait(&j);
  CHECK(!pthread_equal(w.tid, pthread_self()));
}

static struct _hg_job rj;
static int released;
static void *release_then_spin(void *arg) { /* lets the core go, then holds on */
  (void)arg;
  _hg_job_release(&rj);
  __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) sched_yield();
  return NULL;
}

static void test_release(void) {
  struct _hg_job j;
  struct where w = {0};
  go = released = 0;
  _hg_job_start_long(&rj, release_then_spin, NULL);
  REQUIRE(rj.threaded);
  while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE)) sched_yield();
  _hg_job_start(&j, record, &w, 1); /* still running, but released */
  _hg_job_wait(&j);
  CHECK(w.ran);
  CHECK(!pthread_equal(w.tid, pthread_self()));
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
  _hg_job_wait(&rj);
}

static void test_plain_jobs(void) {
  struct _hg_job j;
  struct where w = {0};
  _hg_job_start(&j, record, &w, 0); /* not wanted: here, at once */
  CHECK(w.ran && pthread_equal(w.tid, pthread_self()));
  _hg_job_wait(&j);
  struct _hg_job z = {0};
  _hg_job_wait(&z); /* a zeroed job never started */
  CHECK(!z.threaded);
}

int main(void) {
  RUN(test_plain_jobs);
  RUN(test_long_job_holds_the_core);
  RUN(test_release);
  return hg_test_done();
}
