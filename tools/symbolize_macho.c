/*
 * symbolize_macho.c — Mach-O frames (see symbolize_macho.h).
 *
 * Offsets: the Darwin recorder (capture/darwin/alloc_logger.c) stores return
 * addresses (pointer-authentication bits stripped), and alloc_write.c turns
 * each into image index + (pc - load_addr), where load_addr is the image's
 * mach_header in memory (capture/darwin/images.c: _dyld_get_image_header).
 * dyld maps the header at the __TEXT segment's vmaddr + slide, so the
 * unslid address of a frame is  __TEXT.vmaddr (of the file on disk) + offset
 * and neither the slide nor the snapshot's load address is needed. The
 * symbol looked up is the one containing that address - 1 (the call
 * instruction; a return address may already be the next function's first
 * byte), and "+0x…" counts from the symbol to the return address.
 *
 * Files: the image is the snapshot's path, else DIR/PATH or DIR/BASENAME for
 * each --image-dir; its dSYM is any --dsym file, bundle or directory entry
 * whose LC_UUID is the image's, else PATH.dSYM next to the image. A file (or
 * fat slice) is used only when its LC_UUID equals the snapshot's: a
 * different build gives wrong names, so on a mismatch the frames print as
 * image + offset and stderr says why, once per image.
 *
 * Names: the defined symbols of the image's symbol table (the dSYM's when
 * the image itself is not found), sorted once per image; for an address the
 * nearest symbol at or below it in the same section. Mach-O's leading '_'
 * is dropped and C++ names are demangled (__cxa_demangle); Swift names stay
 * mangled. file:line needs a dSYM: all frames of an image are sent to one
 * llvm-symbolizer process the first time one of them is printed.
 */
#include "tools/symbolize_macho.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machoparse/macho.h"
#include "tools/cli_util.h"

struct mfile { /* one mapped file and the slice used */
  char *path;
  void *map;
  size_t len;
  int fat;
  struct macho_image *img;
};

struct msym {
  uint64_t addr;
  uint32_t section, order;
  int ext;
  const char *raw;
  char *pretty; /* made when first printed */
};

struct mimg {
  int tried, macho;
  struct mfile bin, dsym;
  const struct macho_image *src; /* the symbol table used: bin's, else dsym's */
  uint64_t text;                 /* __TEXT vmaddr */
  struct msym *syms;
  size_t nsyms;
  int lines_tried;
  uint64_t *line_addr;
  struct sym_line *lines;
  size_t nlines;
};

struct dsym_ent {
  char *path;
  char arch[16];
  int fat;
  uint8_t uuid[16];
};

struct sym_macho {
  const struct hg_graph *g;
  const struct sym_config *cfg;
  struct mimg *imgs;
  int indexed;
  struct dsym_ent *dsyms;
  size_t ndsyms, dcap;
  int llvm_warned;
};

/* ---- files ---- */

static void mfile_close(struct mfile *f) {
  if (f->map) munmap(f->map, f->len);
  free(f->img);
  free(f->path);
  memset(f, 0, sizeof *f);
}

/* Maps a regular file; 0 or -1. */
static int map_file(const char *path, void **map, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 4) {
    close(fd);
    return -1;
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  *map = m;
  *len = (size_t)st.st_size;
  return 0;
}

