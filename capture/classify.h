/*
 * classify.h — the type-classifier hook of the capture engine.
 *
 * A classifier gives heap blocks a class (C++ via vtable -> type_info, ObjC
 * via isa, …) and may name and type the edges leaving them. The orchestrator
 * (capture.c) calls every classifier in _hg_classifiers[] in order; the first
 * one that returns a non-zero class id wins for a block.
 *
 * Life cycle of one capture:
 *   1. prepare()  — before the freeze. May call malloc, take runtime locks,
 *      walk runtime tables (objc_copyClassList, dl_iterate_phdr …). Keeps its
 *      results in bounded scratch obtained from hg_classify_reg (or in its own
 *      mmap). Registers the classes and field-name strings it may emit with
 *      _hg_classify_class()/_hg_classify_string() (ids come from the writer).
 *      Returns 0, or < 0 to sit this capture out (never fails the capture).
 *   2. classify() — once per heap block while the process is frozen (or in
 *      the forked child). No malloc, no locks, no stdio. `words` holds the
 *      block's first `nwords` words (already validated); further memory must
 *      be read through _hg_readable()/_hg_read_word() on reg->cap. May still
 *      register a class found on the fly (the writer never mallocs).
 *      Returns a class id or 0 (unknown).
 *   3. edge()     — optional; for an edge leaving a block of class class_id
 *      at byte offset `offset`, returns the edge kind (HG_EDGE_STRONG, _WEAK,
 *      _UNOWNED) and sets *field to a string id, or returns
 *      HG_EDGE_CONSERVATIVE to leave the edge untyped. Only a classifier's
 *      own classes matter to it: the pipelined scan asks the classifier that
 *      gave the block its class, the one-thread scan asks each in turn and
 *      the others answer HG_EDGE_CONSERVATIVE. Same rules as classify().
 *   4. finish()   — optional; after thaw (malloc allowed again): free state.
 *
 * A classifier may also split classify() in two, so that the pipelined scan
 * (scan.c) can run the first half on its helper thread, next to the block
 * contents it is reading anyway:
 *   identify() — on the helper thread: pure — reads the block words, the
 *      process memory through _hg_readable() and its prepared tables (it may
 *      keep caches that only identify() touches), registers nothing, calls
 *      nothing that takes locks or uses TLS. Returns a non-zero 32-bit token
 *      or 0.
 *   class_of() — on the capturing thread, in block order: the class id of a
 *      token identify() returned (registering it on first use), or 0.
 * classify() must equal class_of(identify()). Without both halves the
 * engine calls classify() on the capturing thread.
 *
 * A classifier with split classify() may split edge() the same way, so that
 * the scan can name most edges from answers it keeps per class and word
 * instead of asking per edge:
 *   edge_identify() — pure, same rules as identify() (the scan may call it
 *      on either thread): for an edge at byte `offset` of a block whose
 *      identify() token is `token`, a non-zero 32-bit edge token, or 0 for
 *      an untyped edge.
 *   edge_map() — optional, same rules: the edge tokens of a block whose
 *      token is `token` as an array, one per word (map[off / 8] is
 *      edge_identify(token, off) for a word-aligned off below 8 * *words, 0
 *      beyond), or NULL when there is none (yet): the scan then asks
 *      edge_identify() word by word. A map may appear at class_of().
 *   edge_of() — on the capturing thread: the kind of an edge token and its
 *      field name (*field, registered on first use), as edge() would give.
 * edge(class_of(t), off) must equal edge_of(edge_identify(t, off)) when the
 * edge token is non-zero, else HG_EDGE_CONSERVATIVE. The scan runs these
 * halves on both of its paths (with or without a helper thread), and may
 * remember what class_of() and edge_of() answered for a token (a token
 * always means the same class, an edge token the same kind and field) and
 * what a word of a class's blocks resolved to once its map is final.
 */
#ifndef HG_CAPTURE_CLASSIFY_H
#define HG_CAPTURE_CLASSIFY_H

#include <stdint.h>

#include "capture/internal.h"

/* Given to every step: the capture and the classifier's own state slot. */
struct hg_classify_reg {
  struct hg_cap *cap;
  void *state;              /* the classifier's, set by prepare            */
};

#define HG_CLASSIFY_WORDS 4   /* words handed to classify()               */

struct hg_classifier {
  const char *name;
  int (*prepare)(struct hg_classify_reg *reg);
  uint32_t (*classify)(struct hg_classify_reg *reg, uint64_t addr, uint64_t size,
                       const uint64_t *words, uint32_t nwords);
  uint32_t (*edge)(struct hg_classify_reg *reg, uint32_t class_id, uint64_t offset,
                   uint32_t *field);
  void (*finish)(struct hg_classify_reg *reg);
  uint32_t (*identify)(void *state, const struct hg_cap *c, uint64_t addr, uint64_t size,
                       const uint64_t *words, uint32_t nwords);
  uint32_t (*class_of)(struct hg_classify_reg *reg, uint32_t token);
  uint32_t (*edge_identify)(void *state, const struct hg_cap *c, uint32_t token, uint64_t offset);
  const uint32_t *(*edge_map)(void *state, const struct hg_cap *c, uint32_t token, uint32_t *words);
  uint32_t (*edge_of)(struct hg_classify_reg *reg, uint32_t edge_token, uint32_t *field);
};

/* Registers a class with the snapshot; returns its id (>= 1) or 0. */
uint32_t _hg_classify_class(struct hg_classify_reg *reg, const char *name, uint32_t kind,
                            uint64_t instance_size);
/* Registers a field-name string; returns its id (>= 1) or 0. */
uint32_t _hg_classify_string(struct hg_classify_reg *reg, const char *s);

/* The built-in list (classify.c), NULL-terminated. Other engineers add
 * their classifiers here. Tests may override the list for one capture: */
extern const struct hg_classifier *const _hg_classifiers[];
/* Test hook: when non-NULL, used instead of _hg_classifiers (NULL-terminated). */
extern const struct hg_classifier *const *_hg_classifiers_override;

#endif
