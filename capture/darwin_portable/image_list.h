/*
 * image_list.h — the loaded images as dyld announces them (image_list.c):
 * a bounded list fed by the _dyld_register_func_for_add_image / _remove_
 * callbacks, read as one consistent copy that stays valid (no image in it
 * is unmapped) until the reader lets go.
 */
#ifndef HG_CAPTURE_IMAGE_LIST_H
#define HG_CAPTURE_IMAGE_LIST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct hg_image_ent {
  uint64_t mh;               /* the image's mach_header in memory          */
  uint64_t slide;            /* as dyld passed it to the callback          */
  const char *name;          /* from name_fn (NULL: unknown), copies only  */
};

struct hg_image_list {
  pthread_mutex_t lock;
  struct hg_image_ent *ents; /* caller's storage, cap entries              */
  uint32_t cap, n;
  uint64_t gen;              /* bumped by every add and remove             */
  uint64_t dropped;          /* adds refused: the list was full            */
};

/* The callbacks' halves (take the list's lock; call nothing else). A
 * repeated add of the same header is ignored; remove of an unknown one is
 * a no-op. */
void _hg_image_list_add(struct hg_image_list *l, uint64_t mh, uint64_t slide);
void _hg_image_list_remove(struct hg_image_list *l, uint64_t mh);

/* Names an image (dladdr on Darwin). Called without the list's lock: it
 * may take dyld's, which dyld holds while it calls the remove callback. */
typedef const char *(*hg_image_name_fn)(void *ctx, uint64_t mh);

/* Copies the list into out[0, max) with each image's name, and returns
 * with the lock HELD, so that an image being unloaded (dyld calls the
 * remove callback before unmapping it: dyld.h) waits until
 * _hg_image_list_end: every header and name in the copy stays mapped.
 * Names are looked up unlocked and kept when the list did not change
 * meanwhile; else the copy is taken again and named again, up to `tries`
 * more times, after which the copy comes without names (NULL). Returns
 * the number of entries copied (at most max; more were in the list when
 * *total > return value). The caller must not call dyld while it holds
 * the lock. */
size_t _hg_image_list_begin(struct hg_image_list *l, struct hg_image_ent *out, size_t max,
                            size_t *total, hg_image_name_fn name_fn, void *ctx, int tries);
void _hg_image_list_end(struct hg_image_list *l);

#endif
