/*
 * macho_image.c — opening a Mach-O image: fat slice selection, the mach
 * header, every load command machoparse understands, and the address/offset
 * lookups the fixup walkers build on.
 *
 * Never allocates, never trusts a count or offset before checking it against
 * the slice (file mode) or the load commands / segments (loaded mode).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "heapgraph.h"
#include "machoparse/macho_format.h"
#include "machoparse/macho_internal.h"

int macho_fail(struct macho_error *err, int code, uint64_t offset, const char *fmt, ...) {
  if (!err) return code;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof err->message)
    snprintf(err->message + n, sizeof err->message - (size_t)n, " at offset 0x%llx",
             (unsigned long long)offset);
  err->code = code;
  err->offset = offset;
  return code;
}

/* File offset (for messages) of slice offset `off`. */
static uint64_t foff(const struct macho_image *img, uint64_t off) {
  return img->loaded ? off : img->slice_off + off;
}

const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype) {
  uint32_t sub = cpusubtype & ~CPU_SUBTYPE_MASK;
  if (cputype == CPU_TYPE_ARM64) return sub == CPU_SUBTYPE_ARM64E ? "arm64e" : "arm64";
  if (cputype == CPU_TYPE_X86_64) return sub == CPU_SUBTYPE_X86_64_H ? "x86_64h" : "x86_64";
  return NULL;
}

/* ---- Byte access ---- */

const uint8_t *macho_bytes(const struct macho_image *img, uint64_t off, uint64_t size) {
  if (off > UINT64_MAX - size) return NULL;
  if (!img->loaded) {
    if (off + size > img->slice_size) return NULL;
    return img->header + off;
  }
  if (off + size <= MH_HEADER64_SIZE + (uint64_t)img->sizeofcmds) return img->header + off;
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *s = &img->segments[i];
    if (off >= s->fileoff && off + size <= s->fileoff + s->filesize && s->filesize)
      return img->header + (s->vmaddr - img->base_vmaddr) + (off - s->fileoff);
  }
  return NULL;
}

const struct macho_segment *macho_segment_at(const struct macho_image *img, uint64_t vmaddr) {
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *s = &img->segments[i];
    if (vmaddr >= s->vmaddr && vmaddr - s->vmaddr < s->vmsize) return s;
  }
  return NULL;
}

int64_t macho_vm_to_off(const struct macho_image *img, uint32_t seg, uint64_t vmaddr, uint64_t len) {
  if (seg >= img->segment_count) return -1;
  const struct macho_segment *s = &img->segments[seg];
  if (vmaddr < s->vmaddr) return -1;
  uint64_t d = vmaddr - s->vmaddr;
  if (d > s->filesize || len > s->filesize - d) return -1;
  return (int64_t)(s->fileoff + d);
}

static void copy_name16(char dst[17], const uint8_t *src) {
  memcpy(dst, src, 16);
  dst[16] = 0;
}

static int read_section(const struct macho_image *img, const struct macho_segment *s, uint32_t k,
                        struct macho_section *out) {
  const uint8_t *p = macho_bytes(img, (uint64_t)s->sect_hdr + (uint64_t)k * SECTION64_SIZE,
                                 SECTION64_SIZE);
  if (!p) return HG_EFORMAT;
  copy_name16(out->sectname, p);
  copy_name16(out->segname, p + 16);
  out->addr = macho_rd64(p + 32);
  out->size = macho_rd64(p + 40);
  out->offset = macho_rd32(p + 48);
  out->flags = macho_rd32(p + 64);
  out->segment = s->index;
  return 0;
}

int macho_section_get(const struct macho_image *img, uint32_t index, struct macho_section *out) {
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *s = &img->segments[i];
    if (index >= s->first_section && index - s->first_section < s->nsects)
      return read_section(img, s, index - s->first_section, out);
  }
  return HG_ENOTFOUND;
}

int macho_section_at(const struct macho_image *img, uint32_t seg, uint64_t vmaddr,
                     struct macho_section *out) {
  if (seg >= img->segment_count) return HG_ENOTFOUND;
  const struct macho_segment *s = &img->segments[seg];
  for (uint32_t k = 0; k < s->nsects; k++) {
    if (read_section(img, s, k, out)) return HG_EFORMAT;
    if (vmaddr >= out->addr && vmaddr - out->addr < out->size) return 0;
  }
  return HG_ENOTFOUND;
}

