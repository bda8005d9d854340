/*
 * classify_objc.c — the Objective-C classifier plugged into the capture
 * engine's hook (classify.h): isa -> class, ivar-named strong/weak edges.
 *
 *   prepare  (before the freeze): copies the runtime's classes into the
 *            table (objc_runtime.c); without a runtime the classifier stays
 *            off and every later call returns at once.
 *   identify (frozen, either thread): first word -> class via the isa
 *            mask, O(1) lookup, instance size must fit the block;
 *   class_of (capturing thread): registers the class with the writer on
 *            its first instance (so a snapshot lists only classes that
 *            have instances).
 *   edges    (frozen): offset -> object ivar of the class or a superclass;
 *            named edge of the ivar's strength: edge_map (class index ->
 *            the class's word map of ivar index + 1, once the capturing
 *            thread has built it at the first instance), edge_identify (the
 *            ivar search, without a map) and edge_of (ivar -> kind, field
 *            name; capturing thread).
 *
 * One capture at a time (hg_capture serialises them), so the state is a
 * single static; its vectors live in the capture's scratch, which the
 * engine unmaps after finish(). Never calls malloc while frozen.
 */
#include <string.h>

#include "capture/classify/classify.h"
#include "capture/classify/objc.h"
#include "cxxabi/ptrhash.h"

#define IDC_SIZE 256 /* direct-mapped caches: objects of a few classes mix */

struct objc_idc { /* identify(): isa word -> instance size, class index + 1 */
  uint64_t isa, size;
  uint32_t token;
};

struct objc_state {
  struct hg_objc_table t;
  int on;
  /* direct-mapped caches: a heap's blocks mostly share a few classes; one
   * per lane (classify.h: an entry torn between the lanes would pair one
   * class's isa with another's token) */
  struct objc_idc idc[HG_SCAN_LANES][IDC_SIZE];
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

/* The pure half (both lanes at once): class index + 1, or 0. Its cache
 * is the lane's. */
static uint32_t objc_identify(void *state, const struct hg_cap *cap, uint32_t lane, uint64_t addr,
                              uint64_t size, const uint64_t *words, uint32_t nwords) {
  (void)addr;
  (void)cap;
  struct objc_state *s = state;
  if (!s || !s->on || nwords == 0 || lane >= HG_SCAN_LANES) return 0;
  uint64_t isa = words[0];
  uint32_t h = _hg_ptr_hash(isa, 8) % IDC_SIZE;
  struct objc_idc *e = &s->idc[lane][h];
  if (e->token && e->isa == isa && size >= e->size) return e->token;
  uint32_t i = _hg_objc_classify_word(&s->t, isa, size);
  if (i == HG_OBJC_NONE) return 0;
  e->isa = isa;
  e->size = _hg_objc_class_at(&s->t, i)->instance_size;
  e->token = i + 1;
  return e->token;
}

/* The registering half (capturing thread). */
static uint32_t objc_class_of(struct hg_classify_reg *reg, uint32_t token) {
  struct objc_state *s = reg->state;
  if (!s || !s->on || !token) return 0;
  uint32_t i = (uint32_t)(token - 1);
  struct hg_objc_class *c = _hg_objc_class_at(&s->t, i);
  if (!c->class_id) {
    uint32_t id = _hg_classify_class(reg, _hg_objc_str(&s->t, c->name), c->kind, c->instance_size);
    if (!id || _hg_objc_bind_id(&s->t, i, id) != 0) return 0;
    c->class_id = id;
  }
  return c->class_id;
}

/* The pure halves of edge naming: edge tokens are ivar index + 1. The word
 * map of a class whose token is `token`, once published (objc_table.c). */
static const uint32_t *objc_edge_map(void *state, const struct hg_cap *cap, uint32_t token,
                                     uint32_t *words) {
  (void)cap;
  struct objc_state *s = state;
  *words = 0;
  if (!s || !s->on || !token) return NULL;
  return _hg_objc_map_of(&s->t, token - 1, words);
}

/* Without a map: the object ivar at `offset`, or 0. */
static uint32_t objc_edge_identify(void *state, const struct hg_cap *cap, uint32_t token,
                                   uint64_t offset) {
  (void)cap;
  struct objc_state *s = state;
  if (!s || !s->on || !token) return 0;
  const struct hg_objc_ivar *v = _hg_objc_ivar_at(&s->t, token - 1, offset);
  return v ? (uint32_t)(v - (const struct hg_objc_ivar *)s->t.ivars.base) + 1 : 0;
}

/* The capturing thread's half: the ivar's strength and name. */
static uint32_t objc_edge_of(struct hg_classify_reg *reg, uint32_t edge_token, uint32_t *field) {
  struct objc_state *s = reg->state;
  *field = 0;
  if (!s || !s->on || !edge_token || edge_token > _hg_vec_len(&s->t.ivars))
    return HG_EDGE_CONSERVATIVE;
  struct hg_objc_ivar *v = (struct hg_objc_ivar *)s->t.ivars.base + (edge_token - 1);
  if (!v->kind) return HG_EDGE_CONSERVATIVE;
  if (!v->field_id) v->field_id = _hg_classify_string(reg, _hg_objc_str(&s->t, v->name));
  *field = v->field_id;
  return v->kind;
}

static void objc_finish(struct hg_classify_reg *reg) {
  struct objc_state *s = reg->state;
  if (s) s->on = 0; /* the vectors go with the capture's scratch */
}

const struct hg_classifier _hg_classifier_objc = {
    .name = "objc",
    .prepare = objc_prepare,
    .finish = objc_finish,
    .identify = objc_identify,
    .class_of = objc_class_of,
    .edge_identify = objc_edge_identify,
    .edge_map = objc_edge_map,
    .edge_of = objc_edge_of,
};
