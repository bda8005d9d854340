/*
 * cmd_edges.c — `heapgraph edges FILE [--from ADDR] [--json] [--limit N]`:
 * one line per edge (source address + offset → target address, kind, field).
 * --from ADDR lists the out-edges of the node containing ADDR.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Lists edges: source node address, byte offset of the pointer in the source,\n"
    "  target node address, kind (conservative/interior/strong/weak/unowned) and\n"
    "  field name.\n";

int cmd_edges(int argc, char **argv) {
  const char *from = NULL;
  int json = 0, nargs;
  long limit = -1;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("--from", "ADDR", &from, "only the out-edges of the node containing ADDR"),
      CLI_JSON(&json), CLI_LIMIT(&limit, "at most N edges"), CLI_END};
  const struct cli_cmd cmd = {"edges", "FILE", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  const char *path = argv[1];
  struct hg_graph *g = cli_load(path, 0);
  if (!g) return 1;
  uint32_t lo = 0, hi = g->node_count;
  if (from) {
    uint64_t a;
    int64_t n = cli_parse_u64(from, &a) ? -1 : hg_graph_find(g, a);
    if (n < 0) {
      fprintf(stderr, "heapgraph edges: no node contains %s\n", from);
      hg_graph_free(g);
      return 1;
    }
    lo = (uint32_t)n;
    hi = lo + 1;
  }
  long shown = 0;
  for (uint32_t s = lo; s < hi; s++)
    for (uint32_t e = g->edge_start[s]; e < g->edge_start[s + 1]; e++) {
      if (limit >= 0 && shown >= limit) goto done;
      shown++;
      uint32_t t = g->edge_target[e];
      const char *field = hg_graph_edge_field(g, e);
      if (json) {
        printf("{\"from\":");
        cli_json_addr(stdout, g->node_addr[s]);
        printf(",\"offset\":%u,\"to\":", g->edge_offset[e]);
        cli_json_addr(stdout, g->node_addr[t]);
        printf(",\"kind\":\"%s\",\"field\":", hg_edge_kind_name(g->edge_kind[e]));
        cli_json_str(stdout, field);
        printf("}\n");
      } else {
        printf("0x%012llx+%-6u -> 0x%012llx %-12s %s\n", (unsigned long long)g->node_addr[s],
               g->edge_offset[e], (unsigned long long)g->node_addr[t], hg_edge_kind_name(g->edge_kind[e]),
               field ? cli_text(field) : "");
      }
    }
done:
  hg_graph_free(g);
  return 0;
}
