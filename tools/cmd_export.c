/*
 * cmd_export.c — `heapgraph export FILE --format heapsnapshot|dot|json|jsonl
 * [-o OUT] [--node ADDR] [--depth N] [-n N] [--mangled]`: writes the graph
 * for other tools (Chrome DevTools' Memory panel, Graphviz, scripts).
 */
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_util.h"

static const char usage[] =
    "usage: heapgraph export FILE --format heapsnapshot|dot|json|jsonl [-o OUT]\n"
    "                        [--node ADDR] [--depth N] [-n N] [--mangled]\n"
    "  heapsnapshot  Chrome DevTools heap snapshot (load it in the Memory panel);\n"
    "                a DevTools @ID is `heapgraph show FILE @ID`\n"
    "  dot           Graphviz: the neighbourhood of --node (--depth hops, default\n"
    "                2) or, without --node, the top retainers grouped by class;\n"
    "                at most -n nodes (default 40 / 100 with --node)\n"
    "  json          the whole graph with dominators and retained sizes\n"
    "  jsonl         the same, one JSON record per line (any size)\n"
    "  Output goes to OUT or stdout. C++ class names are demangled unless --mangled.\n";

static int write_file(void *ctx, const void *data, size_t len) {
  return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

static const char *demangle(void *ctx, const char *name, uint32_t kind) {
  char **last = ctx;
  free(*last);
  *last = kind == HG_CLASS_CXX ? cli_demangle_type(name) : NULL;
  return *last ? *last : name;
}

int cmd_export(int argc, char **argv) {
  struct acli a = {.cmd = "export", .usage = usage};
  int st = acli_parse(&a, argc, argv, 1);
  if (st >= 0) return st;
  struct hg_export_options o = {.focus = HG_NONE};
  if (!a.format) o.format = 0;
  else if (!strcmp(a.format, "heapsnapshot")) o.format = HG_EXPORT_HEAPSNAPSHOT;
  else if (!strcmp(a.format, "dot")) o.format = HG_EXPORT_DOT;
  else if (!strcmp(a.format, "json")) o.format = HG_EXPORT_JSON;
  else if (!strcmp(a.format, "jsonl")) o.format = HG_EXPORT_JSONL;
  if (!o.format) {
    fprintf(stderr, "heapgraph export: --format heapsnapshot, dot, json or jsonl\n%s", usage);
    return 2;
  }
  o.depth = a.depth > 0 ? (uint32_t)a.depth : 0;
  o.max_nodes = a.limit > 0 ? (uint32_t)a.limit : 0;
  char *last = NULL;
  if (!a.mangled) {
    o.class_name = demangle;
    o.class_name_ctx = &last;
  }
  struct hg_graph *g = cli_load(a.pos[0], 0);
  if (!g) return 1;
  st = 1;
  FILE *out = stdout;
  if (a.node && acli_node(g, a.cmd, a.node, &o.focus)) goto done;
  if (a.out && !(out = fopen(a.out, "wb"))) {
    perror(a.out);
    goto done;
  }
  struct hg_export_stats s;
  int rc = hg_export(g, &o, write_file, out, &s);
  if (out != stdout) {
    if (fclose(out) && !rc) rc = HG_EIO;
  } else if (fflush(stdout) && !rc) {
    rc = HG_EIO;
  }
  if (rc) {
    fprintf(stderr, "heapgraph export: %s%s\n", hg_error_string(rc),
            rc == HG_ELIMIT ? " (the format's uint32 numbers cannot hold this graph)" : "");
    if (a.out) remove(a.out);
    goto done;
  }
  if (s.moved_ids)
    fprintf(stderr, "heapgraph export: %llu blocks share an address-derived id with a block 32 GiB "
            "apart and got the next free id\n", (unsigned long long)s.moved_ids);
  if (s.clamped_sizes)
    fprintf(stderr, "heapgraph export: %llu node sizes above 4294967295 written as 4294967295\n",
            (unsigned long long)s.clamped_sizes);
  st = 0;
done:
  free(last);
  hg_graph_free(g);
  return st;
}
