/*
 * analysis_cli.h — helpers shared by the analysis subcommands (top,
 * dominators, leaks, cycles, path, show, diff, export): node lookup by
 * address, one-line node descriptions in text and JSON, and the options
 * they share (-n/--limit, --json, --mangled on cli_opts.h). Builds on
 * cli_util.h; owns no analysis logic.
 */
#ifndef HG_TOOLS_ANALYSIS_CLI_H
#define HG_TOOLS_ANALYSIS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"
#include "tools/cli_opts.h"

/* The options the analysis and listing commands share. */
struct acli {
  int json, mangled;        /* --json, --mangled                        */
  long limit;               /* -n/--limit N; -1 when absent             */
};

/* Parses argv for `heapgraph NAME ARGS…` (as many positionals as ARGS has
 * words) with -n/--limit N (limit_help says what it limits), --json and
 * --mangled, plus the command's own options `extra` (NULL, or a table
 * ending in CLI_END). Returns -1 to run (positionals in argv[1..]), else the
 * exit status, as cli_parse() does. */
int acli_parse(struct acli *a, const char *name, const char *args, const char *limit_help,
               const char *about, const struct cli_opt *extra, int argc, char **argv);

/* The limit, or def when -n/--limit was not given. */
static inline uint32_t acli_limit(const struct acli *a, uint32_t def) {
  return a->limit < 0 ? def : (uint32_t)a->limit;
}

/* A command on one snapshot, once acli_open() has run. */
struct acli_snap {
  struct acli a;            /* its options                              */
  struct hg_graph *g;       /* the snapshot argv[1]                     */
  char **names;             /* class display names (cli_class_names)    */
  uint32_t node;            /* with "FILE ADDR": the node argv[2] names */
};

/* The opening the snapshot commands share: acli_parse(), then argv[1]
 * loaded (cli_load), with args "FILE ADDR" argv[2]'s node (acli_node), and
 * the class names. Returns -1 to run, else the exit status: acli_parse()'s,
 * or `fail` when the file does not load, the node is not there or (said as
 * "heapgraph NAME: <HG_ENOMEM's message>") memory ran out — everything freed
 * then. Free with acli_close(). */
int acli_open(struct acli_snap *s, const char *name, const char *args, const char *limit_help,
              const char *about, const struct cli_opt *extra, int argc, char **argv, int fail);
/* The same, loading with hg_graph_load_flags' load_flags. */
int acli_open_flags(struct acli_snap *s, const char *name, const char *args,
                    const char *limit_help, const char *about, const struct cli_opt *extra,
                    int argc, char **argv, int fail, unsigned load_flags);
void acli_close(struct acli_snap *s);

/* Finds the node for "0xADDR"/decimal address (interior ok), "#INDEX" or a
 * DevTools heapsnapshot id "@ID" (hg_export_node_ids).
 * Prints an error and returns -1 when there is none. */
int acli_node(const struct hg_graph *g, const char *cmd, const char *arg, uint32_t *out);
/* Class label of node v ("(unclassified)" / "(region)" when none). */
const char *acli_label(const struct hg_graph *g, char **names, uint32_t v);
/* "0x1000 Foo (48 B)" */
void acli_node_text(FILE *f, const struct hg_graph *g, char **names, uint32_t v);
/* {"index":…,"addr":"0x…","size":…,"class":… — left open: the caller may
 * add fields and must print the closing brace. */
void acli_node_json(FILE *f, const struct hg_graph *g, char **names, uint32_t v);
/* The region holding addr, or NULL. */
const struct hg_region *acli_region_of(const struct hg_graph *g, uint64_t addr);
/* `show --json` for node v, one object: the node (acli_node_json's fields
 * plus class_kind, flags, heap, region and its allocation stack), its
 * roots, and up to k outgoing and k incoming references from the off'th
 * on, with their counts. The CLI's `show` and the viewer's /api/show. sym:
 * the symbolizer to use (the viewer keeps one), NULL for a new one. */
struct symbolizer;
void acli_show_json(FILE *f, const struct hg_graph *g, char **names, struct symbolizer *sym, uint32_t v,
                    uint32_t off, uint32_t k);
/* "field" or "+0x18" for edge e, in buf. */
const char *acli_edge_name(const struct hg_graph *g, uint32_t e, char *buf, size_t size);

#endif
