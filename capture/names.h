/*
 * names.h — classes and edge names on the capturing thread, from the
 * classifiers' halves (classify.h): the class_of() and edge_of() answer
 * memos and the per-class namers that keep what a class's first words
 * resolved to. Inline fast paths here, first-use slow paths in names.c;
 * both scan paths (scan_nodes.c, scan_pipe.c) use them, so the one-thread
 * and the pipelined scan name every edge alike.
 *
 * State lives in c->scan.names (scan_state.h), reset by _hg_names_reset()
 * at each scan. Never calls malloc.
 */
#ifndef HG_CAPTURE_NAMES_H
#define HG_CAPTURE_NAMES_H

#include "capture/classify/classify.h"
#include "capture/internal.h"

/* Forgets every memo and namer (start of a scan). */
void _hg_names_reset(struct hg_cap *c);
/* Slow paths: ask the classifier and remember the answer (names.c). */
uint32_t _hg_class_of_call(struct hg_cap *c, uint32_t which, uint32_t token);
uint32_t _hg_edge_of_call(struct hg_cap *c, uint32_t which, uint32_t etok, uint32_t *field);
struct hg_namer *_hg_namer_new(struct hg_cap *c, uint32_t which, uint32_t token);

static inline uint64_t _hg_memo_key(uint32_t which, uint32_t token) {
  return (uint64_t)(which + 1) << 32 | token;
}

/* A block with token `token` of classifier `which` is written as a node:
 * the classifier's count(), if it has one (once per block, classify.h). */
static inline void _hg_count_block(struct hg_cap *c, uint32_t which, uint32_t token, uint64_t addr,
                                   uint64_t size) {
  const struct hg_classifier *k = c->classifiers[which];
  if (!k->count) return;
  struct hg_classify_reg reg = {c, c->classifier_state[which]};
  k->count(&reg, token, addr, size);
}

/* The class id of token (of classifier `which`), as class_of() gives it. */
static inline uint32_t _hg_class_of(struct hg_cap *c, uint32_t which, uint32_t token) {
  const struct hg_names *m = &c->scan.names;
  uint32_t h = token & (HG_MEMO - 1);
  if (m->cls[h].key == _hg_memo_key(which, token)) return m->cls[h].cls;
  return _hg_class_of_call(c, which, token);
}

/* The kind and field of a named edge (edge token etok of classifier
 * `which`), or HG_EDGE_CONSERVATIVE. */
static inline uint32_t _hg_edge_of(struct hg_cap *c, uint32_t which, uint32_t etok,
                                   uint32_t *field) {
  const struct hg_names *m = &c->scan.names;
  uint32_t h = etok & (HG_MEMO - 1);
  if (m->edge[h].key == _hg_memo_key(which, etok)) {
    *field = m->edge[h].field;
    return m->edge[h].kind;
  }
  return _hg_edge_of_call(c, which, etok, field);
}

/* The namer of the edges of a block of class cls (0: none) whose identify()
 * token from classifier `which` is `token`, or NULL when they stay unnamed
 * (no class, or a classifier that does not name edges). A namer is kept
 * once its map is final (a class's map may appear at its first instance's
 * class_of()). */
static inline struct hg_namer *_hg_namer_of(struct hg_cap *c, uint32_t cls, uint32_t which,
                                            uint32_t token) {
  if (!cls || !token) return NULL;
  struct hg_namer *nm = &c->scan.names.namers[token & (HG_NAMERS - 1)];
  if (nm->final && nm->token == token && nm->which == which) return nm;
  return _hg_namer_new(c, which, token);
}

/* The edge token of the word at byte off of a block nm names (0: none). */
static inline uint32_t _hg_namer_token(const struct hg_cap *c, const struct hg_namer *nm,
                                       uint32_t off) {
  if (nm->map) return off / 8 < nm->words ? nm->map[off / 8] : 0;
  return nm->k->edge_identify(nm->state, c, nm->token, off);
}

/* ---- the namer's per-word answers: take what it kept, keep what is final */

/* 1 and the kind and field of word w when the namer has kept them. */
static inline int _hg_namer_take(const struct hg_namer *nm, uint32_t w, uint32_t *kind,
                                 uint32_t *field) {
  if (w >= HG_NAMER_WORDS || !nm->res[w]) return 0;
  *kind = (uint32_t)nm->res[w] >> 1;
  *field = (uint32_t)(nm->res[w] >> 32);
  return 1;
}

/* Whether word w's answer may be kept: among the first words of a final
 * map (an answer edge_of() would not keep — a typed edge without a field —
 * is not kept either, by the callers). */
static inline int _hg_namer_keeps(const struct hg_namer *nm, uint32_t w) {
  return w < HG_NAMER_WORDS && nm->final;
}

static inline void _hg_namer_keep(struct hg_namer *nm, uint32_t w, uint32_t kind, uint32_t field) {
  nm->res[w] = (uint64_t)field << 32 | kind << 1 | 1;
}

/* The kind and field of the edge at byte off of a block that nm names:
 * edge_of() of its edge token (HG_EDGE_CONSERVATIVE without one), kept in
 * the namer for its first words once final (when edge_of() would keep it). */
static inline uint32_t _hg_named_kind(struct hg_cap *c, struct hg_namer *nm, uint32_t off,
                                      uint32_t *field) {
  uint32_t w = off / 8, kind = HG_EDGE_CONSERVATIVE;
  if (_hg_namer_take(nm, w, &kind, field)) return kind;
  uint32_t etok = _hg_namer_token(c, nm, off);
  *field = 0;
  if (etok) kind = _hg_edge_of(c, nm->which, etok, field);
  if (_hg_namer_keeps(nm, w) && (!etok || *field)) _hg_namer_keep(nm, w, kind, *field);
  return kind;
}

#endif
