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
