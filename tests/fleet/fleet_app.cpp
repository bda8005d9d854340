/*
 * fleet_app.cpp — the test app of the fleet tests: builds an app state with
 * planted memory issues, then captures a REAL snapshot of itself
 * (hg_capture) with fleet metadata (app, app_version, build, os_version,
 * device_model, device_id, session_id).
 *
 *   fleet_app OUT.hgsnap VERSION DEVICE SESSION SEED [same]
 *
 * State, held from the global g_app:
 *   App → ImageCache  (vector of CacheEntry): unchanged between versions
 *   App → FeedStore   (linked list of FeedItem): 2.5x bigger in 2.x ("grown")
 *   App → PrefetchManager (vector of PrefetchTask): only in 2.x ("new chain")
 *   a LeakedSession <-> LeakedDelegate cycle owning a buffer, no longer
 *   referenced: only in 2.x ("new leak")
 * Sizes scale per device (0.7 + 0.1 x device) with +-5 % noise per session;
 * with "same" the noise is off (the stability test: one app state). SEED
 * varies what must not matter: junk allocations freed in between (so
 * addresses and allocation order differ), the order the parts are built,
 * and worker threads' timing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "heapgraph.h"

static unsigned long long rng_state;
static unsigned rnd() {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rng_state >> 33);
}

struct Object {
  virtual ~Object() {}
};
struct CacheEntry : Object {
  char *pixels;
  size_t size;
  explicit CacheEntry(size_t n) : pixels((char *)malloc(n)), size(n) { memset(pixels, 1, n); }
};
struct ImageCache : Object {
  std::vector<CacheEntry *> entries;
};
struct FeedItem : Object {
  FeedItem *next = nullptr;
  char *payload;
  explicit FeedItem(size_t n) : payload((char *)malloc(n)) { memset(payload, 2, n); }
};
struct FeedStore : Object {
  FeedItem *head = nullptr;
  size_t count = 0;
};
struct PrefetchTask : Object {
  char *buffer;
  explicit PrefetchTask(size_t n) : buffer((char *)malloc(n)) { memset(buffer, 3, n); }
};
struct PrefetchManager : Object {
  std::vector<PrefetchTask *> tasks;
};
struct LeakedDelegate;
struct LeakedSession : Object {
  LeakedDelegate *delegate = nullptr;
  char *state = nullptr;
};
struct LeakedDelegate : Object {
  LeakedSession *session = nullptr;
};
struct App : Object {
  ImageCache *cache = nullptr;
  FeedStore *feed = nullptr;
  PrefetchManager *prefetch = nullptr;
};

static App *g_app;
static int g_v2, g_same;
static double g_scale;

static size_t scaled(size_t base) {
  double noise = g_same ? 1.0 : 0.95 + (rnd() % 1001) / 10000.0;
  return (size_t)(base * g_scale * noise);
}

/* Junk allocations kept until the end of a part, then freed: addresses and
 * allocation order differ from run to run. */
static void junk(std::vector<void *> &keep) {
  unsigned n = rnd() % 64;
  for (unsigned i = 0; i < n; i++) keep.push_back(malloc(16 + rnd() % 4096));
}
static void drop(std::vector<void *> &keep) {
  for (void *p : keep) free(p);
  keep.clear();
}

static void *build_cache(void *) {
  std::vector<void *> j;
  ImageCache *c = new ImageCache;
  size_t total = scaled(1536 << 10), each = 12 << 10;
  for (size_t got = 0; got < total; got += each) {
    junk(j);
    c->entries.push_back(new CacheEntry(each));
  }
  g_app->cache = c;
  drop(j);
  usleep(rnd() % 2000);
  return nullptr;
}