const char *macho_dylib_name(const struct macho_image *img, int64_t ordinal) {
  if (ordinal < 1 || ordinal > (int64_t)img->dylib_count) return NULL;
  return (const char *)macho_bytes(img, img->dylib_name_off[ordinal - 1], 1);
}

const char *macho_string_at(const struct macho_image *img, uint64_t vmaddr) {
  const struct macho_segment *s = macho_segment_at(img, vmaddr);
  if (!s) return NULL;
  int64_t off = macho_vm_to_off(img, s->index, vmaddr, 1);
  if (off < 0) return NULL;
  uint64_t avail = s->fileoff + s->filesize - (uint64_t)off;
  const uint8_t *p = macho_bytes(img, (uint64_t)off, avail);
  if (!p || !memchr(p, 0, avail)) return NULL;
  return (const char *)p;
}

uint64_t macho_fixup_budget(const struct macho_image *img) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < img->segment_count; i++) total += img->segments[i].filesize / 4;
  return total + 4096;
}

/* ---- Load commands ---- */

static int check_range(struct macho_image *img, uint64_t cmd_off, uint32_t off, uint32_t size,
                       const char *what) {
  if (size == 0) return 0;
  if (!macho_bytes(img, off, size))
    return macho_fail(&img->err, HG_EFORMAT, foff(img, cmd_off),
                      "%s [0x%x, +0x%x) is outside the file", what, off, size);
  return 0;
}

static int parse_segment(struct macho_image *img, const uint8_t *c, uint64_t at, uint32_t cmdsize) {
  if (cmdsize < SEGMENT64_CMD_SIZE)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_SEGMENT_64 too small");
  if (img->segment_count >= MACHO_MAX_SEGMENTS)
    return macho_fail(&img->err, HG_ELIMIT, foff(img, at), "more than %d segments",
                      MACHO_MAX_SEGMENTS);
  struct macho_segment *s = &img->segments[img->segment_count];
  copy_name16(s->name, c + 8);
  s->index = img->segment_count;
  s->vmaddr = macho_rd64(c + 24);
  s->vmsize = macho_rd64(c + 32);
  s->fileoff = macho_rd64(c + 40);
  s->filesize = macho_rd64(c + 48);
  s->maxprot = macho_rd32(c + 56);
  s->initprot = macho_rd32(c + 60);
  s->nsects = macho_rd32(c + 64);
  s->flags = macho_rd32(c + 68);
  s->sect_hdr = (uint32_t)(at + SEGMENT64_CMD_SIZE);
  s->first_section = img->section_count;
  if (s->nsects > (cmdsize - SEGMENT64_CMD_SIZE) / SECTION64_SIZE)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 64),
                      "segment %s: %u sections do not fit its load command", s->name, s->nsects);
  if (s->vmaddr > UINT64_MAX - s->vmsize || s->fileoff > UINT64_MAX - s->filesize)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 24), "segment %s wraps", s->name);
  if (!img->loaded && s->fileoff + s->filesize > img->slice_size)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 40),
                      "segment %s file range [0x%llx, +0x%llx) is past the end (0x%llx)", s->name,
                      (unsigned long long)s->fileoff, (unsigned long long)s->filesize,
                      (unsigned long long)img->slice_size);
  if (s->filesize > s->vmsize)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 48),
                      "segment %s filesize exceeds vmsize", s->name);
  img->section_count += s->nsects;
  img->segment_count++;
  return 0;
}

static int parse_dylib(struct macho_image *img, const uint8_t *c, uint64_t at, uint32_t cmdsize,
                       uint32_t cmd) {
  if (cmdsize < 24)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "dylib command too small");
  uint32_t noff = macho_rd32(c + 8);
  if (noff < 24 || noff >= cmdsize || !memchr(c + noff, 0, cmdsize - noff))
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 8),
                      "dylib name offset %u is not a string inside the command", noff);
  if (cmd == LC_ID_DYLIB) {
    img->install_name = (const char *)(c + noff);
    return 0;
  }
  if (img->dylib_count >= MACHO_MAX_DYLIBS)
    return macho_fail(&img->err, HG_ELIMIT, foff(img, at), "more than %d dylibs",
                      MACHO_MAX_DYLIBS);
  img->dylib_name_off[img->dylib_count++] = (uint32_t)(at + noff);
  return 0;
}

