/*
 * objc_runtime.c — reaches the process's Objective-C runtime, if any,
 * through dlsym(RTLD_DEFAULT, …) and copies what the classifier needs into
 * the class table: every class and its metaclass, name, instance size,
 * superclass, ivars (name, offset, type encoding) and each object ivar's
 * strength.
 *
 *   GNU runtime (gcc libobjc, also GNUstep's): recognised by
 *     __objc_exec_class / objc_get_class; classes from objc_getClassList;
 *     plain isa; strength from the type encoding (GNU exposes no ARC
 *     layouts: every '@' ivar is strong).
 *   Apple runtime: objc_copyRealizedClassList (objc-internal.h, iOS 13 /
 *     macOS 10.15: the realized classes only) when dlsym finds it, else
 *     objc_copyClassList (which realizes every class of every image:
 *     objc-runtime-new.mm, memory at the worst moment); non-pointer isa
 *     masks from objc_debug_isa_class_mask / _magic_mask / _magic_value and
 *     objc_debug_taggedpointer_mask, else the defaults for the RUNTIME's
 *     architecture (the main executable's cpusubtype: an arm64 build of
 *     heapgraph may run in an arm64e process) and OS; strength from
 *     class_getIvarLayout / class_getWeakIvarLayout, placed at
 *     word_align(instanceStart) read from the class data
 *     (objc_classdata.c), cross-checked with class_getInstanceSize; Swift
 *     classes by their data bits (objc_debug_swift_stable_abi_bit), with
 *     readable names for the _TtC forms, and their ivars' strengths from
 *     the Swift field records (swift_fields.c).
 *
 * No link-time dependency and no Objective-C or Apple header: a process
 * without a runtime pays one failed dlsym and the classifier stays off.
 * Runs before the freeze only: calls into the runtime (which takes its
 * locks) and malloc/free (the runtime's class and ivar lists).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#if defined(__APPLE__)
#include <mach/mach.h>
#endif

#include "capture/classify/objc.h"

typedef void *objc_cls;  /* Class */
typedef void *objc_ivar; /* Ivar  */

struct rt {
  int flavor;
  int (*get_class_list)(objc_cls *buf, int max);         /* GNU   */
  objc_cls *(*copy_class_list)(unsigned *count);         /* Apple */
  int realized_only;      /* copy_class_list is objc_copyRealizedClassList  */
  struct hg_objc_data_masks data;                        /* Apple */
  const char *(*class_name)(objc_cls);
  size_t (*instance_size)(objc_cls);
  unsigned char (*is_meta)(objc_cls);                     /* BOOL  */
  objc_cls (*superclass)(objc_cls);
  objc_cls (*meta_by_name)(const char *);                 /* GNU   */
  objc_cls (*object_class)(void *);                       /* Apple */
  objc_ivar *(*copy_ivars)(objc_cls, unsigned *count);
  const char *(*ivar_name)(objc_ivar);
  ptrdiff_t (*ivar_offset)(objc_ivar);
  const char *(*ivar_type)(objc_ivar);
  const uint8_t *(*strong_layout)(objc_cls);             /* Apple */
  const uint8_t *(*weak_layout)(objc_cls);               /* Apple */
};

#define SYM(name) dlsym(RTLD_DEFAULT, name)

int _hg_objc_runtime_flavor(void) {
  if (!SYM("class_copyIvarList")) return HG_OBJC_NO_RUNTIME;
  if (SYM("__objc_exec_class") || SYM("objc_get_class")) return HG_OBJC_GNU;
  if (SYM("objc_copyClassList")) return HG_OBJC_APPLE;
  return HG_OBJC_NO_RUNTIME;
}

