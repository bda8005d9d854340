/*
 * symbolize.c — frames to function and file:line with elfutils libdwfl (see
 * symbolize.h). One Dwfl session per image, reported at its link-time
 * addresses (dwfl_report_elf with base 0), so a frame's address is
 * load_addr - slide + offset; return addresses are looked up at address - 1
 * (the call instruction), which keeps file:line on the calling line. C++
 * names are demangled; inside inlined code file:line is the outermost
 * inlined call's (DW_AT_call_file/line), the line in the function the
 * symbol names, as on the Mach-O side. Mach-O images go to
 * tools/symbolize_macho.c first; this file owns the dispatch, the text and
 * JSON forms of a frame and the global sym_config.
 */
#include "tools/symbolize.h"

#include "tools/cli_util.h"
#include "tools/symbolize_macho.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct img {
  int tried;
  Dwfl *dwfl;
  Dwfl_Module *mod;
};

struct sym_config sym_config;
const struct cli_opt sym_cli_opts[] = {SYM_CLI_OPTS, CLI_END};

struct demangled { /* symbol-name pointer (stable in libdwfl) -> display name */
  const char *raw;
  char *name;
};

struct symbolizer {
  const struct hg_graph *g;
  struct sym_macho *macho;
  struct img *imgs;
  Dwfl_Callbacks cb;
  char *debuginfo_path;
  struct demangled *dm; /* open addressing, cap a power of two */
  size_t dm_len, dm_cap;
};

struct symbolizer *sym_new(const struct hg_graph *g) {
  struct symbolizer *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->g = g;
  s->imgs = calloc(g->image_count + 1, sizeof *s->imgs);
  s->macho = symm_new(g, &sym_config);
  if (!s->imgs || !s->macho) {
    free(s->imgs);
    symm_free(s->macho);
    free(s);
    return NULL;
  }
  s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
  s->cb.section_address = dwfl_offline_section_address;
  s->cb.debuginfo_path = &s->debuginfo_path;
  return s;
}

void sym_free(struct symbolizer *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->g->image_count; i++)
    if (s->imgs[i].dwfl) dwfl_end(s->imgs[i].dwfl);
  free(s->imgs);
  symm_free(s->macho);
  for (size_t i = 0; i < s->dm_cap; i++) free(s->dm[i].name);
  free(s->dm);
  free(s);
}

/* C++ names demangled (as the Mach-O path and llvm-symbolizer print them),
 * cached per symbol so a name is demangled once. */
static const char *display_name(struct symbolizer *s, const char *raw) {
  if (raw[0] != '_' || raw[1] != 'Z') return raw;
  if (s->dm_len * 2 >= s->dm_cap) {
    size_t cap = s->dm_cap ? s->dm_cap * 2 : 64;
    struct demangled *d = calloc(cap, sizeof *d);
    if (!d) return raw;
    for (size_t i = 0; i < s->dm_cap; i++)
      if (s->dm[i].raw) {
        size_t h = ((uintptr_t)s->dm[i].raw >> 3) & (cap - 1);
        while (d[h].raw) h = (h + 1) & (cap - 1);
        d[h] = s->dm[i];
      }
    free(s->dm);
    s->dm = d;
    s->dm_cap = cap;
  }
  size_t h = ((uintptr_t)raw >> 3) & (s->dm_cap - 1);
  while (s->dm[h].raw && s->dm[h].raw != raw) h = (h + 1) & (s->dm_cap - 1);
  if (!s->dm[h].raw) {
    s->dm[h].raw = raw;
    s->dm[h].name = cli_demangle_type(raw);
    s->dm_len++;
  }
  return s->dm[h].name ? s->dm[h].name : raw;
}

/* The file:line of the outermost inlined call that holds address a: the line
 * in the function the symbol table names (the line table's row would be the
 * inlined callee's). 0 when a is in no inlined code. */
static int inlined_call_site(Dwfl_Module *mod, Dwarf_Addr a, const char **file, int *line) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
  Dwarf_Die *scopes = NULL;
  int n = cu ? dwarf_getscopes(cu, a - bias, &scopes) : 0, found = 0;
  for (int i = n - 1; i >= 0; i--) { /* scopes[0] is the innermost */
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    Dwarf_Attribute at;
    Dwarf_Word l = 0, fi = 0;
    Dwarf_Files *files;
    size_t nf = 0;
    if (!dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at), &l) &&
        !dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at), &fi) &&
        !dwarf_getsrcfiles(cu, &files, &nf) && fi < nf && l > 0 && l <= INT_MAX) {
      const char *f = dwarf_filesrc(files, fi, NULL, NULL);
      if (f) {
        *file = f;
        *line = (int)l;
        found = 1;
      }
    }
    break;
  }
  free(scopes);
  return found;
}

