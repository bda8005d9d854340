/*
 * fleet_summary.c — a snapshot's summary for fleet analysis: metadata, the
 * class census with retained bytes, and the signatures (retention, leak,
 * allocation site, large allocation) with their bytes (docs/fleet.md).
 *
 * Retention: the dominator subtrees worth reporting ("holders": the
 * HG_FLEET_TOP_HOLDERS biggest and every one of at least
 * HG_FLEET_HOLDER_BYTES) are described by their class path from the root:
 * their parent chain on a search from the roots counting steps (globals first),
 * each run of same-class blocks collapsed into one step
 * (lists, trees), unclassified blocks one "(unclassified)" step, a field
 * name where the edge into the step has one, the root as its kind (and the
 * image for globals); never an address, index or size. The graph is the
 * caller's and is only read (plus the dominator/leak caches it keeps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "graph/fleet.h"
#include "graph/size_bucket.h"

#define STEP_REGION UINT32_MAX /* step key of a whole-region node */
#define MAX_CANDIDATES 8192u
#define MAX_WALK 65536u        /* parents walked up from one holder */
#define LEAK_BFS 256u          /* blocks looked at per root leak */
#define LEAK_CLASSES 8u        /* classes named per leak         */
#define MAX_LEAKS 4096u
#define FIELD_SCAN 65536u      /* edges searched for a field name */

struct sb {
  struct hg_graph *g;
  struct hg_dominators *d;
  struct step *st;             /* step_parents, computed beside the dominators */
  struct hg_leaks *leaks;      /* _hg_leaks_find_from's, computed after them   */
  struct leak_sig *leak_sigs;  /* and the first root leaks' signature steps    */
  uint32_t nleak_sigs;
  struct _hg_arena *a;
  const struct hg_fleet_summary_options *opt;
  struct hg_fleet_sig *sigs;
  uint32_t n, cap;
  uint32_t *slot;              /* open addressing over sigs, 2 x cap       */
  uint32_t slots;
  int err;
};

/* ---- Signature table ---- */

