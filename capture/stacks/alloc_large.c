/*
 * alloc_large.c — the large-allocation monitor (alloc_large.h): the ring, its
 * monitor thread and the default report. Slots carry a sequence number
 * written last (release), so a reader never takes a half-written event.
 */
#include "capture/stacks/alloc_large.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

struct slot {
  uint64_t seq; /* index + 1 once complete, 0 while being written         */
  struct hg_large_alloc ev;
  uint32_t nframes;
  uintptr_t frames[HG_REC_MAX_FRAMES];
};

uint64_t _hg_large_threshold;
static struct slot *ring;
static uint64_t head;     /* next index to claim                        */
static uint64_t reported, lost;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static hg_large_fn callback;
static void *callback_user;

static uint64_t thread_id(void) {
#if defined(__linux__)
  return (uint64_t)syscall(SYS_gettid);
#elif defined(__APPLE__)
  uint64_t t = 0;
  pthread_threadid_np(NULL, &t);
  return t;
#else
  return 0;
#endif
}

void _hg_large_push(uint64_t addr, uint64_t size, uint32_t stack, const uintptr_t *frames,
                    uint32_t n) {
  if (!ring) return;
  uint64_t i = __atomic_fetch_add(&head, 1, __ATOMIC_RELAXED);
  struct slot *s = &ring[i % HG_LARGE_RING];
  __atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  s->ev.addr = addr;
  s->ev.size = size;
  s->ev.stack = stack;
  s->ev.time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  s->ev.tid = thread_id();
  if (n > HG_REC_MAX_FRAMES) n = HG_REC_MAX_FRAMES;
  s->nframes = n;
  memcpy(s->frames, frames, n * sizeof *frames);
  __atomic_store_n(&s->seq, i + 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&mu);
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}

/* Copies slot i if it still holds event i. */
static int take(uint64_t i, struct slot *out) {
  const struct slot *s = &ring[i % HG_LARGE_RING];
  if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != i + 1) return 0;
  memcpy(out, s, sizeof *out);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == i + 1;
}

static void report(const struct slot *s) {
  struct hg_large_event ev = {s->ev.addr, s->ev.size, s->ev.time_ns, s->ev.tid, s->nframes, s->frames};
  if (callback) {
    callback(&ev, callback_user);
    return;
  }
  char line[160 + 20 * 8];
  int o = snprintf(line, sizeof line, "heapgraph: large allocation %llu bytes at 0x%llx (thread %llu), stack",
                   (unsigned long long)ev.size, (unsigned long long)ev.addr, (unsigned long long)ev.tid);
  for (uint32_t k = 0; k < ev.frame_count && k < 8 && o > 0 && (size_t)o < sizeof line - 24; k++)
    o += snprintf(line + o, sizeof line - (size_t)o, " 0x%llx", (unsigned long long)ev.frames[k]);
  fprintf(stderr, "%s\n", line);
}

static void *monitor(void *arg) {
  (void)arg;
  uint64_t tail = 0;
  struct slot s;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (__atomic_load_n(&head, __ATOMIC_ACQUIRE) == tail) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&cv, &mu, &ts);
    }
    pthread_mutex_unlock(&mu);
    uint64_t h = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
    if (h - tail > HG_LARGE_RING) { /* overwritten before we got there */
      __atomic_fetch_add(&lost, h - tail - HG_LARGE_RING, __ATOMIC_RELAXED);
      tail = h - HG_LARGE_RING;
    }
    for (; tail < h; tail++) {
      int spins = 0;
      while (!take(tail, &s) && spins++ < 1000) sched_yield(); /* a writer mid-slot */
      if (spins > 1000) {
        __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
        continue;
      }
      report(&s);
      __atomic_fetch_add(&reported, 1, __ATOMIC_RELAXED);
    }
  }
  return NULL;
}

int _hg_large_start(uint64_t threshold, hg_large_fn fn, void *user) {
  if (!threshold) return 0;
  void *m = mmap(NULL, sizeof(struct slot) * HG_LARGE_RING, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return HG_ENOMEM;
  _hg_rec_own_add(m, sizeof(struct slot) * HG_LARGE_RING);
  ring = m;
  callback = fn;
  callback_user = user;
  pthread_t t;
  if (pthread_create(&t, NULL, monitor, NULL) != 0) return HG_ENOMEM;
  pthread_detach(t);
  __atomic_store_n(&_hg_large_threshold, threshold, __ATOMIC_RELEASE);
  return 0;
}

uint32_t _hg_large_collect(struct hg_large_alloc *out, uint32_t cap) {
  if (!ring) return 0;
  uint64_t h = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
  uint64_t i = h > HG_LARGE_RING ? h - HG_LARGE_RING : 0;
  uint32_t n = 0;
  struct slot s;
  for (; i < h && n < cap; i++)
    if (take(i, &s)) out[n++] = s.ev;
  return n;
}

uint64_t _hg_large_reported(void) { return __atomic_load_n(&reported, __ATOMIC_RELAXED); }
uint64_t _hg_large_lost(void) { return __atomic_load_n(&lost, __ATOMIC_RELAXED); }