static int macho_magic(const uint8_t *p) {
  static const uint8_t m[][4] = {{0xcf, 0xfa, 0xed, 0xfe}, {0xce, 0xfa, 0xed, 0xfe},
                                 {0xca, 0xfe, 0xba, 0xbe}, {0xca, 0xfe, 0xba, 0xbf}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (!memcmp(p, m[i], 4)) return 1;
  return 0;
}

static void hex16(const uint8_t *u, char *out) {
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", u[i]);
}

/* Calls fn for each slice of a mapped Mach-O file that machoparse opens
 * (img then describes it); stops when fn returns nonzero and returns that. */
static int each_slice(const void *map, size_t len, struct macho_image *img,
                      int (*fn)(struct macho_image *img, const char *arch, int fat, void *ctx), void *ctx) {
  const char *names[16];
  struct macho_error err;
  int n = macho_fat_archs(map, len, names, 16, &err);
  if (n <= 0) return macho_open_file(img, map, len, NULL) == 0 ? fn(img, img->arch, 0, ctx) : 0;
  for (int i = 0; i < n && i < 16; i++) {
    if (!names[i] || macho_open_file(img, map, len, names[i])) continue;
    int r = fn(img, names[i], 1, ctx);
    if (r) return r;
  }
  return 0;
}

struct match {
  const uint8_t *uuid; /* wanted, NULL = any */
  int seen;            /* a slice had another LC_UUID (or none) */
  int other_set;       /* other[] holds the first such LC_UUID */
  uint8_t other[16];
  const char *arch;
  int fat;
};

static int match_uuid(struct macho_image *img, const char *arch, int fat, void *ctx) {
  struct match *m = ctx;
  if (m->uuid && (!img->has_uuid || memcmp(img->uuid, m->uuid, 16))) {
    if (img->has_uuid && !m->other_set) {
      memcpy(m->other, img->uuid, 16);
      m->other_set = 1;
    }
    m->seen = 1;
    return 0;
  }
  m->arch = arch;
  m->fat = fat;
  return 1;
}

/* Opens path as the Mach-O slice whose LC_UUID is uuid (any when NULL).
 * 1: opened into *f. 0: no such slice (*why says so when the file is a
 * Mach-O file of another build). -1: no Mach-O file there. */
static int open_slice(const char *path, const uint8_t *uuid, struct mfile *f, char *why, size_t wl) {
  void *map;
  size_t len;
  if (map_file(path, &map, &len)) return -1;
  if (!macho_magic(map)) {
    munmap(map, len);
    return -1;
  }
  struct macho_image *img = calloc(1, sizeof *img);
  struct match m = {uuid, 0, 0, {0}, NULL, 0};
  if (img && each_slice(map, len, img, match_uuid, &m)) {
    f->path = strdup(path);
    f->map = map;
    f->len = len;
    f->fat = m.fat;
    f->img = img;
    if (f->path) return 1;
    mfile_close(f);
    return 0;
  }
  if (m.seen && uuid && why && !*why) {
    char a[48] = "no LC_UUID", b[33];
    if (m.other_set) {
      memcpy(a, "LC_UUID ", 8);
      hex16(m.other, a + 8);
    }
    hex16(uuid, b);
    snprintf(why, wl, "%s has %s, the snapshot's image has LC_UUID %s", path, a, b);
  } else if (!m.seen && img && why && !*why) {
    snprintf(why, wl, "%s: %s", path, img->err.code ? img->err.message : "no 64-bit slice machoparse reads");
  }
  free(img);
  munmap(map, len);
  return 0;
}

/* ---- dSYM index: every --dsym file's slices by LC_UUID ---- */

static int add_dsym_slice(struct macho_image *img, const char *arch, int fat, void *ctx) {
  struct sym_macho *m = ((void **)ctx)[0];
  const char *path = ((void **)ctx)[1];
  if (!img->has_uuid) return 0;
  if (m->ndsyms == m->dcap) {
    size_t cap = m->dcap ? m->dcap * 2 : 16;
    struct dsym_ent *d = realloc(m->dsyms, cap * sizeof *d);
    if (!d) return 1;
    m->dsyms = d;
    m->dcap = cap;
  }
  struct dsym_ent *e = &m->dsyms[m->ndsyms];
  e->path = strdup(path);
  if (!e->path) return 1;
  snprintf(e->arch, sizeof e->arch, "%s", arch ? arch : "");
  e->fat = fat;
  memcpy(e->uuid, img->uuid, 16);
  m->ndsyms++;
  return 0;
}

static void index_file(struct sym_macho *m, const char *path) {
  void *map;
  size_t len;
  if (map_file(path, &map, &len)) return;
  struct macho_image *img = macho_magic(map) ? malloc(sizeof *img) : NULL;
  void *ctx[2] = {m, (void *)path};
  if (img) each_slice(map, len, img, add_dsym_slice, ctx);
  free(img);
  munmap(map, len);
}

static int is_dir(const char *p) {
  struct stat st;
  return !stat(p, &st) && S_ISDIR(st.st_mode);
}

/* Every regular file of DIR (a bundle's Contents/Resources/DWARF). */
static void index_dir_files(struct sym_macho *m, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p) index_file(m, p);
  closedir(d);
}