/* Copies s, cut at HG_FLEET_MAX_TEXT bytes on a UTF-8 boundary. */
static const char *text(struct sb *b, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  if (n > HG_FLEET_MAX_TEXT) {
    n = HG_FLEET_MAX_TEXT;
    while (n && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
  }
  const char *p = _hg_fa_strndup(b->a, s, n);
  if (!p) b->err = HG_ENOMEM;
  return p ? p : "";
}

static int grow(struct sb *b) {
  uint32_t cap = b->cap ? b->cap * 2 : 256;
  struct hg_fleet_sig *s = realloc(b->sigs, (size_t)cap * sizeof *s);
  if (!s) return HG_ENOMEM;
  b->sigs = s;
  free(b->slot);
  b->slots = cap * 2;
  b->slot = malloc((size_t)b->slots * sizeof *b->slot);
  if (!b->slot) return HG_ENOMEM;
  memset(b->slot, 0xff, (size_t)b->slots * sizeof *b->slot);
  b->cap = cap;
  for (uint32_t i = 0; i < b->n; i++) {
    uint32_t h = (uint32_t)b->sigs[i].hash & (b->slots - 1);
    while (b->slot[h] != UINT32_MAX) h = (h + 1) & (b->slots - 1);
    b->slot[h] = i;
  }
  return 0;
}

/* Adds bytes/count to the signature of (kind, steps), creating it. The
 * steps are copied. */
static void add_sig(struct sb *b, uint32_t kind, const char **steps, uint32_t n, uint64_t bytes,
                    uint64_t count) {
  if (b->err) return;
  uint64_t hash = _hg_fleet_hash(kind, HG_FLEET_ALGO, steps, n);
  if (b->n >= b->cap && (b->err = grow(b))) return;
  uint32_t h = (uint32_t)hash & (b->slots - 1);
  for (; b->slot[h] != UINT32_MAX; h = (h + 1) & (b->slots - 1)) {
    struct hg_fleet_sig *s = &b->sigs[b->slot[h]];
    if (s->hash == hash && s->kind == kind) {
      s->bytes += bytes;
      s->count += count;
      return;
    }
  }
  const char **copy = _hg_fa_alloc(b->a, (size_t)(n ? n : 1) * sizeof *copy);
  if (!copy) {
    b->err = HG_ENOMEM;
    return;
  }
  for (uint32_t i = 0; i < n; i++) copy[i] = text(b, steps[i]);
  b->slot[h] = b->n;
  b->sigs[b->n++] = (struct hg_fleet_sig){hash, bytes, count, kind, HG_FLEET_ALGO, n, copy};
}

/* ---- Retention ---- */

static uint32_t step_key(const struct hg_graph *g, uint32_t v) {
  if (g->node_class[v]) return g->node_class[v];
  if ((g->node_flags[v] & HG_NODE_REGION) && !(g->node_flags[v] & HG_NODE_MALLOC)) return STEP_REGION;
  return 0;
}

static const char *step_class(const struct hg_graph *g, uint32_t key) {
  if (key == STEP_REGION) return "(region)";
  if (!key || key > g->class_count || !g->classes[key - 1].name) return "(unclassified)";
  return g->classes[key - 1].name;
}

/* The field name of a named edge p -> t, or NULL. */
static const char *field_into(const struct hg_graph *g, uint32_t p, uint32_t t) {
  if (!g->named_count) return NULL;
  uint32_t lo = g->edge_start[p], hi = g->edge_start[p + 1];
  if (hi - lo > FIELD_SCAN) hi = lo + FIELD_SCAN;
  for (uint32_t e = lo; e < hi; e++)
    if (g->edge_target[e] == t && _hg_retains(g->edge_kind[e])) {
      const char *f = hg_graph_edge_field(g, e);
      if (f) return f;
    }
  return NULL;
}

static const char *base_name(const char *path) {
  if (!path) return "?";
  const char *s = strrchr(path, '/');
  return s && s[1] ? s + 1 : path;
}

static void root_step(const struct hg_graph *g, const struct hg_root *r, char *buf, size_t size) {
  if (r->kind == HG_ROOT_GLOBAL)
    snprintf(buf, size, "global:%s",
             r->owner < g->image_count ? base_name(g->images[r->owner].path) : "?");
  else
    snprintf(buf, size, "%s", hg_root_kind_name(r->kind));
}

/*
 * The path of a holder is its parent chain on a search over retaining
 * edges from the roots that counts steps, not blocks: an edge between two
 * blocks of the same step (class, or both unclassified) costs 0, any other
 * 1 (a 0-1 breadth-first search, level by level), so a block deep in a
 * list is reached along the list, not through a stray word in a neighbour's
 * slack. Roots are taken kind by kind from the most trustworthy: globals,
 * TLS, thread stacks, registers, other memory; blocks reached from one
 * kind are final before the next starts. A stale conservative word (a dead
 * thread's cached stack) then never replaces the path the app's own
 * structure gives. st[v].parent: the block it was reached from, HG_SUPER_ROOT
 * for a root's target (st[v].u.seed: that root, step_seeds), HG_NONE when not reached.
 * Each kind's distances start above every distance of the kinds before it
 * (base), so their blocks are final without a pass resetting them.
 */
struct step {       /* one block's record in the search, 12 bytes           */
  uint32_t dist;    /* steps from the roots, UINT32_MAX: not reached yet    */
  union {
    uint32_t key;   /* in the search: step_key, read with dist for every edge into it */
    uint32_t seed;  /* after it, for a root's target (parent HG_SUPER_ROOT): that root */
  } u;
  uint32_t parent;  /* the block it was reached from, HG_SUPER_ROOT, HG_NONE */
};

/* The root each root's target was seeded from, once the search is done (its
 * key is not needed any more): the first root of the first kind that
 * targets it. A target of a kind's root that no earlier kind reached is
 * seeded by that kind, so the first kind with a root on it is the one;
 * written in reverse, the last write is that kind's first root. Keeping it
 * out of the search's record saves 4 of 16 bytes a block, a quarter of the
 * search's fresh memory (docs/analysis.md, issue 33, seventh round). */
static void step_seeds(const struct hg_graph *g, const uint32_t *kinds, size_t nk, struct step *st) {
  for (size_t k = nk; k-- > 0;)
    for (uint32_t r = g->root_count; r-- > 0;) {
      uint32_t t = g->roots[r].target;
      if (g->roots[r].kind == kinds[k] && t < g->node_count && st[t].parent == HG_SUPER_ROOT)
        st[t].u.seed = r;
    }
}

static int step_parents(const struct hg_graph *g, struct step *st) {
  static const uint32_t kinds[] = {HG_ROOT_GLOBAL, HG_ROOT_TLS, HG_ROOT_STACK, HG_ROOT_REGISTER,
                                   HG_ROOT_OTHER};
  uint32_t n = g->node_count;
  const uint32_t *es = g->edge_start, *et = g->edge_target;
  const uint8_t *ek = g->edge_kind;
  uint32_t *cur = _hg_malloc_big((size_t)n * sizeof *cur), *next = _hg_malloc_big((size_t)n * sizeof *next);
  int rc = (!cur || !next) ? HG_ENOMEM : 0;
  for (uint32_t v = 0; !rc && v < n; v++) st[v] = (struct step){UINT32_MAX, {step_key(g, v)}, HG_NONE};
  uint32_t base = 0; /* above every distance so far (none reaches 2^32 - 1: n levels at most) */
  for (size_t k = 0; !rc && k < sizeof kinds / sizeof *kinds; k++) {
    uint32_t nn = 0, nc = 0;
    for (uint32_t r = 0; r < g->root_count; r++) {
      uint32_t t = g->roots[r].target;
      if (g->roots[r].kind != kinds[k] || t >= n || st[t].dist != UINT32_MAX) continue;
      st[t].dist = base;
      st[t].parent = HG_SUPER_ROOT;
      cur[nc++] = t;
    }
    uint32_t d = base;
    for (; nc; d++) {
      nn = 0;
      while (nc) { /* cur: level d, grows by 0-cost edges; next: level d + 1 */
        /* The stack's next blocks are known: their edge ranges and records
         * (64 ahead), their edges (32 ahead), their targets' records (the
         * first 8 edges of the block 12 ahead) are requested ahead (nothing
         * else changes: a 0-cost push lands on top and only delays what was
         * requested). Each step comes a few blocks after what it reads has
         * arrived (docs/analysis.md, issue 33, seventh round). */
        if (nc > 64) {
          uint32_t u = cur[nc - 65];
          __builtin_prefetch(&es[u]);
          __builtin_prefetch(&st[u]);
        }
        if (nc > 32) {
          uint32_t e = es[cur[nc - 33]];
          __builtin_prefetch(&et[e]);
          __builtin_prefetch(&ek[e]);
        }
        if (nc > 12) {
          uint32_t u = cur[nc - 13];
          for (uint32_t e = es[u], k = 0; e < es[u + 1] && k < 8; e++, k++)
            __builtin_prefetch(&st[et[e] < n ? et[e] : 0], 1);
        }
        uint32_t v = cur[--nc];
        if (st[v].dist != d) continue; /* reached again at a lower level */
        uint32_t kv = st[v].u.key;
        for (uint32_t e = es[v], end = es[v + 1]; e < end; e++) {
          uint32_t t = et[e];
          if (t >= n || !_hg_retains(ek[e])) continue;
          struct step *s = &st[t];
          uint32_t nd = d + (s->u.key != kv);
          if (s->dist <= nd) continue;
          int fresh = s->dist == UINT32_MAX;
          s->dist = nd;
          s->parent = v;
          if (nd == d) cur[nc++] = t;
          else if (fresh) next[nn++] = t;
        }
      }
      uint32_t *tmp = cur;
      cur = next;
      next = tmp;
      nc = nn;
    }
    base = d; /* the last level was d - 1, or none was (d = base) */
  }
  if (!rc) step_seeds(g, kinds, sizeof kinds / sizeof *kinds, st);
  free(cur);
  free(next);
  return rc;
}

struct holder { uint64_t retained; uint32_t node, from; /* path from `from` */ };
static int by_retained_desc(const void *x, const void *y) {
  const struct holder *a = x, *b = y;
  if (a->retained != b->retained) return a->retained > b->retained ? -1 : 1;
  return a->node < b->node ? -1 : a->node > b->node;
}

static int retention(struct sb *b) {
  struct hg_graph *g = b->g;
  const struct hg_dominators *d = b->d;
  uint32_t n = g->node_count;
  if (!n || !d->reachable_count) return 0;
  uint64_t *top_bits = _hg_bits_new(n);
  struct step *st = NULL;
  struct holder *cands = NULL;
  uint32_t cap = 0;
  uint32_t *top = malloc(HG_FLEET_TOP_HOLDERS * sizeof *top);
  int rc = HG_ENOMEM;
  if (!top_bits || !top) goto out;
  /* Candidates: the top holders and every one above the threshold. */
  uint32_t nc = 0;
  uint32_t nt = hg_dominators_top(d, HG_FLEET_TOP_HOLDERS, top);
  for (uint32_t i = 0; i < nt; i++) _hg_bit_set(top_bits, top[i]);
#define IS_CAND(v) (d->retained[v] >= HG_FLEET_HOLDER_BYTES || _hg_bit(top_bits, v))
  st = b->st; /* taken: freed here */
  b->st = NULL;
  if (!st) goto out;
  for (uint32_t v = 0; v < n; v++) { /* in index order: reads retained[] sequentially */
    if (!IS_CAND(v)) continue;
    uint32_t p = d->idom[v], from = v;
    if (p < n && step_key(g, p) == step_key(g, v)) continue; /* inside a run: its first block says it */
    /* Unclassified storage (a vector's buffer) is named by its typed owner,
     * the block its path comes from: skipped when the owner dominates it
     * and is a holder (its bytes are the owner's already), else reported
     * under the owner's path. */
    uint32_t k = step_key(g, v), q = st[v].parent;
    if ((k == 0 || k == STEP_REGION) && q < n && step_key(g, q) != 0 && step_key(g, q) != STEP_REGION) {
      if (p == q && IS_CAND(q)) continue;
      from = q;
    }
    if (nc == cap) {
      struct holder *m = realloc(cands, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *m);
      if (!m) goto out;
      cands = m;
    }
    cands[nc++] = (struct holder){d->retained[v], v, from};
  }
  if (nc > MAX_CANDIDATES) { /* keep the biggest */
    qsort(cands, nc, sizeof *cands, by_retained_desc);
    nc = MAX_CANDIDATES;
  }
  const char *steps[HG_FLEET_MAX_STEPS + 2];
  const char *rev[HG_FLEET_MAX_STEPS];
  char rootbuf[HG_FLEET_MAX_TEXT + 16];
  char fieldbuf[HG_FLEET_MAX_STEPS][HG_FLEET_MAX_TEXT + 4];
  for (uint32_t i = 0; i < nc && !b->err; i++) {
    /* Walk up the BFS parents, a run of same-class blocks being one step
     * (its field: the one into the run's first block); keep the
     * HG_FLEET_MAX_STEPS - 2 steps nearest the holder. */
    uint32_t u = cands[i].from, nrev = 0, total = 0, key = step_key(g, u), first = u, w = 0;
    for (; w < MAX_WALK; w++) {
      uint32_t p = st[u].parent;
      if (p < n && step_key(g, p) == key) {
        u = first = p;
        continue;
      }
      if (nrev < HG_FLEET_MAX_STEPS - 2) {
        const char *cls = step_class(g, key), *f = p < n ? field_into(g, p, first) : NULL;
        if (f) {
          snprintf(fieldbuf[nrev], sizeof fieldbuf[nrev], "%.*s: %s", (int)HG_FLEET_MAX_TEXT / 2, f, cls);
          rev[nrev] = fieldbuf[nrev];
        } else {
          rev[nrev] = cls;
        }
        nrev++;
      }
      total++;
      if (p >= n) break; /* u is a root's target */
      u = first = p;
      key = step_key(g, u);
    }
    uint32_t ns = 0;
    if (w < MAX_WALK && st[u].parent == HG_SUPER_ROOT) root_step(g, &g->roots[st[u].u.seed], rootbuf, sizeof rootbuf);
    else snprintf(rootbuf, sizeof rootbuf, "(deep)");
    steps[ns++] = rootbuf;
    if (total > nrev) steps[ns++] = "\xe2\x80\xa6"; /* … */
    for (uint32_t j = nrev; j-- > 0;) steps[ns++] = rev[j];
    add_sig(b, HG_FLEET_RETENTION, steps, ns, cands[i].retained, 1);
  }
  rc = b->err;
out:
#undef IS_CAND
  free(top_bits);
  free(cands);
  free(top);
  free(st);
  return rc;
}

/* ---- Leaks ---- */

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A root leak's signature steps: "cycle" or "single", then its classes. */
struct leak_sig {
  const char *steps[LEAK_CLASSES + 2]; /* class names: the graph's, or literals */
  uint32_t n;
  uint64_t bytes;
};

/* The signatures of the first MAX_LEAKS root leaks of l (*out, *count):
 * l is sorted by owned bytes (_hg_leaks_find_from without held sizes; the
 * owned sets do not overlap, so these account for the most leaked bytes),
 * given `rooted`: root reachability. Reads the graph only, so it runs on
 * the second core with the leaks (parents_main). */
static int leak_sigs(const struct hg_graph *g, const struct hg_leaks *l, const uint64_t *rooted,
                     struct leak_sig **out, uint32_t *count) {
  uint32_t nl = l->count < MAX_LEAKS ? l->count : MAX_LEAKS;
  struct leak_sig *ls = malloc(((size_t)nl + 1) * sizeof *ls);
  uint64_t *seen = _hg_bits_new(g->node_count);
  uint32_t *q = malloc(LEAK_BFS * sizeof *q);
  int rc = !ls || !seen || !q ? HG_ENOMEM : 0;
  for (uint32_t i = 0; i < nl && !rc; i++) {
    const struct hg_leak *k = &l->leaks[i];
    /* Breadth-first over leaked blocks from the root leak: its classes. */
    uint32_t nq = 0, head = 0;
    q[nq++] = k->node;
    _hg_bit_set(seen, k->node);
    while (head < nq) {
      /* the queue says what comes next: edge ranges 4 ahead, edges 2 ahead */
      if (head + 4 < nq) __builtin_prefetch(&g->edge_start[q[head + 4]]);
      if (head + 2 < nq) {
        uint32_t e2 = g->edge_start[q[head + 2]];
        __builtin_prefetch(&g->edge_target[e2]);
        __builtin_prefetch(&g->edge_kind[e2]);
      }
      uint32_t v = q[head++];
      for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && nq < LEAK_BFS; e++) {
        uint32_t t = g->edge_target[e];
        if (!_hg_retains(g->edge_kind[e]) || t >= g->node_count || _hg_bit(seen, t)) continue;
        if (_hg_bit(rooted, t)) continue; /* reachable: not part of the leak */
        _hg_bit_set(seen, t);
        q[nq++] = t;
      }
    }
    const char **cls = ls[i].steps + 1;
    uint32_t nk = 0;
    int cycle = k->group_count > 1;
    if (!cycle) cls[nk++] = step_class(g, step_key(g, k->node)); /* a lone block: its class leads */
    uint32_t first = nk;
    for (uint32_t j = 0; j < nq; j++) {
      seen[q[j] >> 6] &= ~((uint64_t)1 << (q[j] & 63));
      if (nk == LEAK_CLASSES) continue; /* full: nothing more is added */
      const char *c = step_class(g, step_key(g, q[j]));
      int dup = 0;
      for (uint32_t x = 0; x < nk && !dup; x++) dup = !strcmp(cls[x], c);
      if (!dup && nk < LEAK_CLASSES) cls[nk++] = c;
    }
    qsort(cls + first, nk - first, sizeof *cls, cmp_str);
    ls[i].steps[0] = cycle ? "cycle" : "single";
    ls[i].n = nk + 1;
    ls[i].bytes = k->owned_bytes;
  }
  free(seen);
  free(q);
  if (rc) {
    free(ls);
    return rc;
  }
  *out = ls;
  *count = nl;
  return 0;
}

