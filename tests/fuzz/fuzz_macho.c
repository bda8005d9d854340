/*
 * fuzz_macho.c — libFuzzer target for machoparse: opens the input as a thin
 * or fat Mach-O (each arch name, then the default slice), walks every fixup
 * table, the type_info iterator, section/dylib lookups and short names, the
 * symbol table and the nearest-symbol lookup the symbolizer uses.
 * Any crash, hang, sanitizer report or over-read is a bug in machoparse/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "machoparse/macho.h"

static void walk(const struct macho_image *img) {
  struct macho_fixup_iter it;
  struct macho_fixup f;
  volatile uint64_t sink = 0;
  char buf[64];
  macho_fixups_begin(&it, img, MACHO_SRC_ALL);
  while (macho_fixups_next(&it, &f) > 0) {
    struct macho_section s;
    sink += f.vmaddr + (uint64_t)f.addend;
    if (f.symbol) sink += strlen(f.symbol);
    if (f.segment != UINT32_MAX && macho_section_at(img, f.segment, f.vmaddr, &s) == 0) sink += s.size;
    if (f.ordinal > 0 && macho_dylib_name(img, f.ordinal))
      sink += strlen(macho_dylib_short_name(macho_dylib_name(img, f.ordinal), buf, sizeof buf));
  }
  struct macho_typeinfo_iter ti;
  struct macho_typeinfo t;
  macho_typeinfo_begin(&ti, img);
  while (macho_typeinfo_next(&ti, &t) > 0)
    if (t.name) sink += strlen(t.name);
  for (uint32_t i = 0; i < img->section_count; i++) {
    struct macho_section s;
    if (macho_section_get(img, i, &s) == 0) sink += s.addr;
  }
  struct macho_symbol_iter si;
  struct macho_symbol sym;
  uint64_t probe[4] = {0, 0, 0, 0};
  uint32_t n = 0;
  macho_symbols_begin(&si, img);
  while (macho_symbols_next(&si, &sym) > 0) {
    sink += strlen(sym.name) + sym.section;
    if (n < 4) probe[n++] = sym.addr + 1; /* inside the first symbols */
  }
  for (uint32_t i = 0; i < n && i < 2; i++) { /* the lookup is a linear walk: a few only */
    struct macho_error err;
    if (macho_symbol_at(img, probe[i], &sym, &err) == 0) sink += strlen(sym.name);
  }
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const archs[] = {NULL, "arm64", "arm64e", "x86_64"};
  struct macho_image *img = malloc(sizeof *img);
  if (!img) return 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
    if (macho_open_file(img, data, size, archs[i]) == 0) walk(img);
    if (i == 0 && !(size >= 4 && data[0] == 0xca && data[1] == 0xfe)) break;
  }
  free(img);
  return 0;
}
