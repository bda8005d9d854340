/*
 * symbolize.h — offline symbolication of snapshot stack frames for the CLI.
 * ELF images through elfutils libdwfl (function from the symbol tables,
 * file:line from DWARF when the image has debug info, build-id checked
 * against the snapshot's); anything else prints as image + offset.
 * Symbolication happens on the fly when a command prints a stack: nothing is
 * written back to the snapshot (which carries only image + offset).
 */
#ifndef HG_TOOLS_SYMBOLIZE_H
#define HG_TOOLS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "heapgraph.h"

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
void sym_print_stack(struct symbolizer *s, const struct hg_stack *st, int json, const char *indent);
/* The allocation stack of node v for `heapgraph show`: "allocated at" lines,
 * or (json) `,"stack":{...}` / `,"stack":null`. Nothing in text mode when the
 * snapshot has no stacks. */
void sym_print_node_stack(const struct hg_graph *g, uint32_t v, int json);

#endif
