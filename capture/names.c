/*
 * names.c — the first-use paths of class and edge naming (names.h): asking
 * a classifier's class_of() / edge_of() and remembering the answer, and
 * making a class's namer. Runs on the capturing thread while the heap is
 * frozen: never calls malloc.
 */
#include <string.h>

#include "capture/names.h"

void _hg_names_reset(struct hg_cap *c) { memset(&c->scan.names, 0, sizeof c->scan.names); }

uint32_t _hg_class_of_call(struct hg_cap *c, uint32_t which, uint32_t token) {
  struct hg_classify_reg reg = {c, c->classifier_state[which]};
  uint32_t cls = c->classifiers[which]->class_of(&reg, token);
  if (cls) { /* a failed registration is not remembered */
    struct hg_names *m = &c->scan.names;
    m->cls[token & (HG_MEMO - 1)].key = _hg_memo_key(which, token);
    m->cls[token & (HG_MEMO - 1)].cls = cls;
  }
  return cls;
}

uint32_t _hg_edge_of_call(struct hg_cap *c, uint32_t which, uint32_t etok, uint32_t *field) {
  struct hg_classify_reg reg = {c, c->classifier_state[which]};
  *field = 0;
  uint32_t kind = c->classifiers[which]->edge_of(&reg, etok, field);
  if (kind < HG_EDGE_STRONG || kind >= HG_EDGE_KIND_COUNT) {
    *field = 0;
    return HG_EDGE_CONSERVATIVE;
  }
  if (*field) { /* an edge without a field name is asked again */
    struct hg_names *m = &c->scan.names;
    m->edge[etok & (HG_MEMO - 1)].key = _hg_memo_key(which, etok);
    m->edge[etok & (HG_MEMO - 1)].kind = kind;
    m->edge[etok & (HG_MEMO - 1)].field = *field;
  }
  return kind;
}

__attribute__((noinline)) struct hg_namer *_hg_namer_new(struct hg_cap *c, uint32_t which,
                                                         uint32_t token) {
  struct hg_namer *nm = &c->scan.names.namers[token & (HG_NAMERS - 1)];
  const struct hg_classifier *k = c->classifiers[which];
  if (!k->edge_identify || !k->edge_of) return NULL; /* it does not name edges */
  *nm = (struct hg_namer){.k = k, .state = c->classifier_state[which], .token = token, .which = which};
  if (k->edge_map) nm->map = k->edge_map(nm->state, c, token, &nm->words);
  nm->final = nm->map || !k->edge_map;
  return nm;
}
