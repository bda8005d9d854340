/*
 * darwin.h — names shared between the files of the Darwin capture backend
 * (capture/darwin/ files: Mach, dyld and libmalloc calls only; the logic
 * lives in the portable files declared in capture/darwin_portable/darwin_portable.h).
 */
#ifndef HG_CAPTURE_DARWIN_H
#define HG_CAPTURE_DARWIN_H

#include "capture/darwin_portable/darwin_portable.h"
#include "capture/darwin_portable/image_list.h"
#include "capture/internal.h"

/* One image segment, for linking regions to images (sorted by lo). */
struct hg_dseg {
  uint64_t lo, hi;
  uint64_t image;
};

/* images.c: the segment table of the last _hg_plat_images (mmap'd). */
const struct hg_dseg *_hg_darwin_segs(size_t *n);
/* images.c: a consistent copy of the loaded images (dyld's callbacks, plus
 * dyld itself), held until _hg_darwin_images_end: no image in it is
 * unmapped meanwhile. Call no dyld function in between. */
size_t _hg_darwin_images_begin(const struct hg_image_ent **out);
void _hg_darwin_images_end(void);

/* threads.c: pthread facts gathered before the threads are suspended. */
#define HG_DARWIN_MAX_THREADS 4096u
/* threads.c: 1 when the task has a thread the freeze does not hold (the
 * kernel made it since: it runs), 0, or < 0. Suspends nothing. */
int _hg_darwin_threads_changed(void);

#endif
