/*
 * swift_meta.h — naming Swift metadata and laying out closure contexts
 * (swift_meta.c), for the Linux classifier (swift_classify.c).
 */
#ifndef HG_CAPTURE_SWIFT_META_H
#define HG_CAPTURE_SWIFT_META_H

#include "capture/classify/swift.h"

/* Metadata kinds (include/swift/ABI/MetadataKind.def). */
enum {
  HG_SWIFT_MK_CLASS = 0,
  HG_SWIFT_MK_STRUCT = 0x200,
  HG_SWIFT_MK_ENUM = 0x201,
  HG_SWIFT_MK_OPTIONAL = 0x202,
  HG_SWIFT_MK_TUPLE = 0x301,
  HG_SWIFT_MK_FUNCTION = 0x302,
  HG_SWIFT_MK_EXISTENTIAL = 0x303,
  HG_SWIFT_MK_CONTEXT = 0x400, /* heap local variable: closure contexts  */
  HG_SWIFT_MK_BOX = 0x500,     /* heap generic local variable: boxes     */
  HG_SWIFT_MK_ERROR = 0x501,
  HG_SWIFT_MK_TASK = 0x502,
  HG_SWIFT_MK_JOB = 0x503
};

/* The reader and the descriptor test the naming uses: known(ctx, desc)
 * says desc is a type descriptor listed in an image's type metadata. */
struct hg_swift_names {
  hg_objc_read_fn rd;
  int (*known)(void *ctx, uint64_t desc);
  void *ctx;
};

/* Appends the name of the type whose metadata is at m and descriptor at
 * desc (Module.Outer.Name, generic arguments from the metadata in <>) to
 * buf at *at. 0 or -1 (unreadable, too long). */
int _hg_swift_meta_name(const struct hg_swift_names *nm, uint64_t m, uint64_t desc, int depth,
                        char *buf, size_t size, size_t *at);
/* The name of any type's metadata at m ("?" parts for what is not known):
 * its length, or -1. */
int _hg_swift_type_of(const struct hg_swift_names *nm, uint64_t m, char *buf, size_t size);

/* Receives capture `index` of a closure context: the byte offset of its
 * reference and its edge kind. < 0 stops. */
typedef int (*hg_swift_capture_fn)(void *arg, uint32_t index, uint64_t offset, uint32_t kind);
/* The references among the captures of the closure context whose metadata
 * is at m, in order, as long as every capture before is a reference (one
 * word; an escaping closure two) so that its offset is known: the number
 * passed to fn, or -1. */
int _hg_swift_captures(const struct hg_swift_names *nm, uint64_t m, hg_swift_capture_fn fn,
                       void *arg);

#endif
