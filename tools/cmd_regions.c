/*
 * cmd_regions.c — `heapgraph regions FILE [--json] [--all]`: VM regions
 * summarised by tag/name like `vmmap --summary` (count, virtual, resident,
 * dirty, swapped), biggest dirty first; --all lists every region.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_json.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static void prot_str(uint32_t p, char out[5]) {
  out[0] = p & HG_PROT_READ ? 'r' : '-';
  out[1] = p & HG_PROT_WRITE ? 'w' : '-';
  out[2] = p & HG_PROT_EXEC ? 'x' : '-';
  out[3] = p & HG_PROT_SHARED ? 's' : 'p';
  out[4] = 0;
}

static void list_all(const struct hg_graph *g, int json) {
  for (uint32_t i = 0; i < g->region_count; i++) {
    const struct hg_region *r = &g->regions[i];
    char prot[5];
    prot_str(r->prot, prot);
    if (json) {
      printf("{\"start\":");
      cli_json_addr(stdout, r->start);
      printf(",\"size\":%llu,\"prot\":\"%s\",\"tag\":%u,\"name\":", (unsigned long long)r->size, prot, r->tag);
      cli_json_str(stdout, r->name);
      printf(",\"resident\":%llu,\"dirty\":%llu,\"swapped\":%llu}\n", (unsigned long long)r->resident,
             (unsigned long long)r->dirty, (unsigned long long)r->swapped);
    } else {
      printf("%016llx-%016llx %s %10llu %10llu %s\n", (unsigned long long)r->start,
             (unsigned long long)(r->start + r->size), prot, (unsigned long long)r->resident,
             (unsigned long long)r->dirty, r->name ? cli_text(r->name) : "");
    }
  }
}

static const char about[] =
    "  VM regions grouped by name/tag with count, virtual, resident, dirty and\n"
    "  swapped bytes (like vmmap --summary).\n";

int cmd_regions(int argc, char **argv) {
  int json = 0, all = 0, nargs;
  const struct cli_opt opts[] = {CLI_JSON(&json),
                                 CLI_OPT_FLAG("--all", &all, "list every region, not groups"), CLI_END};
  const struct cli_cmd cmd = {"regions", "FILE", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  const char *path = argv[1];
  struct hg_graph *g = cli_load(path, 0);
  if (!g) return 1;
  if (all) {
    list_all(g, json);
    hg_graph_free(g);
    return 0;
  }
  size_t ng = 0;
  struct ajson_region_group *gr = ajson_region_groups(g, &ng);
  if (!gr) {
    fprintf(stderr, "heapgraph regions: out of memory\n");
    hg_graph_free(g);
    return 1;
  }
  if (!json) printf("%6s %14s %14s %14s %14s  %s\n", "COUNT", "VIRTUAL", "RESIDENT", "DIRTY", "SWAPPED", "REGION");
  for (size_t i = 0; i <= ng; i++) {
    const struct ajson_region_group *x = &gr[i];
    if (json) {
      ajson_region_group(stdout, x, i == ng);
      printf("\n");
    } else {
      printf("%6llu %14llu %14llu %14llu %14llu  %s\n", (unsigned long long)x->count,
             (unsigned long long)x->virt, (unsigned long long)x->resident, (unsigned long long)x->dirty,
             (unsigned long long)x->swapped, cli_text(x->name));
    }
  }
  free(gr);
  hg_graph_free(g);
  return 0;
}