static int resolve(struct rt *r) {
  memset(r, 0, sizeof *r);
  r->flavor = _hg_objc_runtime_flavor();
  if (r->flavor == HG_OBJC_NO_RUNTIME) return HG_ENOTFOUND;
  r->class_name = (const char *(*)(objc_cls))SYM("class_getName");
  r->instance_size = (size_t(*)(objc_cls))SYM("class_getInstanceSize");
  r->is_meta = (unsigned char (*)(objc_cls))SYM("class_isMetaClass");
  r->superclass = (objc_cls(*)(objc_cls))SYM("class_getSuperclass");
  r->copy_ivars = (objc_ivar * (*)(objc_cls, unsigned *)) SYM("class_copyIvarList");
  r->ivar_name = (const char *(*)(objc_ivar))SYM("ivar_getName");
  r->ivar_offset = (ptrdiff_t(*)(objc_ivar))SYM("ivar_getOffset");
  r->ivar_type = (const char *(*)(objc_ivar))SYM("ivar_getTypeEncoding");
  if (r->flavor == HG_OBJC_GNU) {
    r->get_class_list = (int (*)(objc_cls *, int))SYM("objc_getClassList");
    r->meta_by_name = (objc_cls(*)(const char *))SYM("objc_getMetaClass");
    if (!r->get_class_list || !r->meta_by_name) return HG_ENOTFOUND;
  } else {
    r->copy_class_list = (objc_cls * (*)(unsigned *)) SYM("objc_copyRealizedClassList");
    r->realized_only = r->copy_class_list != NULL;
    if (!r->copy_class_list)
      r->copy_class_list = (objc_cls * (*)(unsigned *)) SYM("objc_copyClassList");
    r->object_class = (objc_cls(*)(void *))SYM("object_getClass");
    r->strong_layout = (const uint8_t *(*)(objc_cls))SYM("class_getIvarLayout");
    r->weak_layout = (const uint8_t *(*)(objc_cls))SYM("class_getWeakIvarLayout");
    if (!r->copy_class_list || !r->object_class) return HG_ENOTFOUND;
  }
  if (!r->class_name || !r->instance_size || !r->superclass || !r->copy_ivars ||
      !r->ivar_name || !r->ivar_offset || !r->ivar_type)
    return HG_ENOTFOUND;
  return 0;
}

/* The OS heapgraph was built for (clang predefines these without headers):
 * the simulator builds are their own slices. */
static int build_os(void) {
#if defined(__APPLE_EMBEDDED_SIMULATOR__)
  return HG_OBJC_OS_SIMULATOR;
#elif defined(__ENVIRONMENT_IPHONE_OS_VERSION_MIN_REQUIRED__) || \
    defined(__ENVIRONMENT_TV_OS_VERSION_MIN_REQUIRED__)
  return HG_OBJC_OS_IOS;
#else
  return HG_OBJC_OS_MACOS;
#endif
}

/* The running process's architecture from its main executable's header
 * (dyld's _dyld_get_image_header(0), found by dlsym). */
static int runtime_arch(void) {
  const uint32_t *(*image_header)(uint32_t) =
      (const uint32_t *(*)(uint32_t))SYM("_dyld_get_image_header");
  const uint32_t *h = image_header ? image_header(0) : NULL;
  int arch = h ? _hg_objc_arch_of(h[1], h[2]) : 0;
  if (arch) return arch;
#if defined(__aarch64__) && defined(__arm64e__)
  return HG_OBJC_ARCH_ARM64E;
#elif defined(__aarch64__)
  return HG_OBJC_ARCH_ARM64;
#else
  return HG_OBJC_ARCH_X86_64;
#endif
}

/* Apple: the runtime's own masks when exported, else the defaults for the
 * runtime's architecture and OS. */
