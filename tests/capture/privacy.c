/*
 * privacy.c — hg_options.omit (issue 18, item 8): with HG_OMIT_PATHS and
 * HG_OMIT_NAMES the file holds no executable, library or mapped-file path,
 * no thread name and no process name (checked in the loaded graph and in
 * the raw bytes), while the heap graph is the same size as without; a
 * capture without omit has them. Heap contents are never in the file: a
 * distinctive string kept in a live block is absent from both.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"
#include "hg_test.h"

static volatile int stop;
static void *named(void *arg) {
  (void)arg;
  while (!stop) usleep(1000);
  return NULL;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static int contains(const char *b, size_t n, const char *s) {
  return memmem(b, n, s, strlen(s)) != NULL;
}

static char exe[4096];
static char *secret;

static struct hg_graph *capture(const char *path, uint32_t omit, char **raw, size_t *rawn) {
  struct hg_options o;
  hg_options_init(&o);
  o.omit = omit;
  o.mode = HG_MODE_SUSPEND;
  if (hg_capture(path, &o) != 0) return NULL;
  *raw = slurp(path, rawn);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  unlink(path);
  return g;
}

static void test_omit(void) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/hg_privacy_%d.hgsnap", (int)getpid());
  char *raw_all = NULL, *raw_priv = NULL;
  size_t n_all = 0, n_priv = 0;
  struct hg_graph *all = capture(path, 0, &raw_all, &n_all);
  struct hg_graph *priv = capture(path, HG_OMIT_PATHS | HG_OMIT_NAMES, &raw_priv, &n_priv);
  REQUIRE(all && priv && raw_all && raw_priv);
  /* without omit: paths and names are there */
  CHECK(contains(raw_all, n_all, exe));
  CHECK(contains(raw_all, n_all, "hg-secret-thr"));
  CHECK(all->meta.process != NULL);
  /* with omit: none of them */
  CHECK(!contains(raw_priv, n_priv, exe));
  CHECK(!contains(raw_priv, n_priv, "libc.so"));
  CHECK(!contains(raw_priv, n_priv, "hg-secret-thr"));
  CHECK(priv->meta.process == NULL);
  for (uint32_t i = 0; i < priv->region_count; i++)
    CHECK(!priv->regions[i].name || priv->regions[i].name[0] == '[');
  for (uint32_t i = 0; i < priv->image_count; i++) CHECK(!priv->images[i].path || !priv->images[i].path[0]);
  for (uint32_t i = 0; i < priv->thread_count; i++) CHECK(priv->threads[i].name == NULL);
  CHECK(priv->image_count == all->image_count && priv->thread_count == all->thread_count);
  CHECK(priv->node_count >= all->node_count && !strcmp(priv->meta.heap_status, "ok"));
  /* never heap contents */
  CHECK(!contains(raw_all, n_all, secret) && !contains(raw_priv, n_priv, secret));
  hg_graph_free(all);
  hg_graph_free(priv);
  free(raw_all);
  free(raw_priv);
}

int main(void) {
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return 1;
  exe[k] = 0;
  secret = malloc(64);
  snprintf(secret, 64, "%s", "hg-heap-contents-must-stay-home-7f3a");
  pthread_t t;
  pthread_create(&t, NULL, named, NULL);
  pthread_setname_np(t, "hg-secret-thr");
  usleep(10000);
  RUN(test_omit);
  stop = 1;
  pthread_join(t, NULL);
  free(secret);
  return hg_test_done();
}
