/*
 * export_dot.c — Graphviz export of a small subgraph a person can read.
 *
 * Two views, both bounded whatever the snapshot's size:
 *   focus == HG_NONE (default, at most 30 nodes): the biggest retainers by
 *     retained size, at most 4 per class so one class (a long chain, an
 *     array of the same objects) cannot fill the picture; each class is a
 *     cluster titled with its reachable count and bytes. Every node is
 *     linked to its nearest shown dominator (or "roots") by a bold blue
 *     "dominates" arrow; pointers between shown nodes are drawn once per
 *     pair (labels joined), and not at all where a dominator arrow already
 *     joins the same pair in the same direction (its label then names the
 *     pointer).
 *   focus != HG_NONE (at most 40 nodes): breadth-first neighbourhood of the
 *     focus node over in- and out-edges (every kind) up to `depth` hops,
 *     pointers drawn once per pair.
 * Weak/unowned pointers are dashed. A legend cluster explains the marks.
 * Sizes are printed as B / KiB / MiB.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"

#define PER_CLASS 4u   /* top view: nodes shown per class */
#define EDGE_TEXT 48u  /* pointer labels joined up to this length */

static void label_part(struct _hg_out *o, const char *s) { _hg_out_json_chars(o, s); }

static void human(struct _hg_out *o, uint64_t b) {
  if (b < 10240)
    _hg_out_printf(o, "%" PRIu64 " B", b);
  else if (b < (uint64_t)10 << 20)
    _hg_out_printf(o, "%.1f KiB", (double)b / 1024);
  else
    _hg_out_printf(o, "%.1f MiB", (double)b / (1024 * 1024));
}

static const char *class_label(const struct hg_graph *g, const struct hg_export_options *opt,
                               uint32_t v) {
  const char *cls = _hg_class_display(g, opt, g->node_class[v]);
  if (cls) return cls;
  return (g->node_flags[v] & HG_NODE_REGION) ? "(VM region)" : "(unclassified)";
}

static void node_line(struct _hg_out *o, const struct hg_graph *g,
                      const struct hg_export_options *opt, uint32_t v, const uint64_t *retained,
                      int bold) {
  _hg_out_printf(o, "    n%" PRIu32 " [label=\"", v);
  label_part(o, class_label(g, opt, v));
  _hg_out_printf(o, "\\n0x%" PRIx64 "\\n", g->node_addr[v]);
  human(o, g->node_size[v]);
  if (retained && retained[v] != g->node_size[v]) {
    _hg_out_str(o, ", retains ");
    human(o, retained[v]);
  }
  _hg_out_str(o, bold ? "\", penwidth=3, fillcolor=\"#ffe9a8\"];\n" : "\"];\n");
}

static void header(struct _hg_out *o, const struct hg_graph *g, const char *view, uint32_t shown,
                   uint64_t of, uint64_t bytes) {
  _hg_out_str(o, "digraph heapgraph {\n  label=\"");
  label_part(o, g->meta.process ? g->meta.process : "heapgraph");
  _hg_out_printf(o, ": %s (%" PRIu32 " of %" PRIu64 " blocks", view, shown, of);
  if (bytes) {
    _hg_out_str(o, ", reachable ");
    human(o, bytes);
  }
  _hg_out_str(o, ")\"; labelloc=t;\n");
  _hg_out_str(o, ""
                 "  graph [fontname=\"Helvetica\", fontsize=11, nodesep=0.3, ranksep=0.45];\n"
                 "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f6fb\", "
                 "fontname=\"Helvetica\", fontsize=10];\n"
                 "  edge [fontname=\"Helvetica\", fontsize=8];\n"
                 "  roots [shape=ellipse, fillcolor=\"#d9ead3\", label=\"roots\"];\n");
}

static void legend(struct _hg_out *o, int dominators) {
  _hg_out_str(o, "  subgraph cluster_legend {\n"
                 "    label=\"legend\"; style=dashed; color=gray; fontsize=10;\n"
                 "    node [shape=plaintext, style=\"\", fontsize=9, width=0, height=0];\n"
                 "    lg_box [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f6fb\", "
                 "label=\"class\\naddress\\nown size, retains (dominated bytes)\"];\n");
  if (dominators)
    _hg_out_str(o, "    lg_d1 [label=\"A\"]; lg_d2 [label=\"B\"];\n"
                   "    lg_d1 -> lg_d2 [color=blue, penwidth=2, label=\"A dominates B (B is freed "
                   "with A);\\nits label names A's pointer to B, if any\"];\n");
  _hg_out_str(o, "    lg_p1 [label=\"A\"]; lg_p2 [label=\"B\"];\n"
                 "    lg_p1 -> lg_p2 [label=\"pointer: field or +byte offset\"];\n"
                 "    lg_w1 [label=\"A\"]; lg_w2 [label=\"B\"];\n"
                 "    lg_w1 -> lg_w2 [style=dashed, label=\"weak / unowned (does not retain)\"];\n"
                 "  }\n");
}

