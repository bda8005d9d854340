/*
 * cmd_cycles.c — `heapgraph cycles FILE [-n N] [--json]`: reference cycles
 * (groups of two or more blocks that keep each other alive through strong,
 * conservative or interior references), biggest first, with their classes
 * and the references that close them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Retain cycles: strongly connected groups of >= 2 blocks over retaining\n"
    "  references (weak/unowned ones break cycles), biggest bytes first; the N\n"
    "  (default 20) biggest are shown with up to 20 members and 40 references.\n";

int cmd_cycles(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "cycles", "FILE", "cycles shown (default 20)", about, NULL, argc, argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = acli_limit(&s.a, 20);
  struct hg_cycles *c = NULL;
  uint32_t *which = malloc(((size_t)g->node_count + 1) * sizeof *which);
  int rc = which ? hg_cycles_find(g, 2, &c) : HG_ENOMEM;
  if (rc) {
    fprintf(stderr, "heapgraph cycles: %s\n", hg_error_string(rc));
    st = 1;
    goto out;
  }
  if (s.a.json) {
    ajson_cycles(stdout, g, names, c, 0, k);
    printf("\n");
    st = 0;
    goto out;
  }
  memset(which, 0xff, ((size_t)g->node_count + 1) * sizeof *which);
  for (uint32_t i = 0; i < c->count && i < k; i++)
    for (uint32_t j = 0; j < c->cycles[i].count; j++) which[c->members[c->cycles[i].first + j]] = i;
  printf("%" PRIu32 " reference cycle%s\n", c->count, c->count == 1 ? "" : "s");
  for (uint32_t i = 0; i < c->count && i < k; i++) {
    const struct hg_cycle *cy = &c->cycles[i];
    const uint32_t *mem = c->members + cy->first;
    printf("\nCYCLE %" PRIu32 ": %" PRIu32 " blocks, %" PRIu64 " B%s\n", i + 1, cy->count, cy->bytes,
           cy->leaked ? " (leaked: no root reaches it)" : "");
    for (uint32_t j = 0; j < cy->count && j < AJSON_CYCLE_MEMBERS; j++) {
      printf("  ");
      acli_node_text(stdout, g, names, mem[j]);
      printf("\n");
    }
    if (cy->count > AJSON_CYCLE_MEMBERS) printf("  … %" PRIu32 " more\n", cy->count - AJSON_CYCLE_MEMBERS);
    uint32_t refs = 0;
    for (uint32_t j = 0; j < cy->count && refs < AJSON_CYCLE_REFS; j++) {
      uint32_t v = mem[j];
      for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && refs < AJSON_CYCLE_REFS; e++) {
        uint32_t t = g->edge_target[e];
        if (which[t] != i || !hg_edge_kind_retains(g->edge_kind[e])) continue;
        char buf[32];
        const char *name = acli_edge_name(g, e, buf, sizeof buf);
        printf("    0x%" PRIx64 " %s.%s -> 0x%" PRIx64 " %s [%s]\n", g->node_addr[v],
               cli_text(acli_label(g, names, v)), cli_text(name), g->node_addr[t],
               cli_text(acli_label(g, names, t)), hg_edge_kind_name(g->edge_kind[e]));
        refs++;
      }
    }
  }
  if (c->count > k) printf("\n… %" PRIu32 " more cycles (-n)\n", c->count - k);
  st = 0;
out:
  free(which);
  hg_cycles_free(c);
  acli_close(&s);
  return st;
}
