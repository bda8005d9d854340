/*
 * xxhash.h — heapgraph's own declarations of the part of xxHash's API that
 * graph/ uses (XXH64's one-shot and streaming forms), for the builds that
 * carry no third-party code: `make darwin`, `make ios`, `make xcframework`
 * and the Swift package put compat/include/ on their include path, so
 * `#include <xxhash.h>` lands here; the Linux build uses Debian's libxxhash.
 * The hash itself is compat/xxh64.h (written here from the algorithm's
 * description, checked against libxxhash by tests/unit/test_compat_xxh64.c).
 * Everything is static inline: no symbol named XXH* is defined.
 */
#ifndef HG_COMPAT_XXHASH_H
#define HG_COMPAT_XXHASH_H

#include "../xxh64.h"

typedef uint64_t XXH64_hash_t;
typedef struct _hg_xxh64 XXH64_state_t;
typedef enum { XXH_OK = 0, XXH_ERROR } XXH_errorcode;

static inline XXH_errorcode XXH64_reset(XXH64_state_t *s, XXH64_hash_t seed) {
  _hg_xxh64_reset(s, seed);
  return XXH_OK;
}
static inline XXH_errorcode XXH64_update(XXH64_state_t *s, const void *data, size_t n) {
  if (!data && n) return XXH_ERROR;
  _hg_xxh64_update(s, data, n);
  return XXH_OK;
}
static inline XXH64_hash_t XXH64_digest(const XXH64_state_t *s) { return _hg_xxh64_digest(s); }
static inline XXH64_hash_t XXH64(const void *data, size_t n, XXH64_hash_t seed) {
  return _hg_xxh64(data, n, seed);
}

#endif
