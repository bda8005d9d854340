/*
 * export_dot.c — Graphviz export of a bounded subgraph.
 *
 * Two views, both capped at max_nodes nodes and 8 x max_nodes edges so the
 * output stays renderable whatever the snapshot's size:
 *   focus != HG_NONE: breadth-first neighbourhood of the focus node over in-
 *     and out-edges (every kind) up to `depth` hops;
 *   focus == HG_NONE: the top retainers by retained size, each linked (bold
 *     blue) to its nearest shown dominator or to the "roots" node.
 * Real edges between shown nodes are drawn too; weak/unowned ones dashed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

static void label_part(struct _hg_out *o, const char *s) { _hg_out_json_chars(o, s); }

static void node_line(struct _hg_out *o, const struct hg_graph *g,
                      const struct hg_export_options *opt, uint32_t v, const uint64_t *retained,
                      int bold) {
  const char *cls = _hg_class_display(g, opt, g->node_class[v]);
  _hg_out_printf(o, "  n%" PRIu32 " [label=\"", v);
  label_part(o, cls ? cls : "(unclassified)");
  _hg_out_printf(o, "\\n0x%" PRIx64 "\\n%" PRIu64 " B", g->node_addr[v], g->node_size[v]);
  if (retained) _hg_out_printf(o, " (retains %" PRIu64 " B)", retained[v]);
  _hg_out_str(o, bold ? "\", penwidth=3];\n" : "\"];\n");
}

/* Real edges whose both ends are in `in`, at most budget of them. */
static uint64_t edges_between(struct _hg_out *o, const struct hg_graph *g, const uint32_t *sel,
                              uint32_t count, const uint64_t *in, uint64_t budget) {
  uint64_t written = 0;
  for (uint32_t i = 0; i < count && written < budget; i++) {
    uint32_t v = sel[i];
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && written < budget; e++) {
      uint32_t t = g->edge_target[e];
      if (!_hg_bit(in, t)) continue;
      const char *f = hg_graph_edge_field(g, e);
      _hg_out_printf(o, "  n%" PRIu32 " -> n%" PRIu32 " [label=\"", v, t);
      if (f)
        label_part(o, f);
      else
        _hg_out_printf(o, "+%" PRIu32, g->edge_offset[e]);
      _hg_out_str(o, _hg_retains(g->edge_kind[e]) ? "\"];\n" : "\", style=dashed];\n");
      written++;
    }
  }
  return written;
}

static int is_root_target(const struct hg_graph *g, uint32_t v) {
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target == v) return 1;
  return 0;
}

static int around(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                  struct hg_export_stats *st, uint32_t max_nodes) {
  uint32_t depth = opt->depth ? opt->depth : 2, count = 0;
  if (opt->focus >= g->node_count) return HG_EINVAL;
  int rc = hg_graph_build_reverse(g);
  if (rc) return rc;
  uint32_t *sel = malloc((size_t)max_nodes * sizeof *sel);
  uint32_t *dist = malloc((size_t)max_nodes * sizeof *dist);
  uint64_t *in = _hg_bits_new(g->node_count);
  if (!sel || !dist || !in) {
    free(sel);
    free(dist);
    free(in);
    return HG_ENOMEM;
  }
  sel[count] = opt->focus;
  dist[count++] = 0;
  _hg_bit_set(in, opt->focus);
  for (uint32_t head = 0; head < count && count < max_nodes; head++) {
    uint32_t v = sel[head];
    if (dist[head] >= depth) continue;
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && count < max_nodes; e++) {
      uint32_t t = g->edge_target[e];
      if (_hg_bit(in, t)) continue;
      _hg_bit_set(in, t);
      sel[count] = t;
      dist[count++] = dist[head] + 1;
    }
    for (uint32_t k = g->in_start[v]; k < g->in_start[v + 1] && count < max_nodes; k++) {
      uint32_t s = g->in_source[k];
      if (_hg_bit(in, s)) continue;
      _hg_bit_set(in, s);
      sel[count] = s;
      dist[count++] = dist[head] + 1;
    }
  }
  _hg_out_str(o, "digraph heapgraph {\n  node [shape=box, fontsize=10];\n"
                 "  edge [fontsize=8];\n  roots [shape=ellipse, label=\"roots\"];\n");
  for (uint32_t i = 0; i < count; i++) {
    node_line(o, g, opt, sel[i], NULL, sel[i] == opt->focus);
    if (is_root_target(g, sel[i])) _hg_out_printf(o, "  roots -> n%" PRIu32 ";\n", sel[i]);
  }
  st->edges = edges_between(o, g, sel, count, in, (uint64_t)8 * max_nodes);
  _hg_out_str(o, "}\n");
  st->nodes = count;
  free(sel);
  free(dist);
  free(in);
  return 0;
}

static int top(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
               struct hg_export_stats *st, uint32_t max_nodes) {
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  if (rc) return rc;
  uint32_t *sel = malloc((size_t)max_nodes * sizeof *sel);
  uint64_t *in = _hg_bits_new(g->node_count);
  if (!sel || !in) {
    free(sel);
    free(in);
    hg_dominators_free(d);
    return HG_ENOMEM;
  }
  uint32_t count = hg_dominators_top(d, max_nodes, sel);
  for (uint32_t i = 0; i < count; i++) _hg_bit_set(in, sel[i]);
  _hg_out_str(o, "digraph heapgraph {\n  node [shape=box, fontsize=10];\n"
                 "  edge [fontsize=8];\n  roots [shape=ellipse, label=\"roots\"];\n");
  for (uint32_t i = 0; i < count; i++) {
    uint32_t v = sel[i];
    node_line(o, g, opt, v, d->retained, 0);
    uint32_t a = d->idom[v];
    while (a < g->node_count && !_hg_bit(in, a)) a = d->idom[a];
    if (a < g->node_count)
      _hg_out_printf(o, "  n%" PRIu32 " -> n%" PRIu32, a, v);
    else
      _hg_out_printf(o, "  roots -> n%" PRIu32, v);
    _hg_out_str(o, " [color=blue, penwidth=2, label=\"dominates\"];\n");
  }
  st->edges = count + edges_between(o, g, sel, count, in, (uint64_t)8 * max_nodes);
  _hg_out_str(o, "}\n");
  st->nodes = count;
  free(sel);
  free(in);
  hg_dominators_free(d);
  return 0;
}

int _hg_export_dot(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                   struct hg_export_stats *st) {
  uint32_t max_nodes = opt->max_nodes ? opt->max_nodes : 100;
  if (opt->focus != HG_NONE) return around(g, opt, o, st, max_nodes);
  return top(g, opt, o, st, max_nodes);
}
