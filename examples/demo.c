/*
 * demo.c — an app-like program for `make demo`: it builds a realistic object
 * graph (a user list, a session hash table, a document tree, strings, a
 * user <-> session reference cycle, a leaked subgraph and, when the C++
 * module demo_widgets.cpp is linked in, polymorphic C++ widgets), then
 * captures a snapshot of itself with hg_capture(), as an app would on a
 * memory warning.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

struct user { struct user *next; char *name; struct session *session; int id; };
struct session { struct user *owner; char *token; struct session *peer; };
struct bucket { struct bucket *next; struct session *value; };
struct table { struct bucket **slots; size_t nslots; };
struct tree { struct tree *left, *right; char *label; };

/* Globals are roots. */
struct user *g_users;
struct table *g_sessions;
struct tree *g_doc;

/* Optional C++ part (examples/demo_widgets.cpp, linked when the build
 * defines HG_DEMO_WIDGETS): builds a widget tree of polymorphic objects. */
#ifdef HG_DEMO_WIDGETS
long demo_widgets_build(int count);
#else
static long demo_widgets_build(int count) {
  (void)count;
  return 0;
}
#endif

static void *xcalloc(size_t n) {
  void *p = calloc(1, n);
  if (!p) {
    fprintf(stderr, "demo: out of memory\n");
    exit(1);
  }
  return p;
}

static char *str(const char *s) { return strcpy(xcalloc(strlen(s) + 1), s); }

static struct tree *build_tree(int depth, int *counter) {
  struct tree *t = xcalloc(sizeof *t);
  char label[32];
  snprintf(label, sizeof label, "section-%d", (*counter)++);
  t->label = str(label);
  if (depth > 0) {
    t->left = build_tree(depth - 1, counter);
    t->right = build_tree(depth - 1, counter);
  }
  return t;
}

static void build_users(int n) {
  g_sessions = xcalloc(sizeof *g_sessions);
  g_sessions->nslots = 64;
  g_sessions->slots = xcalloc(g_sessions->nslots * sizeof *g_sessions->slots);
  for (int i = 0; i < n; i++) {
    struct user *u = xcalloc(sizeof *u);
    char name[32];
    snprintf(name, sizeof name, "user-%d", i);
    u->id = i;
    u->name = str(name);
    u->next = g_users;
    g_users = u;
    struct session *s = xcalloc(sizeof *s);
    s->owner = u; /* user <-> session: a reference cycle held from a root */
    u->session = s;
    s->token = str("tok-0123456789abcdef");
    struct bucket *b = xcalloc(sizeof *b);
    size_t slot = (size_t)i % g_sessions->nslots;
    b->value = s;
    b->next = g_sessions->slots[slot];
    g_sessions->slots[slot] = b;
  }
}

/* A leaked subgraph: two sessions that point at each other plus their
 * tokens. It is built on a short-lived thread, so once that thread has
 * exited no stack slot or register of a live thread still holds a pointer
 * to it (a conservative scan would otherwise keep it alive). */
struct session *g_leak_handoff; /* makes the stores observable to the compiler */

static void *leak_some(void *arg) {
  (void)arg;
  struct session *l1 = xcalloc(sizeof *l1);
  struct session *l2 = xcalloc(sizeof *l2);
  l1->peer = l2;
  l2->peer = l1;
  l1->token = str("leaked-token-1");
  l2->token = str("leaked-token-2");
  g_leak_handoff = l1; /* without an escape, the stores above are dead code */
  return NULL;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : "out/demo.hgsnap";
  build_users(500);
  int counter = 0;
  g_doc = build_tree(8, &counter);
  long widgets = demo_widgets_build(200);
  pthread_t t;
  if (pthread_create(&t, NULL, leak_some, NULL) == 0) pthread_join(t, NULL);
  *(struct session *volatile *)&g_leak_handoff = NULL; /* now it is leaked */

  struct hg_kv app[] = {{"app_version", "1.0 (demo)"}, {"screen", "main"}};
  struct hg_capture_stats st;
  struct hg_options o;
  hg_options_init(&o);
  o.trigger = "demo";
  o.app = app;
  o.app_count = sizeof app / sizeof app[0];
  o.stats = &st;
  int rc = hg_capture(out, &o);
  if (rc && rc != HG_EUNSUPPORTED) {
    fprintf(stderr, "demo: capture into %s failed: %s\n", out, hg_error_string(rc));
    return 1;
  }
  printf("demo: built 500 users, %d document nodes, %ld C++ widgets, 1 leaked pair\n", counter,
         widgets);
  printf("demo: captured %s: %llu nodes, %llu edges, %llu roots, %llu bytes; pause %.2f ms, "
         "total %.2f ms, scratch peak %llu KiB%s\n",
         out, (unsigned long long)st.nodes, (unsigned long long)st.edges,
         (unsigned long long)st.roots, (unsigned long long)st.file_bytes, st.pause_ns / 1e6,
         st.total_ns / 1e6, (unsigned long long)(st.scratch_peak_bytes / 1024),
         rc ? " (no heap nodes: allocator not supported)" : "");
  return 0;
}