static int linkedit_cmd(struct macho_image *img, const uint8_t *c, uint64_t at, uint32_t cmdsize,
                        struct macho_range *r, const char *what) {
  if (cmdsize < 16)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "%s command too small", what);
  r->off = macho_rd32(c + 8);
  r->size = macho_rd32(c + 12);
  return 0;
}

static int parse_command(struct macho_image *img, const uint8_t *c, uint64_t at, uint32_t cmd,
                         uint32_t cmdsize) {
  switch (cmd) {
  case LC_SEGMENT_64:
    return parse_segment(img, c, at, cmdsize);
  case LC_SEGMENT:
    return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "32-bit LC_SEGMENT in a 64-bit image");
  case LC_UUID:
    if (cmdsize < 24) return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_UUID too small");
    memcpy(img->uuid, c + 8, 16);
    img->has_uuid = 1;
    return 0;
  case LC_BUILD_VERSION:
    if (cmdsize < 24)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_BUILD_VERSION too small");
    img->platform = macho_rd32(c + 8);
    img->minos = macho_rd32(c + 12);
    img->sdk = macho_rd32(c + 16);
    return 0;
  case LC_VERSION_MIN_MACOSX: case LC_VERSION_MIN_IPHONEOS:
  case LC_VERSION_MIN_TVOS: case LC_VERSION_MIN_WATCHOS:
    if (cmdsize < 16)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "version-min command too small");
    img->platform = cmd == LC_VERSION_MIN_MACOSX ? 1 : cmd == LC_VERSION_MIN_IPHONEOS ? 2
                    : cmd == LC_VERSION_MIN_TVOS ? 3 : 4;
    img->minos = macho_rd32(c + 8);
    img->sdk = macho_rd32(c + 12);
    return 0;
  case LC_ID_DYLIB: case LC_LOAD_DYLIB: case LC_LOAD_WEAK_DYLIB: case LC_REEXPORT_DYLIB:
  case LC_LAZY_LOAD_DYLIB: case LC_LOAD_UPWARD_DYLIB:
    return parse_dylib(img, c, at, cmdsize, cmd);
  case LC_SYMTAB:
    if (cmdsize < 24) return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_SYMTAB too small");
    img->symtab_syms.off = macho_rd32(c + 8);
    img->nsyms = macho_rd32(c + 12);
    if (img->nsyms > UINT32_MAX / 16)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 12), "LC_SYMTAB nsyms too large");
    img->symtab_syms.size = img->nsyms * 16;
    img->symtab_strs.off = macho_rd32(c + 16);
    img->symtab_strs.size = macho_rd32(c + 20);
    return 0;
  case LC_DYSYMTAB:
    if (cmdsize < 80) return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_DYSYMTAB too small");
    img->dysymtab_nindirect = macho_rd32(c + 60);
    return 0;
  case LC_DYLD_INFO: case LC_DYLD_INFO_ONLY:
    if (cmdsize < 48)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at), "LC_DYLD_INFO too small");
    img->has_dyld_info = 1;
    img->rebase = (struct macho_range){macho_rd32(c + 8), macho_rd32(c + 12)};
    img->bind = (struct macho_range){macho_rd32(c + 16), macho_rd32(c + 20)};
    img->weak_bind = (struct macho_range){macho_rd32(c + 24), macho_rd32(c + 28)};
    img->lazy_bind = (struct macho_range){macho_rd32(c + 32), macho_rd32(c + 36)};
    img->exports = (struct macho_range){macho_rd32(c + 40), macho_rd32(c + 44)};
    return 0;
  case LC_DYLD_CHAINED_FIXUPS:
    img->has_chained = 1;
    return linkedit_cmd(img, c, at, cmdsize, &img->chained, "LC_DYLD_CHAINED_FIXUPS");
  case LC_DYLD_EXPORTS_TRIE:
    img->has_exports_trie = 1;
    return linkedit_cmd(img, c, at, cmdsize, &img->exports, "LC_DYLD_EXPORTS_TRIE");
  default:
    return 0;
  }
}

