/*
 * images.c — the loaded Mach-O images: path, LC_UUID, header address,
 * slide, extent; the data segments chosen by image_segments.c become global
 * root ranges (owner = image index); every segment goes into a sorted table
 * regions.c uses to link regions to images.
 *
 * The images come from dyld's add/remove callbacks (image_list.c), not from
 * _dyld_image_count/_dyld_get_image_header, which dyld.h calls not thread
 * safe: each header arrives with its own slide, and while the list is held
 * (_hg_darwin_images_begin/_end) an unload waits in its remove callback, so
 * no header read here is unmapped under us. Names: dladdr, outside the
 * list's lock. dyld itself (/usr/lib/dyld, or its copy in the shared cache)
 * is not among them (dyld4 keeps no Loader for itself: dladdr special-cases
 * it, DyldAPIs.cpp) but owns the main thread's pthread_t (libpthread
 * pthread.c: "libpthread.a in dyld owns the main thread structure",
 * struct pthread_s _main_thread under VARIANT_DYLD; dyld.dirty lists
 * __main_thread), so it is added from TASK_DYLD_INFO's
 * dyld_all_image_infos.dyldImageLoadAddress: its data segments are global
 * roots like every image's, and they cover the main thread's TSD.
 * Encrypted images (LC_ENCRYPTION_INFO cryptid != 0: App Store builds) are
 * counted in c->images_encrypted (metadata "images_encrypted").
 *
 * Runs before the freeze. The segment table is a persistent mmap reused by
 * later captures; everything else is scratch.
 */
#include <dlfcn.h>
#include <mach/mach.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"

#define MAX_SEGS 65536u

static struct hg_dseg *segs;
static size_t nsegs;

const struct hg_dseg *_hg_darwin_segs(size_t *n) {
  *n = nsegs;
  return segs;
}

static int seg_table(void) {
  if (segs) return 0;
  void *m = mmap(NULL, MAX_SEGS * sizeof *segs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON,
                 -1, 0);
  if (m == MAP_FAILED) return HG_ENOMEM;
  segs = m;
  return 0;
}

/* One image into c->images, its segments into the table, its data
 * segments into the roots. Under the list's lock: no dyld call. */
static int add_image(struct hg_cap *c, const struct hg_image_ent *e) {
  const struct mach_header_64 *h = (const struct mach_header_64 *)(uintptr_t)e->mh;
  if (!h || h->magic != MH_MAGIC_64) return 0;
  uint64_t slide = e->slide;
  size_t avail = sizeof *h + (h->sizeofcmds < (1u << 24) ? h->sizeofcmds : 0);
  struct hg_macho_info info;
  if (_hg_macho_parse((const uint8_t *)h, avail, &info) != 0) return 0;
  struct hg_macho_crypt cr;
  if (_hg_macho_crypt_info((const uint8_t *)h, avail, &cr) == 0 && cr.cryptid) c->images_encrypted++;
  uint32_t index = (uint32_t)_hg_vec_len(&c->images);
  struct hg_cimage *im = _hg_vec_push(&c->images, 1);
  if (!im) return HG_ENOMEM;
  im->load_addr = (uint64_t)(uintptr_t)h;
  im->bias = slide;
  uint64_t end = 0;
  for (uint32_t k = 0; k < info.nsegs; k++) {
    const struct hg_macho_seg *s = &info.segs[k];
    if (!s->vmsize || !s->initprot) continue; /* __PAGEZERO */
    uint64_t lo = s->vmaddr + slide, hi = lo + s->vmsize;
    if (strcmp(s->name, "__LINKEDIT") && hi > end) end = hi; /* LINKEDIT is shared in the cache */
    if (nsegs < MAX_SEGS) {
      segs[nsegs].lo = lo;
      segs[nsegs].hi = hi;
      segs[nsegs].image = index;
      nsegs++;
    }
    if (!s->root) continue;
    struct hg_crange *r = _hg_vec_push(&c->ranges, 1);
    if (!r) return HG_ENOMEM;
    r->lo = lo;
    r->hi = hi;
    r->kind = HG_ROOT_GLOBAL;
    r->owner = index;
  }
  im->size = end > im->load_addr ? end - im->load_addr : 0;
  if (info.has_uuid) {
    memcpy(im->id, info.uuid, 16);
    im->id_len = 16;
  }
  if (e->name) im->path = _hg_str_add(&c->strings, e->name, strlen(e->name));
  return 0;
}

