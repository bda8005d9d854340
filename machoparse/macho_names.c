/*
 * macho_names.c — short library names from install names, following the
 * rules llvm-objdump (and cctools' guess_short_name) apply, so tables print
 * "libSystem" for /usr/lib/libSystem.B.dylib and "Foundation" for
 * /System/Library/Frameworks/Foundation.framework/Versions/C/Foundation.
 *
 * Pure string work on caller buffers; never allocates.
 */
#include <string.h>

#include "machoparse/macho.h"

/* Last index of c in s[0, before), or -1. */
static long rfind(const char *s, long before, char c) {
  for (long i = before - 1; i >= 0; i--)
    if (s[i] == c) return i;
  return -1;
}

static const char *put(char *buf, size_t cap, const char *s, long len) {
  if (cap == 0) return "";
  if (len < 0) len = 0;
  if ((size_t)len >= cap) len = (long)cap - 1;
  memcpy(buf, s, (size_t)len);
  buf[len] = 0;
  return buf;
}

static int is_suffix(const char *s, long len) {
  return (len == 6 && !strncmp(s, "_debug", 6)) || (len == 8 && !strncmp(s, "_profile", 8));
}

/* "Foo.framework/" at name[at] where Foo = foo[0, flen)? */
static int framework_at(const char *name, long nlen, long at, const char *foo, long flen) {
  if (at + flen + 11 > nlen) return 0;
  return !strncmp(name + at, foo, (size_t)flen) && !strncmp(name + at + flen, ".framework/", 11);
}

static const char *guess_library(const char *name, long len, char *buf, size_t cap) {
  long a = rfind(name, len, '.');
  if (a <= 0) return NULL;
  if (len - a == 4 && !strncmp(name + a, ".qtx", 4)) {
    long b = rfind(name, a, '/');
    long start = b < 0 ? 0 : b + 1, l = a - start;
    if (l >= 3 && name[start + l - 2] == '.') l -= 2;
    return put(buf, cap, name + start, l);
  }
  if (!(len - a == 6 && !strncmp(name + a, ".dylib", 6))) return NULL;
  if (a >= 3 && name[a - 2] == '.') a -= 2;
  long b = rfind(name, a, '/');
  b = b < 0 ? 0 : b + 1;
  long idx = rfind(name, len, '_');
  long start = b, l = a - b;
  if (idx >= 0 && idx != b && idx < a && is_suffix(name + idx, a - idx)) l = idx - b;
  if (l >= 3 && name[start + l - 2] == '.') l -= 2;
  return put(buf, cap, name + start, l);
}

const char *macho_dylib_short_name(const char *name, char *buf, size_t cap) {
  long len = (long)strlen(name);
  long a = rfind(name, len, '/');
  if (a > 0) {
    const char *foo = name + a + 1;
    long flen = len - a - 1;
    long us = rfind(foo, flen, '_');
    if (us >= 0 && flen >= 2 && is_suffix(foo + us, flen - us)) flen = us;
    long b = rfind(name, a, '/');
    if (framework_at(name, len, b < 0 ? 0 : b + 1, foo, flen)) return put(buf, cap, foo, flen);
    if (b >= 0) {
      long c = rfind(name, b, '/');
      if (c > 0 && !strncmp(name + c + 1, "Versions/", 9)) {
        long d = rfind(name, c, '/');
        if (framework_at(name, len, d < 0 ? 0 : d + 1, foo, flen)) return put(buf, cap, foo, flen);
      }
    }
  }
  const char *r = guess_library(name, len, buf, cap);
  return r && *r ? r : put(buf, cap, name, len);
}
