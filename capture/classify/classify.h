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
 *   2. While the process is frozen (or in the forked child), per block, in
 *      two halves, so that the pipelined scan (scan_pipe.c) can run the
 *      first on its helper thread next to the block contents it is reading
 *      anyway. Both: no malloc, no locks, no stdio.
 *      identify() — pure: reads the block's first `nwords` words (`words`,
 *        already validated), further process memory only through
 *        _hg_readable()/_hg_read_word() on c, and its prepared tables;
 *        registers nothing, calls nothing that takes locks or uses TLS.
 *        Returns a non-zero 32-bit token or 0 (not one of its classes).
 *        It runs on two threads at once (the chunked scan, scan_pipe.c:
 *        the helper, and the capturing thread in the chunks it takes), told
 *        apart by `lane` (< HG_SCAN_LANES): a cache it keeps is one per
 *        lane, and anything both lanes write is written atomically (a
 *        cache entry of two words torn between the lanes could name a
 *        block wrongly, or let a read through that no region validated).
 *      class_of() — on the capturing thread, in block order: the class id of
 *        a token identify() returned (registering it on first use), or 0.
 *      count() — optional, on the capturing thread, once per block with a
 *        token, as its node is written: what must happen once per block
 *        (C++'s slab census). identify() may see a block twice (the
 *        capturing thread takes over the rest of a helper's chunk and
 *        identifies its blocks again), so it keeps no such side effect.
 *   3. Edges, optionally, in the same two halves (a classifier without them
 *      leaves the edges of its blocks untyped):
 *      edge_identify() — pure, same rules as identify() (the scan may call
 *        it on either thread): for an edge at byte `offset` of a block whose
 *        identify() token is `token`, a non-zero 32-bit edge token, or 0 for
 *        an untyped edge.
 *      edge_map() — optional, same rules: the edge tokens of a block whose
 *        token is `token` as an array, one per word (map[off / 8] is
 *        edge_identify(token, off) for a word-aligned off below 8 * *words,
 *        0 beyond), or NULL when there is none (yet): the scan then asks
 *        edge_identify() word by word. A map may appear at class_of().
 *      edge_of() — on the capturing thread: the kind of an edge token
 *        (HG_EDGE_STRONG, _WEAK, _UNOWNED; anything else leaves the edge
 *        untyped) and its field name (*field, registered on first use).
 *   4. meta()     — optional; after the scan, same rules as class_of(): extra
 *      metadata records (hg_writer_meta on w; e.g. C++'s slab census).
 *   5. finish()   — optional; after thaw (malloc allowed again): free state.
 *
 * The first classifier whose identify() gives a token wins the block. The
 * scan may remember what class_of() and edge_of() answered for a token (a
 * token always means the same class, an edge token the same kind and
 * field) and what a word of a class's blocks resolved to once its map is
 * final. The whole-block answers — a block's class, an edge's kind — are
 * the halves composed, in one place: _hg_classify_block/_hg_classify_edge.
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

#define HG_CLASSIFY_WORDS 4   /* words handed to identify()               */
#define HG_SCAN_LANES 2       /* identify()'s lanes: 0 the capturing thread, 1 the helper */

struct hg_classifier {
  const char *name;
  int (*prepare)(struct hg_classify_reg *reg);
  void (*finish)(struct hg_classify_reg *reg);
  uint32_t (*identify)(void *state, const struct hg_cap *c, uint32_t lane, uint64_t addr,
                       uint64_t size, const uint64_t *words, uint32_t nwords);
  uint32_t (*class_of)(struct hg_classify_reg *reg, uint32_t token);
  void (*count)(struct hg_classify_reg *reg, uint32_t token, uint64_t addr, uint64_t size);
  uint32_t (*edge_identify)(void *state, const struct hg_cap *c, uint32_t token, uint64_t offset);
  const uint32_t *(*edge_map)(void *state, const struct hg_cap *c, uint32_t token, uint32_t *words);
  uint32_t (*edge_of)(struct hg_classify_reg *reg, uint32_t edge_token, uint32_t *field);
  int (*meta)(struct hg_classify_reg *reg, struct hg_writer *w);
};

/* Registers a class with the snapshot; returns its id (>= 1) or 0. */
uint32_t _hg_classify_class(struct hg_classify_reg *reg, const char *name, uint32_t kind,
                            uint64_t instance_size);
/* Registers a field-name string; returns its id (>= 1) or 0. */
uint32_t _hg_classify_string(struct hg_classify_reg *reg, const char *s);

/* The whole-block hooks, derived from the halves (the one adapter): the
 * class of the block at addr (size bytes, first nwords words in words) by
 * classifier k, with *token its identify() token (0: not k's, class 0). */
uint32_t _hg_classify_block(const struct hg_classifier *k, struct hg_classify_reg *reg,
                            uint64_t addr, uint64_t size, const uint64_t *words, uint32_t nwords,
                            uint32_t *token);
/* The kind of the edge at byte offset of a block whose k token is token,
 * and its field name in *field (0: none): HG_EDGE_CONSERVATIVE when k does
 * not name it. */
uint32_t _hg_classify_edge(const struct hg_classifier *k, struct hg_classify_reg *reg,
                           uint32_t token, uint64_t offset, uint32_t *field);

/* The built-in list (classify.c), NULL-terminated. Other engineers add
 * their classifiers here. Tests may override the list for one capture: */
extern const struct hg_classifier *const _hg_classifiers[];
/* Test hook: when non-NULL, used instead of _hg_classifiers (NULL-terminated). */
extern const struct hg_classifier *const *_hg_classifiers_override;

#endif
