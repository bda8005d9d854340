/*
 * cmd_export.c — `heapgraph export FILE --format heapsnapshot|dot|json|jsonl
 * [-o OUT] [--node ADDR] [--depth N] [-n N] [--mangled]`: writes the graph
 * for other tools (Chrome DevTools' Memory panel, Graphviz, scripts).
 */
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static const char about[] =
    "  heapsnapshot  Chrome DevTools heap snapshot (load it in the Memory panel);\n"
    "                a DevTools @ID is `heapgraph show FILE @ID`\n"
    "  dot           Graphviz: the neighbourhood of --node (--depth hops, default\n"
    "                2) or, without --node, the top retainers grouped by class;\n"
    "                at most -n nodes (default 30; 40 with --node)\n"
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
  const char *format = NULL, *node = NULL, *outpath = NULL;
  long depth = -1, limit = -1;
  int mangled = 0, nargs;
  const struct cli_opt opts[] = {
      CLI_REQ_CHOICE("--format", "heapsnapshot|dot|json|jsonl", &format, "output format"),
      CLI_OPT_STR("-o", "OUT", &outpath, "write to OUT instead of stdout"),
      CLI_OPT_STR("--node", "ADDR", &node, "dot: the node to centre on (0x…, #INDEX or @ID)"),
      CLI_OPT_NUM("--depth", "N", &depth, 0, CLI_MAX_COUNT, "dot: hops around --node (default 2)"),
      CLI_LIMIT(&limit, "dot: at most N nodes (default 30; 40 with --node)"),
      CLI_MANGLED(&mangled),
      CLI_END};
  const struct cli_cmd cmd = {"export", "FILE", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  struct hg_export_options o = {.focus = HG_NONE};
  if (!strcmp(format, "heapsnapshot")) o.format = HG_EXPORT_HEAPSNAPSHOT;
  else if (!strcmp(format, "dot")) o.format = HG_EXPORT_DOT;
  else if (!strcmp(format, "jsonl")) o.format = HG_EXPORT_JSONL;
  else o.format = HG_EXPORT_JSON;
  o.depth = depth > 0 ? (uint32_t)depth : 0;
  o.max_nodes = limit > 0 ? (uint32_t)limit : 0;
  char *last = NULL;
  if (!mangled) {
    o.class_name = demangle;
    o.class_name_ctx = &last;
  }
  struct hg_graph *g = cli_load(argv[1], 0);
  if (!g) return 1;
  st = 1;
  FILE *out = stdout;
  if (node && acli_node(g, cmd.name, node, &o.focus)) goto done;
  if (outpath && !(out = fopen(outpath, "wb"))) {
    perror(outpath);
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
    if (outpath) remove(outpath);
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