/* Second pass: ranges that need the segments (loaded mode) and the base. */
static int finish_image(struct macho_image *img) {
  img->base_vmaddr = 0;
  int found = 0;
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *s = &img->segments[i];
    if (s->fileoff == 0 && s->filesize != 0) {
      img->base_vmaddr = s->vmaddr;
      found = 1;
      break;
    }
  }
  if (!found && img->loaded)
    return macho_fail(&img->err, HG_EFORMAT, 0, "no segment maps the mach header");
  uint64_t at = MH_HEADER64_SIZE;
  struct { struct macho_range *r; const char *what; } t[] = {
      {&img->rebase, "rebase opcodes"},   {&img->bind, "bind opcodes"},
      {&img->weak_bind, "weak-bind opcodes"}, {&img->lazy_bind, "lazy-bind opcodes"},
      {&img->exports, "exports trie"},    {&img->chained, "chained fixups"},
      {&img->symtab_syms, "symbol table"}, {&img->symtab_strs, "string table"}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int rc = check_range(img, at, t[i].r->off, t[i].r->size, t[i].what);
    if (rc) return rc;
  }
  img->arch = macho_arch_name(img->cputype, img->cpusubtype);
  const uint8_t *b = img->bind.size ? macho_bytes(img, img->bind.off, 1) : NULL;
  img->threaded = b && *b == (BIND_OPCODE_THREADED | BIND_SUBOPCODE_THREADED_SET_BIND_ORDINAL_TABLE_SIZE_ULEB);
  return 0;
}

static int parse_header(struct macho_image *img) {
  const uint8_t *h = macho_bytes(img, 0, 4);
  if (!h) return macho_fail(&img->err, HG_ETRUNCATED, foff(img, 0), "file too small for a Mach-O header");
  uint32_t magic = macho_rd32(h);
  if (magic == MH_MAGIC || magic == MH_CIGAM)
    return macho_fail(&img->err, HG_EUNSUPPORTED, foff(img, 0), "32-bit Mach-O is not supported");
  if (magic == MH_CIGAM_64)
    return macho_fail(&img->err, HG_EUNSUPPORTED, foff(img, 0), "big-endian Mach-O is not supported");
  if (magic != MH_MAGIC_64)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, 0), "not a Mach-O file (magic 0x%08x)", magic);
  h = macho_bytes(img, 0, MH_HEADER64_SIZE);
  if (!h) return macho_fail(&img->err, HG_ETRUNCATED, foff(img, 0), "truncated mach header");
  img->cputype = macho_rd32(h + 4);
  img->cpusubtype = macho_rd32(h + 8);
  img->filetype = macho_rd32(h + 12);
  img->ncmds = macho_rd32(h + 16);
  img->sizeofcmds = macho_rd32(h + 20);
  img->flags = macho_rd32(h + 24);
  if (!macho_arch_name(img->cputype, img->cpusubtype))
    return macho_fail(&img->err, HG_EUNSUPPORTED, foff(img, 4), "unsupported cputype 0x%x",
                      img->cputype);
  if (!img->loaded && (uint64_t)img->sizeofcmds > img->slice_size - MH_HEADER64_SIZE)
    return macho_fail(&img->err, HG_EFORMAT, foff(img, 20),
                      "load commands (0x%x bytes) run past the end", img->sizeofcmds);
  uint64_t at = MH_HEADER64_SIZE, end = MH_HEADER64_SIZE + (uint64_t)img->sizeofcmds;
  for (uint32_t i = 0; i < img->ncmds; i++) {
    if (end - at < 8)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at),
                        "load command %u of %u is past sizeofcmds", i, img->ncmds);
    const uint8_t *c = img->header + at;
    uint32_t cmd = macho_rd32(c), cmdsize = macho_rd32(c + 4);
    if (cmdsize < 8 || cmdsize % 4 || cmdsize > end - at)
      return macho_fail(&img->err, HG_EFORMAT, foff(img, at + 4),
                        "load command %u has bad size %u", i, cmdsize);
    int rc = parse_command(img, c, at, cmd, cmdsize);
    if (rc) return rc;
    at += cmdsize;
  }
  return finish_image(img);
}

/* ---- Fat files ---- */

