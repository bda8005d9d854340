/*
 * analysis_cli.c — node lookup and node printing shared by the analysis
 * subcommands (see analysis_cli.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_util.h"
#include "tools/symbolize.h"

int acli_parse(struct acli *a, const char *name, const char *args, const char *limit_help,
               const char *about, const struct cli_opt *extra, int argc, char **argv) {
  *a = (struct acli){.limit = -1};
  struct cli_opt opts[16] = {CLI_LIMIT(&a->limit, limit_help), CLI_JSON(&a->json),
                             CLI_MANGLED(&a->mangled)};
  for (size_t i = 3; extra && extra->names && i + 1 < sizeof opts / sizeof opts[0]; i++)
    opts[i] = *extra++;
  int want = 1, nargs;
  for (const char *p = args; *p; p++) want += *p == ' ';
  const struct cli_cmd cmd = {name, args, want, want, opts, about, 0};
  return cli_parse(&cmd, argc, argv, &nargs);
}

int acli_open(struct acli_snap *s, const char *name, const char *args, const char *limit_help,
              const char *about, const struct cli_opt *extra, int argc, char **argv, int fail) {
  return acli_open_flags(s, name, args, limit_help, about, extra, argc, argv, fail, 0);
}

int acli_open_flags(struct acli_snap *s, const char *name, const char *args,
                    const char *limit_help, const char *about, const struct cli_opt *extra,
                    int argc, char **argv, int fail, unsigned load_flags) {
  *s = (struct acli_snap){.g = NULL};
  int st = acli_parse(&s->a, name, args, limit_help, about, extra, argc, argv);
  if (st >= 0) return st;
  if (!(s->g = cli_load(argv[1], load_flags))) return fail;
  if (strchr(args, ' ') && acli_node(s->g, name, argv[2], &s->node)) {
    acli_close(s);
    return fail;
  }
  if (!(s->names = cli_class_names(s->g, s->a.mangled))) {
    fprintf(stderr, "heapgraph %s: %s\n", name, hg_error_string(HG_ENOMEM));
    acli_close(s);
    return fail;
  }
  return -1;
}

void acli_close(struct acli_snap *s) {
  if (s->g) cli_class_names_free(s->g, s->names);
  hg_graph_free(s->g);
  s->g = NULL;
  s->names = NULL;
}

int acli_node(const struct hg_graph *g, const char *cmd, const char *arg, uint32_t *out) {
  uint64_t v;
  if (arg[0] == '#') {
    if (cli_parse_u64(arg + 1, &v) == 0 && v < g->node_count) {
      *out = (uint32_t)v;
      return 0;
    }
  } else if (arg[0] == '@') { /* a DevTools @id (hg_export_node_ids) */
    uint32_t *ids = malloc(((size_t)g->node_count + 1) * sizeof *ids);
    int64_t n = -1;
    if (ids && cli_parse_u64(arg + 1, &v) == 0 && !hg_export_node_ids(g, ids, NULL))
      for (uint32_t i = 0; i < g->node_count && n < 0; i++)
        if (ids[i] == v) n = i;
    free(ids);
    if (n >= 0) {
      *out = (uint32_t)n;
      return 0;
    }
  } else if (cli_parse_u64(arg, &v) == 0) {
    int64_t n = hg_graph_find(g, v);
    if (n >= 0) {
      *out = (uint32_t)n;
      return 0;
    }
  } else {
    fprintf(stderr, "heapgraph %s: '%s' is not an address (0x…), #index or DevTools @id\n", cmd,
            arg);
    return -1;
  }
  fprintf(stderr, "heapgraph %s: no node at %s\n", cmd, arg);
  return -1;
}

const char *acli_label(const struct hg_graph *g, char **names, uint32_t v) {
  uint32_t c = g->node_class[v];
  if (c && c <= g->class_count && names && names[c]) return names[c];
  if ((g->node_flags[v] & HG_NODE_REGION) && !(g->node_flags[v] & HG_NODE_MALLOC)) return "(region)";
  return "(unclassified)";
}

