/*
 * macho_typeinfo.c — C++ type_info discovery from fixups: every bind to one
 * of the __cxxabiv1 type_info vtables (class, si_class, vmi_class, pointer,
 * function) with addend 16 marks a type_info object at the bind's location;
 * its second word is the name pointer (bit 63 = Apple non-unique RTTI),
 * resolved to the mangled name without "_Z".
 *
 * This is the set the Darwin backend hands to cxxabi/ for the process.
 * Never allocates; works on any image type (executable, dylib, bundle).
 */
#include <string.h>

#include "heapgraph.h"
#include "machoparse/macho_internal.h"

static const char *const vtables[] = {
    "__ZTVN10__cxxabiv117__class_type_infoE",    "__ZTVN10__cxxabiv120__si_class_type_infoE",
    "__ZTVN10__cxxabiv121__vmi_class_type_infoE", "__ZTVN10__cxxabiv119__pointer_type_infoE",
    "__ZTVN10__cxxabiv120__function_type_infoE"};

int macho_typeinfo_vtable_kind(const char *symbol) {
  if (!symbol || strncmp(symbol, "__ZTVN10__cxxabiv1", 18)) return -1;
  for (int i = 0; i < (int)(sizeof vtables / sizeof vtables[0]); i++)
    if (!strcmp(symbol, vtables[i])) return i;
  return -1;
}

void macho_typeinfo_begin(struct macho_typeinfo_iter *it, const struct macho_image *img) {
  memset(&it->err, 0, sizeof it->err);
  macho_fixups_begin(&it->fx, img, MACHO_SRC_BIND | MACHO_SRC_CHAINED);
}

int macho_typeinfo_next(struct macho_typeinfo_iter *it, struct macho_typeinfo *out) {
  struct macho_fixup f;
  const struct macho_image *img = it->fx.img;
  for (;;) {
    int rc = macho_fixups_next(&it->fx, &f);
    if (rc < 0) {
      it->err = it->fx.err;
      return rc;
    }
    if (rc == 0) return 0;
    if (f.kind != MACHO_FIXUP_BIND || f.addend != 16) continue;
    int kind = macho_typeinfo_vtable_kind(f.symbol);
    if (kind < 0) continue;
    memset(out, 0, sizeof *out);
    out->vmaddr = f.vmaddr;
    out->kind = (uint32_t)kind;
    uint64_t target = 0, value = 0;
    struct macho_error e;
    if (f.vmaddr > UINT64_MAX - 8) return 1;
    int r = macho_read_pointer(img, f.vmaddr + 8, &target, &value, &e);
    if (r == 0) {
      out->non_unique = (int)(value >> 63);
      out->name_addr = target;
      out->name = macho_string_at(img, target);
    } else if (img->has_chained && !img->loaded) {
      /* The name is a weak-def symbol bound by name: "__ZTS" + mangled. */
      struct macho_fixup nf;
      if (macho_chained_fixup_at(img, f.vmaddr + 8, &nf, &e) == 0 && nf.kind == MACHO_FIXUP_BIND &&
          nf.addend == 0 && !strncmp(nf.symbol, "__ZTS", 5)) {
        out->name_symbol = nf.symbol;
        out->name = nf.symbol + 5;
      }
    }
    return 1;
  }
}
