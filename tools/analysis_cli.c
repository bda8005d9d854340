/*
 * analysis_cli.c — shared option parsing and node printing for the analysis
 * subcommands (see analysis_cli.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/cli_util.h"

static int num_arg(const struct acli *a, const char *opt, const char *v, long *out) {
  uint64_t x;
  if (!v || cli_parse_u64(v, &x) || x > 100000000) {
    fprintf(stderr, "heapgraph %s: %s needs a number\n", a->cmd, opt);
    return -1;
  }
  *out = (long)x;
  return 0;
}

int acli_parse(struct acli *a, int argc, char **argv, int want) {
  a->limit = -1;
  a->depth = -1;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (cli_is_help(s)) {
      fputs(a->usage, stdout);
      return 0;
    } else if (!strcmp(s, "--json")) a->json = 1;
    else if (!strcmp(s, "--mangled")) a->mangled = 1;
    else if (!strcmp(s, "-n")) {
      if (num_arg(a, s, next, &a->limit)) return 2;
      i++;
    } else if (!strcmp(s, "--depth")) {
      if (num_arg(a, s, next, &a->depth)) return 2;
      i++;
    } else if (!strcmp(s, "--format") || !strcmp(s, "--node") || !strcmp(s, "-o")) {
      if (!next) {
        fprintf(stderr, "heapgraph %s: %s needs a value\n", a->cmd, s);
        return 2;
      }
      if (s[2] == 'f') a->format = next;
      else if (s[2] == 'n') a->node = next;
      else a->out = next;
      i++;
    } else if (a->npos < want && (s[0] != '-' || !s[1])) {
      a->pos[a->npos++] = s;
    } else {
      fprintf(stderr, "heapgraph %s: unexpected argument '%s'\n%s", a->cmd, s, a->usage);
      return 2;
    }
  }
  if (a->npos != want) {
    fprintf(stderr, "%s", a->usage);
    return 2;
  }
  return -1;
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
  fprintf(f, "0x%" PRIx64 " %s (%" PRIu64 " B)", g->node_addr[v], acli_label(g, names, v),
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