/* Appends edge e's name to a pair's label (fields or +offsets, joined). */
static void edge_name(struct _hg_out *o, const struct hg_graph *g, uint32_t e) {
  const char *f = hg_graph_edge_field(g, e);
  if (f)
    label_part(o, f);
  else
    _hg_out_printf(o, "+%" PRIu32, g->edge_offset[e]);
}

/* 1 if e is v's first edge to its target (pairs are drawn once). */
static int first_to(const struct hg_graph *g, uint32_t v, uint32_t e) {
  for (uint32_t x = g->edge_start[v]; x < e; x++)
    if (g->edge_target[x] == g->edge_target[e]) return 0;
  return 1;
}

/* One arrow for every pointer v -> t from edge e on: names joined (three,
 * then "+N more"), dashed when none of them retains. */
static void pair_line(struct _hg_out *o, const struct hg_graph *g, uint32_t v, uint32_t e) {
  uint32_t t = g->edge_target[e];
  _hg_out_printf(o, "  n%" PRIu32 " -> n%" PRIu32 " [label=\"", v, t);
  int weak = 1;
  unsigned shown = 0, more = 0;
  for (uint32_t x = e; x < g->edge_start[v + 1]; x++) {
    if (g->edge_target[x] != t) continue;
    weak &= !_hg_retains(g->edge_kind[x]);
    if (shown < 3) {
      if (shown++) _hg_out_str(o, ", ");
      edge_name(o, g, x);
    } else {
      more++;
    }
  }
  if (more) _hg_out_printf(o, " +%u more", more);
  _hg_out_str(o, weak ? "\", style=dashed];\n" : "\"];\n");
}

/* The names of v's pointers to t for a dominator arrow's label ("" if none). */
static void dom_label(struct _hg_out *o, const struct hg_graph *g, uint32_t a, uint32_t t) {
  unsigned shown = 0;
  for (uint32_t x = g->edge_start[a]; x < g->edge_start[a + 1] && shown < 3; x++)
    if (g->edge_target[x] == t) {
      _hg_out_str(o, shown++ ? ", " : "");
      edge_name(o, g, x);
    }
}

static int is_root_target(const struct hg_graph *g, uint32_t v) {
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].target == v) return 1;
  return 0;
}

/* The nearest dominator of v among the shown nodes (bits in `in`), or a
 * value >= node_count when the roots are. */
static uint32_t shown_dominator(const struct hg_graph *g, const struct hg_dominators *d,
                                const uint64_t *in, uint32_t v) {
  uint32_t a = d->idom[v];
  while (a < g->node_count && !_hg_bit(in, a)) a = d->idom[a];
  return a;
}

/* The end of both views: the pointers between the shown nodes sel[0..count)
 * (bits in `in`), one arrow per pair, until `edges` (those drawn already)
 * reaches `budget` — with d (top view) none where a dominator arrow joins
 * the pair, as that arrow's label names the pointer — then the legend; st
 * gets the counts. */
static void finish(struct _hg_out *o, const struct hg_graph *g, const uint32_t *sel, uint32_t count,
                   const uint64_t *in, const struct hg_dominators *d, uint64_t edges,
                   uint64_t budget, struct hg_export_stats *st) {
  for (uint32_t i = 0; i < count && edges < budget; i++) {
    uint32_t v = sel[i];
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && edges < budget; e++) {
      uint32_t t = g->edge_target[e];
      if (!_hg_bit(in, t) || !first_to(g, v, e)) continue;
      if (d && shown_dominator(g, d, in, t) == v) continue; /* drawn as "v dominates t" */
      pair_line(o, g, v, e);
      edges++;
    }
  }
  legend(o, d != NULL);
  _hg_out_str(o, "}\n");
  st->nodes = count;
  st->edges = edges;
}

/* Breadth-first step: t joins the selection at distance d unless it is in. */
static void visit(uint64_t *in, uint32_t *sel, uint32_t *dist, uint32_t *count, uint32_t t,
                  uint32_t d) {
  if (_hg_bit(in, t)) return;
  _hg_bit_set(in, t);
  sel[*count] = t;
  dist[(*count)++] = d;
}

static int around(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                  struct hg_export_stats *st) {
  uint32_t max_nodes = opt->max_nodes ? opt->max_nodes : 40;
  uint32_t depth = opt->depth ? opt->depth : 2, count = 0;
  if (opt->focus >= g->node_count) return HG_EINVAL;
  int rc = hg_graph_build_reverse(g);
  if (rc) return rc;
  uint32_t *sel = malloc((size_t)max_nodes * sizeof *sel);
  uint32_t *dist = malloc((size_t)max_nodes * sizeof *dist);
  uint64_t *in = _hg_bits_new(g->node_count);
  rc = HG_ENOMEM;
  if (!sel || !dist || !in) goto out;
  visit(in, sel, dist, &count, opt->focus, 0);
  for (uint32_t head = 0; head < count && count < max_nodes; head++) {
    uint32_t v = sel[head];
    if (dist[head] >= depth) continue;
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1] && count < max_nodes; e++)
      visit(in, sel, dist, &count, g->edge_target[e], dist[head] + 1);
    for (uint32_t k = g->in_start[v]; k < g->in_start[v + 1] && count < max_nodes; k++)
      visit(in, sel, dist, &count, g->in_source[k], dist[head] + 1);
  }
  header(o, g, "around the highlighted block", count, g->node_count, 0);
  for (uint32_t i = 0; i < count; i++) {
    node_line(o, g, opt, sel[i], NULL, sel[i] == opt->focus);
    if (is_root_target(g, sel[i])) _hg_out_printf(o, "  roots -> n%" PRIu32 ";\n", sel[i]);
  }
  finish(o, g, sel, count, in, NULL, 0, (uint64_t)4 * max_nodes, st);
  rc = 0;
