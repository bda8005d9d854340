/*
 * sites.c — a program with known allocation sites for tests/stacks/stacks.sh,
 * built WITHOUT frame pointers (-fomit-frame-pointer): stacks must come from
 * .eh_frame. Never linked with libheapgraph: it runs under
 * `heapgraph run --stacks`. Every site keeps its blocks in `keep` (so they
 * are live at exit) unless it is a freed site. Modes (argv[1]):
 *   sites LIB.so   all sites below, expected live counts in the checker
 *   many N         N blocks of 64 bytes from site_many (budget, sampling)
 *   large          three 2 MiB blocks from site_large
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

void *keep[1 << 20];
volatile size_t nkeep;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void hold(void *p) {
  if (!p) abort();
  pthread_mutex_lock(&mu);
  keep[nkeep++] = p;
  pthread_mutex_unlock(&mu);
}

/* site_a: 100 blocks, three frames deep */
NOINLINE void site_a(size_t n) { hold(malloc(n)); }
NOINLINE void a_mid(int k) { for (int i = 0; i < k; i++) site_a(48); }
NOINLINE void a_outer(void) { a_mid(100); }

/* site_b: 50 blocks, all freed */
NOINLINE void site_b(void) {
  void *p[50];
  for (int i = 0; i < 50; i++) p[i] = malloc(200);
  for (int i = 0; i < 50; i++) free(p[i]);
}

/* realloc chains: 10 blocks grown 6 times; the live block belongs to the last
 * realloc (site_grow), none to the first malloc (site_r) */
NOINLINE void *site_r(void) {
  void *p = malloc(16);
  if (!p) abort();
  return p;
}
NOINLINE void *site_grow(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) abort();
  return q;
}
NOINLINE void chains(void) {
  for (int i = 0; i < 10; i++) {
    void *p = site_r();
    for (int k = 1; k <= 6; k++) p = site_grow(p, (size_t)16 << (2 * k));
    hold(p);
  }
}

/* memalign family: 5 each */
NOINLINE void site_posix_memalign(void) { void *p; if (posix_memalign(&p, 64, 100)) abort(); hold(p); }
NOINLINE void site_aligned_alloc(void) { hold(aligned_alloc(128, 256)); }
NOINLINE void site_memalign(void) { hold(memalign(256, 300)); }
NOINLINE void site_valloc(void) { hold(valloc(100)); }
NOINLINE void site_pvalloc(void) { hold(pvalloc(100)); }
NOINLINE void site_calloc(void) { hold(calloc(10, 30)); }
NOINLINE void site_reallocarray(void) { hold(reallocarray(NULL, 12, 10)); }

/* a bigger chunk than asked for: a freed 2,000-byte block (too big for
 * glibc's per-thread cache: it goes to the unsorted bin, a guard after it
 * keeps it from the top chunk) serves a request for 1,990 bytes whole, the
 * remainder being too small to split, so the block is 16 bytes bigger than
 * the request implies: its recorded bytes must be what the heap says */
NOINLINE void site_guard(void) { hold(malloc(64)); }
NOINLINE void *site_roomy_first(void) { return malloc(2000); }
NOINLINE void site_roomy(void) { hold(malloc(1990)); }
static void roomy(void) {
  void *volatile x = site_roomy_first();
  site_guard();
  free(x);
  site_roomy();
}

/* threads: 4 x 250 */
NOINLINE void site_t(void) { hold(malloc(40)); }
static void *thread_main(void *arg) {
  (void)arg;
  for (int i = 0; i < 250; i++) site_t();
  return NULL;
}

/* fork: the child allocates and frees (no lock of the recorder may be left
 * held by another thread), then leaves with _exit */
NOINLINE void site_child(void) {
  for (int i = 0; i < 1000; i++) free(malloc(32));
}

NOINLINE void site_many(size_t n) { for (size_t i = 0; i < n; i++) hold(malloc(64)); }
NOINLINE void site_large(void) { for (int i = 0; i < 3; i++) hold(malloc(2u << 20)); }

static void *spin(void *arg) { /* a thread allocating while the main thread forks */
  volatile int *stop = arg;
  while (!*stop) free(malloc(24));
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "many")) {
    site_many((size_t)atol(argv[2]));
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "large")) {
    site_large();
    usleep(300000); /* the monitor thread reports on its own */
    return 0;
  }
  if (argc < 3 || strcmp(argv[1], "sites")) {
    fprintf(stderr, "usage: sites sites LIB.so | many N | large\n");
    return 2;
  }
  a_outer();
  site_b();
  chains();
  roomy();
  for (int i = 0; i < 5; i++) {
    site_posix_memalign();
    site_aligned_alloc();
    site_memalign();
    site_valloc();
    site_pvalloc();
    site_calloc();
    site_reallocarray();
  }
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_main, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  void *h = dlopen(argv[2], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  void (*lib_site)(void (*)(void *)) = (void (*)(void (*)(void *)))dlsym(h, "lib_site");
  if (!lib_site) return 1;
  lib_site(hold);
  volatile int stop = 0;
  pthread_t sp;
  pthread_create(&sp, NULL, spin, (void *)&stop);
  for (int round = 0; round < 20; round++) {
    pid_t pid = fork();
    if (pid == 0) {
      site_child();
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
      fprintf(stderr, "fork child failed\n");
      return 1;
    }
  }
  stop = 1;
  pthread_join(sp, NULL);
  printf("sites done\n");
  return 0;
}
