/*
 * pull.c — CBOR tokens from a file or buffer via libcbor's streaming decoder.
 *
 * Owns the read window: it grows only when one item (a string head plus its
 * payload) needs more room, and never beyond the bytes left in the input, so
 * memory is bounded by the file size (or by max_item, when set: the
 * streaming verifier's fixed window). Indefinite-length strings are passed
 * through as TOK_INDEF_* (the reader rejects them). Every consumed byte goes
 * through xxh64 while p->hashing is set.
 *
 * Works with every libcbor Debian ships (0.5 .. newest): when the decoder
 * needs more data, the bytes the item needs are worked out here from its
 * head (item_need) instead of from cbor_decoder_result.required, which
 * libcbor 0.5 lacks.
 */
#include "graph/pull.h"

#include <cbor.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgraph.h"

#define WIN_INITIAL (1u << 20)

static struct hg_tok *T(void *ctx) { return &((struct hg_pull *)ctx)->tok; }
static void cb_u8(void *c, uint8_t v) { T(c)->type = TOK_UINT; T(c)->u = v; }
static void cb_u16(void *c, uint16_t v) { T(c)->type = TOK_UINT; T(c)->u = v; }
static void cb_u32(void *c, uint32_t v) { T(c)->type = TOK_UINT; T(c)->u = v; }
static void cb_u64(void *c, uint64_t v) { T(c)->type = TOK_UINT; T(c)->u = v; }
static void cb_n8(void *c, uint8_t v) { T(c)->type = TOK_NEGINT; T(c)->u = v; }
static void cb_n16(void *c, uint16_t v) { T(c)->type = TOK_NEGINT; T(c)->u = v; }
static void cb_n32(void *c, uint32_t v) { T(c)->type = TOK_NEGINT; T(c)->u = v; }
static void cb_n64(void *c, uint64_t v) { T(c)->type = TOK_NEGINT; T(c)->u = v; }
static void cb_bytes(void *c, cbor_data d, size_t n) {
  T(c)->type = TOK_BYTES; T(c)->ptr = d; T(c)->len = n; T(c)->u = n;
}
static void cb_text(void *c, cbor_data d, size_t n) {
  T(c)->type = TOK_TEXT; T(c)->ptr = d; T(c)->len = n; T(c)->u = n;
}
static void cb_ibytes(void *c) { T(c)->type = TOK_INDEF_BYTES; }
static void cb_itext(void *c) { T(c)->type = TOK_INDEF_TEXT; }
static void cb_array(void *c, size_t n) { T(c)->type = TOK_ARRAY; T(c)->u = n; }
static void cb_iarray(void *c) { T(c)->type = TOK_INDEF_ARRAY; }
static void cb_map(void *c, size_t n) { T(c)->type = TOK_MAP; T(c)->u = n; }
static void cb_imap(void *c) { T(c)->type = TOK_INDEF_MAP; }
static void cb_tag(void *c, uint64_t v) { T(c)->type = TOK_TAG; T(c)->u = v; }
static void cb_f4(void *c, float v) { T(c)->type = TOK_FLOAT; T(c)->f = v; }
static void cb_f8(void *c, double v) { T(c)->type = TOK_FLOAT; T(c)->f = v; }
static void cb_null(void *c) { T(c)->type = TOK_NULL; }
static void cb_undef(void *c) { T(c)->type = TOK_UNDEF; }
static void cb_bool(void *c, bool v) { T(c)->type = TOK_BOOL; T(c)->u = v; }
static void cb_break(void *c) { T(c)->type = TOK_BREAK; }

static const struct cbor_callbacks callbacks = {
    .uint8 = cb_u8, .uint16 = cb_u16, .uint32 = cb_u32, .uint64 = cb_u64,
    .negint8 = cb_n8, .negint16 = cb_n16, .negint32 = cb_n32, .negint64 = cb_n64,
    /* libcbor 0.8 names: byte_string_start is the indefinite start. */
    .byte_string_start = cb_ibytes, .byte_string = cb_bytes,
    .string = cb_text, .string_start = cb_itext,
    .indef_array_start = cb_iarray, .array_start = cb_array,
    .indef_map_start = cb_imap, .map_start = cb_map,
    .tag = cb_tag, .float2 = cb_f4, .float4 = cb_f4, .float8 = cb_f8,
    .undefined = cb_undef, .null = cb_null, .boolean = cb_bool,
    .indef_break = cb_break,
};

static int perr(struct hg_pull *p, int code, uint64_t off, const char *what) {
  p->err = code;
  p->tok_offset = off;
  snprintf(p->msg, sizeof p->msg, "%s", what);
  return code;
}

