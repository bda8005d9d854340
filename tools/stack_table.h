/*
 * stack_table.h — the allocation-stack table as `heapgraph stacks --json`
 * prints it, shared by that command (cmd_stacks.c) and the viewer's
 * /api/stacks and /api/stack (web/view_api.c), so both answer the same numbers
 * from one writer: which stacks are listed, in which order, and their JSON.
 */
#ifndef HG_TOOLS_STACK_TABLE_H
#define HG_TOOLS_STACK_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"
#include "tools/symbolize.h"

/* Sort keys of --by / ?by=, biggest first. */
enum { STACK_BY_RETAINED, STACK_BY_BYTES, STACK_BY_COUNT, STACK_BY_KEYS };
/* "retained" (or NULL), "bytes", "count" -> the key; -1 for anything else. */
int stack_table_key(const char *name);

/* The listed stacks — those with live blocks recorded or nodes in the
 * snapshot (a stack whose blocks were all freed is left out) — sorted by key,
 * biggest first, ties by id. t: hg_stack_totals. *out is malloc'd (free());
 * returns how many, or -1 on ENOMEM. */
int64_t stack_table_sorted(const struct hg_graph *g, const struct hg_stack_total *t, int key,
                           uint32_t **out);

/* One stack as a JSON object, left open (the caller may add fields and must
 * print the closing brace): {"id","count","bytes","nodes","node_bytes",
 * "retained","frames":[sym_print_stack's frames] */
void stack_table_entry_json(FILE *f, const struct hg_graph *g, const struct hg_stack_total *t,
                            struct symbolizer *sym, uint32_t id);

/* `heapgraph stacks --json`: {"info":{…},"total":n,"stacks":[ids[off ..
 * off+k) as entries],"large_allocations":[…]}. ids/n: stack_table_sorted. */
void stack_table_json(FILE *f, const struct hg_graph *g, const struct hg_stack_total *t,
                      struct symbolizer *sym, const uint32_t *ids, uint32_t n, uint32_t off, uint32_t k);

#endif