out:
  free(sel);
  free(dist);
  free(in);
  return rc;
}

/* Top retainers, at most PER_CLASS per class, biggest first, into sel. */
static uint32_t pick_top(const struct hg_graph *g, const struct hg_dominators *d, uint32_t max_nodes,
                         uint32_t *sel) {
  uint32_t want = d->reachable_count, count = 0;
  if (want > 64 * max_nodes) want = 64 * max_nodes;
  uint32_t *cand = malloc(((size_t)want + 1) * sizeof *cand);
  uint8_t *per = calloc((size_t)g->class_count + 2, 1);
  if (!cand || !per) {
    free(cand);
    free(per);
    return HG_NONE;
  }
  uint32_t k = hg_dominators_top(d, want, cand);
  /* hg_dominators_top returns a heap order: sort biggest first (ties: index) */
  for (uint32_t i = 1; i < k; i++) {
    uint32_t v = cand[i], j = i;
    while (j && (d->retained[cand[j - 1]] < d->retained[v] ||
                 (d->retained[cand[j - 1]] == d->retained[v] && cand[j - 1] > v))) {
      cand[j] = cand[j - 1];
      j--;
    }
    cand[j] = v;
  }
  for (uint32_t i = 0; i < k && count < max_nodes; i++) {
    uint32_t c = g->node_class[cand[i]];
    if (c > g->class_count) c = 0;
    if (per[c] >= PER_CLASS) continue;
    per[c]++;
    sel[count++] = cand[i];
  }
  free(cand);
  free(per);
  return count;
}

static int top(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
               struct hg_export_stats *st) {
  uint32_t max_nodes = opt->max_nodes ? opt->max_nodes : 30;
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  if (rc) return rc;
  uint32_t nc = g->class_count + 1;
  uint32_t *sel = malloc((size_t)max_nodes * sizeof *sel);
  uint64_t *in = _hg_bits_new(g->node_count);
  uint64_t *cnt = calloc(nc, sizeof *cnt), *bytes = calloc(nc, sizeof *bytes);
  uint64_t *cret = calloc(nc, sizeof *cret);
  uint32_t count = sel && in && cnt && bytes && cret ? pick_top(g, d, max_nodes, sel) : HG_NONE;
  rc = HG_ENOMEM;
  if (count == HG_NONE || hg_class_retained(g, d, cnt, bytes, cret)) goto out;
  for (uint32_t i = 0; i < count; i++) _hg_bit_set(in, sel[i]);
  header(o, g, "biggest retainers, at most 4 per class", count, d->reachable_count,
         d->reachable_bytes);
  /* one cluster per class, in order of first appearance (biggest first) */
  for (uint32_t i = 0; i < count; i++) {
    uint32_t c = g->node_class[sel[i]], seen = 0;
    for (uint32_t j = 0; j < i && !seen; j++) seen = g->node_class[sel[j]] == c;
    if (seen) continue;
    _hg_out_printf(o, "  subgraph cluster_c%" PRIu32 " {\n    label=\"", c);
    if (c > g->class_count) c = 0;
    label_part(o, class_label(g, opt, sel[i]));
    _hg_out_printf(o, " (%" PRIu64 " reachable, ", cnt[c]);
    human(o, bytes[c]);
    _hg_out_str(o, " own)\"; style=\"rounded\"; color=\"#9aa7c7\"; fontsize=10;\n");
    for (uint32_t j = i; j < count; j++)
      if (g->node_class[sel[j]] == g->node_class[sel[i]]) node_line(o, g, opt, sel[j], d->retained, 0);
    _hg_out_str(o, "  }\n");
  }
  uint64_t edges = 0, budget = (uint64_t)4 * max_nodes;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t v = sel[i], a = shown_dominator(g, d, in, v);
    if (a < g->node_count) {
      _hg_out_printf(o, "  n%" PRIu32 " -> n%" PRIu32 " [color=blue, penwidth=2, label=\"", a, v);
      dom_label(o, g, a, v);
      _hg_out_str(o, "\"];\n");
    } else {
      _hg_out_printf(o, "  roots -> n%" PRIu32 " [color=blue, penwidth=2];\n", v);
    }
    edges++;
  }
  finish(o, g, sel, count, in, d, edges, budget, st);
  rc = 0;
out:
  free(sel);
  free(in);
  free(cnt);
  free(bytes);
  free(cret);
  hg_dominators_free(d);
  return rc;
}

int _hg_export_dot(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                   struct hg_export_stats *st) {
  if (opt->focus != HG_NONE) return around(g, opt, o, st);
  return top(g, opt, o, st);
}
