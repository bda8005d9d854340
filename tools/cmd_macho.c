/*
 * cmd_macho.c — `heapgraph macho FILE`: prints a Mach-O file's fixup tables
 * and C++ type_info objects through machoparse/.
 *
 * --bind/--lazy-bind/--weak-bind/--rebase print the rows llvm-objdump-14
 * `--macho --bind` (etc.) prints, byte for byte; --chained-fixups prints the
 * table llvm-objdump-16 `--macho --dyld-info` prints; --typeinfo prints each
 * type_info's address, kind and demangled name; --info the load commands.
 * Owns only formatting: all parsing is machoparse's.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapgraph.h"
#include "machoparse/macho.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

enum mode { M_NONE, M_BIND, M_LAZY, M_WEAK, M_REBASE, M_CHAINED, M_TYPEINFO, M_INFO };

static const char about[] =
    "  Prints one table (exactly one of the table options): --bind, --lazy-bind,\n"
    "  --weak-bind and --rebase in the format of llvm-objdump --macho --bind (etc.),\n"
    "  --chained-fixups as llvm-objdump-16 --macho --dyld-info.\n";

/* ---- Helpers ---- */

static const char *ordinal_name(const struct macho_image *img, int64_t ord, char *buf, size_t cap) {
  switch (ord) {
  case 0: return "this-image";
  case -1: return "main-executable";
  case -2: return "flat-namespace";
  case -3: return "weak";
  default: break;
  }
  if (ord < 0) return "<<unknown special ordinal>>";
  const char *n = macho_dylib_name(img, ord);
  if (!n) return "<<bad library ordinal>>";
  return macho_dylib_short_name(n, buf, cap);
}

static const char *type_name(uint32_t t) {
  return t == 1 ? "pointer" : t == 2 ? "text abs32" : t == 3 ? "text rel32" : "unknown";
}

/* Segment and section names of a fixup, with a one-entry section cache. */
struct names { char seg[17], sect[17]; uint32_t cseg; uint64_t lo, hi; int valid; };

static void fixup_names(const struct macho_image *img, const struct macho_fixup *f, struct names *n) {
  if (f->segment >= img->segment_count) { n->seg[0] = n->sect[0] = 0; return; }
  memcpy(n->seg, img->segments[f->segment].name, 17);
  if (n->valid && n->cseg == f->segment && f->vmaddr >= n->lo && f->vmaddr < n->hi) return;
  struct macho_section s;
  if (macho_section_at(img, f->segment, f->vmaddr, &s) == 0) {
    memcpy(n->sect, s.sectname, 17);
    n->valid = 1; n->cseg = f->segment; n->lo = s.addr; n->hi = s.addr + s.size;
  } else {
    n->sect[0] = 0;
    n->valid = 0;
  }
}

static const char *kind_name(uint32_t k) {
  return k == MACHO_FIXUP_REBASE ? "rebase" : k == MACHO_FIXUP_BIND ? "bind"
       : k == MACHO_FIXUP_WEAK_BIND ? "weak-bind" : "lazy-bind";
}

static int report(const char *path, const struct macho_error *e) {
  fprintf(stderr, "heapgraph macho: %s: %s\n", path, e->message);
  return 1;
}

/* ---- Classic tables (llvm-objdump-14 layout) ---- */

/* Row building without printf: the tables can have hundreds of thousands
 * of rows and formatting dominates the run time. */
struct line { char b[1024]; size_t n; };

static void put_s(struct line *l, const char *s, size_t width) {
  size_t len = strlen(s);
  if (len > sizeof l->b - 64 - l->n) len = sizeof l->b - 64 - l->n;
  memcpy(l->b + l->n, s, len);
  l->n += len;
  while (len < width) { l->b[l->n++] = ' '; len++; }
}

static void put_rs(struct line *l, const char *s, size_t width) {
  size_t len = strlen(s);
  while (len < width) { l->b[l->n++] = ' '; width--; }
  put_s(l, s, 0);
}

static void put_hex8(struct line *l, uint64_t v) { /* format_hex(v, 10, upper) */
  char t[24];
  int n = 0;
  do { t[n++] = "0123456789ABCDEF"[v & 15]; v >>= 4; } while (v);
  while (n < 8) t[n++] = '0';
  l->b[l->n++] = '0';
  l->b[l->n++] = 'x';
  while (n) l->b[l->n++] = t[--n];
}

