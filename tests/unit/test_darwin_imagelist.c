/*
 * test_darwin_imagelist.c — image_list.c against a fake dyld that behaves
 * as dyld-1378 does: add callbacks for every loaded image at registration
 * and for each later load (DyldAPIs.cpp _dyld_register_func_for_add_image),
 * remove callbacks before the image is unmapped (DyldRuntimeState.cpp
 * notifyUnload), both from whatever thread loads or unloads; the index API
 * (_dyld_get_image_header(i) / _dyld_get_image_vmaddr_slide(i)) shifts
 * under a concurrent unload (dyld.h: "not a thread safe operation").
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "capture/darwin_portable/image_list.h"
#include "hg_test.h"

static struct hg_image_ent store[8];
static struct hg_image_list L;

static void reset(void) {
  memset(&L, 0, sizeof L);
  pthread_mutex_init(&L.lock, NULL);
  L.ents = store;
  L.cap = 8;
}

static const char *name_of(void *ctx, uint64_t mh) {
  (void)ctx;
  static char names[8][16];
  static int k;
  char *b = names[k++ & 7];
  b[0] = 'i';
  b[1] = (char)('0' + (int)(mh >> 12) % 10);
  b[2] = 0;
  return b;
}

static void test_add_remove(void) {
  reset();
  for (uint64_t i = 1; i <= 5; i++) _hg_image_list_add(&L, i << 12, i * 0x100);
  _hg_image_list_add(&L, 3 << 12, 0x999); /* again: ignored */
  _hg_image_list_remove(&L, 2 << 12);
  _hg_image_list_remove(&L, 9 << 12);     /* unknown: no-op */
  struct hg_image_ent out[8];
  size_t total = 0;
  size_t n = _hg_image_list_begin(&L, out, 8, &total, name_of, NULL, 2);
  _hg_image_list_end(&L);
  REQUIRE(n == 4);
  CHECK_EQ_U(total, 4);
  /* dyld's order kept, each header with its own slide */
  uint64_t want[4] = {1, 3, 4, 5};
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_U(out[i].mh, want[i] << 12);
    CHECK_EQ_U(out[i].slide, want[i] * 0x100);
    CHECK(out[i].name && out[i].name[1] == (char)('0' + want[i]));
  }
  /* bounded: a full list counts what it refused; a short copy says so */
  for (uint64_t i = 10; i < 20; i++) _hg_image_list_add(&L, i << 12, 0);
  CHECK_EQ_U(L.n, 8);
  CHECK_EQ_U(L.dropped, 6);
  n = _hg_image_list_begin(&L, out, 3, &total, NULL, NULL, 0);
  _hg_image_list_end(&L);
  CHECK_EQ_U(n, 3);
  CHECK_EQ_U(total, 8);
}

/* The index API under a concurrent unload: what images.c did before. */
struct fake_dyld {
  uint64_t mh[8], slide[8];
  int n;
};
static void fake_unload(struct fake_dyld *d, int i) {
  memmove(&d->mh[i], &d->mh[i + 1], (size_t)(d->n - i - 1) * 8);
  memmove(&d->slide[i], &d->slide[i + 1], (size_t)(d->n - i - 1) * 8);
  d->n--;
}

static void test_index_api_race(void) {
  struct fake_dyld d = {{0x1000, 0x2000, 0x3000}, {0x10, 0x20, 0x30}, 3};
  /* _dyld_get_image_header(1), then another thread unloads image 0, then
   * _dyld_get_image_vmaddr_slide(1): a header with another image's slide */
  uint64_t mh = d.mh[1];
  fake_unload(&d, 0);
  uint64_t slide = d.slide[1];
  CHECK(mh == 0x2000 && slide == 0x30); /* the inconsistency the list removes */
  /* the list: header and slide arrive together in one callback */
  reset();
  _hg_image_list_add(&L, 0x1000, 0x10);
  _hg_image_list_add(&L, 0x2000, 0x20);
  _hg_image_list_add(&L, 0x3000, 0x30);
  _hg_image_list_remove(&L, 0x1000);
  struct hg_image_ent out[8];
  size_t total;
  size_t n = _hg_image_list_begin(&L, out, 8, &total, NULL, NULL, 0);
  _hg_image_list_end(&L);
  CHECK(n == 2 && out[0].mh == 0x2000 && out[0].slide == 0x20);
}

/* While the copy is held, an unload (its remove callback) waits: the
 * images read meanwhile stay mapped. */
static atomic_int removed;
static void *unloader(void *arg) {
  (void)arg;
  _hg_image_list_remove(&L, 0x2000); /* blocks until _hg_image_list_end */
  atomic_store(&removed, 1);
  return NULL;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_remove_waits_for_reader(void) {
  reset();
  _hg_image_list_add(&L, 0x1000, 0);
  _hg_image_list_add(&L, 0x2000, 0);
  struct hg_image_ent out[8];
  size_t total;
  size_t n = _hg_image_list_begin(&L, out, 8, &total, name_of, NULL, 2);
  CHECK_EQ_U(n, 2);
  atomic_store(&removed, 0);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, unloader, NULL) == 0);
  sleep_ms(50);
  CHECK_EQ_U(atomic_load(&removed), 0); /* still reading: not unmapped */
  _hg_image_list_end(&L);
  pthread_join(th, NULL);
  CHECK_EQ_U(atomic_load(&removed), 1);
  CHECK_EQ_U(L.n, 1);
}

/* An unload while the names are looked up (dladdr runs unlocked): the
 * copy is taken again, so no name of an unloaded image is kept. */
static int churn_left;
static const char *name_and_unload(void *ctx, uint64_t mh) {
  (void)ctx;
  if (churn_left > 0 && mh == 0x1000) { /* another thread unloads meanwhile */
    churn_left--;
    _hg_image_list_remove(&L, 0x3000);
    _hg_image_list_add(&L, 0x3000, 0x33);
  }
  return mh == 0x3000 ? "lib3" : "other";
}

static void test_names_consistent(void) {
  reset();
  _hg_image_list_add(&L, 0x1000, 0);
  _hg_image_list_add(&L, 0x2000, 0);
  _hg_image_list_add(&L, 0x3000, 0x30);
  struct hg_image_ent out[8];
  size_t total;
  churn_left = 1; /* one change, then a stable second look */
  size_t n = _hg_image_list_begin(&L, out, 8, &total, name_and_unload, NULL, 2);
  _hg_image_list_end(&L);
  REQUIRE(n == 3);
  CHECK_EQ_U(out[2].mh, 0x3000);
  CHECK_EQ_U(out[2].slide, 0x33);
  CHECK(out[2].name && !strcmp(out[2].name, "lib3"));
  churn_left = 100; /* dyld never settles: no names rather than stale ones */
  n = _hg_image_list_begin(&L, out, 8, &total, name_and_unload, NULL, 2);
  _hg_image_list_end(&L);
  CHECK_EQ_U(n, 3);
  for (size_t i = 0; i < n; i++) CHECK(out[i].name == NULL);
}

int main(void) {
  RUN(test_add_remove);
  RUN(test_index_api_race);
  RUN(test_remove_waits_for_reader);
  RUN(test_names_consistent);
  return hg_test_done();
}
