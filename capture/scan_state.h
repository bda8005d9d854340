/*
 * scan_state.h — the state of one capture's scan, kept in the capture
 * (struct hg_cap.scan) instead of file-scope globals: the namers and the
 * answer memos of edge naming (names.c) and the two threads' counters of
 * the pipelined scan (scan_pipe.c). Types only; reset at every scan.
 */
#ifndef HG_CAPTURE_SCAN_STATE_H
#define HG_CAPTURE_SCAN_STATE_H

#include <stdint.h>

struct hg_classifier;
struct hg_cap;

/* ---- naming (names.c, names.h) ---- */

#define HG_NAMER_WORDS 16 /* words whose answers a namer keeps             */
#define HG_NAMERS 64      /* namers of recent classes, by token            */
#define HG_MEMO 256       /* class_of() and edge_of() answers, by token    */

/* How the words of one block get their edge tokens: the block's classifier
 * (when it names edges) and its edge map or, without one, edge_identify()
 * word by word; and what the first words' edges resolved to, once known. */
struct hg_namer {
  const struct hg_classifier *k;
  void *state;
  uint32_t token, which, words, final; /* final: the map will not change   */
  const uint32_t *map;
  uint64_t res[HG_NAMER_WORDS]; /* word w's answer: field << 32 | kind << 1 | 1; 0: not yet */
};

/* Keys are (classifier + 1) << 32 | token, so 0 is no key. */
struct hg_names {
  struct hg_namer namers[HG_NAMERS];
  struct { uint64_t key; uint32_t cls; } cls[HG_MEMO];
  struct { uint64_t key; uint32_t kind, field; } edge[HG_MEMO];
};

/* ---- the pipelined scan (scan_pipe.c) ---- */

struct hg_redge;
struct hg_tok;

/* Counters shared by the helper and the capturing thread. Each group is
 * written by one side; 64 bytes of padding keep the groups off each other's
 * cache lines whatever the alignment of the capture. */
struct hg_pipe {
  /* written by the helper (and, to steal, the capturing thread) */
  volatile uint64_t prog;       /* edges published << 32 | the helper's node:
                                   its chunk's nodes below it have all their
                                   edges published (and token slots written);
                                   node UINT32_MAX: just stolen from        */
  volatile uint32_t next_chunk; /* the first chunk nobody has taken          */
  volatile uint32_t seq;        /* bumped at each publication                */
  volatile uint32_t helper_sleeps;
  char pad0[64];
  /* the helper's own */
  uint64_t pub;                 /* the last value it wrote to prog           */
  uint32_t whead;               /* write position                            */
  uint32_t tail_seen, ntail_seen; /* last tail / ntail read                  */
  uint32_t woke_at, woke_done;  /* whead, done when it last woke the other   */
  char pad1[64];
  /* written by the capturing thread */
  volatile uint32_t tail;       /* edges consumed                            */
  volatile uint32_t ntail;      /* nodes whose token slot has been read      */
  volatile uint32_t mseq;       /* bumped at each publication of tail/ntail  */
  volatile uint32_t main_sleeps, stop;
  uint32_t steals, own_chunks;  /* chunks it took whole or in part           */
  char pad2[64];
  /* read-only while running */
  struct hg_cap *c;
  struct hg_redge *ring;
  struct hg_tok *toks;          /* the helper identifies (classifiers), or NULL */
};

struct hg_scan_state {
  struct hg_names names;
  struct hg_pipe pipe;
};

#endif