static void put_dec8(struct line *l, int64_t v) {
  char t[24];
  snprintf(t, sizeof t, "%" PRId64, v);
  put_rs(l, t, 8);
}

/* ordinal_name with a one-entry cache (binds come grouped by library). */
static const char *ordinal_cached(const struct macho_image *img, int64_t ord) {
  static char buf[256];
  static int64_t last = INT64_MIN;
  static const struct macho_image *last_img;
  static const char *last_name;
  if (ord != last || img != last_img) {
    last_name = ordinal_name(img, ord, buf, sizeof buf);
    last = ord;
    last_img = img;
  }
  return last_name;
}

static void print_row(FILE *o, enum mode m, const struct macho_image *img, const struct macho_fixup *f,
                      struct names *n) {
  struct line l;
  l.n = 0;
  if (m == M_WEAK && (f->flags & MACHO_FIXUP_STRONG)) {
    put_s(&l, "                                        strong              ", 0);
    put_s(&l, f->symbol, 0);
    l.b[l.n++] = '\n';
    fwrite(l.b, 1, l.n, o);
    return;
  }
  fixup_names(img, f, n);
  put_s(&l, n->seg, 8);
  l.b[l.n++] = ' ';
  put_s(&l, n->sect, 18);
  l.b[l.n++] = ' ';
  put_hex8(&l, f->vmaddr);
  l.b[l.n++] = ' ';
  switch (m) {
  case M_REBASE:
    l.b[l.n++] = ' ';
    put_s(&l, type_name(f->type), 0);
    break;
  case M_BIND:
    put_s(&l, type_name(f->type), 8);
    l.b[l.n++] = ' ';
    put_dec8(&l, f->addend);
    l.b[l.n++] = ' ';
    put_s(&l, ordinal_cached(img, f->ordinal), 16);
    l.b[l.n++] = ' ';
    put_s(&l, f->symbol, 0);
    if (f->flags & MACHO_FIXUP_WEAK_IMPORT) put_s(&l, " (weak_import)", 0);
    break;
  case M_WEAK:
    put_s(&l, type_name(f->type), 8);
    l.b[l.n++] = ' ';
    put_dec8(&l, f->addend);
    put_s(&l, "   ", 0);
    put_s(&l, f->symbol, 0);
    break;
  default:
    put_s(&l, ordinal_cached(img, f->ordinal), 16);
    l.b[l.n++] = ' ';
    put_s(&l, f->symbol, 0);
    break;
  }
  l.b[l.n++] = '\n';
  fwrite(l.b, 1, l.n, o);
}

static void print_json(FILE *o, const struct macho_image *img, const struct macho_fixup *f,
                       struct names *n) {
  char lib[256];
  fixup_names(img, f, n);
  fprintf(o, "{\"kind\":\"%s\",\"segment\":", kind_name(f->kind));
  cli_json_str(o, f->segment == UINT32_MAX ? "" : n->seg);
  fprintf(o, ",\"section\":");
  cli_json_str(o, f->segment == UINT32_MAX ? "" : n->sect);
  fprintf(o, ",\"vmaddr\":%" PRIu64, f->vmaddr);
  if (f->kind == MACHO_FIXUP_REBASE) {
    if (f->pointer_format) fprintf(o, ",\"target\":%" PRIu64, f->target);
  } else {
    fprintf(o, ",\"ordinal\":%" PRId64 ",\"dylib\":", f->ordinal);
    cli_json_str(o, ordinal_name(img, f->ordinal, lib, sizeof lib));
    fprintf(o, ",\"symbol\":");
    cli_json_str(o, f->symbol ? f->symbol : "");
    fprintf(o, ",\"addend\":%" PRId64 ",\"weak_import\":%s", f->addend,
            (f->flags & MACHO_FIXUP_WEAK_IMPORT) ? "true" : "false");
  }
  if (f->flags & MACHO_FIXUP_AUTH)
    fprintf(o, ",\"auth\":{\"key\":%u,\"diversity\":%u,\"addr_div\":%s}", f->key, f->diversity,
            (f->flags & MACHO_FIXUP_ADDR_DIV) ? "true" : "false");
  fprintf(o, "}\n");
}

