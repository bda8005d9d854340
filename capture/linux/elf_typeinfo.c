/*
 * elf_typeinfo.c — Linux discovery of the process's C++ type_info objects,
 * feeding the portable set of cxxabi/ (_hg_plat_cxx_images, under
 * _hg_cxx_discover: see cxxabi.h).
 *
 * For every loaded image (dl_iterate_phdr, one pass under the loader lock so
 * no image goes away while we read it) it declares the image's readable
 * PT_LOAD ranges and its read-only/RELRO ranges, then finds type_infos:
 *
 *   1. symbolic: the dynamic section in memory gives DT_SYMTAB/DT_STRTAB
 *      (symbol count from DT_GNU_HASH or DT_HASH) and DT_RELA/DT_JMPREL; a
 *      relocation of type ABS64 against one of the three class_type_info
 *      vtables (_ZTVN10__cxxabiv1{17__class,20__si_class,21__vmi_class}_
 *      type_infoE) with addend 16 sits at the first word of a type_info.
 *   2. defining image (libstdc++.so, or a program linked with
 *      -static-libstdc++ that exports them): the vtables' addresses come
 *      from .dynsym; type_infos are the words equal to vtable+16 in the
 *      image's read-only/RELRO data (RELATIVE/RELR-relocated or absolute).
 *   3. structural (static libstdc++, vtables not exported, maybe stripped):
 *      the vtables identify themselves — the type_info of
 *      __cxxabiv1::__class_type_info has the name "N10__cxxabiv117__class_
 *      type_infoE" and that vtable holds {0, &type_info} before its +16. So
 *      we find the name string, the type_info pointing at it, the vtable
 *      pointing at that, then scan as in 2. No file on disk is read.
 *
 * Before the freeze only (takes the loader lock). Never calls malloc; every
 * read is checked against the ranges of the image being read.
 */
#include <elf.h>
#include <link.h>
#include <string.h>

#include "capture/platform.h"
#include "cxxabi/cxxabi.h"
#include "heapgraph.h"

#if defined(__x86_64__)
#define ABS64_RELOC R_X86_64_64
#elif defined(__aarch64__)
#define ABS64_RELOC R_AARCH64_ABS64
#else
#error "elf_typeinfo.c: unsupported architecture (need the ABS64 relocation type)"
#endif

#if defined(__clang__) || defined(__GNUC__)
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

#define NKINDS 3
static const char *const vt_sym[NKINDS] = {
    "_ZTVN10__cxxabiv117__class_type_infoE",
    "_ZTVN10__cxxabiv120__si_class_type_infoE",
    "_ZTVN10__cxxabiv121__vmi_class_type_infoE",
};

#define MAX_IMG_RANGES 32

/* One image being looked at. */
struct img {
  struct hg_cxx_set *s;
  struct hg_cxx_discovery *d;
  uint64_t bias;
  struct hg_cxx_range rd[MAX_IMG_RANGES]; /* readable PT_LOADs      */
  uint32_t nrd;
  struct hg_cxx_range ro[MAX_IMG_RANGES]; /* read-only PT_LOADs + RELRO */
  uint32_t nro;
  struct hg_cxx_range data[MAX_IMG_RANGES]; /* what the word scans read: ro[] */
  uint32_t ndata;                           /* without code when rodata is apart */
  uint64_t vt16[8];                       /* known vtable+16 values  */
  int vt_kind[8];                         /* their kind, -1 = structural */
  uint32_t nvt;
  uint64_t sym_hits[NKINDS];              /* symbolic relocs found per kind */
  int rc;
};

static int in_img(const struct img *m, uint64_t a, uint64_t len) {
  if (a + len < a) return 0;
  for (uint32_t i = 0; i < m->nrd; i++)
    if (a >= m->rd[i].lo && a + len <= m->rd[i].hi) return 1;
  return 0;
}

NO_ASAN static int rd64(const struct img *m, uint64_t a, uint64_t *out) {
  if (!in_img(m, a, 8)) return -1;
  *out = *(const volatile uint64_t *)(uintptr_t)a;
  return 0;
}

NO_ASAN static int rd32(const struct img *m, uint64_t a, uint32_t *out) {
  if (!in_img(m, a, 4)) return -1;
  *out = *(const volatile uint32_t *)(uintptr_t)a;
  return 0;
}

/* Reader handed to the set when it copies a name (8-aligned reads). */
static int set_read(void *ctx, uint64_t a, uint64_t *out) { return rd64(ctx, a, out); }

/* Compares the NUL-terminated string at address a (inside the image) with s. */
NO_ASAN static int str_equals(const struct img *m, uint64_t a, const char *s) {
  size_t n = strlen(s) + 1;
  if (!in_img(m, a, n)) return 0;
  const volatile char *p = (const volatile char *)(uintptr_t)a;
  for (size_t i = 0; i < n; i++)
    if (p[i] != s[i]) return 0;
  return 1;
}