static int leaks(struct sb *b, uint64_t *leaked_bytes) {
  *leaked_bytes = b->leaks ? b->leaks->leaked_bytes : 0; /* none: a graph without nodes */
  for (uint32_t i = 0; i < b->nleak_sigs && !b->err; i++)
    add_sig(b, HG_FLEET_LEAK, b->leak_sigs[i].steps, b->leak_sigs[i].n, b->leak_sigs[i].bytes, 1);
  return b->err;
}

/* ---- Allocation sites and large allocations ---- */

static const char *frame_name(struct sb *b, const struct hg_stack_frame *f, char *buf, size_t size) {
  const char *s = b->opt && b->opt->frame_name ? b->opt->frame_name(b->opt->frame_ctx, b->g, f) : NULL;
  if (s) return s;
  if (f->image >= b->g->image_count) return "?"; /* never a raw address */
  snprintf(buf, size, "%s+0x%llx", base_name(b->g->images[f->image].path),
           (unsigned long long)f->offset);
  return buf;
}

/* steps[first…] = the first HG_FLEET_SITE_FRAMES frames of stack id. */
static uint32_t stack_steps(struct sb *b, uint32_t id, const char **steps, uint32_t first,
                            char (*buf)[HG_FLEET_MAX_TEXT]) {
  if (!id || id > b->g->stack_count) {
    steps[first] = "(no stack)";
    return first + 1;
  }
  const struct hg_stack *st = &b->g->stacks[id - 1];
  uint32_t n = first;
  for (uint32_t i = 0; i < st->frame_count && n - first < HG_FLEET_SITE_FRAMES; i++)
  {
    steps[n] = frame_name(b, &st->frames[i], buf[n - first], HG_FLEET_MAX_TEXT);
    n++;
  }
  if (n == first) steps[n++] = "(no frames)";
  return n;
}