static int print_table(const char *path, const struct macho_image *img, enum mode m, int json) {
  static const char *const titles[] = {
      [M_BIND] = "Bind table:\nsegment  section            address    type       addend dylib            symbol",
      [M_LAZY] = "Lazy bind table:\nsegment  section            address     dylib            symbol",
      [M_WEAK] = "Weak bind table:\nsegment  section            address     type       addend   symbol",
      [M_REBASE] = "Rebase table:\nsegment  section            address     type"};
  unsigned src = m == M_BIND ? MACHO_SRC_BIND : m == M_LAZY ? MACHO_SRC_LAZY_BIND
               : m == M_WEAK ? MACHO_SRC_WEAK_BIND : MACHO_SRC_REBASE;
  if (!json) printf("%s:\n\n%s\n", path, titles[m]);
  struct macho_fixup_iter it;
  struct macho_fixup f;
  struct names n = {0};
  macho_fixups_begin(&it, img, src);
  int rc;
  while ((rc = macho_fixups_next(&it, &f)) > 0) {
    if (f.flags & MACHO_FIXUP_THREADED) continue; /* llvm-objdump cannot show these */
    if (json) print_json(stdout, img, &f, &n);
    else print_row(stdout, m, img, &f, &n);
  }
  if (rc < 0) {
    fflush(stdout);
    return report(path, &it.err);
  }
  return 0;
}

/* ---- dyld-info table (llvm-objdump-16 layout) ---- */

static size_t hexlen(uint64_t v) {
  /* llvm's divideCeil(Log2_64(v), 4): one digit short for exact powers of 16. */
  if (!v) return 1;
  unsigned l = 63 - (unsigned)__builtin_clzll(v);
  return (l + 3) / 4;
}

static int print_dyld_info(const char *path, const struct macho_image *img, int json) {
  struct macho_fixup_iter it;
  struct macho_fixup f;
  struct names n = {0};
  char lib[256];
  unsigned src = MACHO_SRC_CHAINED | MACHO_SRC_BIND;
  size_t segw = 7, sectw = 7, addrw = 7, addendw = 6, dylibw = 5;
  int rc;
  if (!json) {
    macho_fixups_begin(&it, img, src);
    while ((rc = macho_fixups_next(&it, &f)) > 0) {
      if (!f.pointer_format) continue;
      fixup_names(img, &f, &n);
      if (strlen(n.seg) > segw) segw = strlen(n.seg);
      if (strlen(n.sect) > sectw) sectw = strlen(n.sect);
      if (hexlen(f.vmaddr) + 2 > addrw) addrw = hexlen(f.vmaddr) + 2;
      if (f.kind == MACHO_FIXUP_BIND) {
        if (hexlen((uint64_t)f.addend) + 2 > addendw) addendw = hexlen((uint64_t)f.addend) + 2;
        if (strlen(f.symbol) > dylibw) dylibw = strlen(f.symbol); /* sic: llvm-objdump-16 */
      }
    }
    printf("%s:\ndyld information:\n", path);
    printf("%-*s %-*s %-*s %-18s %-6s %-*s %-*s symbol/vm address\n", (int)segw, "segment",
           (int)sectw, "section", (int)addrw, "address", "pointer", "type", (int)addendw, "addend",
           (int)dylibw, "dylib");
  }
  macho_fixups_begin(&it, img, src);
  while ((rc = macho_fixups_next(&it, &f)) > 0) {
    if (!f.pointer_format) continue;
    if (json) { print_json(stdout, img, &f, &n); continue; }
    fixup_names(img, &f, &n);
    char addr[24];
    snprintf(addr, sizeof addr, "%" PRIX64, f.vmaddr);
    printf("%-*s %-*s 0x%-*s 0x%016" PRIX64 " ", (int)segw, n.seg, (int)sectw, n.sect,
           (int)addrw - 2, addr, f.raw);
    if (f.kind == MACHO_FIXUP_BIND) {
      char add[24];
      snprintf(add, sizeof add, "%" PRIX64, (uint64_t)f.addend);
      printf("bind   0x%-*s %-*s %s%s\n", (int)addendw - 2, add, (int)dylibw,
             ordinal_name(img, f.ordinal, lib, sizeof lib), f.symbol,
             (f.flags & MACHO_FIXUP_WEAK_IMPORT) ? " (weak import)" : "");
    } else {
      printf("rebase%*s0x%" PRIX64 "\n", (int)(addendw + dylibw + 2), "", f.target);
    }
  }
  if (rc < 0) {
    fflush(stdout);
    return report(path, &it.err);
  }
  return 0;
}

