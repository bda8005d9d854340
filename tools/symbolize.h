/*
 * symbolize.h — offline symbolication of snapshot stack frames for the CLI.
 * ELF images through elfutils libdwfl (function from the symbol tables,
 * file:line from DWARF when the image has debug info, build-id checked
 * against the snapshot's); Mach-O images through machoparse's symbol table
 * (function) and a dSYM read by llvm-symbolizer (file:line), LC_UUID checked
 * against the snapshot's (tools/symbolize_macho.c); anything else prints as
 * image + offset. Symbolication happens on the fly when a command prints a
 * stack: nothing is written back to the snapshot (which carries only
 * image + offset).
 */
#ifndef HG_TOOLS_SYMBOLIZE_H
#define HG_TOOLS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"
#include "tools/cli_opts.h"

/* Where Mach-O images and their dSYMs are looked for: the options of every
 * command that prints stacks (SYM_CLI_OPTS in its option table, or
 * sym_cli_opts as acli_parse's extra table) fill the global sym_config,
 * which sym_new() and sym_print_node_stack() read. */
struct sym_config {
  struct cli_list dsym;      /* --dsym: X.dSYM bundles, DWARF files, or
                                directories holding *.dSYM bundles       */
  struct cli_list image_dir; /* --image-dir: DIR/PATH, then DIR/BASENAME  */
};
extern struct sym_config sym_config;
#define SYM_CLI_OPTS                                                                    \
  CLI_OPT_LIST("--dsym", "PATH", &sym_config.dsym,                                      \
               "a .dSYM bundle, its DWARF file or a directory of them"),    \
  CLI_OPT_LIST("--image-dir", "DIR", &sym_config.image_dir,                             \
               "look for Mach-O images as DIR/PATH and DIR/NAME")
extern const struct cli_opt sym_cli_opts[]; /* SYM_CLI_OPTS, CLI_END */

struct sym_frame {
  const char *image;     /* image path, NULL when the frame has none    */
  uint64_t offset;       /* from the image's load address (or absolute) */
  const char *function;  /* NULL when unknown                          */
  uint64_t function_off; /* offset into the function                   */
  const char *file;      /* NULL without debug info                    */
  int line;
};

struct symbolizer;
/* One per graph; images are opened lazily. NULL on ENOMEM. */
struct symbolizer *sym_new(const struct hg_graph *g);
void sym_free(struct symbolizer *s);
/* Resolves one frame. Strings stay valid until sym_free. */
void sym_resolve(struct symbolizer *s, const struct hg_stack_frame *f, struct sym_frame *out);
/* "func+0x12 (file.c:34)", "func+0x12 (libc.so.6)", "libx.so+0x1234", "0x7f…" */
const char *sym_text(const struct sym_frame *f, char *buf, size_t size);

/* Prints a stack: one "indent + frame" line per frame, or (json) a JSON array
 * of {"image","offset","function","file","line"}. */
void sym_print_stack(FILE *out, struct symbolizer *s, const struct hg_stack *st, int json, const char *indent);
/* The allocation stack of node v for `heapgraph show`: "allocated at" lines,
 * or (json) `,"stack":{...}` / `,"stack":null`. Nothing in text mode when the
 * snapshot has no stacks. s: a symbolizer of g kept by the caller (the
 * viewer: images opened once), or NULL for one made for this call. */
void sym_print_node_stack(FILE *out, struct symbolizer *s, const struct hg_graph *g, uint32_t v, int json);

#endif
