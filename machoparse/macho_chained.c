/*
 * macho_chained.c — LC_DYLD_CHAINED_FIXUPS: header, imports (IMPORT, ADDEND,
 * ADDEND64), starts in image / segment, page starts (incl. MULTI), and the
 * pointer formats 64, 64_OFFSET, ARM64E, ARM64E_USERLAND, ARM64E_USERLAND24
 * (auth and plain), walked as a pull iterator.
 *
 * Never allocates. Chains only move forward and must stay inside their page
 * and the segment's file bytes; total chain steps are capped by the image's
 * file-backed size, so cyclic or overlapping starts cannot run away.
 */
#include <string.h>

#include "heapgraph.h"
#include "machoparse/macho_format.h"
#include "machoparse/macho_internal.h"

static uint64_t cfoff(const struct macho_image *img, uint64_t off) {
  return img->loaded ? off : img->slice_off + off;
}

static int64_t sext(uint64_t v, unsigned bits) {
  uint64_t m = (uint64_t)1 << (bits - 1);
  v &= ((uint64_t)1 << bits) - 1;
  return (int64_t)((v ^ m) - m);
}

static int format_ok(uint32_t f) {
  return f == CHAINED_PTR_64 || f == CHAINED_PTR_64_OFFSET || f == CHAINED_PTR_ARM64E ||
         f == CHAINED_PTR_ARM64E_USERLAND || f == CHAINED_PTR_ARM64E_USERLAND24;
}

int macho_chained_decode(uint32_t format, uint64_t raw, uint64_t base_vmaddr,
                         struct macho_fixup *out, uint64_t *next) {
  out->raw = raw;
  out->pointer_format = format;
  out->flags = 0;
  out->addend = 0;
  out->target = 0;
  out->ordinal = 0;
  out->type = 1;
  if (format == CHAINED_PTR_64 || format == CHAINED_PTR_64_OFFSET) {
    *next = ((raw >> 51) & 0xfff) * 4;
    if (raw >> 63) {
      out->kind = MACHO_FIXUP_BIND;
      out->ordinal = (int64_t)(raw & 0xffffff);
      out->addend = (int64_t)((raw >> 24) & 0xff);
    } else {
      uint64_t t = raw & 0xfffffffffull, high8 = (raw >> 36) & 0xff;
      if (format == CHAINED_PTR_64_OFFSET) t += base_vmaddr;
      out->kind = MACHO_FIXUP_REBASE;
      out->target = t | (high8 << 56);
    }
    return 0;
  }
  if (format == CHAINED_PTR_ARM64E || format == CHAINED_PTR_ARM64E_USERLAND ||
      format == CHAINED_PTR_ARM64E_USERLAND24) {
    int bind = (raw >> 62) & 1, auth = (int)(raw >> 63);
    uint64_t ord_mask = format == CHAINED_PTR_ARM64E_USERLAND24 ? 0xffffff : 0xffff;
    *next = ((raw >> 51) & 0x7ff) * 8;
    out->kind = bind ? MACHO_FIXUP_BIND : MACHO_FIXUP_REBASE;
    if (auth) {
      out->flags |= MACHO_FIXUP_AUTH;
      out->diversity = (uint16_t)((raw >> 32) & 0xffff);
      if ((raw >> 48) & 1) out->flags |= MACHO_FIXUP_ADDR_DIV;
      out->key = (uint8_t)((raw >> 49) & 3);
      if (bind) out->ordinal = (int64_t)(raw & ord_mask);
      else out->target = base_vmaddr + (raw & 0xffffffffull);
    } else if (bind) {
      out->ordinal = (int64_t)(raw & ord_mask);
      out->addend = sext(raw >> 32, 19);
    } else {
      uint64_t t = raw & 0x7ffffffffffull, high8 = (raw >> 43) & 0xff;
      if (format != CHAINED_PTR_ARM64E) t += base_vmaddr;
      out->target = t | (high8 << 56);
    }
    return 0;
  }
  *next = 0;
  return HG_EUNSUPPORTED;
}

/* ---- Header and starts ---- */

static int fail(struct macho_fixup_iter *it, int code, uint64_t off, const char *what) {
  return macho_fail(&it->err, code, cfoff(it->img, off), "chained fixups: %s", what);
}