static void apple_isa(struct hg_objc_isa *m, struct hg_objc_data_masks *d) {
  int os = build_os();
  _hg_objc_isa_apple(m, runtime_arch(), os);
  const uintptr_t *cm = SYM("objc_debug_isa_class_mask");
  const uintptr_t *mm = SYM("objc_debug_isa_magic_mask");
  const uintptr_t *mv = SYM("objc_debug_isa_magic_value");
  const uintptr_t *tm = SYM("objc_debug_taggedpointer_mask");
  if (cm && *cm) m->class_mask = *cm;
  if (mm && mv) {
    m->magic_mask = *mm;
    m->magic_value = *mv;
  }
  if (tm) m->tag_mask = *tm;
  /* objc-gdb.h: "Use 0x00007ffffffffff8UL or 0xfffffffcUL when this
   * variable is unavailable"; objc-runtime-new.h: FAST_IS_SWIFT_LEGACY 1,
   * FAST_IS_SWIFT_STABLE 2 */
  const uintptr_t *rw = SYM("objc_debug_class_rw_data_mask");
  const uintptr_t *sw = SYM("objc_debug_swift_stable_abi_bit");
  d->rw_mask = rw && *rw ? *rw : 0x00007ffffffffff8ull;
  d->swift_bits = 1u | (sw && *sw ? *sw : 2u);
  d->ptr_mask = m->ptr_mask;
}

/* A fault-free read of our own memory (vm_read_overwrite checks the map). */
static int read_mem(void *ctx, uint64_t addr, void *out, size_t n) {
  (void)ctx;
#if defined(__APPLE__)
  vm_size_t got = 0;
  return vm_read_overwrite(mach_task_self(), (vm_address_t)addr, (vm_size_t)n,
                           (vm_address_t)(uintptr_t)out, &got) != KERN_SUCCESS ||
         got != n;
#else
  (void)addr, (void)out, (void)n;
  return 1; /* the Apple runtime only exists on Apple systems */
#endif
}

/* Swift stored properties of one class (swift_fields.c), by name. */
#define SWIFT_MAX_FIELDS 256
struct swift_fields {
  uint32_t n;
  struct {
    char name[64];
    uint32_t kind;
  } f[SWIFT_MAX_FIELDS];
};

static int keep_field(void *arg, const char *name, size_t len, uint32_t kind) {
  struct swift_fields *sf = arg;
  if (sf->n >= SWIFT_MAX_FIELDS || len >= sizeof sf->f[0].name) return 0;
  memcpy(sf->f[sf->n].name, name, len);
  sf->f[sf->n].name[len] = 0;
  sf->f[sf->n].kind = kind;
  sf->n++;
  return 0;
}

static uint32_t swift_kind(const struct swift_fields *sf, const char *name) {
  for (uint32_t i = 0; sf && name && i < sf->n; i++)
    if (!strcmp(sf->f[i].name, name)) return sf->f[i].kind;
  return 0;
}

