/*
 * cmd_nodes.c — `heapgraph nodes FILE [--class NAME] [--json] [--mangled]
 * [--limit N]`: one line per node (index, address, size, class, flags,
 * heap, out/in degree); with --json one object per line.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_util.h"

static void flags_str(uint8_t f, char *out, size_t size) {
  snprintf(out, size, "%s%s%s", f & HG_NODE_MALLOC ? "malloc" : "", f & HG_NODE_REGION ? "region" : "",
           f & HG_NODE_MMAPPED ? "+mmap" : "");
}

static const char about[] =
    "  Lists nodes in address order: index, address, size, flags, out/in degree,\n"
    "  class.\n";

int cmd_nodes(int argc, char **argv) {
  const char *cls = NULL;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("--class", "NAME", &cls,
                  "only nodes of class NAME (demangled or mangled); \"-\": unclassified"),
      CLI_END};
  struct acli_snap s;
  int st = acli_open(&s, "nodes", "FILE", "at most N nodes", about, opts, argc, argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  if (hg_graph_build_reverse(g)) {
    fprintf(stderr, "heapgraph nodes: out of memory\n");
    acli_close(&s);
    return 1;
  }
  long shown = 0;
  for (uint32_t n = 0; n < g->node_count && (s.a.limit < 0 || shown < s.a.limit); n++) {
    uint32_t c = g->node_class[n];
    if (cls) {
      if (!strcmp(cls, "-")) {
        if (c) continue;
      } else if (!c || (strcmp(cls, names[c]) && strcmp(cls, g->classes[c - 1].name))) {
        continue;
      }
    }
    shown++;
    char fl[32];
    flags_str(g->node_flags[n], fl, sizeof fl);
    uint32_t out = g->edge_start[n + 1] - g->edge_start[n], in = g->in_start[n + 1] - g->in_start[n];
    const char *heap = g->node_heap[n] ? g->heaps[g->node_heap[n] - 1] : NULL;
    if (s.a.json) {
      printf("{\"index\":%u,\"addr\":", n);
      cli_json_addr(stdout, g->node_addr[n]);
      printf(",\"size\":%llu,\"class\":", (unsigned long long)g->node_size[n]);
      cli_json_str(stdout, c ? names[c] : NULL);
      printf(",\"kind\":");
      cli_json_str(stdout, c ? hg_class_kind_name(g->classes[c - 1].kind) : NULL);
      printf(",\"flags\":\"%s\",\"heap\":", fl);
      cli_json_str(stdout, heap);
      printf(",\"out\":%u,\"in\":%u}\n", out, in);
    } else {
      printf("%8u 0x%012llx %10llu %-8s out %-4u in %-4u %s\n", n, (unsigned long long)g->node_addr[n],
             (unsigned long long)g->node_size[n], fl, out, in, c ? cli_text(names[c]) : "-");
    }
  }
  acli_close(&s);
  return 0;
}
