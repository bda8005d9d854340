/*
 * fleet_set.h — the inside of a set of summaries (struct hg_fleet), shared
 * by graph/fleet_set.c (issues) and graph/fleet_views.c (class growth,
 * merged tree). Internal to graph/.
 */
#ifndef HG_GRAPH_FLEET_SET_H
#define HG_GRAPH_FLEET_SET_H

#include <stdint.h>

#include "graph/fleet.h"

/* Strings interned once (versions, devices, snapshot names, classes). */
struct _hg_intern {
  const char **str;
  uint32_t n;
  uint32_t *slot, slots;
};
uint32_t _hg_intern(struct _hg_intern *t, struct _hg_arena *a, const char *s);

struct _hg_fsnap { uint32_t version, device, name; uint64_t time_ns; };
/* A distinct signature: its path is kept once. */
struct _hg_fsig { uint64_t hash; uint32_t kind, algo, step_count; const char **steps; };
/* One signature (or class) in one snapshot: 16 bytes. */
struct _hg_occ { uint32_t key, snap; uint64_t bytes; };

struct hg_fleet {
  struct _hg_arena a;
  struct _hg_intern versions, devices, names, classes;
  struct _hg_fsnap *snaps;
  uint32_t nsnap;
  uint64_t snap_cap;
  struct _hg_fsig *sigs;
  uint32_t nsig;
  uint64_t sig_cap;
  uint32_t *sig_slot, sig_slots;
  struct _hg_occ *occ;         /* signature occurrences, snapshot order    */
  uint64_t nocc, occ_cap;
  struct _hg_occ *cocc;        /* census rows: key = class id, own bytes   */
  uint64_t ncocc, cocc_cap;
  uint32_t *vorder;            /* version ids, lowest version first        */
  uint32_t sorted_versions;
};

/* Version ids in ascending version order (cached), NULL on ENOMEM. */
const uint32_t *_hg_fleet_version_order(const struct hg_fleet *f);
/* The version named `name`, or the highest when name is NULL. */
int _hg_fleet_resolve(const struct hg_fleet *f, const char *name, uint32_t *id);
/* The version (NULL: the highest) and its baseline (NULL: the next lower
 * version; *b = UINT32_MAX when there is none). 0, HG_ENOTFOUND, HG_ENOMEM. */
int _hg_fleet_pair(const struct hg_fleet *f, const char *version, const char *baseline, uint32_t *v,
                   uint32_t *b);
/* Occurrences grouped by key with a stable counting sort: those of key k are
 * occ[idx[start[k] .. start[k+1])], in snapshot order. Both malloc'd. */
int _hg_fleet_group(const struct _hg_occ *occ, uint64_t n, uint32_t keys, uint64_t **start,
                    uint64_t **idx);

#endif