struct site { uint32_t id; uint64_t retained; };
static int by_site(const void *x, const void *y) {
  const struct site *a = x, *c = y;
  if (a->retained != c->retained) return a->retained > c->retained ? -1 : 1;
  return a->id < c->id ? -1 : a->id > c->id;
}

static int sites(struct sb *b) {
  struct hg_graph *g = b->g;
  if (!g->has_stacks || !g->stack_count) return 0;
  struct hg_stack_total *tot = NULL;
  int rc = hg_stack_totals(g, b->d, &tot);
  if (rc) return rc;
  struct site *s = malloc((size_t)g->stack_count * sizeof *s);
  if (!s) {
    free(tot);
    return HG_ENOMEM;
  }
  uint32_t ns = 0;
  for (uint32_t id = 1; id <= g->stack_count; id++)
    if (tot[id].nodes) s[ns++] = (struct site){id, tot[id].retained};
  qsort(s, ns, sizeof *s, by_site);
  const char *steps[HG_FLEET_SITE_FRAMES + 1];
  char buf[HG_FLEET_SITE_FRAMES][HG_FLEET_MAX_TEXT];
  for (uint32_t i = 0; i < ns && i < HG_FLEET_TOP_SITES; i++) {
    uint32_t n = stack_steps(b, s[i].id, steps, 0, buf);
    add_sig(b, HG_FLEET_SITE, steps, n, s[i].retained, tot[s[i].id].nodes);
  }
  free(s);
  free(tot);
  return b->err;
}

