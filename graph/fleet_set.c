/*
 * fleet_set.c — a set of summaries and the issues across them
 * (docs/fleet.md, "Issues"). hg_fleet_add keeps only what the analyses need
 * (per snapshot: version, device, name; per signature occurrence: 16 bytes;
 * per distinct signature its path once), so a server can stream 100,000
 * summaries through it. Issues: same (kind, algo, hash) = same issue; status
 * against a baseline version (new / regressed by a one-sided Mann-Whitney
 * test / fixed / ongoing); retention issues whose growth flagged issues
 * below them explain become their context; ranked by devices x median bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/fleet.h"
#include "graph/fleet_set.h"
#include "graph/fleet_stats.h"

/* ---- Interning ---- */

static uint64_t hash_bytes(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Id of s in t (added when new); UINT32_MAX on ENOMEM. */
uint32_t _hg_intern(struct _hg_intern *t, struct _hg_arena *a, const char *s) {
  if (!s) s = "";
  if (t->n * 2 >= t->slots) {
    uint32_t slots = t->slots ? t->slots * 2 : 256;
    uint32_t *sl = malloc((size_t)slots * sizeof *sl);
    const char **str = realloc(t->str, (size_t)slots / 2 * sizeof *str);
    if (str) t->str = str;
    if (!sl || !str) {
      free(sl);
      return UINT32_MAX;
    }
    memset(sl, 0xff, (size_t)slots * sizeof *sl);
    for (uint32_t i = 0; i < t->n; i++) {
      uint32_t h = (uint32_t)hash_bytes(t->str[i]) & (slots - 1);
      while (sl[h] != UINT32_MAX) h = (h + 1) & (slots - 1);
      sl[h] = i;
    }
    free(t->slot);
    t->slot = sl;
    t->slots = slots;
  }
  uint32_t h = (uint32_t)hash_bytes(s) & (t->slots - 1);
  for (; t->slot[h] != UINT32_MAX; h = (h + 1) & (t->slots - 1))
    if (!strcmp(t->str[t->slot[h]], s)) return t->slot[h];
  const char *c = _hg_fa_strdup(a, s);
  if (!c) return UINT32_MAX;
  t->slot[h] = t->n;
  t->str[t->n] = c;
  return t->n++;
}

static void intern_free(struct _hg_intern *t) {
  free(t->str);
  free(t->slot);
}

/* Makes room for one more element in a growing array (cap doubles). */
#define GROW(arr, n, cap) ((n) < (cap) ? 0 : grow((void **)&(arr), &(cap), sizeof *(arr)))
static int grow(void **p, uint64_t *cap, size_t size) {
  uint64_t c = *cap ? *cap * 2 : 1024;
  void *q = realloc(*p, (size_t)c * size);
  if (!q) return HG_ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

/* ---- The set ---- */

struct hg_fleet *hg_fleet_new(void) { return calloc(1, sizeof(struct hg_fleet)); }

void hg_fleet_free(struct hg_fleet *f) {
  if (!f) return;
  intern_free(&f->versions);
  intern_free(&f->devices);
  intern_free(&f->names);
  intern_free(&f->classes);
  free(f->snaps);
  free(f->sigs);
  free(f->sig_slot);
  free(f->occ);
  free(f->cocc);
  free(f->vorder);
  _hg_fa_free(&f->a);
  free(f);
}

static uint32_t sig_find(struct hg_fleet *f, const struct hg_fleet_sig *s) {
  if (f->nsig * 2 >= f->sig_slots) {
    uint32_t slots = f->sig_slots ? f->sig_slots * 2 : 1024;
    uint32_t *sl = malloc((size_t)slots * sizeof *sl);
    if (!sl) return UINT32_MAX;
    memset(sl, 0xff, (size_t)slots * sizeof *sl);
    for (uint32_t i = 0; i < f->nsig; i++) {
      uint32_t h = (uint32_t)(f->sigs[i].hash >> 7) & (slots - 1);
      while (sl[h] != UINT32_MAX) h = (h + 1) & (slots - 1);
      sl[h] = i;
    }
    free(f->sig_slot);
    f->sig_slot = sl;
    f->sig_slots = slots;
  }
  uint32_t h = (uint32_t)(s->hash >> 7) & (f->sig_slots - 1);
  for (; f->sig_slot[h] != UINT32_MAX; h = (h + 1) & (f->sig_slots - 1)) {
    const struct _hg_fsig *d = &f->sigs[f->sig_slot[h]];
    if (d->hash == s->hash && d->kind == s->kind && d->algo == s->algo) return f->sig_slot[h];
  }
  if (GROW(f->sigs, f->nsig, f->sig_cap)) return UINT32_MAX;
  const char **steps = _hg_fa_alloc(&f->a, (size_t)(s->step_count ? s->step_count : 1) * sizeof *steps);
  if (!steps) return UINT32_MAX;
  for (uint32_t i = 0; i < s->step_count; i++)
    if (!(steps[i] = _hg_fa_strdup(&f->a, s->steps[i] ? s->steps[i] : ""))) return UINT32_MAX;
  f->sig_slot[h] = f->nsig;
  f->sigs[f->nsig] = (struct _hg_fsig){s->hash, s->kind, s->algo, s->step_count, steps};
  return f->nsig++;
}

static int by_key(const void *x, const void *y) {
  const struct _hg_occ *a = x, *b = y;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* One snapshot's rows occ[from, *n): one per key, bytes summed. A summary
 * may name a signature or class twice (a decoded one is hostile input);
 * everything downstream counts a key at most once per snapshot. */
static void merge_rows(struct _hg_occ *occ, uint64_t from, uint64_t *n) {
  if (*n - from < 2) return;
  qsort(occ + from, (size_t)(*n - from), sizeof *occ, by_key);
  uint64_t w = from;
  for (uint64_t i = from + 1; i < *n; i++) {
    if (occ[i].key == occ[w].key) {
      occ[w].bytes = occ[w].bytes > UINT64_MAX - occ[i].bytes ? UINT64_MAX : occ[w].bytes + occ[i].bytes;
    } else {
      occ[++w] = occ[i];
    }
  }
  *n = w + 1;
}

int hg_fleet_add(struct hg_fleet *f, const struct hg_fleet_summary *s) {
  if (GROW(f->snaps, f->nsnap, f->snap_cap)) return HG_ENOMEM;
  uint32_t v = _hg_intern(&f->versions, &f->a, s->app_version ? s->app_version : "unknown");
  /* no device id: each snapshot counts as its own device */
  uint32_t d = s->device_id ? _hg_intern(&f->devices, &f->a, s->device_id) : UINT32_MAX - 1;
  uint32_t nm = _hg_intern(&f->names, &f->a, s->snapshot ? s->snapshot : "");
  if (v == UINT32_MAX || d == UINT32_MAX || nm == UINT32_MAX) return HG_ENOMEM;
  uint32_t si = f->nsnap;
  uint64_t o0 = f->nocc, c0 = f->ncocc;
  for (uint32_t i = 0; i < s->sig_count; i++) {
    uint32_t id = sig_find(f, &s->sigs[i]);
    if (id == UINT32_MAX || GROW(f->occ, f->nocc, f->occ_cap)) goto nomem;
    f->occ[f->nocc++] = (struct _hg_occ){id, si, s->sigs[i].bytes};
  }
  for (uint32_t i = 0; i < s->class_count; i++) {
    uint32_t id = _hg_intern(&f->classes, &f->a, s->classes[i].name);
    if (id == UINT32_MAX || GROW(f->cocc, f->ncocc, f->cocc_cap)) goto nomem;
    f->cocc[f->ncocc++] = (struct _hg_occ){id, si, s->classes[i].bytes};
  }
  merge_rows(f->occ, o0, &f->nocc);
  merge_rows(f->cocc, c0, &f->ncocc);
  f->snaps[f->nsnap++] = (struct _hg_fsnap){v, d, nm, s->time_ns};
  f->sorted_versions = 0;
  return 0;
nomem: /* no row may name a snapshot that was not added */
  f->nocc = o0;
  f->ncocc = c0;
  return HG_ENOMEM;
}

/* Version ids in ascending version order. */
static int cmp_ver(const void *x, const void *y, void *ctx) {
  const struct hg_fleet *f = ctx;
  return _hg_fleet_vercmp(f->versions.str[*(const uint32_t *)x], f->versions.str[*(const uint32_t *)y]);
}

const uint32_t *_hg_fleet_version_order(const struct hg_fleet *fc) {
  struct hg_fleet *f = (struct hg_fleet *)fc;
  if (f->sorted_versions == f->versions.n && f->vorder) return f->vorder;
  free(f->vorder);
  f->vorder = malloc(((size_t)f->versions.n + 1) * sizeof *f->vorder);
  if (!f->vorder) return NULL;
  for (uint32_t i = 0; i < f->versions.n; i++) f->vorder[i] = i;
  /* a plain insertion sort: versions are few, and qsort has no context */
  for (uint32_t i = 1; i < f->versions.n; i++) {
    uint32_t x = f->vorder[i], j = i;
    for (; j > 0 && cmp_ver(&f->vorder[j - 1], &x, f) > 0; j--) f->vorder[j] = f->vorder[j - 1];
    f->vorder[j] = x;
  }
  f->sorted_versions = f->versions.n;
  return f->vorder;
}

uint32_t hg_fleet_version_count(const struct hg_fleet *f) { return f->versions.n; }
const char *hg_fleet_version(const struct hg_fleet *f, uint32_t i) {
  const uint32_t *o = _hg_fleet_version_order(f);
  return o && i < f->versions.n ? f->versions.str[o[i]] : NULL;
}
uint32_t hg_fleet_snapshot_count(const struct hg_fleet *f) { return f->nsnap; }

/* Version id of name, or (NULL) the highest / the one below `above`. */
int _hg_fleet_resolve(const struct hg_fleet *f, const char *name, uint32_t *id) {
  const uint32_t *o = _hg_fleet_version_order(f);
  if (!o || !f->versions.n) return HG_ENOTFOUND;
  if (!name) {
    *id = o[f->versions.n - 1];
    return 0;
  }
  for (uint32_t i = 0; i < f->versions.n; i++)
    if (!strcmp(f->versions.str[i], name)) {
      *id = i;
      return 0;
    }
  return HG_ENOTFOUND;
}

int _hg_fleet_pair(const struct hg_fleet *f, const char *version, const char *baseline, uint32_t *v,
                   uint32_t *b) {
  const uint32_t *order = _hg_fleet_version_order(f);
  if (!order) return HG_ENOMEM;
  if (_hg_fleet_resolve(f, version, v)) return HG_ENOTFOUND;
  *b = UINT32_MAX;
  if (baseline) {
    if (_hg_fleet_resolve(f, baseline, b)) return HG_ENOTFOUND;
  } else {
    for (uint32_t i = 1; i < f->versions.n; i++)
      if (order[i] == *v) *b = order[i - 1];
  }
  if (*b == *v) *b = UINT32_MAX;
  return 0;
}

/* Occurrences grouped by key (counting sort; stable: snapshot order kept). */
int _hg_fleet_group(const struct _hg_occ *occ, uint64_t n, uint32_t keys, uint64_t **start,
                    uint64_t **idx) {
  uint64_t *st = calloc((size_t)keys + 1, sizeof *st), *ix = malloc((size_t)(n ? n : 1) * sizeof *ix);
  if (!st || !ix) {
    free(st);
    free(ix);
    return HG_ENOMEM;
  }
  for (uint64_t i = 0; i < n; i++) st[occ[i].key + 1]++;
  for (uint32_t k = 0; k < keys; k++) st[k + 1] += st[k];
  uint64_t *pos = malloc((size_t)(keys ? keys : 1) * sizeof *pos);
  if (!pos) {
    free(st);
    free(ix);
    return HG_ENOMEM;
  }
  memcpy(pos, st, (size_t)keys * sizeof *pos);
  for (uint64_t i = 0; i < n; i++) ix[pos[occ[i].key]++] = i;
  free(pos);
  *start = st;
  *idx = ix;
  return 0;
}

/* ---- Issues ---- */

struct work {
  const struct hg_fleet *f;
  uint32_t ver, base;          /* base = UINT32_MAX: none */
  uint64_t *start, *idx;       /* occurrences by signature */
  uint32_t *stamp;             /* per device: last issue counted + 1 */
  uint64_t *xs, *ys;           /* scratch: bytes in the version, the baseline */
};

/* Bytes of signature `sig` in version `ver`, snapshot order, into out. */
static uint32_t bytes_of(const struct work *w, uint32_t sig, uint32_t ver, uint64_t *out,
                         uint32_t *snaps) {
  uint32_t n = 0;
  for (uint64_t k = w->start[sig]; k < w->start[sig + 1]; k++) {
    const struct _hg_occ *o = &w->f->occ[w->idx[k]];
    if (w->f->snaps[o->snap].version != ver) continue;
    if (snaps) snaps[n] = o->snap;
    out[n++] = o->bytes;
  }
  return n;
}

static int is_prefix(const struct _hg_fsig *a, const struct _hg_fsig *d) {
  if (a->kind != HG_FLEET_RETENTION || d->kind != HG_FLEET_RETENTION || a->algo != d->algo ||
      a->step_count >= d->step_count)
    return 0;
  for (uint32_t i = 0; i < a->step_count; i++)
    if (strcmp(a->steps[i], d->steps[i])) return 0;
  return 1;
}

/* Per snapshot of version ver holding issue a: its bytes less those of the
 * explaining issues (d[0..nd)) in the same snapshot. */
static uint32_t residual(const struct work *w, uint32_t a, const uint32_t *d, uint32_t nd,
                         uint32_t ver, uint64_t *out, uint32_t *snaps, uint64_t *tmp, uint32_t *tsnap) {
  uint32_t n = bytes_of(w, a, ver, out, snaps);
  for (uint32_t j = 0; j < nd; j++) {
    uint32_t m = bytes_of(w, d[j], ver, tmp, tsnap), x = 0;
    for (uint32_t i = 0; i < n; i++) { /* both in snapshot order: merge */
      while (x < m && tsnap[x] < snaps[i]) x++;
      if (x < m && tsnap[x] == snaps[i]) out[i] = out[i] > tmp[x] ? out[i] - tmp[x] : 0;
    }
  }
  return n;
}

struct rank { double impact; uint64_t hash; uint32_t i; };
static int by_impact(const void *x, const void *y) {
  const struct rank *a = x, *b = y;
  if (a->impact != b->impact) return a->impact > b->impact ? -1 : 1;
  return a->hash < b->hash ? -1 : a->hash > b->hash;
}

int hg_fleet_issues(const struct hg_fleet *f, const struct hg_fleet_query *q,
                    struct hg_fleet_issues **out) {
  *out = NULL;
  struct hg_fleet_query dq = {NULL, NULL, -1, 0};
  if (!q) q = &dq;
  struct work w = {.f = f, .base = UINT32_MAX};
  int prc = _hg_fleet_pair(f, q->version, q->baseline, &w.ver, &w.base);
  if (prc) return prc;
  const uint32_t *order = _hg_fleet_version_order(f);
  if (!order) return HG_ENOMEM;
  uint32_t nv = 0, nb = 0;
  for (uint32_t i = 0; i < f->nsnap; i++) {
    nv += f->snaps[i].version == w.ver;
    nb += f->snaps[i].version == w.base;
  }
  struct _hg_arena a = {0};
  struct hg_fleet_issues *r = _hg_fa_result(&a, sizeof *r);
  uint32_t maxn = f->nsnap + 1;
  w.xs = malloc((size_t)maxn * 8);
  w.ys = malloc((size_t)maxn * 8);
  w.stamp = calloc((size_t)f->devices.n + 1, sizeof *w.stamp);
  uint32_t *sn1 = malloc((size_t)maxn * 4), *sn2 = malloc((size_t)maxn * 4);
  uint64_t *tmp = malloc((size_t)maxn * 8);
  uint8_t *vseen = malloc((size_t)f->versions.n + 1);
  struct hg_fleet_issue *iss = NULL;
  uint32_t *sig_issue = NULL, ni = 0;
  int rc = (!r || !w.xs || !w.ys || !w.stamp || !sn1 || !sn2 || !tmp || !vseen) ? HG_ENOMEM : 0;
  if (!rc) rc = _hg_fleet_group(f->occ, f->nocc, f->nsig, &w.start, &w.idx);
  if (!rc) {
    iss = calloc((size_t)f->nsig + 1, sizeof *iss);
    sig_issue = malloc(((size_t)f->nsig + 1) * sizeof *sig_issue);
    if (!iss || !sig_issue) rc = HG_ENOMEM;
  }
  for (uint32_t s = 0; !rc && s < f->nsig; s++) {
    const struct _hg_fsig *d = &f->sigs[s];
    sig_issue[s] = UINT32_MAX;
    if (q->kind >= 0 && d->kind != (uint32_t)q->kind) continue;
    uint32_t nx = bytes_of(&w, s, w.ver, w.xs, sn1);
    uint32_t ny = w.base == UINT32_MAX ? 0 : bytes_of(&w, s, w.base, w.ys, sn2);
    if (!nx && !ny) continue;
    struct hg_fleet_issue *is = &iss[ni];
    is->hash = d->hash;
    is->kind = d->kind;
    is->algo = d->algo;
    is->step_count = d->step_count;
    is->steps = d->steps;
    is->context_of = -1;
    /* exemplars: the 3 snapshots of the version with the most bytes */
    for (uint32_t i = 0; i < nx; i++) {
      uint32_t k;
      if (is->exemplar_count < 3) k = is->exemplar_count++;
      else if (w.xs[i] > is->exemplar_bytes[2]) k = 2;
      else continue;
      is->exemplar_bytes[k] = w.xs[i];
      is->exemplars[k] = f->names.str[f->snaps[sn1[i]].name];
      for (; k > 0 && is->exemplar_bytes[k] > is->exemplar_bytes[k - 1]; k--) {
        uint64_t tb = is->exemplar_bytes[k];
        const char *tn = is->exemplars[k];
        is->exemplar_bytes[k] = is->exemplar_bytes[k - 1];
        is->exemplars[k] = is->exemplars[k - 1];
        is->exemplar_bytes[k - 1] = tb;
        is->exemplars[k - 1] = tn;
      }
    }
    /* devices: distinct ids (no id: each snapshot its own); fixed: the baseline's */
    const uint32_t *dsn = nx ? sn1 : sn2;
    for (uint32_t i = 0; i < (nx ? nx : ny); i++) {
      uint32_t dev = f->snaps[dsn[i]].device;
      if (dev >= f->devices.n) is->devices++;
      else if (w.stamp[dev] != s + 1) {
        w.stamp[dev] = s + 1;
        is->devices++;
      }
    }
    /* versions seen */
    memset(vseen, 0, f->versions.n);
    for (uint64_t k = w.start[s]; k < w.start[s + 1]; k++) vseen[f->snaps[f->occ[w.idx[k]].snap].version] = 1;
    for (uint32_t i = 0; i < f->versions.n; i++) is->version_count += vseen[order[i]];
    is->versions = _hg_fa_alloc(&a, (size_t)(is->version_count ? is->version_count : 1) * sizeof(char *));
    if (!is->versions) {
      rc = HG_ENOMEM;
      break;
    }
    uint32_t vc = 0;
    for (uint32_t i = 0; i < f->versions.n; i++)
      if (vseen[order[i]]) is->versions[vc++] = f->versions.str[order[i]];
    is->first_version = is->versions[0];
    is->last_version = is->versions[vc - 1];
    _hg_fleet_sort(w.xs, nx);
    _hg_fleet_sort(w.ys, ny);
    is->snapshots = nx;
    is->base_snapshots = ny;
    is->share = nv ? (double)nx / nv : 0;
    is->bytes_median = _hg_fleet_pct(w.xs, nx, 50);
    is->bytes_p90 = _hg_fleet_pct(w.xs, nx, 90);
    is->bytes_max = nx ? w.xs[nx - 1] : 0;
    is->base_median = _hg_fleet_pct(w.ys, ny, 50);
    is->p_value = 1;
    if (w.base == UINT32_MAX) is->status = HG_FLEET_ONGOING;
    else if (!ny) is->status = HG_FLEET_NEW;
    else if (!nx) is->status = HG_FLEET_FIXED;
    else {
      is->p_value = _hg_fleet_mann_whitney(w.xs, nx, w.ys, ny);
      is->status = nx >= HG_FLEET_MIN_SAMPLES && ny >= HG_FLEET_MIN_SAMPLES &&
                           is->p_value < HG_FLEET_ALPHA &&
                           is->bytes_median >= is->base_median + HG_FLEET_MIN_DELTA
                       ? HG_FLEET_REGRESSED
                       : HG_FLEET_ONGOING;
    }
    if (is->status == HG_FLEET_NEW || is->status == HG_FLEET_REGRESSED)
      is->unexplained = is->bytes_median - (is->status == HG_FLEET_NEW ? 0 : is->base_median);
    sig_issue[s] = ni++;
  }
  /* The holder that explains it: deepest flagged retention issues first. */
  uint32_t *flag = NULL, nf = 0, *dsc = NULL;
  if (!rc && w.base != UINT32_MAX) {
    flag = malloc(((size_t)ni + 1) * sizeof *flag);
    dsc = malloc(((size_t)ni + 1) * sizeof *dsc);
    if (!flag || !dsc) rc = HG_ENOMEM;
    for (uint32_t i = 0; !rc && i < ni; i++)
      if (iss[i].kind == HG_FLEET_RETENTION && (iss[i].status == HG_FLEET_NEW || iss[i].status == HG_FLEET_REGRESSED))
        flag[nf++] = i;
    /* deepest first (insertion sort by step count, descending) */
    for (uint32_t i = 1; i < nf; i++) {
      uint32_t x = flag[i], j = i;
      for (; j > 0 && iss[flag[j - 1]].step_count < iss[x].step_count; j--) flag[j] = flag[j - 1];
      flag[j] = x;
    }
    /* signature index of each issue, for the byte lookups */
    uint32_t *isig = rc ? NULL : malloc(((size_t)ni + 1) * sizeof *isig);
    if (!rc && !isig) rc = HG_ENOMEM;
    for (uint32_t s = 0; !rc && s < f->nsig; s++)
      if (sig_issue[s] != UINT32_MAX) isig[sig_issue[s]] = s;
    for (uint32_t fi = 0; !rc && fi < nf; fi++) {
      struct hg_fleet_issue *A = &iss[flag[fi]];
      const struct _hg_fsig *sa = &f->sigs[isig[flag[fi]]];
      /* still-flagged descendants not below another such descendant */
      uint32_t nd = 0;
      for (uint32_t fj = 0; fj < fi; fj++) {
        uint32_t D = flag[fj];
        if (iss[D].context_of >= 0 || !is_prefix(sa, &f->sigs[isig[D]])) continue;
        dsc[nd++] = D;
      }
      uint32_t keep = 0;
      for (uint32_t x = 0; x < nd; x++) {
        int inner = 0;
        for (uint32_t y = 0; y < nd && !inner; y++)
          inner = y != x && is_prefix(&f->sigs[isig[dsc[y]]], &f->sigs[isig[dsc[x]]]);
        if (!inner) dsc[keep++] = dsc[x];
      }
      if (!keep) continue;
      uint32_t biggest = dsc[0];
      for (uint32_t x = 1; x < keep; x++)
        if (iss[dsc[x]].bytes_median > iss[biggest].bytes_median) biggest = dsc[x];
      for (uint32_t x = 0; x < keep; x++) dsc[x] = isig[dsc[x]];
      uint32_t nx = residual(&w, isig[flag[fi]], dsc, keep, w.ver, w.xs, sn1, tmp, sn2);
      uint32_t ny = residual(&w, isig[flag[fi]], dsc, keep, w.base, w.ys, sn1, tmp, sn2);
      _hg_fleet_sort(w.xs, nx);
      _hg_fleet_sort(w.ys, ny);
      uint64_t mx = _hg_fleet_pct(w.xs, nx, 50), my = _hg_fleet_pct(w.ys, ny, 50);
      int grows;
      if (A->status == HG_FLEET_NEW) grows = mx >= HG_FLEET_MIN_DELTA && mx >= q->floor;
      else
        grows = nx >= HG_FLEET_MIN_SAMPLES && ny >= HG_FLEET_MIN_SAMPLES && mx >= my + HG_FLEET_MIN_DELTA &&
                _hg_fleet_mann_whitney(w.xs, nx, w.ys, ny) < HG_FLEET_ALPHA;
      A->unexplained = mx > my ? mx - my : 0;
      if (!grows) {
        A->context_of = (int)biggest;
        if (A->status == HG_FLEET_REGRESSED) A->status = HG_FLEET_ONGOING;
      }
    }
    free(isig);
  }
  /* Impact, floor, order. */
  struct rank *rk = rc ? NULL : malloc(((size_t)ni + 1) * sizeof *rk);
  uint32_t *pos = rc ? NULL : malloc(((size_t)ni + 1) * sizeof *pos);
  uint32_t kept = 0;
  if (!rc && (!rk || !pos)) rc = HG_ENOMEM;
  for (uint32_t i = 0; !rc && i < ni; i++) {
    struct hg_fleet_issue *is = &iss[i];
    pos[i] = UINT32_MAX;
    uint64_t big = is->bytes_median > is->base_median ? is->bytes_median : is->base_median;
    if (big < q->floor) continue;
    is->impact = is->status == HG_FLEET_FIXED ? (double)is->devices * (double)is->base_median
                                              : (double)is->devices * (double)is->bytes_median;
    rk[kept++] = (struct rank){is->impact, is->hash, i};
  }
  if (!rc) {
    qsort(rk, kept, sizeof *rk, by_impact);
    struct hg_fleet_issue *outv = _hg_fa_alloc(&a, ((size_t)kept + 1) * sizeof *outv);
    if (!outv) rc = HG_ENOMEM;
    for (uint32_t k = 0; !rc && k < kept; k++) pos[rk[k].i] = k;
    for (uint32_t k = 0; !rc && k < kept; k++) {
      outv[k] = iss[rk[k].i];
      int c = outv[k].context_of;
      outv[k].context_of = c >= 0 && pos[c] != UINT32_MAX ? (int)pos[c] : -1;
      outv[k].title = _hg_fleet_title(&a, outv[k].kind, outv[k].steps, outv[k].step_count);
      if (!outv[k].title) rc = HG_ENOMEM;
    }
    r->issues = outv;
    r->count = kept;
  }
  free(rk);
  free(pos);
  free(flag);
  free(dsc);
  free(iss);
  free(sig_issue);
  free(w.xs);
  free(w.ys);
  free(w.stamp);
  free(w.start);
  free(w.idx);
  free(sn1);
  free(sn2);
  free(tmp);
  free(vseen);
  if (rc) {
    _hg_fa_free(&a);
    return rc;
  }
  r->version = f->versions.str[w.ver];
  r->baseline = w.base == UINT32_MAX ? NULL : f->versions.str[w.base];
  r->version_snapshots = nv;
  r->baseline_snapshots = nb;
  r->priv = _hg_fa_keep(&a, r, sizeof *r);
  *out = r;
  return 0;
}

void hg_fleet_issues_free(struct hg_fleet_issues *r) {
  if (r) _hg_fa_release(r->priv);
}
