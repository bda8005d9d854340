/*
 * export.c — hg_export() dispatch and the buffered writer every exporter
 * uses (_hg_out_*): a 64 KiB buffer flushed through the caller's write
 * callback, JSON string escaping that always yields valid JSON, and class
 * display names through the caller's (e.g. demangling) hook.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/analysis.h"

void _hg_out_flush(struct _hg_out *o) {
  if (o->len && !o->err && o->write(o->ctx, o->buf, o->len)) o->err = HG_EIO;
  o->total += o->len;
  o->len = 0;
}

void _hg_out_mem(struct _hg_out *o, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    if (o->len == sizeof o->buf) _hg_out_flush(o);
    size_t k = sizeof o->buf - o->len;
    if (k > n) k = n;
    memcpy(o->buf + o->len, s, k);
    o->len += k;
    s += k;
    n -= k;
  }
}

void _hg_out_str(struct _hg_out *o, const char *s) { _hg_out_mem(o, s, strlen(s)); }

void _hg_out_u64(struct _hg_out *o, uint64_t v) {
  char tmp[24];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  _hg_out_mem(o, tmp + i, sizeof tmp - i);
}

void _hg_out_printf(struct _hg_out *o, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  _hg_out_mem(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of a valid UTF-8 sequence at s (1-4) or 0. */
static size_t utf8_len(const unsigned char *s) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
  else return 0;
  for (size_t i = 1; i < len; i++) { /* stops at NUL: NUL is not 10xxxxxx */
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  return len;
}

void _hg_out_json_str(struct _hg_out *o, const char *s) {
  if (!s) {
    _hg_out_str(o, "null");
    return;
  }
  _hg_out_mem(o, "\"", 1);
  _hg_out_json_chars(o, s);
  _hg_out_mem(o, "\"", 1);
}

void _hg_out_json_chars(struct _hg_out *o, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      _hg_out_mem(o, esc, 2);
      p++;
    } else if (c < 0x20) {
      _hg_out_printf(o, "\\u%04x", c);
      p++;
    } else {
      size_t k = utf8_len(p);
      if (k == 0) {
        _hg_out_str(o, "\\ufffd");
        p++;
      } else {
        _hg_out_mem(o, p, k);
        p += k;
      }
    }
  }
}

const char *_hg_class_display(const struct hg_graph *g, const struct hg_export_options *opt,
                              uint32_t class_id) {
  if (class_id == 0 || class_id > g->class_count) return NULL;
  const struct hg_class *c = &g->classes[class_id - 1];
  if (!c->name) return NULL;
  if (opt && opt->class_name) {
    const char *s = opt->class_name(opt->class_name_ctx, c->name, c->kind);
    if (s) return s;
  }
  return c->name;
}

int hg_export(struct hg_graph *g, const struct hg_export_options *opt, hg_write_fn write,
              void *ctx, struct hg_export_stats *stats) {
  if (!g || !opt || !write || opt->version > HG_EXPORT_OPTIONS_VERSION) return HG_EINVAL;
  struct hg_export_stats local = {0};
  struct hg_export_stats *st = stats ? stats : &local;
  memset(st, 0, sizeof *st);
  struct _hg_out *o = calloc(1, sizeof *o);
  if (!o) return HG_ENOMEM;
  o->write = write;
  o->ctx = ctx;
  int rc;
  switch (opt->format) {
  case HG_EXPORT_HEAPSNAPSHOT: rc = _hg_export_heapsnapshot(g, opt, o, st); break;
  case HG_EXPORT_DOT: rc = _hg_export_dot(g, opt, o, st); break;
  case HG_EXPORT_JSON:
  case HG_EXPORT_JSONL: rc = _hg_export_json(g, opt, o, st); break;
  default: rc = HG_EINVAL; break;
  }
  _hg_out_flush(o);
  if (!rc && o->err) rc = o->err;
  st->bytes = o->total;
  free(o);
  return rc;
}
