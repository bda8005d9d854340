/*
 * symbolize_macho.h — the Mach-O half of the CLI's symbolizer (internal to
 * tools/symbolize*.c): images found by path or search directory and matched
 * by LC_UUID, function names from machoparse's symbol table, file:line from
 * a dSYM through llvm-symbolizer (tools/symbolize_llvm.c).
 */
#ifndef HG_TOOLS_SYMBOLIZE_MACHO_H
#define HG_TOOLS_SYMBOLIZE_MACHO_H

#include <stddef.h>
#include <stdint.h>

#include "heapgraph.h"
#include "tools/symbolize.h"

struct sym_macho;
/* Mach-O state for graph g (images are opened when first asked for). */
struct sym_macho *symm_new(const struct hg_graph *g, const struct sym_config *cfg);
void symm_free(struct sym_macho *m);
/* 1 when frame f's image is (or is looked up as) a Mach-O image: *out is
 * filled as far as the files allow (at least image + offset). 0 when the
 * image is not Mach-O: the ELF path takes it. */
int symm_resolve(struct sym_macho *m, const struct hg_stack_frame *f, struct sym_frame *out);

/* One address's answer from llvm-symbolizer. */
struct sym_line {
  char *function; /* demangled, malloc'd; NULL when unknown */
  char *file;     /* malloc'd; NULL when unknown             */
  int line;
};
/* Runs llvm-symbolizer once on obj (a dSYM's DWARF file; arch picks the
 * slice of a fat file) for the n addresses addr[] (unslid vmaddrs), one
 * process for all of them. Fills out[0..n) (zeroed first). 0 on success;
 * -1 with why[] set when no llvm-symbolizer is found or it fails. */
int sym_llvm_lines(const char *obj, const char *arch, const uint64_t *addr, size_t n,
                   struct sym_line *out, char *why, size_t whylen);
/* The llvm-symbolizer program used: $HEAPGRAPH_LLVM_SYMBOLIZER (empty: none),
 * else llvm-symbolizer or llvm-symbolizer-NN (20 down to 13) on PATH.
 * Writes its path into buf; NULL when there is none. */
const char *sym_llvm_program(char *buf, size_t size);

#endif
