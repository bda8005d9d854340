/*
 * msl.c — MallocStackLogging index files (stack-logs.*.index) of
 * libmalloc-53 … 166 (src/stack_logging_disk.c): a headerless array of
 * records, {uintptr_t argument; uintptr_t address; uint64_t
 * offset_and_flags} — stack_logging_index_event64 (24 bytes) in a 64-bit
 * process, stack_logging_index_event32 {uint32_t, uint32_t, uint64_t} (16)
 * in a 32-bit one. address is STACK_LOGGING_DISGUISE(ptr) = ptr ^ 0x5555
 * (private/stack_logging.h); argument is the size for an allocation, 0 for
 * a free; offset_and_flags = STACK_LOGGING_OFFSET_AND_FLAGS(stack id,
 * type_flags): the uniquing table's stack id in bits 0-47, the VM user tag
 * (type_flags bits 24-31) in bits 48-55, the low type byte in 56-63. The
 * writer masks type_flags with stack_logging_valid_type_flags (so the zone
 * and cleared flags, 8 and 64, never reach the file) and logs realloc as a
 * free of the old pointer then an alloc of the new one
 * (__disk_stack_logging_log_stack); backtraces live only in the in-memory
 * uniquing table, never in this file.
 *
 * Hostile input: every record is read by offset within the given bytes,
 * counts and tables grow only with records actually read, errors name the
 * byte offset. Not used by the capture path (malloc is fine here).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/msl.h"
#include "heapgraph.h"

#define SAMPLE 4096u /* records looked at to detect the width */

static uint64_t rd(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

enum hg_msl_event _hg_msl_kind(uint32_t flags, uint32_t tag) {
  if (flags & 0x48u) return HG_MSL_EV_INVALID; /* zone / cleared: masked by the writer */
  uint32_t type = flags & (HG_MSL_GENERIC | HG_MSL_ALLOC | HG_MSL_DEALLOC | HG_MSL_VM_ALLOCATE |
                           HG_MSL_VM_DEALLOCATE);
  int vm = (type & (HG_MSL_VM_ALLOCATE | HG_MSL_VM_DEALLOCATE)) != 0;
  if (tag && !vm) return HG_MSL_EV_INVALID; /* a user tag only on VM events */
  if ((flags & HG_MSL_MAPPED_FILE) && !vm) return HG_MSL_EV_INVALID;
  switch (type) {
    case HG_MSL_ALLOC: return HG_MSL_EV_ALLOC;
    case HG_MSL_DEALLOC: return HG_MSL_EV_FREE;
    case HG_MSL_ALLOC | HG_MSL_DEALLOC: return HG_MSL_EV_REALLOC; /* not written by 53-166 */
    case HG_MSL_VM_ALLOCATE: return HG_MSL_EV_VM_ALLOCATE;
    case HG_MSL_VM_DEALLOCATE: return HG_MSL_EV_VM_DEALLOCATE;
    case HG_MSL_GENERIC: return HG_MSL_EV_GENERIC;
    default: return HG_MSL_EV_INVALID;
  }
}

const char *_hg_msl_event_name(enum hg_msl_event e) {
  static const char *const names[HG_MSL_EV_COUNT] = {"alloc",         "free",    "realloc",
                                                     "vm_allocate",   "vm_deallocate",
                                                     "generic",       "invalid"};
  return (unsigned)e < HG_MSL_EV_COUNT ? names[e] : "?";
}

static enum hg_msl_event kind_at(const uint8_t *r, uint32_t width) {
  uint64_t of = rd(r + width - 8, 8);
  return _hg_msl_kind((uint32_t)(of >> 56), (uint32_t)(of >> 48) & 0xffu);
}

/* Records of width w among the first SAMPLE whose flags are valid. */
static uint64_t plausible(const uint8_t *data, size_t size, uint32_t w, uint64_t *looked) {
  uint64_t n = size / w, ok = 0;
  if (n > SAMPLE) n = SAMPLE;
  for (uint64_t i = 0; i < n; i++) { /* realloc records are never written: not evidence */
    enum hg_msl_event k = kind_at(data + i * w, w);
    ok += k != HG_MSL_EV_INVALID && k != HG_MSL_EV_REALLOC;
  }
  *looked = n;
  return ok;
}

/* ---- open-addressing tables (linear probing, backward-shift delete) ---- */

/* One table type for both maps: key -> (size, index). */
struct slot { uint64_t key, size; uint32_t index, used; };
struct map { struct slot *s; size_t cap, n; };

struct tables {
  struct map live;           /* address -> size, index of its stack        */
  struct map ids;            /* stack id -> index into stacks             */
  struct hg_msl_stack *stacks;
  size_t nstacks, stacks_cap;
};

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

/* The slot of key, or the empty slot where it would go (cap > n). */
static struct slot *map_at(const struct map *m, uint64_t key) {
  size_t j = mix(key) & (m->cap - 1);
  while (m->s[j].used && m->s[j].key != key) j = (j + 1) & (m->cap - 1);
  return &m->s[j];
}

/* The slot of key, or NULL. */
static struct slot *map_find(const struct map *m, uint64_t key) {
  if (!m->cap) return NULL;
  struct slot *e = map_at(m, key);
  return e->used ? e : NULL;
}

/* A new slot for key (not present); NULL on ENOMEM. Keeps the load <= 1/2. */
static struct slot *map_add(struct map *m, uint64_t key) {
  if ((m->n + 1) * 2 > m->cap) {
    struct map g = {calloc(m->cap ? m->cap * 2 : 1024, sizeof *g.s), m->cap ? m->cap * 2 : 1024, m->n};
    if (!g.s) return NULL;
    for (size_t i = 0; i < m->cap; i++)
      if (m->s[i].used) *map_at(&g, m->s[i].key) = m->s[i];
    free(m->s);
    *m = g;
  }
  struct slot *e = map_at(m, key);
  memset(e, 0, sizeof *e);
  e->key = key;
  e->used = 1;
  m->n++;
  return e;
}

/* Linear probing's backward-shift delete: no tombstones. */
static void map_delete(struct map *m, struct slot *e) {
  size_t i = (size_t)(e - m->s), mask = m->cap - 1;
  m->s[i].used = 0;
  m->n--;
  for (size_t j = (i + 1) & mask; m->s[j].used; j = (j + 1) & mask) {
    size_t home = mix(m->s[j].key) & mask;
    /* move j back to i when its home is not in (i, j] (cyclically) */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->s[i] = m->s[j];
      m->s[j].used = 0;
      i = j;
    }
  }
}

