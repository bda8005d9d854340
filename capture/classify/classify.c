/*
 * classify.c — the list of type classifiers and the registration helpers
 * they use (see classify.h for the contract). Registration goes straight to
 * the streaming writer, which never calls malloc, so it is safe while frozen.
 */
#include "capture/classify/classify.h"

extern const struct hg_classifier _hg_classifier_cxx; /* classify_cxx.c */
extern const struct hg_classifier _hg_classifier_objc; /* classify_objc.c */
extern const struct hg_classifier _hg_classifier_swift; /* swift_classify.c */
const struct hg_classifier *const _hg_classifiers[] = {
    /* C++ (cxxabi/) and Objective-C classifiers are added here. Swift
     * first: it sits out unless the Swift runtime is loaded, and its check
     * (a cached metadata word, else a descriptor from the images' lists)
     * is the cheapest and can claim no C++ or ObjC block, so in a Swift
     * program its objects skip the C++ vtable checks. */
    &_hg_classifier_swift,
    &_hg_classifier_cxx,
    &_hg_classifier_objc,
    NULL,
};

const struct hg_classifier *const *_hg_classifiers_override;

uint32_t _hg_classify_class(struct hg_classify_reg *reg, const char *name, uint32_t kind,
                            uint64_t instance_size) {
  if (!reg || !reg->cap || !reg->cap->w || !name) return 0;
  struct hg_class k = {name, kind, instance_size};
  uint32_t id = 0;
  if (hg_writer_class(reg->cap->w, &k, &id) != 0) return 0;
  return id;
}

uint32_t _hg_classify_string(struct hg_classify_reg *reg, const char *s) {
  if (!reg || !reg->cap || !reg->cap->w || !s) return 0;
  uint32_t id = 0;
  if (hg_writer_string(reg->cap->w, s, &id) != 0) return 0;
  return id;
}

uint32_t _hg_classify_block(const struct hg_classifier *k, struct hg_classify_reg *reg,
                            uint64_t addr, uint64_t size, const uint64_t *words, uint32_t nwords,
                            uint32_t *token) {
  *token = k->identify(reg->state, reg->cap, 0, addr, size, words, nwords); /* capturing thread */
  if (*token && k->count) k->count(reg, *token, addr, size);
  return *token ? k->class_of(reg, *token) : 0;
}

uint32_t _hg_classify_edge(const struct hg_classifier *k, struct hg_classify_reg *reg,
                           uint32_t token, uint64_t offset, uint32_t *field) {
  *field = 0;
  if (!token || !k->edge_identify || !k->edge_of) return HG_EDGE_CONSERVATIVE;
  uint32_t etok = k->edge_identify(reg->state, reg->cap, token, offset);
  uint32_t kind = etok ? k->edge_of(reg, etok, field) : HG_EDGE_CONSERVATIVE;
  if (kind < HG_EDGE_STRONG || kind >= HG_EDGE_KIND_COUNT) {
    *field = 0;
    return HG_EDGE_CONSERVATIVE;
  }
  return kind;
}
