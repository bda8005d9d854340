/*
 * cbor.h — heapgraph's own declarations of the part of libcbor's API that
 * graph/ uses (the cbor_encode_* heads and the one-item streaming decoder
 * cbor_stream_decode with its callback table), implemented by
 * compat/cbor_lite.c. Written here for the builds that carry no third-party
 * code — `make darwin`, `make ios`, `make xcframework` and the Swift package
 * put compat/include/ on their include path, so `#include <cbor.h>` lands
 * here; the Linux build uses Debian's libcbor.
 *
 * Source-compatible with libcbor 0.8 for what graph/ does (designated
 * initialisers of struct cbor_callbacks, the decoder result and status), not
 * binary-compatible: the callback table's member order is our own. The
 * functions are renamed to _hg_cbor_* so a static library built with them
 * defines no libcbor symbol (an app that links libcbor itself gets no
 * duplicate symbols).
 */
#ifndef HG_COMPAT_CBOR_H
#define HG_COMPAT_CBOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef const unsigned char *cbor_data;

/* What one cbor_stream_decode call did. */
enum cbor_decoder_status {
  CBOR_DECODER_FINISHED, /* one head (or whole definite string) decoded; `read` bytes used */
  CBOR_DECODER_NEDATA,   /* the item needs `required` bytes, fewer were given           */
  CBOR_DECODER_ERROR     /* malformed (reserved additional info, bad indefinite, ...)   */
};

struct cbor_decoder_result {
  size_t read;
  enum cbor_decoder_status status;
  size_t required;
};

/* One callback per kind of head; the decoder calls exactly one per item. */
struct cbor_callbacks {
  /* major types 0 and 1, by the width of the argument (negative: -1 - v) */
  void (*uint8)(void *, uint8_t);
  void (*negint8)(void *, uint8_t);
  void (*uint16)(void *, uint16_t);
  void (*negint16)(void *, uint16_t);
  void (*uint32)(void *, uint32_t);
  void (*negint32)(void *, uint32_t);
  void (*uint64)(void *, uint64_t);
  void (*negint64)(void *, uint64_t);
  /* major types 2 and 3: a whole definite string, or the start of an indefinite one */
  void (*byte_string)(void *, cbor_data, size_t);
  void (*byte_string_start)(void *);
  void (*string)(void *, cbor_data, size_t);
  void (*string_start)(void *);
  /* major types 4 and 5: the head only, with the count for definite ones */
  void (*array_start)(void *, size_t);
  void (*indef_array_start)(void *);
  void (*map_start)(void *, size_t);
  void (*indef_map_start)(void *);
  /* major type 6 */
  void (*tag)(void *, uint64_t);
  /* major type 7 */
  void (*float2)(void *, float); /* half precision, widened */
  void (*float4)(void *, float);
  void (*float8)(void *, double);
  void (*boolean)(void *, bool);
  void (*null)(void *);
  void (*undefined)(void *);
  void (*indef_break)(void *);
};

#define cbor_stream_decode _hg_cbor_stream_decode
#define cbor_encode_uint _hg_cbor_encode_uint
#define cbor_encode_negint _hg_cbor_encode_negint
#define cbor_encode_bytestring_start _hg_cbor_encode_bytestring_start
#define cbor_encode_string_start _hg_cbor_encode_string_start
#define cbor_encode_array_start _hg_cbor_encode_array_start
#define cbor_encode_map_start _hg_cbor_encode_map_start
#define cbor_encode_tag _hg_cbor_encode_tag
#define cbor_encode_indef_bytestring_start _hg_cbor_encode_indef_bytestring_start
#define cbor_encode_indef_string_start _hg_cbor_encode_indef_string_start
#define cbor_encode_indef_array_start _hg_cbor_encode_indef_array_start
#define cbor_encode_indef_map_start _hg_cbor_encode_indef_map_start
#define cbor_encode_bool _hg_cbor_encode_bool
#define cbor_encode_null _hg_cbor_encode_null
#define cbor_encode_undef _hg_cbor_encode_undef
#define cbor_encode_break _hg_cbor_encode_break

/* Decodes the one item head at `src` (a definite string with its payload),
 * calling the matching callback; never reads past `size`. */
struct cbor_decoder_result cbor_stream_decode(cbor_data src, size_t size,
                                              const struct cbor_callbacks *callbacks, void *context);

/* Encoders: write the item (head) into `out`, return its size, or 0 when
 * `size` is too small. */
size_t cbor_encode_uint(uint64_t value, unsigned char *out, size_t size);
size_t cbor_encode_negint(uint64_t value, unsigned char *out, size_t size);
size_t cbor_encode_bytestring_start(size_t length, unsigned char *out, size_t size);
size_t cbor_encode_string_start(size_t length, unsigned char *out, size_t size);
size_t cbor_encode_array_start(size_t count, unsigned char *out, size_t size);
size_t cbor_encode_map_start(size_t count, unsigned char *out, size_t size);
size_t cbor_encode_tag(uint64_t value, unsigned char *out, size_t size);
size_t cbor_encode_indef_bytestring_start(unsigned char *out, size_t size);
size_t cbor_encode_indef_string_start(unsigned char *out, size_t size);
size_t cbor_encode_indef_array_start(unsigned char *out, size_t size);
size_t cbor_encode_indef_map_start(unsigned char *out, size_t size);
size_t cbor_encode_bool(bool value, unsigned char *out, size_t size);
size_t cbor_encode_null(unsigned char *out, size_t size);
size_t cbor_encode_undef(unsigned char *out, size_t size);
size_t cbor_encode_break(unsigned char *out, size_t size);

#endif