/* The index of stack id in t->stacks, created on first use; < 0 on ENOMEM. */
static int64_t stack_of(struct tables *t, uint64_t id) {
  struct slot *e = map_find(&t->ids, id);
  if (e) return e->index;
  if (t->nstacks == t->stacks_cap) {
    size_t cap = t->stacks_cap ? t->stacks_cap * 2 : 256;
    struct hg_msl_stack *n = realloc(t->stacks, cap * sizeof *n);
    if (!n) return -1;
    t->stacks = n;
    t->stacks_cap = cap;
  }
  if (!(e = map_add(&t->ids, id))) return -1;
  e->index = (uint32_t)t->nstacks;
  memset(&t->stacks[t->nstacks], 0, sizeof t->stacks[0]);
  t->stacks[t->nstacks].id = id;
  return (int64_t)t->nstacks++;
}

static int by_live(const void *a, const void *b) {
  const struct hg_msl_stack *x = a, *y = b;
  if (x->live_bytes != y->live_bytes) return x->live_bytes < y->live_bytes ? 1 : -1;
  if (x->live_count != y->live_count) return x->live_count < y->live_count ? 1 : -1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int fail(struct hg_msl_error *err, int code, uint64_t off, const char *msg) {
  if (err) {
    err->code = code;
    err->offset = off;
    snprintf(err->message, sizeof err->message, "%s at offset %llu", msg, (unsigned long long)off);
  }
  return code;
}

/* Ends live block e: its bytes leave its stack and the totals. */
static void end_block(struct tables *t, struct hg_msl_summary *s, const struct slot *e) {
  struct hg_msl_stack *st = &t->stacks[e->index];
  st->live_count--;
  st->live_bytes -= e->size;
  s->live_count--;
  s->live_bytes -= e->size;
}

static int replay(struct tables *t, struct hg_msl_summary *s, uint64_t addr, uint64_t size,
                  uint64_t id, enum hg_msl_event k) {
  struct slot *e = map_find(&t->live, addr);
  if (k == HG_MSL_EV_FREE) {
    if (!e) {
      s->unmatched_frees++;
      return 0;
    }
    end_block(t, s, e);
    map_delete(&t->live, e);
    return 0;
  }
  if (k != HG_MSL_EV_ALLOC && k != HG_MSL_EV_REALLOC) return 0; /* VM, generic: counted only */
  int64_t si = stack_of(t, id);
  if (si < 0) return HG_ENOMEM;
  if (e) { /* the free was not logged: the old block ends */
    s->replaced_allocs++;
    end_block(t, s, e);
  } else if (!(e = map_add(&t->live, addr))) {
    return HG_ENOMEM;
  }
  e->size = size;
  e->index = (uint32_t)si;
  struct hg_msl_stack *st = &t->stacks[si];
  st->allocs++;
  st->live_count++;
  st->live_bytes += size;
  s->live_count++;
  s->live_bytes += size;
  return 0;
}

int _hg_msl_read(const uint8_t *data, size_t size, uint32_t width, struct hg_msl_summary *out,
                 struct hg_msl_error *err) {
  if (!out || (!data && size)) return fail(err, HG_EINVAL, 0, "no input");
  memset(out, 0, sizeof *out);
  if (err) memset(err, 0, sizeof *err);
  if (width && width != 16 && width != 24) return fail(err, HG_EINVAL, 0, "record width is 16 or 24");
  if (!width) {
    uint64_t n16, n24, ok16 = plausible(data, size, 16, &n16), ok24 = plausible(data, size, 24, &n24);
    /* the right width gives valid flags in (nearly) every record; the
     * other one reads addresses and sizes as flags */
    int fit16 = n16 && ok16 * 100 >= n16 * 99, fit24 = n24 && ok24 * 100 >= n24 * 99;
    if (fit16 && fit24) /* both plausible: the one that leaves no partial record, else the 32-bit default */
      width = (size % 24 == 0 && size % 16 != 0) || ok24 * n16 > ok16 * n24 ? 24 : 16;
    else if (fit16 || fit24)
      width = fit16 ? 16 : 24;
    else if (size >= 16)
      return fail(err, HG_EFORMAT, 0,
                  "not a stack-logging index: neither 16- nor 24-byte records carry valid type "
                  "flags (pass --width)");
    else
      width = 16; /* nothing whole to read */
    out->width_detected = 1;
  }
  out->width = width;
  struct tables t;
  memset(&t, 0, sizeof t);
  int rc = 0;
  size_t n = size / width;
  for (size_t i = 0; i < n && !rc; i++) {
    const uint8_t *r = data + i * width;
    unsigned aw = width == 24 ? 8 : 4;
    uint64_t arg = rd(r, aw), addr = rd(r + aw, aw) ^ HG_MSL_DISGUISE, of = rd(r + 2 * aw, 8);
    enum hg_msl_event k = _hg_msl_kind((uint32_t)(of >> 56), (uint32_t)(of >> 48) & 0xffu);
    if (k == HG_MSL_EV_INVALID && !out->events[HG_MSL_EV_INVALID]) out->first_invalid = (uint64_t)i * width;
    out->events[k]++;
    out->records++;
    rc = replay(&t, out, addr, arg, of & HG_MSL_ID_MASK, k);
  }
  out->trailing_bytes = size - n * width;
  free(t.live.s);
  free(t.ids.s);
  if (rc) {
    free(t.stacks);
    memset(out, 0, sizeof *out);
    return fail(err, rc, 0, "out of memory");
  }
  if (t.nstacks) qsort(t.stacks, t.nstacks, sizeof *t.stacks, by_live);
  out->stacks = t.stacks;
  out->nstacks = t.nstacks;
  return 0;
}

void _hg_msl_free(struct hg_msl_summary *s) {
  if (!s) return;
  free(s->stacks);
  s->stacks = NULL;
  s->nstacks = 0;
}