static void large(struct sb *b) {
  const struct hg_graph *g = b->g;
  const char *steps[HG_FLEET_SITE_FRAMES + 1];
  char buf[HG_FLEET_SITE_FRAMES][HG_FLEET_MAX_TEXT], label[HG_SIZE_BUCKET_LABEL];
  for (uint32_t i = 0; i < g->large_count; i++) {
    snprintf(label, sizeof label, "<=%llu B",
             (unsigned long long)((uint64_t)1 << _hg_size_bucket(g->large[i].size)));
    steps[0] = label;
    uint32_t n = stack_steps(b, g->large[i].stack, steps, 1, buf);
    add_sig(b, HG_FLEET_LARGE, steps, n, g->large[i].size, 1);
  }
}

/* ---- Census and metadata ---- */

static int by_class(const void *x, const void *y) {
  const struct hg_fleet_class *a = x, *c = y;
  if (a->retained != c->retained) return a->retained > c->retained ? -1 : 1;
  if (a->bytes != c->bytes) return a->bytes > c->bytes ? -1 : 1;
  return strcmp(a->name, c->name);
}

static int census(struct sb *b, struct hg_fleet_summary *s) {
  const struct hg_graph *g = b->g;
  uint32_t nc = g->class_count + 1;
  uint64_t *cnt = calloc(nc, 8), *bytes = calloc(nc, 8), *ret = calloc(nc, 8);
  struct hg_fleet_class *rows = calloc(nc, sizeof *rows);
  int rc = (!cnt || !bytes || !ret || !rows) ? HG_ENOMEM : hg_class_retained(g, b->d, cnt, bytes, ret);
  uint32_t n = 0;
  for (uint32_t c = 0; !rc && c < nc; c++)
    if (cnt[c]) rows[n++] = (struct hg_fleet_class){step_class(g, c), cnt[c], bytes[c], ret[c]};
  if (!rc) {
    qsort(rows, n, sizeof *rows, by_class);
    if (n > HG_FLEET_MAX_CLASSES) {
      s->dropped += n - HG_FLEET_MAX_CLASSES;
      n = HG_FLEET_MAX_CLASSES;
    }
    s->classes = _hg_fa_alloc(b->a, (size_t)(n ? n : 1) * sizeof *rows);
    if (!s->classes) rc = HG_ENOMEM;
  }
  for (uint32_t i = 0; !rc && i < n; i++) {
    s->classes[i] = rows[i];
    s->classes[i].name = text(b, rows[i].name);
  }
  if (!rc) s->class_count = n;
  free(cnt);
  free(bytes);
  free(ret);
  free(rows);
  return rc ? rc : b->err;
}

