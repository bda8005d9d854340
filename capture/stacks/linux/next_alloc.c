/*
 * next_alloc.c — resolves the allocator the interposer forwards to
 * (next_alloc.h): dlsym(RTLD_NEXT) for each function of the malloc family,
 * and the bootstrap arena that serves the calls made while that runs.
 *
 * Why not glibc's __libc_malloc & co.: when jemalloc, tcmalloc or mimalloc
 * serves the program (linked, or preloaded after us), those would hand out
 * glibc blocks that the program then frees with the other allocator (and
 * the other way round), and the host crashes. RTLD_NEXT gives for each
 * symbol what the program would have called without the interposer.
 *
 * Resolution is lazy (the first allocation, which may come from another
 * library's constructor before ours) and once: a compare-and-swap elects the
 * resolving thread; every allocation made meanwhile — by dlsym itself
 * (glibc before 2.34 callocs its per-thread error record) or by another
 * thread — comes from the bootstrap arena, never from an allocator that is
 * not resolved yet, and no thread waits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/stacks/linux/next_alloc.h"

/* glibc's own entry points: only when RTLD_NEXT finds nothing (a static
 * executable) */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));
extern void *__libc_valloc(size_t) __attribute__((weak));
extern void *__libc_pvalloc(size_t) __attribute__((weak));

_Alignas(64) char _hg_boot[HG_BOOT_BYTES];
static size_t boot_used;

