/*
 * pull.h — a pull-style CBOR token stream over libcbor's streaming decoder
 * (cbor_stream_decode), reading a file through a bounded window or a memory
 * buffer, tracking byte offsets and hashing consumed bytes with xxh64.
 * Internal to graph/ (the snapshot reader).
 */
#ifndef HG_GRAPH_PULL_H
#define HG_GRAPH_PULL_H

#include <stddef.h>
#include <stdint.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

enum hg_tok_type {
  TOK_UINT, TOK_NEGINT, TOK_BYTES, TOK_TEXT, TOK_ARRAY, TOK_MAP, TOK_INDEF_ARRAY,
  TOK_INDEF_MAP, TOK_TAG, TOK_NULL, TOK_UNDEF, TOK_BOOL, TOK_FLOAT, TOK_BREAK,
  TOK_INDEF_BYTES, TOK_INDEF_TEXT, TOK_EOF
};

struct hg_tok {
  int type;
  uint64_t u;          /* uint value, negint n (value = -1 - n), length, tag */
  const uint8_t *ptr;  /* bytes/text payload: valid until the next call      */
  size_t len;
  double f;
};

struct hg_pull {
  int fd;                 /* -1 for a memory source                         */
  const uint8_t *mem;     /* memory source, or the window buffer            */
  uint8_t *win;           /* owned window (file source)                     */
  size_t cap, pos, end;   /* window capacity, read position, valid end      */
  uint64_t win_offset;    /* file offset of mem[0]                          */
  uint64_t size;          /* total input size                               */
  uint64_t tok_offset;    /* offset of the current token                    */
  uint64_t max_item;      /* 0, or the largest item the window may hold (a
                             bounded-memory reader: bigger ones are HG_ELIMIT) */
  int hashing;
  XXH64_state_t hash;
  struct hg_tok tok;
  int err;                /* HG_E* once failed                              */
  char msg[160];
};

int _hg_pull_open_fd(struct hg_pull *p, int fd, uint64_t size);
void _hg_pull_open_mem(struct hg_pull *p, const void *data, size_t size);
void _hg_pull_close(struct hg_pull *p);
/* Decodes the next token into p->tok. 0 or an HG_E* code (p->msg, p->tok_offset). */
int _hg_pull_next(struct hg_pull *p);
/* Offset of the next unread byte. */
static inline uint64_t _hg_pull_offset(const struct hg_pull *p) { return p->win_offset + p->pos; }

#endif