/* A .dSYM bundle: its DWARF files. 0 when path is no bundle. */
static int index_bundle(struct sym_macho *m, const char *path) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s/Contents/Resources/DWARF", path) >= (int)sizeof p || !is_dir(p)) return 0;
  index_dir_files(m, p);
  return 1;
}

static void index_dsyms(struct sym_macho *m) {
  m->indexed = 1;
  for (int i = 0; i < m->cfg->dsym.n; i++) {
    const char *p = m->cfg->dsym.v[i];
    if (!is_dir(p)) {
      index_file(m, p);
      continue;
    }
    if (index_bundle(m, p)) continue;
    DIR *d = opendir(p); /* a directory of bundles */
    if (!d) continue;
    struct dirent *e;
    char q[4096];
    while ((e = readdir(d))) {
      size_t n = strlen(e->d_name);
      if (n > 5 && !strcmp(e->d_name + n - 5, ".dSYM") &&
          snprintf(q, sizeof q, "%s/%s", p, e->d_name) < (int)sizeof q)
        index_bundle(m, q);
    }
    closedir(d);
  }
}

/* ---- symbols ---- */

static int by_addr(const void *a, const void *b) {
  const struct msym *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  if (x->ext != y->ext) return x->ext ? -1 : 1; /* an alias: the external name first */
  return x->order < y->order ? -1 : x->order > y->order;
}

static void load_symbols(struct mimg *st, const char *image) {
  struct macho_symbol_iter it;
  struct macho_symbol s;
  size_t cap = 0;
  int rc;
  macho_symbols_begin(&it, st->src);
  while ((rc = macho_symbols_next(&it, &s)) > 0) {
    if (!*s.name) continue;
    if (st->nsyms == cap) {
      cap = cap ? cap * 2 : 256;
      struct msym *y = realloc(st->syms, cap * sizeof *y);
      if (!y) {
        rc = HG_ENOMEM;
        break;
      }
      st->syms = y;
    }
    st->syms[st->nsyms++] = (struct msym){s.addr, s.section, (uint32_t)st->nsyms, s.type & 1, s.name, NULL};
  }
  if (rc < 0) { /* a damaged table: no names from it at all */
    fprintf(stderr, "heapgraph: %s: symbol table: %s; its frames print as image + offset\n", image,
            rc == HG_ENOMEM ? "out of memory" : it.err.message);
    free(st->syms);
    st->syms = NULL;
    st->nsyms = 0;
    return;
  }
  if (st->nsyms) qsort(st->syms, st->nsyms, sizeof *st->syms, by_addr);
}

static const char *pretty(struct msym *y) {
  if (y->pretty) return y->pretty;
  const char *n = y->raw[0] == '_' ? y->raw + 1 : y->raw;
  char *d = n[0] == '_' && n[1] == 'Z' ? cli_demangle_type(n) : NULL;
  y->pretty = d ? d : strdup(n);
  return y->pretty ? y->pretty : n;
}

/* The symbol whose section holds q, nearest at or below it. */
static struct msym *symbol_at(struct mimg *st, uint64_t q) {
  size_t lo = 0, hi = st->nsyms;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (st->syms[mid].addr <= q) lo = mid + 1;
    else hi = mid;
  }
  if (!lo) return NULL;
  size_t k = lo - 1;
  while (k && st->syms[k - 1].addr == st->syms[k].addr) k--;
  struct macho_section sec;
  if (macho_section_get(st->src, st->syms[k].section, &sec) || q < sec.addr || q - sec.addr >= sec.size ||
      st->syms[k].addr < sec.addr) /* a marker outside its section (__mh_execute_header) */
    return NULL;
  return &st->syms[k];
}

