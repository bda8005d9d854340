/*
 * utf8.h — UTF-8 validation for CBOR text strings. The writer replaces
 * invalid bytes with '?' (paths and thread names on Linux are arbitrary
 * bytes); the reader rejects invalid text. Internal to graph/.
 */
#ifndef HG_GRAPH_UTF8_H
#define HG_GRAPH_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence starting at s[0] (1–4), or 0 when the
 * bytes there are not a valid sequence (overlongs and surrogates too). */
static inline size_t _hg_utf8_seq(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
  else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
  else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  return len;
}

/* Offset of the first invalid byte, or n when all of s[0..n) is valid. */
static inline size_t _hg_utf8_check(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t k = _hg_utf8_seq(s + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

#endif
