/*
 * macho_symbols.c — the LC_SYMTAB symbol table: an iterator over the defined
 * symbols (nlist_64 entries of type N_SECT, stabs and undefined/absolute/
 * indirect entries skipped) and the nearest-symbol lookup the CLI's
 * symbolizer is built on (tools/symbolize.c).
 *
 * Every entry is checked before use: its string index must fall inside the
 * string table and the name must end there; its section number must name a
 * section of the image. A bad entry ends the walk with HG_EFORMAT and the
 * file offset of the entry. The address is not required to lie in the
 * section: linkers put markers such as __mh_execute_header (section 1, at the
 * header) outside it; lookups only match symbols inside the section.
 * Nothing here allocates.
 */
#include "heapgraph.h"
#include "machoparse/macho_internal.h"

#define NLIST64_SIZE 16u
#define N_STAB 0xe0u
#define N_TYPE 0x0eu
#define N_SECT 0x0eu

void macho_symbols_begin(struct macho_symbol_iter *it, const struct macho_image *img) {
  it->img = img;
  it->next = 0;
  it->err.code = 0;
  it->err.offset = 0;
  it->err.message[0] = 0;
}

int macho_symbols_next(struct macho_symbol_iter *it, struct macho_symbol *out) {
  const struct macho_image *img = it->img;
  if (it->err.code) return it->err.code;
  const uint8_t *strs = img->symtab_strs.size ? macho_bytes(img, img->symtab_strs.off, img->symtab_strs.size) : NULL;
  while (it->next < img->nsyms) {
    uint32_t i = it->next++;
    uint64_t at = (uint64_t)img->symtab_syms.off + (uint64_t)i * NLIST64_SIZE;
    const uint8_t *p = i < img->symtab_syms.size / NLIST64_SIZE ? macho_bytes(img, at, NLIST64_SIZE) : NULL;
    uint64_t where = (img->loaded ? 0 : img->slice_off) + at;
    if (!p) {
      it->next = img->nsyms;
      return macho_fail(&it->err, HG_ETRUNCATED, where, "symbol %u outside the symbol table", i);
    }
    uint32_t strx = macho_rd32(p);
    uint8_t type = p[4], sect = p[5];
    uint64_t value = macho_rd64(p + 8);
    if ((type & N_STAB) || (type & N_TYPE) != N_SECT) continue;
    long len = strs ? macho_strlen(strs, strx, img->symtab_strs.size) : -1;
    if (len < 0) {
      it->next = img->nsyms;
      return macho_fail(&it->err, HG_EFORMAT, where, "symbol %u: name index %u outside the string table", i,
                        strx);
    }
    if (sect == 0 || sect > img->section_count) {
      it->next = img->nsyms;
      return macho_fail(&it->err, HG_EFORMAT, where, "symbol %u: section %u of %u", i, sect,
                        img->section_count);
    }
    out->name = (const char *)strs + strx;
    out->addr = value;
    out->section = sect - 1u;
    out->type = type;
    out->desc = macho_rd16(p + 6);
    return 1;
  }
  return 0;
}

int macho_symbol_at(const struct macho_image *img, uint64_t vmaddr, struct macho_symbol *out,
                    struct macho_error *err) {
  const struct macho_segment *seg = macho_segment_at(img, vmaddr);
  struct macho_section in;
  if (!seg || macho_section_at(img, seg->index, vmaddr, &in)) return HG_ENOTFOUND;
  struct macho_symbol_iter it;
  struct macho_symbol s;
  int found = 0, rc;
  macho_symbols_begin(&it, img);
  while ((rc = macho_symbols_next(&it, &s)) > 0) {
    if (s.addr > vmaddr || !*s.name) continue;
    struct macho_section ss;
    if (macho_section_get(img, s.section, &ss) || ss.addr != in.addr || ss.segment != in.segment ||
        s.addr < ss.addr)
      continue;
    if (!found || s.addr > out->addr) *out = s;
    found = 1;
  }
  if (rc < 0) {
    if (err) *err = it.err;
    return rc;
  }
  return found ? 0 : HG_ENOTFOUND;
}