struct fat_slice { uint32_t cputype, cpusubtype; uint64_t off, size; };

static int fat_entry(const uint8_t *d, uint64_t size, uint32_t i, int is64, struct fat_slice *s,
                     struct macho_error *err) {
  uint64_t at = 8 + (uint64_t)i * (is64 ? FAT_ARCH64_SIZE : FAT_ARCH_SIZE);
  if (at + (is64 ? FAT_ARCH64_SIZE : FAT_ARCH_SIZE) > size)
    return macho_fail(err, HG_ETRUNCATED, at, "fat arch %u is past the end", i);
  const uint8_t *p = d + at;
  s->cputype = macho_rd32be(p);
  s->cpusubtype = macho_rd32be(p + 4);
  s->off = is64 ? macho_rd64be(p + 8) : macho_rd32be(p + 8);
  s->size = is64 ? macho_rd64be(p + 16) : macho_rd32be(p + 12);
  if (s->off > size || s->size > size - s->off)
    return macho_fail(err, HG_EFORMAT, at + 8, "fat slice %u [0x%llx, +0x%llx) is past the end", i,
                      (unsigned long long)s->off, (unsigned long long)s->size);
  return 0;
}

static int fat_count(const uint8_t *d, uint64_t size, int *is64, struct macho_error *err) {
  if (size < 8) return 0;
  uint32_t magic = macho_rd32be(d);
  if (magic != FAT_MAGIC && magic != FAT_MAGIC_64) return 0;
  *is64 = magic == FAT_MAGIC_64;
  uint32_t n = macho_rd32be(d + 4);
  if (n == 0 || n > 64)
    return macho_fail(err, HG_EFORMAT, 4, "fat header has %u slices", n);
  return (int)n;
}

int macho_fat_archs(const void *data, uint64_t size, const char **names, int max,
                    struct macho_error *err) {
  int is64 = 0;
  int n = fat_count(data, size, &is64, err);
  for (int i = 0; i < n; i++) {
    struct fat_slice s;
    int rc = fat_entry(data, size, (uint32_t)i, is64, &s, err);
    if (rc) return rc;
    if (i < max) names[i] = macho_arch_name(s.cputype, s.cpusubtype);
  }
  return n;
}

int macho_open_file(struct macho_image *img, const void *data, uint64_t size, const char *arch) {
  memset(img, 0, sizeof *img);
  img->file = data;
  img->file_size = size;
  int is64 = 0;
  int n = fat_count(data, size, &is64, &img->err);
  if (n < 0) return n;
  if (n == 0) {
    img->header = data;
    img->slice_size = size;
    int rc = parse_header(img);
    if (!rc && arch && strcmp(arch, img->arch))
      return macho_fail(&img->err, HG_ENOTFOUND, 0, "file is %s, not %s", img->arch, arch);
    return rc;
  }
  int pick = -1, x86 = -1;
  for (int i = 0; i < n; i++) {
    struct fat_slice s;
    int rc = fat_entry(data, size, (uint32_t)i, is64, &s, &img->err);
    if (rc) return rc;
    const char *name = macho_arch_name(s.cputype, s.cpusubtype);
    if (arch && name && !strcmp(arch, name) && pick < 0) pick = i;
    if (name && !strcmp(name, "x86_64") && x86 < 0) x86 = i;
  }
  if (!arch) pick = x86 >= 0 ? x86 : 0;
  if (pick < 0)
    return macho_fail(&img->err, HG_ENOTFOUND, 8, "fat file has no %s slice", arch);
  struct fat_slice s;
  fat_entry(data, size, (uint32_t)pick, is64, &s, &img->err);
  img->slice_off = s.off;
  img->slice_size = s.size;
  img->header = (const uint8_t *)data + s.off;
  int rc = parse_header(img);
  if (!rc && (img->cputype != s.cputype))
    return macho_fail(&img->err, HG_EFORMAT, 8, "fat arch cputype does not match its slice");
  return rc;
}

int macho_open_loaded(struct macho_image *img, const void *header, uint64_t slide) {
  memset(img, 0, sizeof *img);
  img->header = header;
  img->loaded = 1;
  img->slide = slide;
  img->slice_size = UINT64_MAX;
  return parse_header(img);
}