static void add_candidate(struct img *m, uint64_t ti) {
  uint64_t name;
  m->d->candidates++;
  if (rd64(m, ti + 8, &name) != 0) return;
  int rc = _hg_cxx_set_add(m->s, ti, name, set_read, m);
  if (rc < 0 && rc != HG_EINVAL && !m->rc) m->rc = rc;
}

static void add_vt16(struct img *m, uint64_t v, int kind) {
  for (uint32_t i = 0; i < m->nvt; i++)
    if (m->vt16[i] == v) return;
  if (m->nvt < sizeof m->vt16 / sizeof m->vt16[0]) {
    m->vt_kind[m->nvt] = kind;
    m->vt16[m->nvt++] = v;
  }
}

/* ---- dynamic section ---- */

struct dyn {
  uint64_t symtab, strtab, strsz, syment, rela, relasz, relaent, jmprel, pltrelsz, pltrel;
  uint64_t hash, gnu_hash;
};

/* d_ptr values are absolute once glibc has adjusted them, relative to the
 * load bias where it did not (vDSO, read-only dynamic sections). */
static uint64_t fix_ptr(const struct img *m, uint64_t v) {
  if (!v) return 0;
  if (in_img(m, v, 1)) return v;
  if (in_img(m, v + m->bias, 1)) return v + m->bias;
  return 0;
}

static int read_dynamic(const struct img *m, uint64_t dyn, uint64_t size, struct dyn *o) {
  memset(o, 0, sizeof *o);
  for (uint64_t off = 0; off + 16 <= size && off < (1u << 20); off += 16) {
    uint64_t tag, val;
    if (rd64(m, dyn + off, &tag) || rd64(m, dyn + off + 8, &val)) return -1;
    switch (tag) {
    case DT_NULL: off = size; break;
    case DT_SYMTAB: o->symtab = fix_ptr(m, val); break;
    case DT_STRTAB: o->strtab = fix_ptr(m, val); break;
    case DT_STRSZ: o->strsz = val; break;
    case DT_SYMENT: o->syment = val; break;
    case DT_RELA: o->rela = fix_ptr(m, val); break;
    case DT_RELASZ: o->relasz = val; break;
    case DT_RELAENT: o->relaent = val; break;
    case DT_JMPREL: o->jmprel = fix_ptr(m, val); break;
    case DT_PLTRELSZ: o->pltrelsz = val; break;
    case DT_PLTREL: o->pltrel = val; break;
    case DT_HASH: o->hash = fix_ptr(m, val); break;
    case DT_GNU_HASH: o->gnu_hash = fix_ptr(m, val); break;
    default: break;
    }
  }
  return 0;
}

/* Number of .dynsym entries (0 when unknown). */
static uint64_t symbol_count(const struct img *m, const struct dyn *y) {
  uint32_t a, b;
  if (y->hash && !rd32(m, y->hash + 4, &a)) return a; /* nchain */
  if (!y->gnu_hash) return 0;
  uint32_t nbuckets, symoff, bloom;
  if (rd32(m, y->gnu_hash, &nbuckets) || rd32(m, y->gnu_hash + 4, &symoff) ||
      rd32(m, y->gnu_hash + 8, &bloom) || nbuckets > (1u << 24) || bloom > (1u << 24))
    return 0;
  uint64_t buckets = y->gnu_hash + 16 + (uint64_t)bloom * 8, chain = buckets + 4ull * nbuckets;
  uint32_t max = 0;
  for (uint32_t i = 0; i < nbuckets; i++) {
    if (rd32(m, buckets + 4ull * i, &b)) return 0;
    if (b > max) max = b;
  }
  if (max < symoff) return symoff;
  for (uint32_t guard = 0; guard < (1u << 24); guard++, max++) {
    if (rd32(m, chain + 4ull * (max - symoff), &a)) return 0;
    if (a & 1) return (uint64_t)max + 1;
  }
  return 0;
}

/* Finds the three vtable symbols in .dynsym: sym_index[k] (0 = absent);
 * defined ones give their vtable+16. Returns how many were found. */
