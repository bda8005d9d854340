/*
 * cbor_lite.c — heapgraph's own implementation of the small part of the
 * libcbor 0.8 API that graph/ uses (cbor_encode_* heads and the one-item
 * streaming decoder cbor_stream_decode), written from RFC 8949 against our
 * own declarations of that API (compat/include/cbor.h, which renames the
 * functions _hg_cbor_*).
 *
 * Built by the Apple builds (mk/darwin.mk, mk/xcframework.mk) and the Swift
 * package: Apple platforms have no libcbor, so the macOS/iOS library carries
 * this subset instead of requiring the app to build libcbor. The Linux
 * Makefile build links the real libcbor; there this file is also compiled by
 * tests/unit/test_darwin_cbor.c, under other names (HG_CBOR_LITE_PREFIX)
 * against Debian's cbor.h, to check it byte for byte against libcbor.
 *
 * Never allocates; never reads past `source_size`.
 */
#include <cbor.h>
#include <string.h>

#ifdef HG_CBOR_LITE_PREFIX
#define CBL(name) hg_lite_##name
#else
#define CBL(name) name
#endif

/* ---------------------------------------------------------------- encoding */

/* Writes a head: major type (0..7) and argument, in the shortest form. */
static size_t head(unsigned major, uint64_t v, unsigned char *out, size_t size) {
  unsigned char mt = (unsigned char)(major << 5);
  size_t n;
  if (v < 24) n = 1;
  else if (v <= 0xff) n = 2;
  else if (v <= 0xffff) n = 3;
  else if (v <= 0xffffffffu) n = 5;
  else n = 9;
  if (size < n) return 0;
  switch (n) {
    case 1: out[0] = (unsigned char)(mt | v); break;
    case 2: out[0] = mt | 24; break;
    case 3: out[0] = mt | 25; break;
    case 5: out[0] = mt | 26; break;
    default: out[0] = mt | 27; break;
  }
  for (size_t i = 1; i < n; i++) out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
  return n;
}

static size_t one(unsigned char b, unsigned char *out, size_t size) {
  if (size < 1) return 0;
  out[0] = b;
  return 1;
}

size_t CBL(cbor_encode_uint)(uint64_t v, unsigned char *out, size_t size) { return head(0, v, out, size); }
size_t CBL(cbor_encode_negint)(uint64_t v, unsigned char *out, size_t size) { return head(1, v, out, size); }
size_t CBL(cbor_encode_bytestring_start)(size_t n, unsigned char *out, size_t size) { return head(2, n, out, size); }
size_t CBL(cbor_encode_string_start)(size_t n, unsigned char *out, size_t size) { return head(3, n, out, size); }
size_t CBL(cbor_encode_array_start)(size_t n, unsigned char *out, size_t size) { return head(4, n, out, size); }
size_t CBL(cbor_encode_map_start)(size_t n, unsigned char *out, size_t size) { return head(5, n, out, size); }
size_t CBL(cbor_encode_tag)(uint64_t v, unsigned char *out, size_t size) { return head(6, v, out, size); }
size_t CBL(cbor_encode_indef_bytestring_start)(unsigned char *out, size_t size) { return one(0x5f, out, size); }
size_t CBL(cbor_encode_indef_string_start)(unsigned char *out, size_t size) { return one(0x7f, out, size); }
size_t CBL(cbor_encode_indef_array_start)(unsigned char *out, size_t size) { return one(0x9f, out, size); }
size_t CBL(cbor_encode_indef_map_start)(unsigned char *out, size_t size) { return one(0xbf, out, size); }
size_t CBL(cbor_encode_bool)(bool v, unsigned char *out, size_t size) { return one(v ? 0xf5 : 0xf4, out, size); }
size_t CBL(cbor_encode_null)(unsigned char *out, size_t size) { return one(0xf6, out, size); }
size_t CBL(cbor_encode_undef)(unsigned char *out, size_t size) { return one(0xf7, out, size); }
size_t CBL(cbor_encode_break)(unsigned char *out, size_t size) { return one(0xff, out, size); }

/* ---------------------------------------------------------------- decoding */