static void *build_feed(void *) {
  std::vector<void *> j;
  FeedStore *f = new FeedStore;
  size_t total = scaled(g_v2 ? (2560u << 10) : (1024u << 10)), each = 8 << 10;
  FeedItem **tail = &f->head;
  for (size_t got = 0; got < total; got += each) {
    junk(j);
    *tail = new FeedItem(each);
    tail = &(*tail)->next;
    f->count++;
  }
  g_app->feed = f;
  drop(j);
  usleep(rnd() % 2000);
  return nullptr;
}

static void *build_prefetch(void *) {
  std::vector<void *> j;
  PrefetchManager *m = new PrefetchManager;
  size_t total = scaled(1228u << 10), each = 20 << 10;
  for (size_t got = 0; got < total; got += each) {
    junk(j);
    m->tasks.push_back(new PrefetchTask(each));
  }
  g_app->prefetch = m;
  drop(j);
  return nullptr;
}

/* The leak: a session and its delegate point at each other; nothing else
 * points at them once this returns. */
static LeakedSession *volatile g_sink; /* so the compiler keeps the allocations */
static void *build_leak(void *) {
  LeakedSession *s = new LeakedSession;
  s->delegate = new LeakedDelegate;
  s->delegate->session = s;
  s->state = (char *)malloc(200 << 10);
  memset(s->state, 4, 200 << 10);
  g_sink = s;
  g_sink = nullptr;
  return nullptr;
}

/* A joined thread's stack stays mapped (glibc caches it) and the capture
 * scans such anonymous memory for roots: stale pointers there would root
 * the parts a second time. Each worker clears what its part left below. */
__attribute__((noinline)) static void scrub(void) {
  char buf[256 << 10];
  explicit_bzero(buf, sizeof buf); /* never optimised away */
}
static void *worker(void *part) {
  ((void *(*)(void *))part)(nullptr);
  scrub();
  return nullptr;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: fleet_app OUT.hgsnap VERSION DEVICE SESSION SEED [same]\n");
    return 2;
  }
  const char *out = argv[1], *version = argv[2];
  int device = atoi(argv[3]);
  rng_state = strtoull(argv[5], NULL, 10) * 2654435761u + 1;
  g_same = argc > 6 && !strcmp(argv[6], "same");
  g_v2 = version[0] >= '2';
  g_scale = 0.7 + 0.1 * (device % 8);
  if (!g_same) rng_state ^= (unsigned long long)atoi(argv[4]) << 20;
  g_app = new App;
  /* The parts on worker threads, started in a seed-dependent order. */
  void *(*parts[4])(void *) = {build_cache, build_feed, build_prefetch, build_leak};
  int nparts = g_v2 ? 4 : 2;
  for (int i = nparts - 1; i > 0; i--) {
    int k = (int)(rnd() % (unsigned)(i + 1));
    void *(*t)(void *) = parts[i];
    parts[i] = parts[k];
    parts[k] = t;
  }
  /* One part at a time: the parts write different fields of g_app. */
  for (int i = 0; i < nparts; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, worker, (void *)parts[i])) return 1;
    pthread_join(th, NULL);
  }
  char dev[32], model[32], sess[48], build[16];
  snprintf(dev, sizeof dev, "device-%02d", device);
  snprintf(model, sizeof model, "Phone%d,1", 10 + device % 4);
  snprintf(sess, sizeof sess, "session-%s-%02d-%s", version, device, argv[4]);
  snprintf(build, sizeof build, "%s01", g_v2 ? "2" : "1");
  struct hg_kv app[] = {{"app", "fleet_app"},       {"app_version", version}, {"build", build},
                        {"os_version", "17.4"},     {"device_model", model},  {"device_id", dev},
                        {"session_id", sess}};
  struct hg_options o;
  hg_options_init(&o);
  o.trigger = "memory-warning";
  o.app = app;
  o.app_count = sizeof app / sizeof *app;
  int rc = hg_capture(out, &o);
  if (rc) {
    fprintf(stderr, "fleet_app: capture: %s\n", hg_error_string(rc));
    return 1;
  }
  return 0;
}