static const char *app_key(const struct hg_graph *g, const char *key) {
  for (size_t i = 0; i < g->meta.app_count; i++)
    if (g->meta.app[i].key && !strcmp(g->meta.app[i].key, key)) return g->meta.app[i].value;
  return NULL;
}

/* The watcher writes its device metadata as dotted keys (capture/device.c:
 * app.version, device.model, ...); an app may set the plain ones itself. */
static const char *app_key2(const struct hg_graph *g, const char *dotted, const char *plain) {
  const char *v = app_key(g, dotted);
  return v ? v : app_key(g, plain);
}

static uint64_t num_key(const struct hg_graph *g, const char *dotted, const char *app, const char *cap) {
  const char *v = app_key2(g, dotted, app);
  if (v) return strtoull(v, NULL, 10);
  for (size_t i = 0; i < g->meta.capture_count; i++)
    if (g->meta.capture[i].key && !strcmp(g->meta.capture[i].key, cap)) return g->meta.capture[i].value;
  return 0;
}

static const char *opt_text(struct sb *b, const char *s) { return s ? text(b, s) : NULL; }

static void metadata(struct sb *b, struct hg_fleet_summary *s) {
  const struct hg_graph *g = b->g;
  s->app = opt_text(b, app_key2(g, "app.name", "app"));
  s->app_version = opt_text(b, app_key2(g, "app.version", "app_version"));
  s->build = opt_text(b, app_key2(g, "app.build", "build"));
  const char *os = app_key2(g, "device.os_version", "os_version");
  s->os_version = opt_text(b, os ? os : g->meta.os_version);
  s->device_model = opt_text(b, app_key2(g, "device.model", "device_model"));
  s->device_id = opt_text(b, app_key2(g, "device.install_id", "device_id"));
  s->session_id = opt_text(b, app_key2(g, "device.session_id", "session_id"));
  s->trigger = opt_text(b, g->meta.trigger);
  s->platform = opt_text(b, g->meta.platform);
  s->process = opt_text(b, g->meta.process);
  s->snapshot = b->opt && b->opt->snapshot ? text(b, base_name(b->opt->snapshot)) : NULL;
  s->time_ns = g->meta.time_ns;
  s->footprint = num_key(g, "device.footprint", "footprint", "footprint_bytes");
  s->limit = num_key(g, "device.limit", "limit", "limit_bytes");
  s->checksum = g->checksum;
  s->file_size = g->file_size;
  s->nodes = g->node_count;
  s->edges = g->edge_count;
  for (uint32_t v = 0; v < g->node_count; v++) s->heap_bytes += g->node_size[v];
}

