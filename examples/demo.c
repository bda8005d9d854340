/*
 * demo.c — an app-like program for `make demo`: it builds a realistic object
 * graph (a user list, a session hash table, a document tree, strings, a
 * reference cycle and a leaked subgraph) and writes a snapshot of it.
 *
 * Until the capture engine is used here, the demo records its own objects
 * through the graph builder: every malloc'd block with its usable size and
 * class, every pointer field as an edge, globals as roots.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapgraph.h"

struct user { struct user *next; char *name; struct session *session; int id; };
struct session { struct user *owner; char *token; struct session *peer; };
struct bucket { struct bucket *next; struct session *value; };
struct table { struct bucket **slots; size_t nslots; };
struct tree { struct tree *left, *right; char *label; };

static struct user *g_users;      /* global roots */
static struct table *g_sessions;
static struct tree *g_doc;

static struct hg_builder *B;
static uint32_t c_user, c_session, c_bucket, c_table, c_tree, c_string, c_slots;

static void *track(size_t n, uint32_t cls) {
  void *p = calloc(1, n);
  if (!p) abort();
  hg_builder_node(B, (uint64_t)(uintptr_t)p, malloc_usable_size(p), cls, HG_NODE_MALLOC, 1);
  return p;
}

static char *str(const char *s) {
  char *p = track(strlen(s) + 1, c_string);
  strcpy(p, s);
  return p;
}

/* Records every pointer field of a block as an edge, named. */
#define EDGE(obj, field) \
  if ((obj)->field) hg_builder_edge(B, (uint64_t)(uintptr_t)(obj), offsetof(__typeof__(*(obj)), field), \
                                    (uint64_t)(uintptr_t)(obj)->field, HG_EDGE_STRONG, #field)

static struct tree *build_tree(int depth, int *counter) {
  struct tree *t = track(sizeof *t, c_tree);
  char label[32];
  snprintf(label, sizeof label, "section-%d", (*counter)++);
  t->label = str(label);
  EDGE(t, label);
  if (depth > 0) {
    t->left = build_tree(depth - 1, counter);
    t->right = build_tree(depth - 1, counter);
    EDGE(t, left);
    EDGE(t, right);
  }
  return t;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : "out/demo.hgsnap";
  B = hg_builder_new();
  hg_builder_heap(B, "main arena");
  c_user = hg_builder_class(B, "User", HG_CLASS_OTHER, sizeof(struct user));
  c_session = hg_builder_class(B, "Session", HG_CLASS_OTHER, sizeof(struct session));
  c_bucket = hg_builder_class(B, "HashBucket", HG_CLASS_OTHER, sizeof(struct bucket));
  c_table = hg_builder_class(B, "HashTable", HG_CLASS_OTHER, sizeof(struct table));
  c_slots = hg_builder_class(B, "HashTable.slots", HG_CLASS_OTHER, 0);
  c_tree = hg_builder_class(B, "DocNode", HG_CLASS_OTHER, sizeof(struct tree));
  c_string = hg_builder_class(B, "char[]", HG_CLASS_OTHER, 0);

  /* a list of users, each with a session in a hash table */
  g_sessions = track(sizeof *g_sessions, c_table);
  g_sessions->nslots = 64;
  g_sessions->slots = track(64 * sizeof *g_sessions->slots, c_slots);
  EDGE(g_sessions, slots);
  for (int i = 0; i < 500; i++) {
    struct user *u = track(sizeof *u, c_user);
    char name[32];
    snprintf(name, sizeof name, "user-%d", i);
    u->id = i;
    u->name = str(name);
    u->next = g_users;
    g_users = u;
    struct session *s = track(sizeof *s, c_session);
    s->owner = u; /* user <-> session: a reference cycle */
    u->session = s;
    s->token = str("tok-0123456789abcdef");
    struct bucket *b = track(sizeof *b, c_bucket);
    size_t slot = (size_t)i % g_sessions->nslots;
    b->value = s;
    b->next = g_sessions->slots[slot];
    g_sessions->slots[slot] = b;
    EDGE(u, name); EDGE(u, next); EDGE(u, session);
    EDGE(s, owner); EDGE(s, token);
    EDGE(b, value); EDGE(b, next);
    hg_builder_edge(B, (uint64_t)(uintptr_t)g_sessions->slots, slot * sizeof(void *),
                    (uint64_t)(uintptr_t)b, HG_EDGE_CONSERVATIVE, NULL);
  }
  int counter = 0;
  g_doc = build_tree(8, &counter);

  /* a leaked subgraph: two sessions that point at each other, unreachable */
  struct session *l1 = track(sizeof *l1, c_session), *l2 = track(sizeof *l2, c_session);
  l1->peer = l2;
  l2->peer = l1;
  l1->token = str("leaked-token-1");
  EDGE(l1, peer); EDGE(l2, peer); EDGE(l1, token);
  l1 = l2 = NULL;

  struct hg_image exe = {.path = "/proc/self/exe", .load_addr = 0, .size = 0};
  hg_builder_image(B, &exe);
  hg_builder_root(B, HG_ROOT_GLOBAL, 0, (uint64_t)(uintptr_t)&g_users, (uint64_t)(uintptr_t)g_users);
  hg_builder_root(B, HG_ROOT_GLOBAL, 0, (uint64_t)(uintptr_t)&g_sessions, (uint64_t)(uintptr_t)g_sessions);
  hg_builder_root(B, HG_ROOT_GLOBAL, 0, (uint64_t)(uintptr_t)&g_doc, (uint64_t)(uintptr_t)g_doc);

  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct hg_kv app[] = {{"app_version", "1.0 (demo)"}, {"screen", "main"}};
  struct hg_meta m = {.platform = "linux", .arch = "x86_64", .pointer_size = sizeof(void *),
                      .page_size = (uint32_t)sysconf(_SC_PAGESIZE), .pid = getpid(),
                      .process = "demo", .time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                      .trigger = "manual", .allocator = "builder (demo's own objects)",
                      .heap_status = "ok", .app_count = 2, .app = app};
  hg_builder_meta(B, &m);
  uint64_t dropped = 0;
  int rc = hg_builder_write(B, out, &dropped);
  if (rc) {
    fprintf(stderr, "demo: writing %s failed: %s (%s)\n", out, hg_error_string(rc), hg_builder_message(B));
    return 1;
  }
  printf("demo: wrote %s\n", out);
  hg_builder_free(B);
  return 0;
}
