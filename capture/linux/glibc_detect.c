/*
 * glibc_detect.c — recognises glibc's ptmalloc2 without debug symbols or
 * hooks, before the freeze: checks that malloc is libc's own (not jemalloc,
 * tcmalloc, a sanitizer …), learns safe-linking and the tcache key from
 * frees of its own into a tcache bin it has made room in and whose head it
 * reads (any state of the app's tcache and bins), and finds
 * main_arena in libc's writable data by its shape (bins that are empty
 * self-referencing heads or consistent doubly-linked lists, a top outside
 * it, and a `next` ring of arenas back to it), trying each known
 * malloc_state layout (with or without fastbins). It finds its own thread's
 * tcache_perthread_struct through libc's thread-local `tcache` pointer (bin
 * count and chunk size), and learns the header of mmapped chunks from one
 * mmapped block of its own. Nothing is chosen by glibc version number.
 * After the freeze it tells whether any arena lock is held.
 *
 * heap_prepare may call malloc (it runs before the freeze); _hg_plat_heap_busy
 * runs frozen and reads memory only through process_vm_readv (safe on
 * unmapped addresses).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture/stacks/alloc_record.h"
#include "capture/linux/linux.h"
#include "capture/platform.h"

struct hg_glibc _hg_glibc;

struct layout {
  const char *name;
  uint32_t fastbins, nfastbins, top, bins, next, size;
};

/* malloc_state: mutex, flags, [have_fastchunks], [fastbinsY[10]], top,
 * last_remainder, bins[254], binmap[4], next, next_free, attached_threads,
 * system_mem, max_system_mem. */
static const struct layout layouts[] = {
    {"fastbins, have_fastchunks", 16, 10, 96, 112, 2160, 2200}, /* 2.27 … 2.42 */
    {"no fastbins", 0, 0, 8, 24, 2072, 2112},                   /* 2.43 …      */
    {"fastbins", 8, 10, 88, 104, 2152, 2192},                   /* … 2.26      */
};

