/*
 * swift.h — Swift class metadata and reflection records, one parser for
 * Linux (ELF, no ObjC interop) and Darwin (Mach-O, ObjC interop):
 * swift_fields.c reads descriptors, names and stored properties through a
 * caller's fault-free reader; the platform differences are the parameters
 * of struct hg_swift_abi (where the metadata keeps its descriptor, how
 * pointers are signed) and where the images' swift5 sections are found
 * (ELF section names on Linux, capture/linux/images.c; __swift5_* Mach-O
 * sections on Darwin). swift_classify.c is the capture-time classifier built
 * on it (Linux), swift_meta.c its metadata validation and naming.
 */
#ifndef HG_CAPTURE_SWIFT_H
#define HG_CAPTURE_SWIFT_H

#include <stddef.h>
#include <stdint.h>

#include "capture/classify/objc.h"

/* Where class metadata keeps its nominal type descriptor (swiftlang/swift
 * include/swift/ABI/Metadata.h): after the objc_class words with ObjC
 * interop (Darwin), right after the class's own header without it
 * (TargetAnyClassMetadata: kind, superclass; then flags @16, instance
 * address point @20, instance size @24, align mask @28, class size @32,
 * class address point @36, description @40; Linux since Swift 5.4). */
#define HG_SWIFT_DESC_INTEROP 64u
#define HG_SWIFT_DESC_NATIVE 40u

struct hg_swift_abi {
  uint32_t desc_off;  /* HG_SWIFT_DESC_INTEROP or HG_SWIFT_DESC_NATIVE        */
  uint32_t isize_off; /* instance size u32: 48 with interop, 24 without       */
  uint64_t ptr_mask;  /* arm64e: signed pointers stripped with it (0: none)   */
};

/* Context descriptor kinds (the low 5 bits of its flags). */
enum {
  HG_SWIFT_CTX_MODULE = 0,
  HG_SWIFT_CTX_EXTENSION = 1,
  HG_SWIFT_CTX_ANONYMOUS = 2,
  HG_SWIFT_CTX_CLASS = 16,
  HG_SWIFT_CTX_STRUCT = 17,
  HG_SWIFT_CTX_ENUM = 18
};
#define HG_SWIFT_DESC_GENERIC 0x80u            /* IsGeneric                   */
#define HG_SWIFT_CLASS_RESILIENT_SUPER (1u << 29) /* HasResilientSuperclass  */

/* A field's edge kind may carry this flag: the reference is the field's
 * second word (a thick function's context), not its first. */
#define HG_SWIFT_SECOND_WORD 0x100u
/* ... or this one: the field's type is generic parameter (kind >> 16) of
 * the class (depth 0), a reference when the metadata's argument is a class. */
#define HG_SWIFT_PARAM 0x200u

/* A type descriptor's facts (class, struct or enum). */
struct hg_swift_desc {
  uint32_t flags;       /* kind in the low 5 bits                             */
  uint64_t parent;      /* parent context descriptor, 0 at the top            */
  uint64_t name;        /* its name (C string)                                */
  uint64_t fields;      /* field descriptor, 0 without reflection metadata    */
  uint32_t num_fields;  /* classes: own stored properties                     */
  uint32_t fovo;        /* classes: field offset vector offset, in words      */
  uint32_t generic_off; /* classes: generic arguments at metadata + 8 * it;
                           structs and enums: 2 (after kind, description)     */
  uint32_t num_params;  /* generic parameters (0: not generic)                */
  uint32_t key_params;  /* of which key arguments (metadata pointers)         */
};

/* Reads the descriptor at desc: 0, or HG_EFORMAT (unreadable, not a type). */
int _hg_swift_desc_read(uint64_t desc, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                        struct hg_swift_desc *out);
/* The class descriptor of the class metadata at cls: 0 and *desc, or
 * HG_EINVAL / HG_EFORMAT. */
int _hg_swift_class_desc(const struct hg_swift_abi *abi, uint64_t cls, hg_objc_read_fn rd,
                         void *ctx, uint64_t *desc);
/* Receives stored property `index` (declaration order) of a field
 * descriptor: its name and edge kind (0: not a reference; maybe with
 * HG_SWIFT_SECOND_WORD). < 0 stops the walk. */
typedef int (*hg_swift_rec_fn)(void *arg, uint32_t index, const char *name, size_t len,
                               uint32_t kind);
/* The stored properties of the field descriptor at fd: the number passed
 * to fn, or < 0 (fn's code, HG_EFORMAT). */
int _hg_swift_fd_fields(uint64_t fd, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                        hg_swift_rec_fn fn, void *arg);
/* The dotted name of the context at desc (Module.Outer.Inner; anonymous
 * contexts skipped, extensions named by their module), in buf; its length,
 * or -1. */
int _hg_swift_context_name(uint64_t desc, uint64_t ptr_mask, hg_objc_read_fn rd, void *ctx,
                           char *buf, size_t size);

/* A loaded image with Swift types (capture/linux/images.c: ELF sections
 * swift5_type_metadata and swift5_capture; Mach-O's __swift5_types and
 * __swift5_capture on Darwin). Ranges are [lo, hi), 0 when absent. */
struct hg_swift_image {
  uint64_t lo, hi;        /* the image's extent (its PT_LOAD segments)       */
  uint64_t types[2];      /* type metadata records: rel32 each               */
  uint64_t capture[2];    /* closure capture descriptors                     */
  uint64_t seg[8][2];     /* its readable PT_LOAD segments (the first 8)     */
  uint32_t nseg;
};
typedef int (*hg_swift_image_fn)(void *arg, const struct hg_swift_image *im);
/* Calls fn for every loaded image with Swift types (< 0 from fn stops and
 * is returned). Prepare step only: takes the loader lock, opens files,
 * calls malloc. Linux only (the Darwin classifier reaches Swift classes
 * through the ObjC runtime). */
int _hg_plat_swift_images(hg_swift_image_fn fn, void *arg);

#endif