/* ---- Putting it together ---- */

static int by_bytes(const void *x, const void *y) {
  const struct hg_fleet_sig *a = x, *c = y;
  if (a->bytes != c->bytes) return a->bytes > c->bytes ? -1 : 1;
  return a->hash < c->hash ? -1 : a->hash > c->hash;
}

static int by_sig(const void *x, const void *y) {
  const struct hg_fleet_sig *a = x, *c = y;
  if (a->kind != c->kind) return a->kind < c->kind ? -1 : 1;
  if (a->bytes != c->bytes) return a->bytes > c->bytes ? -1 : 1;
  return a->hash < c->hash ? -1 : a->hash > c->hash;
}

/* The retention paths' BFS parents (step_parents), then the leaks, need
 * the graph only, so they are computed on the second core while the
 * dominators are: a long job (jobs.c), so the dominators keep to this
 * core until the search ends instead of sharing the other one three ways
 * (on the calling thread first when no thread can be had). */
struct parents_job {
  const struct hg_graph *g;
  struct _hg_job *self;
  struct step *st;
  struct hg_leaks *leaks;
  struct leak_sig *sigs;
  uint32_t nsigs;
  int rc;
};
static void *parents_main(void *arg) {
  struct parents_job *p = arg;
  uint32_t n = p->g->node_count;
  p->st = _hg_malloc_big((size_t)n * sizeof *p->st);
  p->rc = !p->st ? HG_ENOMEM : step_parents(p->g, p->st);
  /* From here the dominators may take the second core back when they have
   * work for it: at 10 M, giving it back before the leaks (which take
   * about as long as the search) was faster than holding it to the end
   * (docs/analysis.md, issue 33, fourth round). */
  _hg_job_release(p->self);
  if (p->rc) return NULL;
  /* What the search reached is closed under retaining edges: with the
   * roots of no kind it takes (none in a valid snapshot) added, it is root
   * reachability, the dominators' reached set. The leaks start from it,
   * still beside the dominators. */
  size_t words = (size_t)n / 64 + 1;
  uint64_t *rooted = _hg_bits_new(n), *reach = NULL;
  if (rooted) {
    for (uint32_t v = 0; v < n; v++)
      if (p->st[v].dist != UINT32_MAX) _hg_bit_set(rooted, v);
    rooted = _hg_reachable_from(p->g, rooted, 0);
  }
  if (rooted && (reach = malloc(words * sizeof *reach))) memcpy(reach, rooted, words * sizeof *reach);
  p->rc = !reach ? HG_ENOMEM : _hg_leaks_find_from(p->g, reach, 0, &p->leaks);
  if (!p->rc) p->rc = leak_sigs(p->g, p->leaks, rooted, &p->sigs, &p->nsigs);
  free(rooted);
  return NULL;
}