/* Reads memory that may be unmapped without faulting. */
static int safe_read(uint64_t addr, void *out, size_t n) {
  struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

HG_NO_ASAN static uint64_t word(uint64_t a) { return *(const volatile uint64_t *)(uintptr_t)a; }

/* A ring of arenas through `next` that comes back to a (every hop readable). */
static int ring_ok(uint64_t a, uint32_t off_next) {
  uint64_t p = a;
  for (int n = 0; n < 4096; n++) {
    uint64_t next;
    if (safe_read(p + off_next, &next, sizeof next) || !next || (next & 7)) return 0;
    if (next == a) return 1;
    p = next;
  }
  return 0;
}

/* A non-empty bin at slot (bin head = slot - 16) keeps glibc's own
 * invariant: head->fd->bk == head and head->bk->fd == head. */
static int bin_linked(uint64_t head, uint64_t fd, uint64_t bk) {
  uint64_t back, fwd;
  if (safe_read(fd + 24, &back, sizeof back) || safe_read(bk + 16, &fwd, sizeof fwd)) return 0;
  return back == head && fwd == head;
}

/* Empty bins of a candidate main_arena at a; -1 if it cannot be one. Cheap
 * shape checks first; then every bin must be a consistent doubly-linked
 * list, top must lie outside the candidate, and `next` must be a ring of
 * arenas back to a. A candidate shifted by whole bins inside the real
 * arena (its binmap words then pose as one more bin) fails these. */
HG_NO_ASAN static int score(uint64_t a, const struct layout *L) {
  uint32_t mutex = *(const volatile uint32_t *)(uintptr_t)a;
  uint32_t flags = *(const volatile uint32_t *)(uintptr_t)(a + 4);
  if (mutex > 2 || flags > 7) return -1;
  uint64_t first_bin = a + L->bins - 16; /* bin_at(1): fd at +16 */
  uint64_t top = word(a + L->top);
  if (top != first_bin && (!top || (top & 15) || (top >= a && top < a + L->size))) return -1;
  uint64_t next = word(a + L->next);
  if (!next || (next & 7)) return -1;
  for (uint32_t i = 0; i < L->nfastbins; i++) {
    uint64_t f = word(a + L->fastbins + 8 * i);
    if (f & 15) return -1; /* heads are plain chunk pointers (only links are protected) */
  }
  int empty = 0;
  for (uint32_t i = 1; i < 127; i++) {
    uint64_t slot = a + L->bins + (uint64_t)(i - 1) * 16;
    uint64_t fd = word(slot), bk = word(slot + 8), self = slot - 16;
    if (fd == self && bk == self) {
      empty++;
      continue;
    }
    if (!fd || !bk || (fd & 15) || (bk & 15) || fd == self || bk == self) return -1;
  }
  if (top != first_bin) {
    uint64_t tsz;
    if (safe_read(top + 8, &tsz, sizeof tsz)) return -1;
  }
  for (uint32_t i = 1; i < 127; i++) {
    uint64_t slot = a + L->bins + (uint64_t)(i - 1) * 16;
    uint64_t fd = word(slot), bk = word(slot + 8), self = slot - 16;
    if (fd != self && !bin_linked(self, fd, bk)) return -1;
  }
  if (!ring_ok(a, L->next)) return -1;
  return empty;
}

static int find_main_arena(struct hg_cap *c, uint32_t libc_image) {
  /* Layouts are tried in order; the first one that finds a unique best
   * candidate wins (an older layout shifted by 8 bytes can look alike). */
  int best = -1, ties = 0;
  uint64_t best_a = 0;
  const struct layout *best_l = NULL;
  for (size_t li = 0; li < sizeof layouts / sizeof layouts[0] && !best_l; li++) {
    const struct layout *L = &layouts[li];
    best = -1;
    ties = 0;
    for (size_t r = 0; r < _hg_vec_len(&c->ranges); r++) {
      const struct hg_crange *g = _hg_vec_at(&c->ranges, r);
      if (g->kind != HG_ROOT_GLOBAL || g->owner != libc_image) continue;
      for (uint64_t a = (g->lo + 7) & ~(uint64_t)7; a + L->size <= g->hi; a += 8) {
        int s = score(a, L);
        if (s < 0) continue;
        if (s > best) {
          best = s;
          best_a = a;
          best_l = L;
          ties = 0;
        } else if (s == best) {
          ties++;
        }
      }
    }
  }
  if (!best_l || ties) return -1;
  struct hg_glibc *G = &_hg_glibc;
  G->main_arena = best_a;
  G->layout = best_l->name;
  G->off_fastbins = best_l->fastbins;
  G->nfastbins = best_l->nfastbins;
  G->off_top = best_l->top;
  G->off_bins = best_l->bins;
  G->off_next = best_l->next;
  G->sizeof_state = best_l->size;
  return 0;
}

/* Learns the free-list link format and the tcache key from blocks of its
 * own, whatever state the app left its thread's tcache and the arena's bins
 * in (issue 26: with every tcache bin full, and no fastbins on 2.43, frees
 * of our own may land in no singly-linked list at all):
 *  1. frees one 24-byte block a, and looks for this thread's
 *     tcache_perthread_struct whose bin 0 now starts with a (find_tcache).
 *     If there is none, bin 0 was full when a was freed; then one malloc
 *     takes a block from the bin (tcache_get comes first in malloc), which
 *     leaves one free slot whatever the bin's capacity, and a second block b
 *     freed into it is found at the head. Should the bin still refuse it,
 *     the same is tried with the next sizes (bins 1 … 7).
 *  2. with the struct known, its raw (never protected) entries[0] is read;
 *     one malloc takes the head z back (tcache_get), and freeing z again
 *     (there is room: z's slot) writes at offset 0 the link to the head
 *     read before, as is or as (&next >> 12) ^ head (safe-linking), and at
 *     offset 8 the key (2.29+: the process tcache key, or the tcache struct
 *     before 2.34). Exactly one of the two forms matches (z >> 12 != 0).
 * Nothing is voted on, so no state of the app's bins can tip the answer.
 * Without any tcache (glibc.malloc.tcache_count=0) probe_fastbins learns
 * the link format from a run of fastbin frees, as before. */
#define PROBE_N 16

/* No tcache: PROBE_N frees of one size in a row all go to the fastbin,
 * each block's `next` naming the chunk freed just before it. Only blocks
 * whose next chunk still has PREV_INUSE vote (fastbin chunks stay "in
 * use"; on 2.43, which has no fastbins, frees go to the unsorted bin,
 * whose `fd` would pose as a plain link). */
HG_NO_ASAN static int probe_fastbins(void) {
  /* through a volatile pointer: reading our own freed blocks is the point */
  void (*volatile release)(void *) = free;
  void *(*volatile get)(size_t) = malloc;
  uintptr_t x[PROBE_N];
  uint64_t link[PROBE_N];
  int n = 0, inuse[PROBE_N];
  for (; n < PROBE_N; n++) {
    if (!(x[n] = (uintptr_t)get(24))) break;
    ((volatile uint64_t *)x[n])[0] = 0;
  }
  for (int i = 0; i < n; i++) release((void *)x[i]);
  if (n < PROBE_N) return -1;
  int plain = 0, safe = 0;
  for (int i = 0; i < PROBE_N; i++) {
    uint64_t size, next_size;
    /* through safe_read: a block of a thread without an arena (its first
     * malloc near an address-space limit) is mmapped, and free unmapped it */
    inuse[i] = safe_read(x[i], &link[i], sizeof link[i]) == 0 &&
               safe_read(x[i] - 8, &size, sizeof size) == 0 &&
               safe_read(x[i] - 16 + (size & ~(uint64_t)7) + 8, &next_size, sizeof next_size) == 0 &&
               (next_size & 1);
  }
  for (int i = 1; i < PROBE_N; i++) {
    if (!inuse[i]) continue;
    plain += link[i] == x[i - 1] - 16;
    safe += (link[i] ^ (x[i] >> 12)) == x[i - 1] - 16;
  }
  if ((plain > 0) == (safe > 0)) return -1; /* neither, or contradicting votes */
  _hg_glibc.safe_linking = safe > 0;
  _hg_glibc.tcache_key = 0;
  return 0;
}

/* Chunk size of a tcache_perthread_struct of n bins: uint16 counts[n] and
 * entries[n] (request2size of 10 n bytes). 2.43 makes it either way —
 * malloc(size), or _int_malloc(request2size(size)) when a small-bin hit
 * sets the tcache up — so it may be 16 bytes larger. */
static uint64_t tcache_chunk_of(uint32_t n) { return (10u * n + 8 + 15) & ~(uint64_t)15; }

/* Block z heads the probing thread's tcache bin idx (probe_tcache). That thread's tcache_perthread_struct
 * is pointed to by libc's thread-local `tcache`, which lies in the static
 * TLS next to the thread pointer: the struct is the chunk, pointed to from
 * there, whose entries[0] (after n uint16 counts) is z and whose chunk size
 * fits n bins (tcache_chunk_of, or 16 bytes more), whose entries[idx] is z
 * (entries of the exact-size bins are never protected). Tried for the bin
 * counts glibc has had: 64, and 76 (2.43: 64 exact-size bins and 12
 * ranged ones). *tc: the struct's address. */

/* The 8 bytes before each of m[0..n) into sz[]: one process_vm_readv for
 * the lot, and one more past each unreadable element (the call stops at the
 * first element it cannot read; it never splits one). ok[i]: sz[i] is read. */
static void read_headers(const uint64_t *m, size_t n, uint64_t *sz, unsigned char *ok) {
  struct iovec local[64], remote[64];
  for (size_t i = 0; i < n;) {
    size_t k = n - i < 64 ? n - i : 64;
    for (size_t j = 0; j < k; j++) {
      local[j] = (struct iovec){&sz[i + j], 8};
      remote[j] = (struct iovec){(void *)(uintptr_t)(m[i + j] - 8), 8};
    }
    ssize_t got = process_vm_readv(getpid(), local, k, remote, k, 0);
    size_t done = got > 0 ? (size_t)got / 8 : 0;
    for (size_t j = 0; j < done; j++) ok[i + j] = 1;
    if (done < k) ok[i + done] = 0;
    i += done < k ? done + 1 : k;
  }
}

static int find_tcache(uintptr_t z, uint32_t idx, uint64_t *tc) {
  static const uint32_t nbins[] = {64, 76};
  uint64_t tp = (uint64_t)(uintptr_t)pthread_self(), found = 0;
  uint64_t buf[64], cand[64], sz[64];
  unsigned char ok[64];
  for (uint64_t a = (tp - (64u << 10)) & ~(uint64_t)511; a < tp + (4u << 10); a += sizeof buf) {
    if (safe_read(a, buf, sizeof buf)) continue;
    /* chunk pointers: 16-aligned user addresses (nothing maps below 64 KiB) */
    size_t nc = 0;
    for (size_t i = 0; i < 64; i++)
      if (!(buf[i] & 15) && buf[i] >= 0x10000 && buf[i] < (1ull << 47)) cand[nc++] = buf[i];
    read_headers(cand, nc, sz, ok);
    for (size_t i = 0; i < nc; i++) {
      uint64_t m = cand[i], head;
      if (!ok[i]) continue;
      for (size_t k = 0; k < sizeof nbins / sizeof nbins[0]; k++) {
        uint64_t want = tcache_chunk_of(nbins[k]), have = sz[i] & ~(uint64_t)7;
        if (have < want || have > want + 16 ||
            safe_read(m + 2u * nbins[k] + 8u * idx, &head, sizeof head) || head != z)
          continue;
        if (found && (found != want || *tc != m)) return -1; /* ambiguous */
        found = want;
        *tc = m;
        _hg_glibc.tcache_bins = nbins[k];
      }
    }
  }
  if (!found) return -1;
  _hg_glibc.tcache_chunk = found;
  return 0;
}

/* Steps 1 and 2 above with blocks of bin idx (requests of 24 + 16 idx
 * bytes); 0 when the link format and key are learnt, 1 when no tcache bin
 * of this thread took our block (then another size is tried: on 2.43 with
 * glibc.malloc.tcache_count=1 a bin was seen refusing frees while empty),
 * -1 on a contradiction (another thread or a signal handler between our
 * calls: tried again). */
HG_NO_ASAN static int probe_tcache(uint32_t idx) {
  void (*volatile release)(void *) = free;
  void *(*volatile get)(size_t) = malloc;
  size_t n = 24 + 16 * (size_t)idx;
  uintptr_t a = (uintptr_t)get(n), b = (uintptr_t)get(n), c = 0, z = a;
  uint64_t tc = 0, head, now;
  int rc = -1;
  if (!a || !b) {
    release((void *)a);
    release((void *)b);
    return -1;
  }
  release((void *)a);
  if (find_tcache(a, idx, &tc) != 0) {
    c = (uintptr_t)get(n); /* from the full bin: one slot free */
    z = b;
    b = 0;
    release((void *)z);
    if (find_tcache(z, idx, &tc) != 0) {
      release((void *)c);
      return 1;
    }
  }
  uint64_t slot = tc + 2u * _hg_glibc.tcache_bins + 8u * idx; /* entries[idx] */
  uintptr_t d = (uintptr_t)get(n);                             /* z, from the head */
  if (d != z || safe_read(slot, &head, sizeof head)) goto out;
  ((volatile uint64_t *)d)[1] = 0;
  release((void *)d);
  d = 0;
  if (safe_read(slot, &now, sizeof now) || now != z) goto out;
  uint64_t link = ((volatile uint64_t *)z)[0], key = ((volatile uint64_t *)z)[1];
  if (link != head && link != ((z >> 12) ^ head)) goto out;
  _hg_glibc.safe_linking = link != head;
  _hg_glibc.tcache_key = key;
  rc = key ? 0 : -1; /* a block in a tcache always has a key */
out:
  release((void *)d);
  release((void *)b);
  release((void *)c);
  return rc;
}

#define PROBE_SIZES 8 /* bins tried: requests of 24 … 136 bytes */

static int probe(void) {
  for (int attempt = 0; attempt < 4; attempt++) {
    int rc = 1;
    for (uint32_t idx = 0; idx < PROBE_SIZES && rc == 1; idx++) rc = probe_tcache(idx);
    if (rc == 0) return 0;
    if (rc == 1 && probe_fastbins() == 0) return 0;
  }
  return -1;
}

/* One block above the largest dynamic mmap threshold (32 MiB on LP64) is
 * mmapped: its header tells how this libc sizes mmapped chunks. Only its
 * header page is touched. libc's own malloc/free are called (not an
 * interposer's, e.g. the allocation-stack recorder's), so the probe never
 * shows up as one of the app's allocations. */
#define MMAP_PROBE ((33u << 20) - 4096u)

static int probe_mmap(void *(*libc_malloc)(size_t), void (*libc_free)(void *)) {
  void *(*volatile get)(size_t) = libc_malloc;
  uintptr_t p = (uintptr_t)get(MMAP_PROBE);
  _hg_glibc.mmap_shape = HG_MMAP_ANY;
  if (!p) return 0; /* no room: each chunk's own size will say */
  uint64_t hdr[2];
  int rc = 0;
  if (safe_read(p - 16, hdr, sizeof hdr) == 0 && (hdr[1] & 7) == 2) {
    uint64_t sz = hdr[1] & ~(uint64_t)7, usable = malloc_usable_size((void *)p);
    if ((p - 16) & 4095) rc = -1; /* not at the start of its mapping */
    else if ((sz & 4095) == 0 && usable == sz - 16) _hg_glibc.mmap_shape = HG_MMAP_WHOLE;
    else if (((sz + 16) & 4095) == 0 && usable == sz - 8) _hg_glibc.mmap_shape = HG_MMAP_LESS_HDR;
    else rc = -1;
  }
  libc_free((void *)p);
  return rc;
}

static void unsupported(struct hg_cap *c, const char *why, const char *detail) {
  c->heap_status = HG_EUNSUPPORTED;
  snprintf(c->heap_reason, sizeof c->heap_reason, "%s%s%s", why, detail ? ": " : "",
           detail ? detail : "");
}

int _hg_plat_heap_prepare(struct hg_cap *c) {
  struct hg_glibc *G = &_hg_glibc;
  memset(G, 0, sizeof *G);
  c->allocator = "unknown";
  void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  void *libc_malloc = libc ? dlsym(libc, "malloc") : NULL;
  void *libc_free = libc ? dlsym(libc, "free") : NULL;
  if (libc) dlclose(libc);
  void *used = dlsym(RTLD_DEFAULT, "malloc");
  if (!libc_malloc || !libc_free || !used) {
    unsupported(c, "unsupported allocator", "glibc malloc not found (static binary?)");
    return 0;
  }
  if (used == _hg_hook_malloc && _hg_hook_next_malloc) used = _hg_hook_next_malloc; /* our interposer forwards */
  if (used != libc_malloc) {
    Dl_info di;
    const char *who = dladdr(used, &di) && di.dli_fname ? di.dli_fname : "another library";
    unsupported(c, "unsupported allocator: malloc is not glibc's, it comes from", who);
    return 0;
  }
  c->allocator = "glibc-ptmalloc2";
  uint32_t libc_image = HG_NO_OWNER;
  for (size_t i = 0; i < _hg_vec_len(&c->images); i++) {
    const struct hg_cimage *im = _hg_vec_at(&c->images, i);
    uint64_t m = (uint64_t)(uintptr_t)libc_malloc;
    if (m >= im->load_addr && m < im->load_addr + im->size) libc_image = (uint32_t)i;
  }
  if (libc_image == HG_NO_OWNER) {
    unsupported(c, "unsupported allocator layout", "libc image not found");
    return 0;
  }
  if (probe() != 0) {
    unsupported(c, "unsupported allocator layout", "tcache/fastbin link format not recognised");
    return 0;
  }
  if (probe_mmap((void *(*)(size_t))libc_malloc, (void (*)(void *))libc_free) != 0) {
    unsupported(c, "unsupported allocator layout", "mmapped chunk header not recognised");
    return 0;
  }
  if (find_main_arena(c, libc_image) != 0) {
    unsupported(c, "unsupported allocator layout", "main_arena not found in libc data");
    return 0;
  }
  G->heap_max = 64ull << 20;
  G->ok = 1;
  return 0;
}

int _hg_plat_heap_busy(struct hg_cap *c) {
  struct hg_glibc *G = &_hg_glibc;
  if (!G->ok || c->heap_status) return 0;
  uint64_t a = G->main_arena;
  for (int n = 0; n < 4096; n++) {
    uint32_t mutex;
    uint64_t next;
    if (safe_read(a, &mutex, sizeof mutex) || safe_read(a + G->off_next, &next, sizeof next))
      return 0; /* the walk will report the damage */
    if (mutex && !_hg_linux_arena_held(a)) return 1; /* ours: arena_lock.c */
    if (next == G->main_arena || !next) return 0;
    a = next;
  }
  return 0;
}