int _hg_pull_open_fd(struct hg_pull *p, int fd, uint64_t size) {
  memset(p, 0, sizeof *p);
  p->fd = fd;
  p->size = size;
  p->cap = size < WIN_INITIAL ? (size_t)size + 1 : WIN_INITIAL;
  p->win = malloc(p->cap);
  if (!p->win) return perr(p, HG_ENOMEM, 0, "out of memory for the read window");
  p->mem = p->win;
  XXH64_reset(&p->hash, 0);
  p->hashing = 1;
  return 0;
}

void _hg_pull_open_mem(struct hg_pull *p, const void *data, size_t size) {
  memset(p, 0, sizeof *p);
  p->fd = -1;
  p->mem = data;
  p->end = size;
  p->size = size;
  XXH64_reset(&p->hash, 0);
  p->hashing = 1;
}

void _hg_pull_close(struct hg_pull *p) {
  free(p->win);
  p->win = NULL;
}

/* Bytes the item at b needs (head, plus payload for a definite string),
 * from as much of its head as is there: a head cut short needs its full
 * head first. What newer libcbor reports as `required`. */
static uint64_t item_need(const uint8_t *b, size_t avail) {
  unsigned major = b[0] >> 5, info = b[0] & 31;
  size_t arg = info < 24 ? 0 : info <= 27 ? (size_t)1 << (info - 24) : 0;
  if (avail < 1 + arg) return 1 + arg;
  if ((major != 2 && major != 3) || info > 27) return 1 + arg; /* no payload / indefinite */
  uint64_t len = info < 24 ? info : 0;
  for (size_t i = 0; i < arg; i++) len = len << 8 | b[1 + i];
  return len > UINT64_MAX - 9 ? UINT64_MAX : 1 + arg + len;
}

/* Makes at least `need` bytes available from pos (or all that is left). */
static int refill(struct hg_pull *p, size_t need) {
  if (p->fd < 0) return 0;
  uint64_t left = p->size - (p->win_offset + p->pos);
  if (need > left) need = (size_t)left;
  if (p->end - p->pos >= need) return 0;
  if (p->pos > 0) {
    memmove(p->win, p->win + p->pos, p->end - p->pos);
    p->win_offset += p->pos;
    p->end -= p->pos;
    p->pos = 0;
  }
  if (need > p->cap) {
    uint8_t *nw = realloc(p->win, need);
    if (!nw) return perr(p, HG_ENOMEM, _hg_pull_offset(p), "out of memory for the read window");
    p->win = nw;
    p->cap = need;
  }
  while (p->end < p->cap && p->win_offset + p->end < p->size) {
    ssize_t k = read(p->fd, p->win + p->end, p->cap - p->end);
    if (k < 0) {
      if (errno == EINTR) continue;
      return perr(p, HG_EIO, p->win_offset + p->end, "read error");
    }
    if (k == 0) break;
    p->end += (size_t)k;
  }
  p->mem = p->win;
  return 0;
}

int _hg_pull_next(struct hg_pull *p) {
  if (p->err) return p->err;
  p->tok_offset = _hg_pull_offset(p);
  if (p->win_offset + p->pos >= p->size) {
    p->tok.type = TOK_EOF;
    return 0;
  }
  if (refill(p, 16)) return p->err;
  for (;;) {
    size_t avail = p->end - p->pos;
    struct cbor_decoder_result r = cbor_stream_decode(p->mem + p->pos, avail, &callbacks, p);
    if (r.status == CBOR_DECODER_FINISHED) {
      if (r.read == 0 || r.read > avail)
        return perr(p, HG_EFORMAT, p->tok_offset, "CBOR decoder made no progress");
      if (p->hashing) XXH64_update(&p->hash, p->mem + p->pos, r.read);
      p->pos += r.read;
      return 0;
    }
    if (r.status == CBOR_DECODER_ERROR)
      return perr(p, HG_EFORMAT, p->tok_offset, "malformed CBOR item");
    /* NEDATA: the item needs more bytes from pos. */
    uint64_t left = p->size - p->tok_offset, need = item_need(p->mem + p->pos, avail);
    if (need <= avail || need > left || p->fd < 0)
      return perr(p, HG_ETRUNCATED, p->tok_offset,
                  need > left ? "item extends past the end of the file" : "CBOR item is incomplete");
    if (p->max_item && need > p->max_item) {
      p->err = HG_ELIMIT;
      snprintf(p->msg, sizeof p->msg, "CBOR item of %llu bytes exceeds the verifier's limit of %llu",
               (unsigned long long)need, (unsigned long long)p->max_item);
      return p->err;
    }
    if (refill(p, (size_t)need)) return p->err;
  }
}