static int find_symbols(struct img *m, const struct dyn *y, uint64_t nsyms, uint32_t *sym_index) {
  int found = 0;
  if (!y->symtab || !y->strtab || (y->syment && y->syment != sizeof(ElfW(Sym)))) return 0;
  if (!nsyms && y->strtab > y->symtab) nsyms = (y->strtab - y->symtab) / sizeof(ElfW(Sym));
  if (nsyms > (1u << 24)) nsyms = 1u << 24;
  for (uint64_t i = 1; i < nsyms; i++) {
    uint64_t e = y->symtab + i * sizeof(ElfW(Sym));
    uint32_t st_name;
    uint64_t w1, st_value;
    if (rd32(m, e, &st_name) || rd64(m, e + 0, &w1) || rd64(m, e + 8, &st_value)) break;
    if (st_name >= y->strsz) continue;
    uint64_t nm = y->strtab + st_name;
    uint64_t first;
    if (rd64(m, nm & ~7ull, &first)) continue;
    if ((char)(first >> (8 * (nm & 7))) != '_') continue; /* quick reject */
    for (int k = 0; k < NKINDS; k++) {
      if (sym_index[k] || !str_equals(m, nm, vt_sym[k])) continue;
      sym_index[k] = (uint32_t)i;
      found++;
      uint16_t shndx = (uint16_t)(w1 >> 48); /* st_name:32 info:8 other:8 shndx:16 */
      if (shndx != SHN_UNDEF && st_value) add_vt16(m, m->bias + st_value + 16, k);
    }
    if (found == NKINDS) break;
  }
  return found;
}

static void scan_relocs(struct img *m, uint64_t tab, uint64_t size, uint64_t ent,
                        const uint32_t *sym_index) {
  if (!tab || !size) return;
  if (!ent) ent = sizeof(ElfW(Rela));
  if (ent != sizeof(ElfW(Rela)) || !in_img(m, tab, size)) return;
  for (uint64_t off = 0; off + ent <= size; off += ent) {
    uint64_t r_offset, r_info, r_addend;
    if (rd64(m, tab + off, &r_offset) || rd64(m, tab + off + 8, &r_info) ||
        rd64(m, tab + off + 16, &r_addend))
      return;
    if (ELF64_R_TYPE(r_info) != ABS64_RELOC || r_addend != 16) continue;
    uint32_t sym = (uint32_t)ELF64_R_SYM(r_info);
    if (!sym) continue;
    for (int k = 0; k < NKINDS; k++)
      if (sym == sym_index[k]) {
        m->sym_hits[k]++;
        add_candidate(m, m->bias + r_offset);
      }
  }
}

/* ---- word scans over the image's read-only data ---- */

/* Every word equal to one of vt16[] starts a type_info. A vtable that the
 * image's own relocations reference symbolically is skipped: the linker
 * binds all references to one symbol alike, so none of them is RELATIVE. */
NO_ASAN static void scan_typeinfos(struct img *m) {
  uint32_t keep = 0;
  for (uint32_t i = 0; i < m->nvt; i++)
    if (m->vt_kind[i] < 0 || !m->sym_hits[m->vt_kind[i]]) {
      m->vt_kind[keep] = m->vt_kind[i];
      m->vt16[keep++] = m->vt16[i];
    }
  m->nvt = keep;
  if (!m->nvt) return;
  m->d->images_scanned++;
  for (uint32_t r = 0; r < m->ndata; r++) {
    uint64_t lo = (m->data[r].lo + 7) & ~7ull, hi = m->data[r].hi & ~7ull;
    for (uint64_t a = lo; a + 16 <= hi; a += 8) {
      uint64_t w = *(const uint64_t *)(uintptr_t)a;
      for (uint32_t k = 0; k < m->nvt; k++)
        if (w == m->vt16[k]) add_candidate(m, a);
    }
  }
}

/* Calls fn(m, addr) for every aligned word of the read-only data equal to v. */
NO_ASAN static void find_word(struct img *m, uint64_t v, void (*fn)(struct img *, uint64_t, uint64_t),
                              uint64_t arg) {
  for (uint32_t r = 0; r < m->ndata; r++) {
    uint64_t lo = (m->data[r].lo + 7) & ~7ull, hi = m->data[r].hi & ~7ull;
    for (uint64_t a = lo; a + 8 <= hi; a += 8)
      if (*(const uint64_t *)(uintptr_t)a == v) fn(m, a, arg);
  }
}

/* addr holds &type_info(__cxxabiv1::__X_type_info): a vtable of that class
 * is {0, &type_info, functions…}: its +16 is addr + 8. */
NO_ASAN static void on_ti_ref(struct img *m, uint64_t addr, uint64_t unused) {
  (void)unused;
  uint64_t prev;
  if (addr < 8 || rd64(m, addr - 8, &prev) || prev != 0) return;
  uint64_t v = addr + 8, fn;
  if (rd64(m, v, &fn) || !fn) return; /* first virtual function */
  add_vt16(m, v, -1);
}

/* addr holds a pointer to the name string: addr - 8 is the type_info. */
static void on_name_ref(struct img *m, uint64_t addr, uint64_t unused) {
  (void)unused;
  find_word(m, addr - 8, on_ti_ref, 0);
}

