/*
 * images.c — loaded ELF images via dl_iterate_phdr: path, GNU build-id,
 * load bias, extent; their writable PT_LOAD segments become global root
 * ranges (owner = image index).
 *
 * Runs before the freeze (dl_iterate_phdr takes the loader lock, which a
 * parked thread could hold). Copies everything into capture scratch.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "capture/linux/linux.h"
#include "capture/platform.h"

struct ctx {
  struct hg_cap *c;
  int rc;
};

static void build_id(struct hg_cimage *im, const struct dl_phdr_info *info, const ElfW(Phdr) *ph) {
  const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
  size_t left = ph->p_memsz;
  while (left >= sizeof(ElfW(Nhdr))) {
    const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
    size_t name = (n->n_namesz + 3) & ~3u, desc = (n->n_descsz + 3) & ~3u;
    size_t total = sizeof *n + name + desc;
    if (total > left) return;
    if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(p + sizeof *n, "GNU", 4) &&
        n->n_descsz <= sizeof im->id) {
      memcpy(im->id, p + sizeof *n + name, n->n_descsz);
      im->id_len = n->n_descsz;
      return;
    }
    p += total;
    left -= total;
  }
}

static int one(struct dl_phdr_info *info, size_t size, void *arg) {
  struct ctx *x = arg;
  struct hg_cap *c = x->c;
  (void)size;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (hi <= lo) return 0;
  uint32_t index = (uint32_t)_hg_vec_len(&c->images);
  struct hg_cimage *im = _hg_vec_push(&c->images, 1);
  if (!im) {
    x->rc = HG_ENOMEM;
    return 1;
  }
  im->load_addr = lo & ~(uint64_t)4095;
  im->bias = info->dlpi_addr;
  im->size = hi - im->load_addr;
  const char *name = info->dlpi_name;
  char exe[4096];
  if (!name || !*name) {
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    name = exe;
  }
  im->path = _hg_str_add(&c->strings, name, strlen(name));
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_NOTE && !im->id_len) build_id(im, info, ph);
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W)) continue;
    struct hg_crange *r = _hg_vec_push(&c->ranges, 1);
    if (!r) {
      x->rc = HG_ENOMEM;
      return 1;
    }
    r->lo = info->dlpi_addr + ph->p_vaddr;
    r->hi = r->lo + ph->p_memsz;
    r->kind = HG_ROOT_GLOBAL;
    r->owner = index;
  }
  return 0;
}

int _hg_plat_images(struct hg_cap *c) {
  struct ctx x = {c, 0};
  dl_iterate_phdr(one, &x);
  return x.rc;
}

/* ---- Swift: the swift5 reflection sections of the loaded images ---- */

#include <fcntl.h>
#include <stdlib.h>

#include "capture/classify/swift.h"

#define SWIFT_MAX_SHDRS 32768u
#define SWIFT_MAX_SHSTR (4u << 20)

/* Reads n bytes at off of fd: 0, or -1. */
static int pread_all(int fd, void *buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (k <= 0) return -1;
    got += (size_t)k;
  }
  return 0;
}

/* The swift5 sections of the ELF file at path, loaded at bias and spanning
 * [im->lo, im->hi): found by name in its section headers (they are not
 * loaded; a stripped file keeps them), each range checked to lie in the
 * image. 1 when it has swift5_type_metadata, 0 when not, -1 on a bad file. */
static int swift_sections(const char *path, uint64_t bias, struct hg_swift_image *im) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = -1;
  ElfW(Ehdr) eh;
  ElfW(Shdr) *sh = NULL;
  char *str = NULL;
  if (pread_all(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
      eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shnum > SWIFT_MAX_SHDRS ||
      eh.e_shstrndx >= eh.e_shnum)
    goto out;
  sh = malloc((size_t)eh.e_shnum * sizeof *sh);
  if (!sh || pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff)) goto out;
  const ElfW(Shdr) *ss = &sh[eh.e_shstrndx];
  if (ss->sh_size == 0 || ss->sh_size > SWIFT_MAX_SHSTR) goto out;
  str = malloc(ss->sh_size + 1);
  if (!str || pread_all(fd, str, ss->sh_size, ss->sh_offset)) goto out;
  str[ss->sh_size] = 0;
  rc = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_name >= ss->sh_size || !(sh[i].sh_flags & SHF_ALLOC) || !sh[i].sh_size) continue;
    const char *name = str + sh[i].sh_name;
    uint64_t *r = !strcmp(name, "swift5_type_metadata") ? im->types
                  : !strcmp(name, "swift5_capture")     ? im->capture
                                                        : NULL;
    uint64_t lo = bias + sh[i].sh_addr, hi = lo + sh[i].sh_size;
    if (!r || lo < im->lo || hi > im->hi || hi < lo) continue;
    r[0] = lo;
    r[1] = hi;
  }
  rc = im->types[1] > im->types[0];
out:
  free(str);
  free(sh);
  close(fd);
  return rc;
}

struct swift_ctx {
  hg_swift_image_fn fn;
  void *arg;
  int rc;
};

static int swift_one(struct dl_phdr_info *info, size_t size, void *arg) {
  struct swift_ctx *x = arg;
  (void)size;
  struct hg_swift_image im;
  memset(&im, 0, sizeof im);
  im.lo = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < im.lo) im.lo = a;
    if (a + ph->p_memsz > im.hi) im.hi = a + ph->p_memsz;
    if ((ph->p_flags & PF_R) && im.nseg < 8) {
      im.seg[im.nseg][0] = a;
      im.seg[im.nseg++][1] = a + ph->p_memsz;
    }
  }
  if (im.hi <= im.lo) return 0;
  const char *name = info->dlpi_name;
  if (!name || !*name) name = "/proc/self/exe";
  if (swift_sections(name, info->dlpi_addr, &im) != 1) return 0;
  x->rc = x->fn(x->arg, &im);
  return x->rc < 0;
}

int _hg_plat_swift_images(hg_swift_image_fn fn, void *arg) {
  struct swift_ctx x = {fn, arg, 0};
  dl_iterate_phdr(swift_one, &x);
  return x.rc < 0 ? x.rc : 0;
}