static int add_one(struct hg_objc_table *t, const struct rt *r, objc_cls cls, int meta) {
  const char *name = r->class_name(cls);
  objc_cls sup = r->superclass(cls);
  struct hg_objc_ro ro = {0, 0, 0, 0};
  int have_ro = r->flavor == HG_OBJC_APPLE && !meta &&
                _hg_objc_class_data((uint64_t)(uintptr_t)cls, &r->data, read_mem, NULL, &ro) == 0;
  char readable[256];
  if (have_ro && ro.swift) name = _hg_swift_readable_name(name, readable, sizeof readable);
  size_t size = r->instance_size(cls);
  uint32_t ci = _hg_objc_add_class(t, (uint64_t)(uintptr_t)cls, name, size, meta,
                                   (uint64_t)(uintptr_t)sup);
  if (ci == HG_OBJC_NONE) return HG_ENOMEM;
  if (have_ro && ro.swift) _hg_objc_class_at(t, ci)->kind = HG_CLASS_SWIFT;
  if (meta) return 0; /* metaclass ivars describe class objects: not needed */
  unsigned n = 0;
  objc_ivar *iv = r->copy_ivars(cls, &n);
  if (!iv) return 0;
  const uint8_t *strong = r->strong_layout ? r->strong_layout(cls) : NULL;
  const uint8_t *weak = r->weak_layout ? r->weak_layout(cls) : NULL;
  /* ARC layouts start at the class's word_align(instanceStart) (objc4
   * alignedInstanceStart), from the class data when it checks out */
  uint64_t first = UINT64_MAX;
  for (unsigned i = 0; i < n; i++) {
    ptrdiff_t off = r->ivar_offset(iv[i]);
    if (off >= 0 && (uint64_t)off < first) first = (uint64_t)off;
  }
  uint64_t start = _hg_objc_layout_start(&ro, have_ro, size, first);
  /* Swift: empty ivar types, no layouts; the field records say what is a
   * reference (static: add_one never nests, one capture at a time) */
  static struct swift_fields sf;
  sf.n = 0;
  int swift = have_ro && ro.swift &&
              _hg_swift_fields((uint64_t)(uintptr_t)cls, r->data.ptr_mask, read_mem, NULL,
                               keep_field, &sf) > 0;
  int rc = 0;
  for (unsigned i = 0; i < n && !rc; i++) {
    ptrdiff_t off = r->ivar_offset(iv[i]);
    if (off < 0) continue;
    const char *type = r->ivar_type(iv[i]);
    const char *iname = r->ivar_name(iv[i]);
    uint32_t kind = _hg_objc_ivar_kind(type, (uint64_t)off, start, strong, weak);
    if (!kind && swift && (!type || !*type)) kind = swift_kind(&sf, iname);
    rc = _hg_objc_add_ivar(t, ci, iname, (uint64_t)off, type, kind);
  }
  free(iv);
  return rc;
}

#define MAX_CLASSES (1u << 22)

int _hg_objc_runtime_load(struct hg_objc_table *t, struct hg_scratch *s) {
  struct rt r;
  int rc = resolve(&r);
  if (rc) return rc;
  objc_cls *list = NULL;
  unsigned n = 0;
  if (r.flavor == HG_OBJC_GNU) {
    int want = r.get_class_list(NULL, 0);
    if (want <= 0) return HG_ENOTFOUND;
    if ((unsigned)want > MAX_CLASSES) want = (int)MAX_CLASSES;
    list = malloc((size_t)want * sizeof *list);
    if (!list) return HG_ENOMEM;
    int got = r.get_class_list(list, want);
    n = got < 0 ? 0 : got > want ? (unsigned)want : (unsigned)got;
  } else {
    list = r.copy_class_list(&n);
    if (!list) return HG_ENOTFOUND;
    if (n > MAX_CLASSES) n = MAX_CLASSES;
  }
  /* Bounds: a class and its metaclass each, 64 ivars per class on
   * average, 48 bytes of names per ivar; only touched pages count. */
  uint64_t max_ivars = 64ull * n + 4096;
  rc = _hg_objc_table_init(t, s, 2 * n + 16, (uint32_t)(max_ivars < (1u << 26) ? max_ivars : (1u << 26)),
                           (size_t)(max_ivars * 48 < (1ull << 30) ? max_ivars * 48 : (1ull << 30)));
  if (rc) {
    free(list);
    return rc;
  }
  if (r.flavor == HG_OBJC_GNU) _hg_objc_isa_plain(&t->isa); else apple_isa(&t->isa, &r.data);
  for (unsigned i = 0; i < n && !rc; i++) {
    objc_cls cls = list[i];
    if (!cls || (r.is_meta && r.is_meta(cls))) continue;
    rc = add_one(t, &r, cls, 0);
    objc_cls meta = r.flavor == HG_OBJC_GNU ? r.meta_by_name(r.class_name(cls)) : r.object_class(cls);
    if (!rc && meta && meta != cls) rc = add_one(t, &r, meta, 1);
  }
  free(list);
  if (rc == HG_ENOMEM) rc = 0; /* keep what fits (t->overflow counts the rest) */
  if (rc) return rc;
  return _hg_objc_table_finish(t);
}