void acli_node_text(FILE *f, const struct hg_graph *g, char **names, uint32_t v) {
  fprintf(f, "0x%" PRIx64 " %s (%" PRIu64 " B)", g->node_addr[v], cli_text(acli_label(g, names, v)),
          g->node_size[v]);
}

void acli_node_json(FILE *f, const struct hg_graph *g, char **names, uint32_t v) {
  fprintf(f, "{\"index\":%" PRIu32 ",\"addr\":", v);
  cli_json_addr(f, g->node_addr[v]);
  fprintf(f, ",\"size\":%" PRIu64 ",\"class\":", g->node_size[v]);
  uint32_t c = g->node_class[v];
  cli_json_str(f, c && c <= g->class_count && names ? names[c] : NULL);
}

const char *acli_edge_name(const struct hg_graph *g, uint32_t e, char *buf, size_t size) {
  const char *f = hg_graph_edge_field(g, e);
  if (f) return f;
  snprintf(buf, size, "+0x%" PRIx32, g->edge_offset[e]);
  return buf;
}

const struct hg_region *acli_region_of(const struct hg_graph *g, uint64_t addr) {
  for (uint32_t i = 0; i < g->region_count; i++)
    if (addr >= g->regions[i].start && addr - g->regions[i].start < g->regions[i].size)
      return &g->regions[i];
  return NULL;
}

static void show_node_json(FILE *f, const struct hg_graph *g, char **names, struct symbolizer *sym, uint32_t v) {
  const struct hg_region *r = acli_region_of(g, g->node_addr[v]);
  uint32_t c = g->node_class[v], heap = g->node_heap[v];
  acli_node_json(f, g, names, v);
  fputs(",\"class_kind\":", f);
  cli_json_str(f, c && c <= g->class_count ? hg_class_kind_name(g->classes[c - 1].kind) : NULL);
  fprintf(f, ",\"flags\":%u,\"heap\":", (unsigned)g->node_flags[v]);
  cli_json_str(f, heap && heap <= g->heap_count ? g->heaps[heap - 1] : NULL);
  fputs(",\"region\":", f);
  cli_json_str(f, r ? (r->name ? r->name : "") : NULL);
  sym_print_node_stack(f, sym, g, v, 1);
  fputc('}', f);
}

static void edge_json(FILE *f, const struct hg_graph *g, char **names, uint32_t e, uint32_t other) {
  acli_node_json(f, g, names, other);
  fputs(",\"field\":", f);
  cli_json_str(f, hg_graph_edge_field(g, e));
  fprintf(f, ",\"offset\":%" PRIu32 ",\"kind\":\"%s\"}", g->edge_offset[e], hg_edge_kind_name(g->edge_kind[e]));
}

void acli_show_json(FILE *f, const struct hg_graph *g, char **names, struct symbolizer *sym, uint32_t v,
                    uint32_t off, uint32_t k) {
  uint32_t nout = g->edge_start[v + 1] - g->edge_start[v], nin = g->in_start[v + 1] - g->in_start[v];
  fputs("{\"node\":", f);
  show_node_json(f, g, names, sym, v);
  fputs(",\"roots\":[", f);
  for (uint32_t i = 0, m = 0; i < g->root_count; i++) {
    if (g->roots[i].target != v) continue;
    fprintf(f, "%s{\"kind\":\"%s\",\"addr\":", m++ ? "," : "", hg_root_kind_name(g->roots[i].kind));
    cli_json_addr(f, g->roots[i].addr);
    fputc('}', f);
  }
  fprintf(f, "],\"out_count\":%" PRIu32 ",\"out\":[", nout);
  for (uint32_t i = off; i < nout && i - off < k; i++) {
    uint32_t e = g->edge_start[v] + i;
    fputs(i == off ? "\n" : ",\n", f);
    edge_json(f, g, names, e, g->edge_target[e]);
  }
  fprintf(f, "],\"in_count\":%" PRIu32 ",\"in\":[", nin);
  for (uint32_t i = off; i < nin && i - off < k; i++) {
    uint32_t j = g->in_start[v] + i;
    fputs(i == off ? "\n" : ",\n", f);
    edge_json(f, g, names, g->in_edge[j], g->in_source[j]);
  }
  fputs("]}", f);
}