int hg_fleet_summarize(struct hg_graph *g, const struct hg_fleet_summary_options *opt,
                       struct hg_fleet_summary **out) {
  *out = NULL;
  struct _hg_arena a = {0};
  struct hg_fleet_summary *s = _hg_fa_result(&a, sizeof *s);
  if (!s) return HG_ENOMEM;
  struct sb b = {.g = g, .a = &a, .opt = opt};
  struct _hg_job job;
  struct parents_job pj = {g, &job, NULL, NULL, NULL, 0, 0};
  if (g->node_count) _hg_job_start_long(&job, parents_main, &pj);
  int rc = hg_dominators_compute(g, &b.d);
  if (g->node_count) _hg_job_wait(&job);
  b.st = pj.st;
  b.leaks = pj.leaks;
  b.leak_sigs = pj.sigs;
  b.nleak_sigs = pj.nsigs;
  if (!rc) rc = pj.rc;
  s->format = HG_FLEET_SUMMARY_FORMAT;
  if (!rc) {
    s->reachable_bytes = b.d->reachable_bytes;
    metadata(&b, s);
    rc = census(&b, s);
  }
  if (!rc) rc = retention(&b);
  if (!rc) rc = leaks(&b, &s->leaked_bytes);
  if (!rc) rc = sites(&b);
  if (!rc) large(&b);
  if (!rc) rc = b.err;
  if (!rc) {
    if (b.n) qsort(b.sigs, b.n, sizeof *b.sigs, by_sig); /* none: b.sigs is NULL */
    uint32_t keep = b.n < HG_FLEET_MAX_SIGS ? b.n : HG_FLEET_MAX_SIGS;
    if (b.n > HG_FLEET_MAX_SIGS) { /* keep the biggest across kinds */
      qsort(b.sigs, b.n, sizeof *b.sigs, by_bytes); /* then back to kind order */
      s->dropped += b.n - keep;
      qsort(b.sigs, keep, sizeof *b.sigs, by_sig);
    }
    s->sigs = _hg_fa_alloc(&a, (size_t)(keep ? keep : 1) * sizeof *s->sigs);
    if (!s->sigs) rc = HG_ENOMEM;
    else {
      if (keep) memcpy(s->sigs, b.sigs, (size_t)keep * sizeof *s->sigs);
      s->sig_count = keep;
    }
  }
  hg_dominators_free(b.d);
  free(b.st); /* when retention did not take it */
  hg_leaks_free(b.leaks);
  free(b.leak_sigs);
  free(b.sigs);
  free(b.slot);
  if (rc) {
    _hg_fa_free(&a);
    return rc;
  }
  s->priv = _hg_fa_keep(&a, s, sizeof *s);
  *out = s;
  return 0;
}

void hg_fleet_summary_free(struct hg_fleet_summary *s) {
  if (s) _hg_fa_release(s->priv);
}
