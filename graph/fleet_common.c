/*
 * fleet_common.c — what every fleet file shares: the bump allocator a
 * result keeps its strings and arrays in, the signature hash, titles, and
 * the names of kinds and statuses.
 */
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "graph/fleet.h"
#include "graph/graph_priv.h"

/* ---- Arena: the reader's string arena (graph/graph.c), reused ---- */

void *_hg_fa_alloc(struct _hg_arena *a, size_t n) { return _hg_arena_alloc(&a->pv, n ? n : 1); }

char *_hg_fa_strndup(struct _hg_arena *a, const char *s, size_t n) {
  return _hg_arena_strndup(&a->pv, s, n);
}

char *_hg_fa_strdup(struct _hg_arena *a, const char *s) {
  return s ? _hg_arena_strndup(&a->pv, s, strlen(s)) : NULL;
}

void _hg_fa_free(struct _hg_arena *a) { _hg_arena_free(&a->pv); }

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

void *_hg_fa_result(struct _hg_arena *a, size_t size) {
  char *p = _hg_fa_alloc(a, round16(size) + sizeof *a);
  if (!p) {
    _hg_fa_free(a);
    return NULL;
  }
  memset(p, 0, size);
  return p;
}

void *_hg_fa_keep(struct _hg_arena *a, void *result, size_t size) {
  struct _hg_arena *slot = (struct _hg_arena *)((char *)result + round16(size));
  *slot = *a;
  return slot;
}

void _hg_fa_release(void *priv) {
  if (!priv) return;
  struct _hg_arena a = *(struct _hg_arena *)priv; /* the slot lives in the arena */
  _hg_fa_free(&a);
}

/* ---- Signatures ---- */

uint64_t _hg_fleet_hash(uint32_t kind, uint32_t algo, const char *const *steps, uint32_t n) {
  XXH64_state_t st;
  XXH64_reset(&st, 0);
  uint32_t head[2] = {kind, algo};
  XXH64_update(&st, head, sizeof head);
  for (uint32_t i = 0; i < n; i++) {
    const char *s = steps[i] ? steps[i] : "";
    XXH64_update(&st, s, strlen(s) + 1); /* the NUL separates steps */
  }
  return XXH64_digest(&st);
}

/* Appends s to buf[*len, cap) (cut at cap - 1). */
static void cat(char *buf, size_t cap, size_t *len, const char *s) {
  size_t n = strlen(s);
  if (*len + n >= cap) n = cap - 1 - *len;
  memcpy(buf + *len, s, n);
  *len += n;
  buf[*len] = 0;
}

char *_hg_fleet_title(struct _hg_arena *a, uint32_t kind, const char *const *steps, uint32_t n) {
  char buf[512];
  size_t len = 0;
  buf[0] = 0;
  if (!n) return _hg_fa_strdup(a, hg_fleet_kind_name(kind));
  switch (kind) {
  case HG_FLEET_RETENTION: /* "Cache held by global:app → App → Cache" */
    cat(buf, sizeof buf, &len, steps[n - 1]);
    cat(buf, sizeof buf, &len, " held by ");
    for (uint32_t i = 0; i + 1 < n; i++) {
      if (i) cat(buf, sizeof buf, &len, " \xe2\x86\x92 ");
      cat(buf, sizeof buf, &len, steps[i]);
    }
    break;
  case HG_FLEET_LEAK: /* "leak (cycle): LeakA, LeakB" */
    cat(buf, sizeof buf, &len, "leak (");
    cat(buf, sizeof buf, &len, steps[0]);
    cat(buf, sizeof buf, &len, "):");
    for (uint32_t i = 1; i < n; i++) {
      cat(buf, sizeof buf, &len, i > 1 ? ", " : " ");
      cat(buf, sizeof buf, &len, steps[i]);
    }
    break;
  default: /* "site: f1 ← f2 …" / "large <=1 MiB: f1 ← f2" */
    cat(buf, sizeof buf, &len, kind == HG_FLEET_SITE ? "allocated at " : steps[0]);
    for (uint32_t i = kind == HG_FLEET_SITE ? 0 : 1; i < n && i < 4; i++) {
      if (i > (kind == HG_FLEET_SITE ? 0u : 1u)) cat(buf, sizeof buf, &len, " \xe2\x86\x90 ");
      else if (kind != HG_FLEET_SITE) cat(buf, sizeof buf, &len, " at ");
      cat(buf, sizeof buf, &len, steps[i]);
    }
    break;
  }
  return _hg_fa_strdup(a, buf);
}

/* ---- Names ---- */

static const char *const kind_names[HG_FLEET_KIND_COUNT] = {"retention", "leak", "site", "large"};

const char *hg_fleet_kind_name(uint32_t kind) {
  return kind < HG_FLEET_KIND_COUNT ? kind_names[kind] : "unknown";
}

int hg_fleet_kind_parse(const char *s) {
  for (int k = 0; k < HG_FLEET_KIND_COUNT; k++)
    if (s && !strcmp(s, kind_names[k])) return k;
  return -1;
}

const char *hg_fleet_status_name(uint32_t status) {
  static const char *const names[] = {"ongoing", "new", "regressed", "fixed"};
  return status < 4 ? names[status] : "unknown";
}

/* Version order: digit runs compare as numbers ("8.10" > "8.9"), the rest
 * byte by byte (strverscmp is glibc-only; the library builds for Darwin). */
int _hg_fleet_vercmp(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      while (*a == '0') a++;
      while (*b == '0') b++;
      size_t na = 0, nb = 0;
      while (a[na] >= '0' && a[na] <= '9') na++;
      while (b[nb] >= '0' && b[nb] <= '9') nb++;
      if (na != nb) return na < nb ? -1 : 1;
      int c = memcmp(a, b, na);
      if (c) return c < 0 ? -1 : 1;
      a += na;
      b += nb;
      continue;
    }
    if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++;
    b++;
  }
  return *a ? 1 : *b ? -1 : 0;
}