static struct cbor_decoder_result done(size_t n) {
  struct cbor_decoder_result r = {n, CBOR_DECODER_FINISHED, 0};
  return r;
}
static struct cbor_decoder_result need(size_t n) {
  struct cbor_decoder_result r = {0, CBOR_DECODER_NEDATA, n};
  return r;
}
static struct cbor_decoder_result bad(void) {
  struct cbor_decoder_result r = {0, CBOR_DECODER_ERROR, 0};
  return r;
}

static uint64_t be(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

/* IEEE 754 half precision to float (RFC 8949 appendix D, done by hand). */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, ex = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (ex == 0) {
    if (mant == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do { e++; mant <<= 1; } while (!(mant & 0x400));
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (ex == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (ex - 15 + 127) << 23 | mant << 13;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

struct cbor_decoder_result CBL(cbor_stream_decode)(cbor_data src, size_t size,
                                                   const struct cbor_callbacks *cb, void *ctx) {
  if (size < 1) return need(1);
  unsigned char ib = src[0];
  unsigned major = ib >> 5, ai = ib & 0x1f;
  size_t extra;
  if (ai < 24) extra = 0;
  else if (ai == 24) extra = 1;
  else if (ai == 25) extra = 2;
  else if (ai == 26) extra = 4;
  else if (ai == 27) extra = 8;
  else if (ai == 31) extra = 0;
  else return bad(); /* 28..30 are reserved */
  if (ai == 31 && (major == 0 || major == 1 || major == 6)) return bad();
  /* as libcbor 0.8: embedded tags 6..20 and the 1-byte simple value (0xf8)
   * are rejected outright */
  if ((major == 6 && ai >= 6 && ai <= 20) || (major == 7 && ai == 24)) return bad();
  if (size < 1 + extra) return need(1 + extra);
  uint64_t v = ai < 24 ? ai : be(src + 1, extra);
  size_t hl = 1 + extra;
  switch (major) {
    case 0:
    case 1: {
      int neg = major == 1;
      if (extra <= 1) (neg ? cb->negint8 : cb->uint8)(ctx, (uint8_t)v);
      else if (extra == 2) (neg ? cb->negint16 : cb->uint16)(ctx, (uint16_t)v);
      else if (extra == 4) (neg ? cb->negint32 : cb->uint32)(ctx, (uint32_t)v);
      else (neg ? cb->negint64 : cb->uint64)(ctx, v);
      return done(hl);
    }
    case 2:
    case 3:
      if (ai == 31) {
        (major == 2 ? cb->byte_string_start : cb->string_start)(ctx);
        return done(1);
      }
      if (v > SIZE_MAX - hl) return bad();
      if (size - hl < v) return need(hl + (size_t)v);
      (major == 2 ? cb->byte_string : cb->string)(ctx, src + hl, (size_t)v);
      return done(hl + (size_t)v);
    case 4:
    case 5:
      if (ai == 31) {
        (major == 4 ? cb->indef_array_start : cb->indef_map_start)(ctx);
        return done(1);
      }
      if (v > SIZE_MAX) return bad();
      (major == 4 ? cb->array_start : cb->map_start)(ctx, (size_t)v);
      return done(hl);
    case 6:
      cb->tag(ctx, v);
      return done(hl);
    default: /* 7: simple values and floats */
      switch (ai) {
        case 20: cb->boolean(ctx, false); return done(1);
        case 21: cb->boolean(ctx, true); return done(1);
        case 22: cb->null(ctx); return done(1);
        case 23: cb->undefined(ctx); return done(1);
        case 25: cb->float2(ctx, half_to_float((uint16_t)v)); return done(3);
        case 26: {
          uint32_t b = (uint32_t)v;
          float f;
          memcpy(&f, &b, sizeof f);
          cb->float4(ctx, f);
          return done(5);
        }
        case 27: {
          double d;
          memcpy(&d, &v, sizeof d);
          cb->float8(ctx, d);
          return done(9);
        }
        case 31: cb->indef_break(ctx); return done(1);
        default: return bad(); /* unassigned simple values */
      }
  }
}