/* ---- type_info ---- */

static const char *const ti_kinds[] = {"class", "si_class", "vmi_class", "pointer", "function"};

static int print_typeinfo(const char *path, const struct macho_image *img, int json) {
  struct macho_typeinfo_iter it;
  struct macho_typeinfo t;
  int rc;
  macho_typeinfo_begin(&it, img);
  while ((rc = macho_typeinfo_next(&it, &t)) > 0) {
    char *dem = cli_demangle_type(t.name);
    const char *shown = dem ? dem : t.name ? t.name : "?";
    if (json) {
      printf("{\"vmaddr\":%" PRIu64 ",\"kind\":\"%s\",\"mangled\":", t.vmaddr, ti_kinds[t.kind]);
      cli_json_str(stdout, t.name ? t.name : "");
      printf(",\"name\":");
      cli_json_str(stdout, shown);
      printf(",\"non_unique\":%s}\n", t.non_unique ? "true" : "false");
    } else {
      printf("0x%016" PRIx64 " %-9s %s%s\n", t.vmaddr, ti_kinds[t.kind], shown,
             t.non_unique ? " (non-unique)" : "");
    }
    free(dem);
  }
  if (rc < 0) {
    fflush(stdout);
    return report(path, &it.err);
  }
  return 0;
}

/* ---- info ---- */

static void version(char *buf, size_t cap, uint32_t v) {
  snprintf(buf, cap, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
}

static int print_info_json(const char *path, const struct macho_image *img) {
  printf("{\"file\":");
  cli_json_str(stdout, path);
  printf(",\"arch\":\"%s\",\"filetype\":%u,\"slice_offset\":%" PRIu64 ",\"ncmds\":%u", img->arch,
         img->filetype, img->slice_off, img->ncmds);
  if (img->has_uuid) {
    printf(",\"uuid\":\"");
    for (int i = 0; i < 16; i++) printf("%02X", img->uuid[i]);
    printf("\"");
  }
  printf(",\"platform\":%u,\"minos\":%u,\"sdk\":%u,\"install_name\":", img->platform, img->minos,
         img->sdk);
  if (img->install_name) cli_json_str(stdout, img->install_name);
  else printf("null");
  printf(",\"dylibs\":[");
  for (uint32_t i = 0; i < img->dylib_count; i++) {
    if (i) printf(",");
    const char *name = macho_dylib_name(img, i + 1);
    cli_json_str(stdout, name ? name : "");
  }
  printf("],\"segments\":[");
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *g = &img->segments[i];
    printf("%s{\"name\":", i ? "," : "");
    cli_json_str(stdout, g->name);
    printf(",\"vmaddr\":%" PRIu64 ",\"vmsize\":%" PRIu64 ",\"fileoff\":%" PRIu64 ",\"filesize\":%" PRIu64
           ",\"nsects\":%u}", g->vmaddr, g->vmsize, g->fileoff, g->filesize, g->nsects);
  }
  printf("],\"dyld_info\":%s,\"chained_fixups\":%s,\"exports_trie\":%s,\"threaded\":%s,\"nsyms\":%u}\n",
         img->has_dyld_info ? "true" : "false", img->has_chained ? "true" : "false",
         img->has_exports_trie ? "true" : "false", img->threaded ? "true" : "false", img->nsyms);
  return 0;
}

