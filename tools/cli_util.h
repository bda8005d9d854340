/*
 * cli_util.h — helpers shared by the CLI subcommands: loading a snapshot with
 * a uniform error message, JSON string output, address parsing and C++
 * demangling of class names for display.
 */
#ifndef HG_TOOLS_CLI_UTIL_H
#define HG_TOOLS_CLI_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "heapgraph.h"

/* Loads FILE; on failure prints "heapgraph: FILE: at byte N: message" to
 * stderr and returns NULL. */
struct hg_graph *cli_load(const char *path, unsigned flags);
/* Prints s as a JSON string literal (with quotes); NULL prints null. */
void cli_json_str(FILE *out, const char *s);
/* Prints an address as a JSON string "0x…". */
void cli_json_addr(FILE *out, uint64_t a);
/* Parses "0x…" or decimal; 0 on success. */
int cli_parse_u64(const char *s, uint64_t *out);
/* Display names for every class id (index 0 = unclassified → NULL):
 * demangled for C++ unless `mangled`. Free with cli_class_names_free. */
char **cli_class_names(const struct hg_graph *g, int mangled);
void cli_class_names_free(const struct hg_graph *g, char **names);
/* Demangles a C++ type name as stored in type_info (no _Z prefix); returns
 * a malloc'd string, or NULL when it is not a valid mangled type. */
char *cli_demangle_type(const char *name);
/* A snapshot string made safe for text output (a terminal must never see
 * its control characters: ESC ]0;… retitles it, ESC [ … rewrites the
 * screen): C0 controls including newline and tab, DEL and the C1 controls
 * (UTF-8 U+0080–U+009F) are written as \n, \t, \r, \xNN or \u00NN.
 * Returns s when nothing needs escaping (NULL stays NULL), else one of 8
 * rotating buffers (valid for the next 7 calls: enough for one printf). */
const char *cli_text(const char *s);
/* Replaces stdout and stderr by streams that escape every control
 * character except newline and tab (as cli_text does): a backstop for any
 * text output a command prints without cli_text. JSON output is unchanged
 * (it never holds raw control characters). Called once, in main. */
void cli_guard_output(void);
/* Human-readable byte count into buf ("1.5 MiB"). */
const char *cli_bytes(uint64_t n, char *buf, size_t size);

#endif
