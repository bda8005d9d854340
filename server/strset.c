/* server/strset.c — a set of strings built by appending, then sealed
 * (sorted, each once) and looked up by binary search: the exemplar ids
 * retention keeps, the blob names the sweep must not delete. */
#include <stdlib.h>
#include <string.h>

#include "server/serve.h"

int srv_strset_add(struct srv_strset *s, const char *v) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    char **p = realloc(s->v, cap * sizeof *p);
    if (!p) return -1;
    s->v = p;
    s->cap = cap;
  }
  if (!(s->v[s->n] = strdup(v))) return -1;
  s->n++;
  return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void srv_strset_seal(struct srv_strset *s) {
  if (!s->n) return;
  qsort(s->v, s->n, sizeof *s->v, cmp);
  size_t w = 1;
  for (size_t i = 1; i < s->n; i++) {
    if (strcmp(s->v[i], s->v[w - 1])) s->v[w++] = s->v[i];
    else free(s->v[i]);
  }
  s->n = w;
}

int srv_strset_has(const struct srv_strset *s, const char *v) {
  return s->n && bsearch(&v, s->v, s->n, sizeof *s->v, cmp) != NULL;
}

void srv_strset_free(struct srv_strset *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}