void *_hg_boot_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  if (n > HG_BOOT_BYTES || align > HG_BOOT_BYTES / 4) return NULL;
  size_t old = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
  do {
    start = (old + 16 + align - 1) & ~(align - 1); /* room for the size in front */
    end = (start + n + 15) & ~(size_t)15;
    if (end > HG_BOOT_BYTES) return NULL;
  } while (!__atomic_compare_exchange_n(&boot_used, &old, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  ((size_t *)(_hg_boot + start))[-2] = n; /* zero-filled: never reused */
  return _hg_boot + start;
}

/* ---- bootstrap entry points: resolve, then forward ---- */

static void *boot_malloc(size_t n) {
  return _hg_next_resolve() ? _hg_boot_alloc(n, 16) : _hg_nx.malloc(n);
}
static void boot_free(void *p) {
  if (!_hg_boot_owns(p) && p && !_hg_next_resolve()) _hg_nx.free(p);
}
static void *boot_calloc(size_t k, size_t n) {
  size_t t;
  if (__builtin_mul_overflow(k, n, &t)) return NULL;
  return _hg_next_resolve() ? _hg_boot_alloc(t, 16) : _hg_nx.calloc(k, n);
}
static void *boot_realloc(void *p, size_t n) { /* the caller copies boot blocks */
  if (_hg_next_resolve()) return p ? NULL : _hg_boot_alloc(n, 16); /* no other block exists yet */
  return _hg_nx.realloc(p, n);
}
static void *boot_memalign(size_t a, size_t n) {
  return _hg_next_resolve() ? _hg_boot_alloc(n, a) : _hg_nx.memalign(a, n);
}
static void *boot_aligned_alloc(size_t a, size_t n) {
  return _hg_next_resolve() ? _hg_boot_alloc(n, a) : _hg_nx.aligned_alloc(a, n);
}
static int boot_posix_memalign(void **out, size_t a, size_t n) {
  if (!_hg_next_resolve()) return _hg_nx.posix_memalign(out, a, n);
  void *p = _hg_boot_alloc(n, a);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
static void *boot_valloc(size_t n) {
  return _hg_next_resolve() ? _hg_boot_alloc(n, 4096) : _hg_nx.valloc(n);
}
static void *boot_pvalloc(size_t n) {
  return _hg_next_resolve() ? _hg_boot_alloc((n + 4095) & ~(size_t)4095, 4096) : _hg_nx.pvalloc(n);
}
static size_t boot_usable(void *p) { return _hg_next_resolve() || !p ? 0 : _hg_nx.malloc_usable_size(p); }

struct _hg_next _hg_nx = {
    .malloc = boot_malloc,
    .free = boot_free,
    .calloc = boot_calloc,
    .realloc = boot_realloc,
    .memalign = boot_memalign,
    .aligned_alloc = boot_aligned_alloc,
    .posix_memalign = boot_posix_memalign,
    .valloc = boot_valloc,
    .pvalloc = boot_pvalloc,
    .malloc_usable_size = boot_usable,
    .name = "",
};

/* ---- resolution ---- */

static int state; /* 0 not yet, 1 under way, 2 done */

static const void *object_of(const void *fn) {
  Dl_info di;
  return fn && dladdr(fn, &di) ? di.dli_fbase : NULL;
}

static void *next_sym(const char *name, void *fallback) {
  void *f = dlsym(RTLD_NEXT, name);
  return f ? f : fallback;
}

static void die(const char *what) {
  static const char m[] = "heapgraph: allocation-stack interposer: no next ";
  (void)!write(2, m, sizeof m - 1);
  (void)!write(2, what, strlen(what));
  (void)!write(2, "\n", 1);
  abort();
}

int _hg_next_resolve(void) {
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s == 2) return 0;
  int zero = 0;
  if (!__atomic_compare_exchange_n(&state, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2 ? 0 : 1;
  struct _hg_next n = _hg_nx;
  n.malloc = next_sym("malloc", (void *)__libc_malloc);
  n.free = next_sym("free", (void *)__libc_free);
  n.calloc = next_sym("calloc", (void *)__libc_calloc);
  n.realloc = next_sym("realloc", (void *)__libc_realloc);
  n.memalign = next_sym("memalign", (void *)__libc_memalign);
  n.aligned_alloc = next_sym("aligned_alloc", (void *)__libc_memalign);
  n.posix_memalign = next_sym("posix_memalign", NULL);
  n.valloc = next_sym("valloc", (void *)__libc_valloc);
  n.pvalloc = next_sym("pvalloc", (void *)__libc_pvalloc);
  n.malloc_usable_size = next_sym("malloc_usable_size", NULL);
  n.free_sized = next_sym("free_sized", NULL);
  n.free_aligned_sized = next_sym("free_aligned_sized", NULL);
  if (!n.malloc || !n.free || !n.calloc || !n.realloc) die("malloc, free, calloc or realloc");
  if (!n.memalign || !n.aligned_alloc || !n.posix_memalign || !n.valloc || !n.pvalloc || !n.malloc_usable_size)
    die("memalign, aligned_alloc, posix_memalign, valloc, pvalloc or malloc_usable_size");
  const void *obj = object_of((void *)n.malloc);
  n.own_usable = object_of((void *)n.malloc_usable_size) == obj ? n.malloc_usable_size : NULL;
  n.own_memalign = object_of((void *)n.memalign) == obj;
  n.own_aligned_alloc = object_of((void *)n.aligned_alloc) == obj;
  n.own_posix_memalign = object_of((void *)n.posix_memalign) == obj;
  n.own_valloc = object_of((void *)n.valloc) == obj;
  n.own_pvalloc = object_of((void *)n.pvalloc) == obj;
  if (object_of((void *)n.free_sized) != obj) n.free_sized = NULL; /* free() then */
  if (object_of((void *)n.free_aligned_sized) != obj) n.free_aligned_sized = NULL;
  Dl_info di;
  n.name = dladdr((void *)n.malloc, &di) && di.dli_fname ? di.dli_fname : "";
  const char *base = strrchr(n.name, '/');
  base = base ? base + 1 : n.name;
  n.glibc = !strncmp(base, "libc.so", 7) || (obj && obj == object_of((void *)__libc_malloc));
  /* each pointer is a word: a thread sees the bootstrap or the real one */
  __atomic_store_n(&_hg_nx.own_usable, n.own_usable, __ATOMIC_RELAXED);
  _hg_nx.own_memalign = n.own_memalign;
  _hg_nx.own_aligned_alloc = n.own_aligned_alloc;
  _hg_nx.own_posix_memalign = n.own_posix_memalign;
  _hg_nx.own_valloc = n.own_valloc;
  _hg_nx.own_pvalloc = n.own_pvalloc;
  _hg_nx.glibc = n.glibc;
  _hg_nx.name = n.name;
  _hg_nx.free_sized = n.free_sized;
  _hg_nx.free_aligned_sized = n.free_aligned_sized;
  _hg_nx.malloc_usable_size = n.malloc_usable_size;
  _hg_nx.pvalloc = n.pvalloc;
  _hg_nx.valloc = n.valloc;
  _hg_nx.posix_memalign = n.posix_memalign;
  _hg_nx.aligned_alloc = n.aligned_alloc;
  _hg_nx.memalign = n.memalign;
  _hg_nx.realloc = n.realloc;
  _hg_nx.calloc = n.calloc;
  _hg_nx.free = n.free;
  _hg_nx.malloc = n.malloc;
  __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
  return 0;
}

void *_hg_next_cxx(const char *sym, void **fn, uint8_t *own) {
  void *f = __atomic_load_n(fn, __ATOMIC_ACQUIRE);
  if (f) return f;
  _hg_next_resolve(); /* libstdc++ is loaded: the C family is resolved or under way */
  f = dlsym(RTLD_NEXT, sym);
  if (!f) die(sym); /* whoever called it was linked against a definition */
  *own = object_of(f) == object_of((void *)_hg_nx.malloc);
  __atomic_store_n(fn, f, __ATOMIC_RELEASE);
  return f;
}