static Dwfl_Module *module(struct symbolizer *s, uint32_t i) {
  struct img *m = &s->imgs[i];
  if (m->tried) return m->mod;
  m->tried = 1;
  const struct hg_image *im = &s->g->images[i];
  int fd = open(im->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) { /* a snapshot's path is hostile input */
    close(fd);
    fd = -1;
  }
  if (fd < 0) return NULL;
  m->dwfl = dwfl_begin(&s->cb);
  if (!m->dwfl) {
    close(fd);
    return NULL;
  }
  dwfl_report_begin(m->dwfl);
  Dwfl_Module *mod = dwfl_report_elf(m->dwfl, im->path, im->path, fd, 0, false);
  dwfl_report_end(m->dwfl, NULL, NULL);
  if (!mod) return NULL; /* dwfl owns fd once reported; on failure it closed it */
  if (im->id_len) { /* a different build of the file would give wrong names */
    const unsigned char *bid;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bid, &vaddr);
    if (n > 0 && ((uint32_t)n != im->id_len || memcmp(bid, im->id, im->id_len))) return NULL;
  }
  m->mod = mod;
  return mod;
}

void sym_resolve(struct symbolizer *s, const struct hg_stack_frame *f, struct sym_frame *out) {
  memset(out, 0, sizeof *out);
  out->offset = f->offset;
  if (f->image == HG_NO_OWNER || f->image >= s->g->image_count) return;
  const struct hg_image *im = &s->g->images[f->image];
  out->image = im->path;
  if (symm_resolve(s->macho, f, out)) return;
  Dwfl_Module *mod = module(s, f->image);
  if (!mod) return;
  Dwarf_Addr a = im->load_addr - im->slide + f->offset;
  if (a) a--;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char *name = dwfl_module_addrinfo(mod, a, &off, &sym, NULL, NULL, NULL);
  if (name) {
    out->function = display_name(s, name);
    out->function_off = off + 1;
  }
  if (inlined_call_site(mod, a, &out->file, &out->line)) return;
  Dwfl_Line *ln = dwfl_module_getsrc(mod, a);
  if (ln) {
    int line = 0;
    Dwarf_Addr la = 0;
    const char *file = dwfl_lineinfo(ln, &la, &line, NULL, NULL, NULL);
    /* a line row from before the function's start belongs to other code
     * (an address outside every CU, e.g. _start, gets its nearest row) */
    if (file && line > 0 && la <= a && (!name || la >= a - off)) {
      out->file = file;
      out->line = line;
    }
  }
}

const char *sym_text(const struct sym_frame *f, char *buf, size_t size) {
  const char *base = f->image ? strrchr(f->image, '/') : NULL;
  base = base ? base + 1 : f->image;
  if (f->function && f->file)
    snprintf(buf, size, "%s (%s:%d)", f->function, f->file, f->line);
  else if (f->function)
    snprintf(buf, size, "%s+0x%llx (%s)", f->function, (unsigned long long)f->function_off, base);
  else if (base)
    snprintf(buf, size, "%s+0x%llx", base, (unsigned long long)f->offset);
  else
    snprintf(buf, size, "0x%llx", (unsigned long long)f->offset);
  return buf;
}

void sym_print_stack(FILE *out, struct symbolizer *s, const struct hg_stack *st, int json, const char *indent) {
  char buf[1024];
  if (json) fprintf(out, "[");
  for (uint32_t k = 0; k < st->frame_count; k++) {
    struct sym_frame f;
    sym_resolve(s, &st->frames[k], &f);
    if (!json) {
      fprintf(out, "%s%s\n", indent, sym_text(&f, buf, sizeof buf));
      continue;
    }
    fprintf(out, "%s{\"image\":", k ? "," : "");
    cli_json_str(out, f.image);
    fprintf(out, ",\"offset\":");
    cli_json_addr(out, f.offset);
    fprintf(out, ",\"function\":");
    cli_json_str(out, f.function);
    fprintf(out, ",\"file\":");
    cli_json_str(out, f.file);
    fprintf(out, ",\"line\":%d}", f.line);
  }
  if (json) fprintf(out, "]");
}

void sym_print_node_stack(FILE *out, struct symbolizer *keep, const struct hg_graph *g, uint32_t v, int json) {
  uint32_t id = g->node_stack && v < g->node_count ? g->node_stack[v] : 0;
  if (!id || id > g->stack_count) {
    if (json) fprintf(out, ",\"stack\":null");
    else if (g->has_stacks) fprintf(out, "  allocation stack: not recorded\n");
    return;
  }
  struct symbolizer *s = keep ? keep : sym_new(g);
  if (!s) return;
  if (json) {
    fprintf(out, ",\"stack\":{\"id\":%u,\"frames\":", id);
    sym_print_stack(out, s, &g->stacks[id - 1], 1, "");
    fprintf(out, "}");
  } else {
    fprintf(out, "  allocated at (stack #%u):\n", id);
    sym_print_stack(out, s, &g->stacks[id - 1], 0, "    ");
  }
  if (!keep) sym_free(s);
}
