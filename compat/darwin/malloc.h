/*
 * compat/darwin/malloc.h — used only when mk/darwin.mk cross-compiles
 * examples/demo.c for macOS: Darwin has no <malloc.h> and names
 * malloc_usable_size() malloc_size() (<malloc/malloc.h>).
 */
#ifndef HG_COMPAT_DARWIN_MALLOC_H
#define HG_COMPAT_DARWIN_MALLOC_H
#include <malloc/malloc.h>
#include <stddef.h>
static inline size_t malloc_usable_size(void *p) { return malloc_size(p); }
#endif
