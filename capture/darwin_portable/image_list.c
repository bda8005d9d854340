/*
 * image_list.c — the loaded images, kept from dyld's add/remove image
 * callbacks instead of iterating _dyld_image_count/_dyld_get_image_header,
 * which dyld documents as not thread safe (dyld include/mach-o/dyld.h:
 * "Another thread can add or remove an image during the iteration": an
 * index read with _dyld_get_image_header and then with
 * _dyld_get_image_vmaddr_slide may name two different images). A callback
 * gets the header and its slide together. dyld calls the add callback for
 * every loaded image when it is registered, then for each new image
 * (DyldAPIs.cpp _dyld_register_func_for_add_image), and the remove
 * callback before an image is unmapped (DyldRuntimeState.cpp
 * notifyUnload), both while holding its own locks: so the callbacks here
 * take only this list's lock, and the reader never calls dyld while it
 * holds it (dladdr for the names runs unlocked, before the lock is taken).
 *
 * Portable (pthread mutex; the storage is the caller's); unit-tested on
 * Linux with a fake dyld. Never calls malloc.
 */
#include <string.h>

#include "capture/darwin_portable/image_list.h"

static int64_t find(const struct hg_image_list *l, uint64_t mh) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->ents[i].mh == mh) return i;
  return -1;
}

void _hg_image_list_add(struct hg_image_list *l, uint64_t mh, uint64_t slide) {
  pthread_mutex_lock(&l->lock);
  if (find(l, mh) < 0) {
    if (l->n < l->cap) {
      l->ents[l->n].mh = mh;
      l->ents[l->n].slide = slide;
      l->ents[l->n].name = NULL;
      l->n++;
      l->gen++;
    } else {
      l->dropped++;
    }
  }
  pthread_mutex_unlock(&l->lock);
}

void _hg_image_list_remove(struct hg_image_list *l, uint64_t mh) {
  pthread_mutex_lock(&l->lock);
  int64_t i = find(l, mh);
  if (i >= 0) { /* keep dyld's order */
    memmove(&l->ents[i], &l->ents[i + 1], (l->n - (uint32_t)i - 1) * sizeof l->ents[0]);
    l->n--;
    l->gen++;
  }
  pthread_mutex_unlock(&l->lock);
}

/* Under the lock: copies the list (names NULL: the list keeps none). */
static size_t copy(struct hg_image_list *l, struct hg_image_ent *out, size_t max, size_t *total) {
  size_t n = l->n < max ? l->n : max;
  memcpy(out, l->ents, n * sizeof *out);
  *total = l->n;
  return n;
}

size_t _hg_image_list_begin(struct hg_image_list *l, struct hg_image_ent *out, size_t max,
                            size_t *total, hg_image_name_fn name_fn, void *ctx, int tries) {
  pthread_mutex_lock(&l->lock);
  size_t n = copy(l, out, max, total);
  for (int t = 0; name_fn && t <= tries; t++) {
    uint64_t gen = l->gen;
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < n; i++) out[i].name = name_fn(ctx, out[i].mh);
    pthread_mutex_lock(&l->lock);
    if (l->gen == gen) return n; /* the names belong to images still loaded */
    n = copy(l, out, max, total); /* names NULL: dyld kept changing, ask again */
  }
  return n;
}

void _hg_image_list_end(struct hg_image_list *l) { pthread_mutex_unlock(&l->lock); }