/* ---- opening an image ---- */

static uint64_t text_vmaddr(const struct macho_image *img) {
  for (uint32_t i = 0; i < img->segment_count; i++)
    if (!strcmp(img->segments[i].name, "__TEXT")) return img->segments[i].vmaddr;
  return img->base_vmaddr;
}

/* The image file: 1 found (st->bin), 0 a Mach-O image not found here,
 * -1 not a Mach-O image (the ELF path's). */
static int find_binary(struct sym_macho *m, const struct hg_image *im, struct mimg *st, char *why, size_t wl) {
  const uint8_t *uuid = im->id_len == 16 ? im->id : NULL;
  int r = open_slice(im->path, uuid, &st->bin, why, wl);
  if (r == 1) return 1;
  struct stat sb;
  /* no file there: Mach-O when the id is 16 bytes (an LC_UUID) */
  if (r < 0 && (!stat(im->path, &sb) || !uuid)) return -1;
  const char *base = strrchr(im->path, '/');
  base = base ? base + 1 : im->path;
  char p[4096];
  for (int i = 0; i < m->cfg->image_dir.n; i++) {
    const char *d = m->cfg->image_dir.v[i];
    if (im->path[0] == '/' && snprintf(p, sizeof p, "%s%s", d, im->path) < (int)sizeof p &&
        open_slice(p, uuid, &st->bin, why, wl) == 1)
      return 1;
    if (*base && snprintf(p, sizeof p, "%s/%s", d, base) < (int)sizeof p && open_slice(p, uuid, &st->bin, why, wl) == 1)
      return 1;
  }
  return 0;
}

static void find_dsym(struct sym_macho *m, const struct hg_image *im, struct mimg *st) {
  if (im->id_len != 16) return; /* a dSYM is matched by LC_UUID only */
  if (!m->indexed) index_dsyms(m);
  for (size_t i = 0; i < m->ndsyms; i++)
    if (!memcmp(m->dsyms[i].uuid, im->id, 16) && open_slice(m->dsyms[i].path, im->id, &st->dsym, NULL, 0) == 1)
      return;
  /* Xcode's layout: Foo.app.dSYM or libx.dylib.dSYM next to the product */
  const char *paths[2] = {st->bin.path, im->path};
  char b[4096], f[4096];
  for (int k = 0; k < 2; k++) {
    if (!paths[k]) continue;
    const char *base = strrchr(paths[k], '/');
    base = base ? base + 1 : paths[k];
    if (snprintf(b, sizeof b, "%s.dSYM/Contents/Resources/DWARF/%s", paths[k], base) < (int)sizeof b &&
        open_slice(b, im->id, &st->dsym, NULL, 0) == 1)
      return;
    /* an app bundle's executable: Foo.app/Foo -> Foo.app.dSYM */
    const char *slash = strrchr(paths[k], '/');
    if (slash && snprintf(f, sizeof f, "%.*s.dSYM/Contents/Resources/DWARF/%s", (int)(slash - paths[k]),
                          paths[k], base) < (int)sizeof f &&
        open_slice(f, im->id, &st->dsym, NULL, 0) == 1)
      return;
  }
}

static struct mimg *image(struct sym_macho *m, uint32_t i) {
  struct mimg *st = &m->imgs[i];
  if (st->tried) return st->macho ? st : NULL;
  st->tried = 1;
  const struct hg_image *im = &m->g->images[i];
  if (!im->path) return NULL;
  char why[512] = "";
  if (find_binary(m, im, st, why, sizeof why) < 0) return NULL;
  st->macho = 1;
  find_dsym(m, im, st);
  st->src = st->bin.img ? st->bin.img : st->dsym.img;
  if (!st->src) {
    if (*why) fprintf(stderr, "heapgraph: %s: %s; its frames print as image + offset\n", im->path, why);
    return st;
  }
  st->text = text_vmaddr(st->src);
  load_symbols(st, im->path);
  return st;
}