/* Validates the header; fills the blob fields of it->ch. */
static int read_header(struct macho_fixup_iter *it) {
  struct macho_chained_state *ch = &it->ch;
  const struct macho_image *img = it->img;
  ch->blob = img->chained.off;
  ch->blob_size = img->chained.size;
  const uint8_t *h = macho_bytes(img, ch->blob, ch->blob_size);
  if (!h || ch->blob_size < CHAINED_HEADER_SIZE)
    return fail(it, HG_EFORMAT, ch->blob, "header truncated");
  uint32_t version = macho_rd32(h);
  ch->starts = macho_rd32(h + 4);
  ch->imports = macho_rd32(h + 8);
  ch->symbols = macho_rd32(h + 12);
  ch->imports_count = macho_rd32(h + 16);
  ch->imports_format = macho_rd32(h + 20);
  uint32_t symfmt = macho_rd32(h + 24);
  if (version != 0) return fail(it, HG_EUNSUPPORTED, ch->blob, "unknown fixups_version");
  if (symfmt != CHAINED_SYMBOLS_PLAIN)
    return fail(it, HG_EUNSUPPORTED, ch->blob + 24, "compressed symbol table not supported");
  uint32_t esz = ch->imports_format == CHAINED_IMPORT ? 4 : ch->imports_format == CHAINED_IMPORT_ADDEND ? 8
               : ch->imports_format == CHAINED_IMPORT_ADDEND64 ? 16 : 0;
  if (!esz) return fail(it, HG_EFORMAT, ch->blob + 20, "unknown imports_format");
  if (ch->starts > ch->blob_size - 4 || ch->imports > ch->blob_size || ch->symbols > ch->blob_size)
    return fail(it, HG_EFORMAT, ch->blob + 4, "table offset past the end of the blob");
  if (ch->imports_count > (ch->blob_size - ch->imports) / esz)
    return fail(it, HG_EFORMAT, ch->blob + 16, "imports run past the end of the blob");
  ch->seg_count = macho_rd32(h + ch->starts);
  if (ch->seg_count > (ch->blob_size - ch->starts - 4) / 4)
    return fail(it, HG_EFORMAT, ch->blob + ch->starts, "seg_count runs past the end of the blob");
  if (ch->seg_count > img->segment_count)
    return fail(it, HG_EFORMAT, ch->blob + ch->starts, "seg_count exceeds the image's segments");
  return 0;
}

/* Loads starts_in_segment of segment ch->seg_i; 1 if it has fixups. */
static int load_segment(struct macho_fixup_iter *it) {
  struct macho_chained_state *ch = &it->ch;
  const struct macho_image *img = it->img;
  const uint8_t *h = macho_bytes(img, ch->blob, ch->blob_size);
  uint32_t at = ch->starts + 4 + 4 * ch->seg_i;
  uint32_t info = macho_rd32(h + at);
  if (info == 0) return 0;
  if (info > ch->blob_size - ch->starts || ch->blob_size - ch->starts - info < CHAINED_STARTS_SEG_HEADER)
    return fail(it, HG_EFORMAT, ch->blob + at, "seg_info_offset past the end of the blob");
  uint32_t s = ch->starts + info;
  const uint8_t *p = h + s;
  uint32_t size = macho_rd32(p);
  if (size < CHAINED_STARTS_SEG_HEADER || size > ch->blob_size - s)
    return fail(it, HG_EFORMAT, ch->blob + s, "starts_in_segment size out of range");
  ch->seg_starts = s;
  ch->seg_info_size = size;
  ch->page_size = macho_rd16(p + 4);
  ch->pointer_format = macho_rd16(p + 6);
  ch->seg_vmoff = macho_rd64(p + 8);
  ch->page_count = macho_rd16(p + 20);
  if (!format_ok(ch->pointer_format))
    return macho_fail(&it->err, HG_EUNSUPPORTED, cfoff(img, ch->blob + s + 6),
                      "chained fixups: unsupported pointer_format %u", ch->pointer_format);
  if (ch->page_size == 0 || (ch->page_size & (ch->page_size - 1)))
    return fail(it, HG_EFORMAT, ch->blob + s + 4, "page_size is not a power of two");
  if ((uint32_t)ch->page_count > (size - CHAINED_STARTS_SEG_HEADER) / 2)
    return fail(it, HG_EFORMAT, ch->blob + s + 20, "page_count runs past starts_in_segment");
  const struct macho_segment *seg = &img->segments[ch->seg_i];
  if (ch->seg_vmoff != seg->vmaddr - img->base_vmaddr)
    return fail(it, HG_EFORMAT, ch->blob + s + 8, "segment_offset does not match the segment");
  ch->stride = (ch->pointer_format == CHAINED_PTR_64 || ch->pointer_format == CHAINED_PTR_64_OFFSET) ? 4 : 8;
  ch->seg_index = ch->seg_i;
  ch->page_i = 0;
  ch->multi = 0;
  return 1;
}