/* ---- the image list, fed by dyld's callbacks ---- */

#define MAX_IMAGES 8192u
static struct hg_image_ent list_store[MAX_IMAGES], list_copy[MAX_IMAGES + 1];
static struct hg_image_list L = {.lock = PTHREAD_MUTEX_INITIALIZER, .ents = list_store,
                                 .cap = MAX_IMAGES};
static pthread_once_t registered = PTHREAD_ONCE_INIT;

static void on_add(const struct mach_header *mh, intptr_t slide) {
  _hg_image_list_add(&L, (uint64_t)(uintptr_t)mh, (uint64_t)slide);
}
static void on_remove(const struct mach_header *mh, intptr_t slide) {
  (void)slide;
  _hg_image_list_remove(&L, (uint64_t)(uintptr_t)mh);
}
static void do_register(void) {
  /* remove first: an unload between the two registrations is not missed */
  _dyld_register_func_for_remove_image(on_remove);
  _dyld_register_func_for_add_image(on_add); /* calls on_add for every loaded image */
}
static const char *name_of(void *ctx, uint64_t mh) {
  (void)ctx;
  Dl_info info;
  return dladdr((const void *)(uintptr_t)mh, &info) && info.dli_fname ? info.dli_fname : NULL;
}

/* dyld's own header and slide (TASK_DYLD_INFO), or 0. */
static uint64_t dyld_header(uint64_t *slide) {
  struct task_dyld_info di;
  mach_msg_type_number_t count = TASK_DYLD_INFO_COUNT;
  if (task_info(mach_task_self(), TASK_DYLD_INFO, (task_info_t)&di, &count) != KERN_SUCCESS ||
      di.all_image_info_format != TASK_DYLD_ALL_IMAGE_INFO_64 || di.all_image_info_size < 40)
    return 0;
  const uint8_t *all = (const uint8_t *)(uintptr_t)di.all_image_info_addr;
  uint32_t version;
  uint64_t mh;
  memcpy(&version, all, 4);
  memcpy(&mh, all + 32, 8); /* dyldImageLoadAddress (version >= 2) */
  if (version < 2 || !mh || ((const struct mach_header *)(uintptr_t)mh)->magic != MH_MAGIC_64) return 0;
  const struct mach_header_64 *h = (const struct mach_header_64 *)(uintptr_t)mh;
  struct hg_macho_info info;
  if (_hg_macho_parse((const uint8_t *)h, sizeof *h + (h->sizeofcmds < (1u << 24) ? h->sizeofcmds : 0),
                      &info) != 0)
    return 0;
  *slide = mh - info.text_vmaddr;
  return mh;
}

size_t _hg_darwin_images_begin(const struct hg_image_ent **out) {
  pthread_once(&registered, do_register);
  uint64_t dslide = 0, dmh = dyld_header(&dslide);
  size_t total = 0;
  size_t n = _hg_image_list_begin(&L, list_copy, MAX_IMAGES, &total, name_of, NULL, 4);
  int have_dyld = 0;
  for (size_t i = 0; i < n; i++) have_dyld |= list_copy[i].mh == dmh;
  if (dmh && !have_dyld) { /* dyld is never unloaded: no name lookup needed under the lock */
    list_copy[n].mh = dmh;
    list_copy[n].slide = dslide;
    list_copy[n].name = "/usr/lib/dyld";
    n++;
  }
  *out = list_copy;
  return n;
}

void _hg_darwin_images_end(void) { _hg_image_list_end(&L); }

int _hg_plat_images(struct hg_cap *c) {
  int rc = seg_table();
  if (rc) return rc;
  nsegs = 0;
  const struct hg_image_ent *ims;
  size_t count = _hg_darwin_images_begin(&ims);
  for (size_t i = 0; i < count && !rc; i++) rc = add_image(c, &ims[i]);
  _hg_darwin_images_end();
  _hg_sort_u64key(segs, nsegs, sizeof *segs);
  return rc;
}
