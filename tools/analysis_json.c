/*
 * analysis_json.c — the JSON writer of each snapshot analysis, one for the
 * CLI's --json and the viewer's API alike (analysis_json.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static void node_retained(FILE *f, const struct hg_graph *g, char **names, const struct hg_dominators *d,
                          uint32_t v) {
  acli_node_json(f, g, names, v);
  fprintf(f, ",\"retained\":%" PRIu64 "}", d->retained[v]);
}

void ajson_info(FILE *f, const struct hg_graph *g, const char *path) {
  const struct hg_meta *m = &g->meta;
  uint64_t classified = 0, bytes = 0;
  for (uint32_t i = 0; i < g->node_count; i++) {
    classified += g->node_class[i] != 0;
    bytes += g->node_size[i];
  }
  fputs("{\"file\":", f);
  cli_json_str(f, path);
  fprintf(f, ",\"file_size\":%" PRIu64 ",\"format_version\":%u,\"checksum\":\"0x%016" PRIx64 "\",\"checksum_ok\":%s",
          g->file_size, g->format_version, g->checksum, g->checksum_ok ? "true" : "false");
  const char *tk[] = {"platform", "os_version", "arch", "process", "trigger", "allocator", "heap_status"};
  const char *tv[] = {m->platform, m->os_version, m->arch, m->process, m->trigger, m->allocator, m->heap_status};
  for (size_t i = 0; i < sizeof tk / sizeof tk[0]; i++) {
    fprintf(f, ",\"%s\":", tk[i]);
    cli_json_str(f, tv[i]);
  }
  fprintf(f, ",\"pointer_size\":%u,\"page_size\":%u,\"pid\":%" PRId64 ",\"time_ns\":%" PRIu64 ",\"app\":{",
          m->pointer_size, m->page_size, m->pid, m->time_ns);
  for (size_t i = 0; i < m->app_count; i++) {
    fputs(i ? "," : "", f);
    cli_json_str(f, m->app[i].key);
    fputc(':', f);
    cli_json_str(f, m->app[i].value);
  }
  fputs("},\"capture\":{", f);
  for (size_t i = 0; i < m->capture_count; i++) {
    fputs(i ? "," : "", f);
    cli_json_str(f, m->capture[i].key);
    fprintf(f, ":%" PRIu64, m->capture[i].value);
  }
  fprintf(f, "},\"counts\":{\"regions\":%u,\"images\":%u,\"threads\":%u,\"heaps\":%u,\"classes\":%u,"
             "\"strings\":%u,\"nodes\":%u,\"edges\":%u,\"roots\":%u}",
          g->region_count, g->image_count, g->thread_count, g->heap_count, g->class_count, g->string_count,
          g->node_count, g->edge_count, g->root_count);
  fprintf(f, ",\"node_bytes\":%" PRIu64 ",\"classified_nodes\":%" PRIu64 "}", bytes, classified);
}

static int rg_by_name(const void *a, const void *b) {
  const struct hg_region *const *x = a, *const *y = b;
  return strcmp((*x)->name ? (*x)->name : "", (*y)->name ? (*y)->name : "");
}

static int rg_by_dirty(const void *a, const void *b) {
  const struct ajson_region_group *x = a, *y = b;
  if (x->dirty != y->dirty) return x->dirty < y->dirty ? 1 : -1;
  if (x->virt != y->virt) return x->virt < y->virt ? 1 : -1;
  return strcmp(x->name, y->name);
}

struct ajson_region_group *ajson_region_groups(const struct hg_graph *g, size_t *n) {
  const struct hg_region **s = malloc(((size_t)g->region_count + 1) * sizeof *s);
  struct ajson_region_group *gr = calloc((size_t)g->region_count + 1, sizeof *gr), total = {"TOTAL", 0, 0, 0, 0, 0};
  if (!s || !gr) {
    free(s), free(gr);
    return NULL;
  }
  for (uint32_t i = 0; i < g->region_count; i++) s[i] = &g->regions[i];
  qsort(s, g->region_count, sizeof *s, rg_by_name);
  size_t ng = 0;
  for (uint32_t i = 0; i < g->region_count; i++) {
    const char *name = s[i]->name && *s[i]->name ? s[i]->name : "(anonymous)";
    if (!ng || strcmp(gr[ng - 1].name, name)) gr[ng++].name = name;
    struct ajson_region_group *x[2] = {&gr[ng - 1], &total};
    for (int j = 0; j < 2; j++) {
      x[j]->count++;
      x[j]->virt += s[i]->size;
      x[j]->resident += s[i]->resident;
      x[j]->dirty += s[i]->dirty;
      x[j]->swapped += s[i]->swapped;
    }
  }
  free(s);
  qsort(gr, ng, sizeof *gr, rg_by_dirty);
  gr[ng] = total;
  *n = ng;
  return gr;
}

void ajson_region_group(FILE *f, const struct ajson_region_group *x, int total) {
  fputs("{\"name\":", f);
  cli_json_str(f, x->name);
  fprintf(f, ",\"count\":%" PRIu64 ",\"virtual\":%" PRIu64 ",\"resident\":%" PRIu64 ",\"dirty\":%" PRIu64
             ",\"swapped\":%" PRIu64 "%s}",
          x->count, x->virt, x->resident, x->dirty, x->swapped, total ? ",\"total\":true" : "");
}

struct crow {
  uint32_t id;
  uint64_t retained;
};

static int crow_by_retained(const void *a, const void *b) {
  const struct crow *x = a, *y = b;
  if (x->retained != y->retained) return x->retained > y->retained ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

int ajson_top(FILE *f, const struct hg_graph *g, char **names, const struct hg_dominators *d, const uint32_t *top,
              uint32_t nt, const uint64_t *count, const uint64_t *bytes, const uint64_t *retained, uint32_t k) {
  uint32_t nc = g->class_count + 1, nrows = 0;
  struct crow *rows = malloc((size_t)nc * sizeof *rows);
  if (!rows) return -1;
  for (uint32_t c = 0; c < nc; c++)
    if (count[c]) rows[nrows++] = (struct crow){c, retained[c]};
  qsort(rows, nrows, sizeof *rows, crow_by_retained);
  if (nrows > k) nrows = k;
  uint64_t total = 0;
  for (uint32_t v = 0; v < g->node_count; v++) total += g->node_size[v];
  fprintf(f, "{\"nodes_total\":%" PRIu32 ",\"bytes_total\":%" PRIu64 ",\"reachable_count\":%" PRIu32
             ",\"reachable_bytes\":%" PRIu64 ",\"nodes\":[",
          g->node_count, total, d->reachable_count, d->reachable_bytes);
  for (uint32_t i = 0; i < nt; i++) {
    fputs(i ? ",\n" : "\n", f);
    node_retained(f, g, names, d, top[i]);
  }
  fputs("],\"classes\":[", f);
  for (uint32_t i = 0; i < nrows; i++) {
    uint32_t c = rows[i].id;
    fprintf(f, "%s{\"class\":", i ? ",\n" : "\n");
    cli_json_str(f, c ? names[c] : NULL);
    fprintf(f, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"retained\":%" PRIu64 "}", count[c], bytes[c],
            retained[c]);
  }
  fputs("]}", f);
  free(rows);
  return 0;
}

void ajson_dominators(FILE *f, const struct hg_graph *g, char **names, const struct hg_dominators *d, uint32_t x,
                      const uint32_t *kids, uint32_t nk, uint32_t off, uint32_t k) {
  fputs("{\"node\":", f);
  node_retained(f, g, names, d, x);
  fprintf(f, ",\"reachable\":%s,\"chain\":[", d->idom[x] != HG_NONE ? "true" : "false");
  int first = 1;
  for (uint32_t u = d->idom[x]; u < g->node_count; u = d->idom[u], first = 0) {
    fputs(first ? "\n" : ",\n", f);
    node_retained(f, g, names, d, u);
  }
  fprintf(f, "],\"dominated_count\":%" PRIu32 ",\"dominated\":[", nk);
  for (uint32_t i = off; i < nk && i - off < k; i++) {
    fputs(i == off ? "\n" : ",\n", f);
    node_retained(f, g, names, d, kids[i]);
  }
  fputs("]}", f);
}

void ajson_paths(FILE *f, const struct hg_graph *g, char **names, const struct hg_paths *p) {
  if (!p) {
    fputs("{\"reachable\":false,\"paths\":[]}", f);
    return;
  }
  fputs("{\"reachable\":true,\"paths\":[", f);
  for (uint32_t i = 0; i < p->count; i++) {
    const struct hg_path *pa = &p->paths[i];
    const struct hg_root *rt = pa->root < g->root_count ? &g->roots[pa->root] : NULL;
    fprintf(f, "%s{\"length\":%" PRIu32 ",\"root\":", i ? ",\n" : "\n", pa->length);
    if (rt) {
      fprintf(f, "{\"kind\":\"%s\",\"owner\":", hg_root_kind_name(rt->kind));
      if (rt->owner == HG_NO_OWNER) fputs("null", f);
      else fprintf(f, "%" PRIu32, rt->owner);
      fputs(",\"addr\":", f);
      cli_json_addr(f, rt->addr);
      fputc('}', f);
    } else {
      fputs("null", f);
    }
    fputs(",\"steps\":[", f);
    for (uint32_t j = 0; j <= pa->length; j++) {
      fputs(j ? ",\n" : "", f);
      acli_node_json(f, g, names, pa->nodes[j]);
      if (j) {
        uint32_t e = pa->edges[j - 1];
        fputs(",\"via\":", f);
        cli_json_str(f, hg_graph_edge_field(g, e));
        fprintf(f, ",\"offset\":%" PRIu32 ",\"kind\":\"%s\"", g->edge_offset[e], hg_edge_kind_name(g->edge_kind[e]));
      }
      fputc('}', f);
    }
    fputs("]}", f);
  }
  fputs("]}", f);
}

void ajson_leaks(FILE *f, const struct hg_graph *g, char **names, const struct hg_leaks *l, uint32_t off, uint32_t k) {
  fprintf(f, "{\"leaked_count\":%" PRIu32 ",\"leaked_bytes\":%" PRIu64 ",\"root_leaks\":%" PRIu32
             ",\"exact\":%s,\"leaks\":[",
          l->leaked_count, l->leaked_bytes, l->count, l->held_exact ? "true" : "false");
  for (uint32_t i = off; i < l->count && i - off < k; i++) {
    const struct hg_leak *x = &l->leaks[i];
    fputs(i == off ? "\n" : ",\n", f);
    acli_node_json(f, g, names, x->node);
    fprintf(f, ",\"group_count\":%" PRIu32 ",\"group_bytes\":%" PRIu64 ",\"count\":%" PRIu32 ",\"bytes\":%" PRIu64
               ",\"owned_count\":%" PRIu32 ",\"owned_bytes\":%" PRIu64 "}",
            x->group_count, x->group_bytes, x->count, x->bytes, x->owned_count, x->owned_bytes);
  }
  fputs("]}", f);
}

void ajson_cycle(FILE *f, const struct hg_graph *g, char **names, const struct hg_cycles *c, uint32_t i,
                 uint32_t max) {
  const struct hg_cycle *cy = &c->cycles[i];
  const uint32_t *mem = c->members + cy->first;
  fprintf(f, "{\"count\":%" PRIu32 ",\"bytes\":%" PRIu64 ",\"leaked\":%s,\"members\":[", cy->count, cy->bytes,
          cy->leaked ? "true" : "false");
  for (uint32_t j = 0; j < cy->count && j < max; j++) {
    fputs(j ? "," : "", f);
    acli_node_json(f, g, names, mem[j]);
    fputc('}', f);
  }
  fputs("],\"references\":[", f);
  uint32_t refs = 0;
  for (uint32_t j = 0; j < cy->count && refs < AJSON_CYCLE_REFS; j++) {
    uint32_t u = mem[j];
    for (uint32_t e = g->edge_start[u]; e < g->edge_start[u + 1] && refs < AJSON_CYCLE_REFS; e++) {
      uint32_t t = g->edge_target[e];
      if (!hg_edge_kind_retains(g->edge_kind[e])) continue;
      uint32_t lo = 0, hi = cy->count; /* members are sorted by address */
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->node_addr[mem[mid]] < g->node_addr[t]) lo = mid + 1;
        else hi = mid;
      }
      if (lo == cy->count || mem[lo] != t) continue;
      char buf[32];
      fprintf(f, "%s{\"from\":%" PRIu32 ",\"to\":%" PRIu32 ",\"field\":", refs ? "," : "", u, t);
      cli_json_str(f, acli_edge_name(g, e, buf, sizeof buf));
      fprintf(f, ",\"kind\":\"%s\"}", hg_edge_kind_name(g->edge_kind[e]));
      refs++;
    }
  }
  fputs("]}", f);
}