/* ---- file:line ---- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Every frame of image i in the snapshot, through one llvm-symbolizer run. */
static void load_lines(struct sym_macho *m, uint32_t i, struct mimg *st) {
  st->lines_tried = 1;
  const struct hg_graph *g = m->g;
  size_t n = 0, cap = 0;
  uint64_t *a = NULL;
  for (uint32_t s = 0; s < g->stack_count; s++)
    for (uint32_t k = 0; k < g->stacks[s].frame_count; k++) {
      const struct hg_stack_frame *f = &g->stacks[s].frames[k];
      if (f->image != i) continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        uint64_t *b = realloc(a, cap * sizeof *b);
        if (!b) {
          free(a);
          return;
        }
        a = b;
      }
      uint64_t v = st->text + f->offset;
      a[n++] = v ? v - 1 : 0;
    }
  if (!n) {
    free(a);
    return;
  }
  qsort(a, n, sizeof *a, cmp_u64);
  size_t u = 1;
  for (size_t k = 1; k < n; k++)
    if (a[k] != a[u - 1]) a[u++] = a[k];
  struct sym_line *l = calloc(u, sizeof *l);
  char why[512] = "";
  if (!l || sym_llvm_lines(st->dsym.path, st->dsym.fat ? st->dsym.img->arch : NULL, a, u, l, why, sizeof why)) {
    if (l && !m->llvm_warned)
      fprintf(stderr, "heapgraph: no file:line for Mach-O frames (%s)\n", why);
    m->llvm_warned = 1;
    free(l);
    free(a);
    return;
  }
  st->line_addr = a;
  st->lines = l;
  st->nlines = u;
}

static const struct sym_line *line_at(const struct mimg *st, uint64_t q) {
  size_t lo = 0, hi = st->nlines;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (st->line_addr[mid] < q) lo = mid + 1;
    else hi = mid;
  }
  return lo < st->nlines && st->line_addr[lo] == q ? &st->lines[lo] : NULL;
}

/* ---- API ---- */

struct sym_macho *symm_new(const struct hg_graph *g, const struct sym_config *cfg) {
  struct sym_macho *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->g = g;
  m->cfg = cfg;
  m->imgs = calloc((size_t)g->image_count + 1, sizeof *m->imgs);
  if (!m->imgs) {
    free(m);
    return NULL;
  }
  return m;
}

void symm_free(struct sym_macho *m) {
  if (!m) return;
  for (uint32_t i = 0; i < m->g->image_count; i++) {
    struct mimg *st = &m->imgs[i];
    for (size_t k = 0; k < st->nsyms; k++) free(st->syms[k].pretty);
    free(st->syms);
    for (size_t k = 0; k < st->nlines; k++) {
      free(st->lines[k].function);
      free(st->lines[k].file);
    }
    free(st->lines);
    free(st->line_addr);
    mfile_close(&st->bin);
    mfile_close(&st->dsym);
  }
  for (size_t k = 0; k < m->ndsyms; k++) free(m->dsyms[k].path);
  free(m->dsyms);
  free(m->imgs);
  free(m);
}

int symm_resolve(struct sym_macho *m, const struct hg_stack_frame *f, struct sym_frame *out) {
  if (f->image == HG_NO_OWNER || f->image >= m->g->image_count) return 0;
  struct mimg *st = image(m, f->image);
  if (!st) return 0;
  if (!st->src) return 1;
  uint64_t a = st->text + f->offset, q = a ? a - 1 : 0;
  struct msym *y = symbol_at(st, q);
  if (y) {
    out->function = pretty(y);
    out->function_off = a - y->addr;
  }
  if (st->dsym.img && !st->lines_tried) load_lines(m, f->image, st);
  const struct sym_line *l = st->nlines ? line_at(st, q) : NULL;
  if (l) {
    if (!out->function && l->function) out->function = l->function;
    if (l->file) {
      out->file = l->file;
      out->line = l->line;
    }
  }
  return 1;
}