/* Finds the NUL-terminated string s in the image's read-only data (it need
 * not start after a NUL: non-string data may precede it) and follows every
 * word pointing at it. Word-at-a-time: only words holding s[0] are looked
 * at byte by byte (this runs over every image without C++ symbols). */
NO_ASAN static void find_name(struct img *m, const char *s) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const uint64_t pat = ones * (uint8_t)s[0];
  size_t n = strlen(s) + 1;
  for (uint32_t r = 0; r < m->ndata; r++) {
    uint64_t lo = (m->data[r].lo + 7) & ~7ull, hi = m->data[r].hi;
    for (uint64_t a = lo; a + 8 <= hi; a += 8) {
      uint64_t x = *(const uint64_t *)(uintptr_t)a ^ pat;
      if (!((x - ones) & ~x & highs)) continue; /* no byte equal to s[0] */
      for (uint64_t i = a; i < a + 8 && i + n <= hi; i++) {
        const char *p = (const char *)(uintptr_t)i;
        size_t k = 0;
        while (k < n && p[k] == s[k]) k++;
        if (k == n) find_word(m, i, on_name_ref, 0);
      }
    }
  }
}

static void structural(struct img *m) {
  static const char *const names[NKINDS] = {
      "N10__cxxabiv117__class_type_infoE",
      "N10__cxxabiv120__si_class_type_infoE",
      "N10__cxxabiv121__vmi_class_type_infoE",
  };
  for (int k = 0; k < NKINDS; k++) find_name(m, names[k]);
  if (m->nvt) m->d->images_structural++;
}

/* ---- per image ---- */

static void add_range(struct hg_cxx_range *r, uint32_t *n, uint64_t lo, uint64_t hi) {
  if (hi > lo && *n < MAX_IMG_RANGES) {
    r[*n].lo = lo;
    r[*n].hi = hi;
    (*n)++;
  }
}

struct walk {
  struct hg_cxx_set *s;
  struct hg_cxx_discovery *d;
  int rc;
};

static int one_image(struct dl_phdr_info *info, size_t size, void *arg) {
  struct walk *w = arg;
  (void)size;
  struct img m; /* ~2 KB of ranges: on the stack, so discovery is reentrant */
  memset(&m, 0, sizeof m);
  m.s = w->s;
  m.d = w->d;
  m.bias = info->dlpi_addr;
  uint64_t dyn = 0, dynsz = 0;
  int separate_rodata = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & (PF_R | PF_W | PF_X)) == PF_R) separate_rodata = 1;
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uint64_t lo = m.bias + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R)) {
      add_range(m.rd, &m.nrd, lo, hi);
      if (!(ph->p_flags & PF_W)) {
        add_range(m.ro, &m.nro, lo, hi);
        if (!separate_rodata || !(ph->p_flags & PF_X)) add_range(m.data, &m.ndata, lo, hi);
      }
    } else if (ph->p_type == PT_GNU_RELRO) {
      add_range(m.ro, &m.nro, lo, hi);
      add_range(m.data, &m.ndata, lo, hi);
    } else if (ph->p_type == PT_DYNAMIC) {
      dyn = lo;
      dynsz = ph->p_memsz;
    }
  }
  if (!m.nrd) return 0;
  w->d->images++;
  for (uint32_t i = 0; i < m.nrd && !w->rc; i++)
    w->rc = _hg_cxx_set_add_image_range(w->s, m.rd[i].lo, m.rd[i].hi);
  for (uint32_t i = 0; i < m.nro && !w->rc; i++)
    w->rc = _hg_cxx_set_add_ro_range(w->s, m.ro[i].lo, m.ro[i].hi);
  if (w->rc) return 1;

  uint32_t sym_index[NKINDS] = {0, 0, 0};
  int found = 0;
  struct dyn y;
  if (dyn && !read_dynamic(&m, dyn, dynsz, &y)) {
    found = find_symbols(&m, &y, symbol_count(&m, &y), sym_index);
    if (found) {
      uint64_t before = w->s->count;
      scan_relocs(&m, y.rela, y.relasz, y.relaent, sym_index);
      if (y.pltrel == DT_RELA) scan_relocs(&m, y.jmprel, y.pltrelsz, y.relaent, sym_index);
      if (w->s->count > before) w->d->images_symbolic++;
    }
  }
  if (!found) structural(&m);
  scan_typeinfos(&m);
  if (m.rc) w->rc = m.rc;
  return w->rc ? 1 : 0;
}

int _hg_plat_cxx_images(struct hg_cxx_set *s, struct hg_cxx_discovery *d) {
  struct walk w = {s, d, 0};
  dl_iterate_phdr(one_image, &w);
  return w.rc;
}