void ajson_cycles(FILE *f, const struct hg_graph *g, char **names, const struct hg_cycles *c, uint32_t off,
                  uint32_t k) {
  fprintf(f, "{\"cycle_count\":%" PRIu32 ",\"cycles\":[", c->count);
  for (uint32_t i = off; i < c->count && i - off < k; i++) {
    fputs(i == off ? "\n" : ",\n", f);
    ajson_cycle(f, g, names, c, i, AJSON_CYCLE_MEMBERS);
  }
  fputs("]}", f);
}

void ajson_diff(FILE *f, const struct hg_diff *d, uint32_t off, uint32_t k, int mangled, int with_total) {
  fprintf(f, "{\"old_count\":%" PRIu64 ",\"old_bytes\":%" PRIu64 ",\"new_count\":%" PRIu64 ",\"new_bytes\":%" PRIu64,
          d->old_count, d->old_bytes, d->new_count, d->new_bytes);
  if (with_total) fprintf(f, ",\"class_count\":%" PRIu32, d->count);
  fputs(",\"classes\":[", f);
  for (uint32_t i = off; i < d->count && i - off < k; i++) {
    const struct hg_class_delta *c = &d->classes[i];
    char *dem = c->name && !mangled && c->kind == HG_CLASS_CXX ? cli_demangle_type(c->name) : NULL;
    fprintf(f, "%s{\"class\":", i == off ? "\n" : ",\n");
    cli_json_str(f, dem ? dem : c->name);
    fprintf(f, ",\"kind\":\"%s\",\"old_count\":%" PRIu64 ",\"old_bytes\":%" PRIu64 ",\"new_count\":%" PRIu64
               ",\"new_bytes\":%" PRIu64 ",\"delta_count\":%" PRId64 ",\"delta_bytes\":%" PRId64 ",\"new\":%s}",
            hg_class_kind_name(c->kind), c->old_count, c->old_bytes, c->new_count, c->new_bytes,
            (int64_t)(c->new_count - c->old_count), (int64_t)(c->new_bytes - c->old_bytes),
            c->old_count ? "false" : "true");
    free(dem);
  }
  fputs("]}", f);
}