static int print_info(const char *path, const struct macho_image *img) {
  static const char *const ftypes[] = {"?", "object", "execute", "fvmlib", "core", "preload",
                                       "dylib", "dylinker", "bundle", "dylib_stub", "dsym", "kext_bundle"};
  char a[32], b[32];
  printf("file:        %s\n", path);
  printf("arch:        %s\n", img->arch);
  printf("filetype:    %s\n", img->filetype < 12 ? ftypes[img->filetype] : "?");
  printf("slice:       offset 0x%" PRIx64 " size 0x%" PRIx64 "\n", img->slice_off, img->slice_size);
  printf("load cmds:   %u (%u bytes)\n", img->ncmds, img->sizeofcmds);
  if (img->has_uuid) {
    printf("uuid:        ");
    for (int i = 0; i < 16; i++) printf("%02X%s", img->uuid[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
    printf("\n");
  }
  version(a, sizeof a, img->minos);
  version(b, sizeof b, img->sdk);
  printf("platform:    %u minos %s sdk %s\n", img->platform, a, b);
  if (img->install_name) printf("install name: %s\n", img->install_name);
  for (uint32_t i = 0; i < img->dylib_count; i++)
    printf("dylib %u:     %s\n", i + 1, macho_dylib_name(img, i + 1));
  for (uint32_t i = 0; i < img->segment_count; i++) {
    const struct macho_segment *s = &img->segments[i];
    printf("segment %u:   %-16s vm 0x%" PRIx64 "+0x%" PRIx64 " file 0x%" PRIx64 "+0x%" PRIx64 " %u sections\n",
           i, s->name, s->vmaddr, s->vmsize, s->fileoff, s->filesize, s->nsects);
  }
  if (img->has_dyld_info)
    printf("dyld info:   rebase %u bind %u weak %u lazy %u export %u bytes\n", img->rebase.size,
           img->bind.size, img->weak_bind.size, img->lazy_bind.size, img->exports.size);
  if (img->has_chained) printf("chained fixups: 0x%x+0x%x\n", img->chained.off, img->chained.size);
  if (img->has_exports_trie) printf("exports trie: 0x%x+0x%x\n", img->exports.off, img->exports.size);
  printf("symbols:     %u\n", img->nsyms);
  return 0;
}

/* ---- Entry ---- */

int cmd_macho(int argc, char **argv) {
  const char *arch = NULL;
  int m = M_NONE, json = 0, nargs;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("--arch", "ARCH", &arch, "slice of a fat file (arm64, arm64e, x86_64, x86_64h)"),
      CLI_OPT_FLAG("--json", &json, "one JSON object per line instead of tables"),
      CLI_OPT_SET("--bind", &m, M_BIND, "LC_DYLD_INFO bind opcodes"),
      CLI_OPT_SET("--lazy-bind", &m, M_LAZY, "LC_DYLD_INFO lazy bind opcodes"),
      CLI_OPT_SET("--weak-bind", &m, M_WEAK, "LC_DYLD_INFO weak bind opcodes"),
      CLI_OPT_SET("--rebase", &m, M_REBASE, "LC_DYLD_INFO rebase opcodes"),
      CLI_OPT_SET("--chained-fixups|--dyld-info", &m, M_CHAINED, "every fixup, chained or threaded"),
      CLI_OPT_SET("--typeinfo", &m, M_TYPEINFO, "C++ type_info objects: address, kind, demangled name"),
      CLI_OPT_SET("--info", &m, M_INFO, "header, load commands, tables located"),
      CLI_END};
  const struct cli_cmd cmd = {"macho", "FILE", 1, 1, opts, about, 0};
  int parsed = cli_parse(&cmd, argc, argv, &nargs);
  if (parsed >= 0) return parsed;
  if (m == M_NONE) {
    fprintf(stderr, "heapgraph macho: which table? (one of --bind … --info)\n");
    cli_usage(&cmd, stderr);
    return 2;
  }
  const char *path = argv[1];
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    perror(path);
    if (fd >= 0) close(fd);
    return 1;
  }
  size_t size = (size_t)st.st_size;
  void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (size && map == MAP_FAILED) { perror(path); return 1; }
  struct macho_image *img = malloc(sizeof *img);
  if (!img) { if (map) munmap(map, size); return 1; }
  int rc = macho_open_file(img, map, size, arch);
  if (rc) rc = report(path, &img->err);
  else if (m == M_CHAINED) rc = print_dyld_info(path, img, json);
  else if (m == M_TYPEINFO) rc = print_typeinfo(path, img, json);
  else if (m == M_INFO) rc = json ? print_info_json(path, img) : print_info(path, img);
  else rc = print_table(path, img, m, json);
  free(img);
  if (map) munmap(map, size);
  return rc;
}
