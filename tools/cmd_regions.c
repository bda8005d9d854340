/*
 * cmd_regions.c — `heapgraph regions FILE [--json] [--all]`: VM regions
 * summarised by tag/name like `vmmap --summary` (count, virtual, resident,
 * dirty, swapped), biggest dirty first; --all lists every region.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli_opts.h"
#include "tools/cli_util.h"

struct group {
  const char *name;
  uint64_t count, virt, resident, dirty, swapped;
};

static int by_name(const void *a, const void *b) {
  const struct hg_region *const *x = a, *const *y = b;
  const char *p = (*x)->name ? (*x)->name : "", *q = (*y)->name ? (*y)->name : "";
  return strcmp(p, q);
}

static int by_dirty(const void *a, const void *b) {
  const struct group *x = a, *y = b;
  if (x->dirty != y->dirty) return x->dirty < y->dirty ? 1 : -1;
  if (x->virt != y->virt) return x->virt < y->virt ? 1 : -1;
  return strcmp(x->name, y->name);
}

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
  const struct hg_region **v = malloc(((size_t)g->region_count + 1) * sizeof *v);
  struct group *gr = calloc((size_t)g->region_count + 1, sizeof *gr);
  if (!v || !gr) {
    fprintf(stderr, "heapgraph regions: out of memory\n");
    return 1;
  }
  for (uint32_t i = 0; i < g->region_count; i++) v[i] = &g->regions[i];
  qsort(v, g->region_count, sizeof *v, by_name);
  size_t ng = 0;
  struct group total = {"TOTAL", 0, 0, 0, 0, 0};
  for (uint32_t i = 0; i < g->region_count; i++) {
    const char *name = v[i]->name && *v[i]->name ? v[i]->name : "(anonymous)";
    if (!ng || strcmp(gr[ng - 1].name, name)) gr[ng++].name = name;
    struct group *x = &gr[ng - 1];
    x->count++;
    x->virt += v[i]->size;
    x->resident += v[i]->resident;
    x->dirty += v[i]->dirty;
    x->swapped += v[i]->swapped;
    total.count++;
    total.virt += v[i]->size;
    total.resident += v[i]->resident;
    total.dirty += v[i]->dirty;
    total.swapped += v[i]->swapped;
  }
  qsort(gr, ng, sizeof *gr, by_dirty);
  if (!json) printf("%6s %14s %14s %14s %14s  %s\n", "COUNT", "VIRTUAL", "RESIDENT", "DIRTY", "SWAPPED", "REGION");
  for (size_t i = 0; i <= ng; i++) {
    const struct group *x = i < ng ? &gr[i] : &total;
    if (json) {
      printf("{\"name\":");
      cli_json_str(stdout, x->name);
      printf(",\"count\":%llu,\"virtual\":%llu,\"resident\":%llu,\"dirty\":%llu,\"swapped\":%llu%s}\n",
             (unsigned long long)x->count, (unsigned long long)x->virt, (unsigned long long)x->resident,
             (unsigned long long)x->dirty, (unsigned long long)x->swapped, i < ng ? "" : ",\"total\":true");
    } else {
      printf("%6llu %14llu %14llu %14llu %14llu  %s\n", (unsigned long long)x->count,
             (unsigned long long)x->virt, (unsigned long long)x->resident, (unsigned long long)x->dirty,
             (unsigned long long)x->swapped, cli_text(x->name));
    }
  }
  free(v);
  free(gr);
  hg_graph_free(g);
  return 0;
}
