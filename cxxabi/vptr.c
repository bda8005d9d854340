/*
 * vptr.c — deciding whether a heap block's first word is the primary vptr
 * of a complete polymorphic object (Itanium C++ ABI), and the plausibility
 * test for mangled class names.
 *
 * Runs while the process is frozen: never allocates, never locks, and reads
 * process memory only through the caller's validated reader.
 */
#include "cxxabi/cxxabi.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cxxabi assumes a little-endian target (x86_64, arm64)"
#endif

static int mangle_char(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '$' || ch == '.' || ch >= 0x80; /* UTF-8 identifiers */
}

int _hg_cxx_plausible_name(const char *name, size_t len) {
  if (!name || len < 2 || len > HG_CXX_MAX_NAME) return 0;
  const unsigned char *p = (const unsigned char *)name;
  /* A class type: <source-name> (digit), <nested-name> (N), a std::
   * substitution (S), or a <local-name> (Z). */
  if (!((p[0] >= '1' && p[0] <= '9') || p[0] == 'N' || p[0] == 'S' || p[0] == 'Z')) return 0;
  for (size_t i = 0; i < len; i++)
    if (!mangle_char(p[i])) return 0;
  if (p[0] >= '1' && p[0] <= '9') { /* <length><identifier>: length must fit */
    size_t n = 0, i = 0;
    while (i < len && p[i] >= '0' && p[i] <= '9' && n <= len) n = n * 10 + (size_t)(p[i++] - '0');
    if (n == 0 || i + n > len) return 0;
  }
  return 1;
}

struct hg_cxx_type *_hg_cxx_check(const struct hg_cxx_set *s, uint64_t vptr, hg_cxx_read_fn read,
                                  void *ctx) {
  /* Cheap rejects first: most first words are heap pointers or data. */
  if ((vptr & 7) || vptr < s->ro_min || vptr >= s->ro_max || vptr < 16) return NULL;
  if (!_hg_cxx_in_ro(s, vptr - 16, 24)) return NULL;
  uint64_t top, ti;
  if (read(ctx, vptr - 16, &top) != 0 || top != 0) return NULL; /* offset-to-top */
  if (read(ctx, vptr - 8, &ti) != 0) return NULL;
  return _hg_cxx_set_find(s, ti);
}