static uint16_t page_entry(const struct macho_fixup_iter *it, uint32_t i) {
  const uint8_t *h = macho_bytes(it->img, it->ch.blob, it->ch.blob_size);
  return macho_rd16(h + it->ch.seg_starts + CHAINED_STARTS_SEG_HEADER + 2 * i);
}

/* Begins a chain at page offset `off` of page ch->page_i. */
static int begin_chain(struct macho_fixup_iter *it, uint32_t off) {
  struct macho_chained_state *ch = &it->ch;
  if (off >= ch->page_size)
    return fail(it, HG_EFORMAT, ch->blob + ch->seg_starts, "page start past the page");
  uint64_t page = ch->seg_vmoff + (uint64_t)ch->page_i * ch->page_size;
  ch->loc = page + off;
  ch->page_end = page + ch->page_size;
  ch->in_chain = 1;
  return 0;
}

/* Positions at the next chain start: 1 found, 0 no more, <0 error. */
static int next_start(struct macho_fixup_iter *it) {
  struct macho_chained_state *ch = &it->ch;
  for (;;) {
    if (ch->multi) {
      uint32_t entries = (ch->seg_info_size - CHAINED_STARTS_SEG_HEADER) / 2;
      if (ch->multi_i >= entries)
        return fail(it, HG_EFORMAT, ch->blob + ch->seg_starts, "MULTI page starts run past the array");
      uint16_t v = page_entry(it, ch->multi_i++);
      if (v & CHAINED_PAGE_LAST) ch->multi = 0;
      int rc = begin_chain(it, v & ~CHAINED_PAGE_LAST);
      if (rc) return rc;
      if (!ch->multi) ch->page_i++;
      return 1;
    }
    if (ch->seg_i < ch->seg_count && ch->seg_starts && ch->page_i < ch->page_count) {
      uint16_t v = page_entry(it, ch->page_i);
      if (v == CHAINED_PAGE_NONE) { ch->page_i++; continue; }
      if (v & CHAINED_PAGE_MULTI) {
        ch->multi = 1;
        ch->multi_i = v & ~CHAINED_PAGE_MULTI;
        continue;
      }
      int rc = begin_chain(it, v);
      if (rc) return rc;
      ch->page_i++;
      return 1;
    }
    /* Next segment. */
    if (ch->seg_starts) ch->seg_i++;
    ch->seg_starts = 0;
    while (ch->seg_i < ch->seg_count) {
      int rc = load_segment(it);
      if (rc < 0) return rc;
      if (rc == 1) break;
      ch->seg_i++;
    }
    if (ch->seg_i >= ch->seg_count) return 0;
  }
}

int macho_chained_start(struct macho_fixup_iter *it) {
  memset(&it->ch, 0, sizeof it->ch);
  it->op.budget = macho_fixup_budget(it->img);
  if (!it->img->has_chained || it->img->chained.size == 0) {
    it->ch.done = 1;
    return 0;
  }
  if (it->img->loaded)
    return macho_fail(&it->err, HG_EUNSUPPORTED, it->img->chained.off,
                      "chained fixups of a loaded image were consumed by dyld; open the file instead");
  return read_header(it);
}

/* Resolves import `index` into symbol, ordinal, addend and weak flag. */
static int import_at(struct macho_fixup_iter *it, uint64_t index, struct macho_fixup *out) {
  struct macho_chained_state *ch = &it->ch;
  const struct macho_image *img = it->img;
  if (index >= ch->imports_count)
    return macho_fail(&it->err, HG_EFORMAT, out->file_off,
                      "chained bind import index %llu >= imports_count %u", (unsigned long long)index,
                      ch->imports_count);
  const uint8_t *h = macho_bytes(img, ch->blob, ch->blob_size);
  uint32_t name_off;
  int64_t ordinal, addend = 0;
  int weak;
  if (ch->imports_format == CHAINED_IMPORT_ADDEND64) {
    const uint8_t *e = h + ch->imports + 16 * index;
    uint64_t v = macho_rd64(e);
    ordinal = (int64_t)(v & 0xffff);
    if (ordinal > 0xfff0) ordinal = (int16_t)ordinal;
    weak = (v >> 16) & 1;
    name_off = (uint32_t)(v >> 32);
    addend = (int64_t)macho_rd64(e + 8);
  } else {
    uint32_t esz = ch->imports_format == CHAINED_IMPORT ? 4 : 8;
    const uint8_t *e = h + ch->imports + esz * index;
    uint32_t v = macho_rd32(e);
    ordinal = v & 0xff;
    if (ordinal > 0xf0) ordinal = (int8_t)ordinal;
    weak = (v >> 8) & 1;
    name_off = v >> 9;
    if (esz == 8) addend = (int32_t)macho_rd32(e + 4);
  }
  uint32_t eat = ch->blob + ch->imports;
  if (ordinal > (int64_t)img->dylib_count || ordinal < -3)
    return macho_fail(&it->err, HG_EFORMAT, cfoff(img, eat), "chained import %llu: bad library ordinal %lld",
                      (unsigned long long)index, (long long)ordinal);
  if (name_off >= ch->blob_size - ch->symbols ||
      macho_strlen(h, ch->symbols + name_off, ch->blob_size) < 0)
    return macho_fail(&it->err, HG_EFORMAT, cfoff(img, eat), "chained import %llu: bad name offset %u",
                      (unsigned long long)index, name_off);
  out->symbol = (const char *)h + ch->symbols + name_off;
  out->ordinal = ordinal;
  out->addend = (int64_t)((uint64_t)out->addend + (uint64_t)addend);
  if (weak) out->flags |= MACHO_FIXUP_WEAK_IMPORT;
  return 0;
}

