/*
 * analysis_json.h — the one JSON writer of each snapshot analysis, shared
 * by the CLI's `--json` (cmd_info, regions, top, dominators, path, leaks,
 * cycles, diff) and the viewer's API (web/view_api.c), so that the two
 * answers cannot drift apart. Each takes the library's result and writes
 * to a FILE; paging (off, k) bounds the lists. `show` and `stacks` have
 * theirs in analysis_cli.c (acli_show_json) and stack_table.c; the fleet's
 * are the library's (graph/fleet_json.c).
 */
#ifndef HG_TOOLS_ANALYSIS_JSON_H
#define HG_TOOLS_ANALYSIS_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"

/* `info --json`: metadata, counts and sizes of g, loaded from path. */
void ajson_info(FILE *f, const struct hg_graph *g, const char *path);

/* `regions --json`: regions grouped by name, most dirty first, then TOTAL.
 * ajson_region_groups() returns the n groups plus TOTAL at [n] (malloc'd;
 * NULL when out of memory); ajson_region_group() writes one of them. */
struct ajson_region_group {
  const char *name;
  uint64_t count, virt, resident, dirty, swapped;
};
struct ajson_region_group *ajson_region_groups(const struct hg_graph *g, size_t *n);
void ajson_region_group(FILE *f, const struct ajson_region_group *x, int total);

/* `top --json`: the nt nodes top[] (biggest retained first) and the k
 * classes retaining the most, from per-class count, bytes and retained
 * (hg_class_retained's arrays, class_count + 1 long). -1 out of memory. */
int ajson_top(FILE *f, const struct hg_graph *g, char **names, const struct hg_dominators *d, const uint32_t *top,
              uint32_t nt, const uint64_t *count, const uint64_t *bytes, const uint64_t *retained, uint32_t k);

/* `dominators ADDR --json`: node x, its dominator chain, and its nk
 * dominated nodes kids[] (biggest retained first) from off, at most k. */
void ajson_dominators(FILE *f, const struct hg_graph *g, char **names, const struct hg_dominators *d, uint32_t x,
                      const uint32_t *kids, uint32_t nk, uint32_t off, uint32_t k);

/* `path ADDR --json`: p's paths (p NULL: no root reaches the node). */
void ajson_paths(FILE *f, const struct hg_graph *g, char **names, const struct hg_paths *p);

/* `leaks --json`: the root leaks from off, at most k. */
void ajson_leaks(FILE *f, const struct hg_graph *g, char **names, const struct hg_leaks *l, uint32_t off, uint32_t k);

/* `cycles --json`: the cycles from off, at most k, each with up to
 * AJSON_CYCLE_MEMBERS members and AJSON_CYCLE_REFS references. */
#define AJSON_CYCLE_MEMBERS 20
#define AJSON_CYCLE_REFS 40
void ajson_cycles(FILE *f, const struct hg_graph *g, char **names, const struct hg_cycles *c, uint32_t off,
                  uint32_t k);
/* One cycle (index i) with up to max members and the retaining references
 * among them. */
void ajson_cycle(FILE *f, const struct hg_graph *g, char **names, const struct hg_cycles *c, uint32_t i,
                 uint32_t max);

/* `diff OLD NEW --json`: per-class growth from off, at most k; C++ names
 * demangled unless mangled; with_total adds "class_count" (the viewer). */
void ajson_diff(FILE *f, const struct hg_diff *d, uint32_t off, uint32_t k, int mangled, int with_total);

#endif
