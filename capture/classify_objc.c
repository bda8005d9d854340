/*
 * classify_objc.c — the Objective-C classifier plugged into the capture
 * engine's hook (classify.h): isa -> class, ivar-named strong/weak edges.
 *
 *   prepare  (before the freeze): copies the runtime's classes into the
 *            table (objc_runtime.c); without a runtime the classifier stays
 *            off and every later call returns at once.
 *   classify (frozen): first word -> class via the isa mask, O(1) lookup,
 *            instance size must fit the block; the class is registered with
 *            the writer on its first instance (so a snapshot lists only
 *            classes that have instances).
 *   edge     (frozen): writer class id -> class, offset -> object ivar of
 *            the class or a superclass; named edge of the ivar's strength.
 *
 * One capture at a time (hg_capture serialises them), so the state is a
 * single static; its vectors live in the capture's scratch, which the
 * engine unmaps after finish(). Never calls malloc while frozen.
 */
#include <string.h>

#include "capture/classify.h"
#include "capture/objc.h"

struct objc_state {
  struct hg_objc_table t;
  int on;
  /* one-entry caches: neighbouring blocks often share a class, and the
   * edges of one block arrive together */
  uint64_t last_isa, last_size;  /* isa word, instance size of last_id     */
  uint32_t last_id;
  uint32_t edge_id, edge_cls;
  const uint32_t *edge_map;      /* word map of edge_cls, or NULL          */
  uint32_t edge_words;
};

static struct objc_state state;

static int objc_prepare(struct hg_classify_reg *reg) {
  memset(&state, 0, sizeof state);
  reg->state = &state;
  if (!reg->cap) return 0;
  /* A process without a runtime (or a failure here) leaves the classifier
   * off rather than sitting out, so classifiers after it still run. */
  if (_hg_objc_runtime_flavor() == HG_OBJC_NO_RUNTIME) return 0;
  if (_hg_objc_runtime_load(&state.t, &reg->cap->scratch) == 0 &&
      _hg_vec_len(&state.t.classes) > 0)
    state.on = 1;
  return 0;
}

static uint32_t objc_classify(struct hg_classify_reg *reg, uint64_t addr, uint64_t size,
                              const uint64_t *words, uint32_t nwords) {
  (void)addr;
  struct objc_state *s = reg->state;
  if (!s || !s->on || nwords == 0) return 0;
  if (words[0] == s->last_isa && s->last_id && size >= s->last_size) return s->last_id;
  uint32_t i = _hg_objc_classify_word(&s->t, words[0], size);
  if (i == HG_OBJC_NONE) return 0;
  struct hg_objc_class *c = _hg_objc_class_at(&s->t, i);
  if (!c->class_id) {
    uint32_t id = _hg_classify_class(reg, _hg_objc_str(&s->t, c->name), c->kind, c->instance_size);
    if (!id || _hg_objc_bind_id(&s->t, i, id) != 0) return 0;
    c->class_id = id;
  }
  s->last_isa = words[0];
  s->last_size = c->instance_size;
  s->last_id = c->class_id;
  return c->class_id;
}

static uint32_t objc_edge(struct hg_classify_reg *reg, uint32_t class_id, uint64_t offset,
                          uint32_t *field) {
  struct objc_state *s = reg->state;
  *field = 0;
  if (!s || !s->on) return HG_EDGE_CONSERVATIVE;
  if (class_id != s->edge_id) {
    uint32_t ci = _hg_objc_find_id(&s->t, class_id);
    s->edge_id = class_id;
    s->edge_cls = ci;
    s->edge_map = NULL;
    s->edge_words = 0;
    if (ci != HG_OBJC_NONE) {
      const struct hg_objc_class *c = _hg_objc_class_at(&s->t, ci);
      if (c->map_first) {
        s->edge_map = (const uint32_t *)s->t.wordmap.base + (c->map_first - 1);
        s->edge_words = c->map_words;
      }
    }
  }
  if (s->edge_cls == HG_OBJC_NONE) return HG_EDGE_CONSERVATIVE; /* another classifier's class */
  struct hg_objc_ivar *v;
  if (s->edge_map) { /* fast path: one array read */
    uint32_t k = (offset & 7u) || offset / 8 >= s->edge_words ? 0 : s->edge_map[offset / 8];
    v = k ? (struct hg_objc_ivar *)s->t.ivars.base + (k - 1) : NULL;
  } else {
    v = _hg_objc_ivar_at(&s->t, s->edge_cls, offset);
  }
  if (!v || !v->kind) return HG_EDGE_CONSERVATIVE;
  if (!v->field_id) v->field_id = _hg_classify_string(reg, _hg_objc_str(&s->t, v->name));
  *field = v->field_id;
  return v->kind;
}

static void objc_finish(struct hg_classify_reg *reg) {
  struct objc_state *s = reg->state;
  if (s) s->on = 0; /* the vectors go with the capture's scratch */
}

const struct hg_classifier _hg_classifier_objc = {
    "objc", objc_prepare, objc_classify, objc_edge, objc_finish,
};