int macho_chained_next(struct macho_fixup_iter *it, struct macho_fixup *out) {
  struct macho_chained_state *ch = &it->ch;
  const struct macho_image *img = it->img;
  if (ch->done) return 0;
  if (!ch->in_chain) {
    int rc = next_start(it);
    if (rc <= 0) {
      ch->done = 1;
      return rc;
    }
  }
  memset(out, 0, sizeof *out);
  uint64_t vmaddr = img->base_vmaddr + ch->loc;
  int64_t off = macho_vm_to_off(img, ch->seg_index, vmaddr, 8);
  const uint8_t *q = off < 0 ? NULL : macho_bytes(img, (uint64_t)off, 8);
  if (!q || ch->loc + 8 > ch->page_end)
    return macho_fail(&it->err, HG_EFORMAT, cfoff(img, ch->blob + ch->seg_starts),
                      "chain entry at vmaddr 0x%llx is outside its page or the segment's file bytes",
                      (unsigned long long)vmaddr);
  if (it->op.budget-- == 0)
    return fail(it, HG_ELIMIT, ch->blob + ch->seg_starts, "more chain entries than the image can hold");
  uint64_t next = 0;
  macho_chained_decode(ch->pointer_format, macho_rd64(q), img->base_vmaddr, out, &next);
  out->segment = ch->seg_index;
  out->vmaddr = vmaddr;
  out->file_off = (uint64_t)off + (img->loaded ? 0 : img->slice_off);
  if (next == 0) ch->in_chain = 0;
  else ch->loc += next;
  if (out->kind == MACHO_FIXUP_BIND) {
    int rc = import_at(it, (uint64_t)out->ordinal, out);
    if (rc) return rc;
  }
  return 1;
}

int macho_chained_fixup_at(const struct macho_image *img, uint64_t vmaddr, struct macho_fixup *out,
                           struct macho_error *err) {
  struct macho_fixup_iter it;
  memset(&it, 0, sizeof it);
  memset(out, 0, sizeof *out);
  it.img = img;
  const struct macho_segment *seg = macho_segment_at(img, vmaddr);
  int64_t off = seg ? macho_vm_to_off(img, seg->index, vmaddr, 8) : -1;
  const uint8_t *q = off < 0 ? NULL : macho_bytes(img, (uint64_t)off, 8);
  if (!q)
    return macho_fail(err, HG_ENOTFOUND, 0, "vmaddr 0x%llx is not in the image's file bytes",
                      (unsigned long long)vmaddr);
  int rc = macho_chained_start(&it);
  if (!rc && !it.ch.done && seg->index < it.ch.seg_count) {
    it.ch.seg_i = seg->index;
    rc = load_segment(&it);
    if (rc == 1) {
      uint64_t next;
      macho_chained_decode(it.ch.pointer_format, macho_rd64(q), img->base_vmaddr, out, &next);
      out->vmaddr = vmaddr;
      out->segment = seg->index;
      out->file_off = (uint64_t)off + (img->loaded ? 0 : img->slice_off);
      rc = out->kind == MACHO_FIXUP_BIND ? import_at(&it, (uint64_t)out->ordinal, out) : 0;
    } else if (rc == 0) {
      rc = macho_fail(&it.err, HG_ENOTFOUND, (uint64_t)off, "segment %s has no chained fixups", seg->name);
    }
  } else if (!rc) {
    rc = macho_fail(&it.err, HG_ENOTFOUND, (uint64_t)off, "no chained fixups for vmaddr 0x%llx",
                    (unsigned long long)vmaddr);
  }
  if (rc && err) *err = it.err;
  return rc;
}
