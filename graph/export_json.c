/*
 * export_json.c — the whole graph with the dominator tree and retained
 * sizes, for viewers and scripts, in two forms with the same records:
 *
 * json (one document):
 *   {"format":"heapgraph-json","version":2,"meta":{…},
 *    "classes":[{"id","name","kind","instance_size"}],
 *    "nodes":[{"index","addr","size","class","flags","heap","idom","retained","devtools_id"}],
 *    "edges":[{"source","target","offset","kind","field"}],
 *    "roots":[{"kind","owner","addr","target"}]}
 *
 * jsonl (JSON lines: one record per line, any size — a single JSON text of
 * a million-node graph nears V8's 2^29-character string limit):
 *   {"type":"meta","format":"heapgraph-jsonl","version":2,…meta fields}
 *   then {"type":"class",…}, {"type":"node",…}, {"type":"edge",…},
 *   {"type":"root",…}, one per line, in that order.
 *
 * Numbers: addresses are hex strings; meta.time_ns is a decimal string
 * (nanoseconds since 1970 exceed 2^53, where JavaScript and jq round); any
 * other 64-bit count or size above 2^53 is also written as a decimal string
 * (never in practice). class 0 and heap 0 mean none; idom is a node index,
 * -1 for the super-root, null when unreachable; devtools_id is the node's id
 * in the heapsnapshot export (hg_export_node_ids). Streams; memory is the
 * dominator result and the ids.
 */
#include <inttypes.h>

#include "graph/analysis.h"

#define JS_SAFE ((uint64_t)1 << 53) /* largest integer a double holds exactly */

/* A JSON number, or a decimal string when a double could not hold it. */
static void u64(struct _hg_out *o, uint64_t v) {
  if (v > JS_SAFE) _hg_out_mem(o, "\"", 1);
  _hg_out_u64(o, v);
  if (v > JS_SAFE) _hg_out_mem(o, "\"", 1);
}

static void meta_fields(struct _hg_out *o, const struct hg_graph *g) {
  const struct hg_meta *m = &g->meta;
  const struct { const char *key, *value; } text[] = {
      {"\"platform\":", m->platform}, {",\"os_version\":", m->os_version},
      {",\"arch\":", m->arch},         {",\"process\":", m->process},
      {",\"trigger\":", m->trigger},   {",\"allocator\":", m->allocator}};
  for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
    _hg_out_str(o, text[i].key);
    _hg_out_json_str(o, text[i].value);
  }
  _hg_out_printf(o, ",\"pointer_size\":%" PRIu32 ",\"page_size\":%" PRIu32 ",\"pid\":%" PRId64
                    ",\"time_ns\":\"%" PRIu64 "\"",
                 m->pointer_size, m->page_size, m->pid, m->time_ns);
  _hg_out_printf(o, ",\"node_count\":%" PRIu32 ",\"edge_count\":%" PRIu32 ",\"root_count\":%" PRIu32,
                 g->node_count, g->edge_count, g->root_count);
}

/* Record bodies (without braces' opening type tag). */
static void class_rec(struct _hg_out *o, const struct hg_graph *g,
                      const struct hg_export_options *opt, uint32_t c) {
  _hg_out_printf(o, "\"id\":%" PRIu32 ",\"name\":", c);
  _hg_out_json_str(o, _hg_class_display(g, opt, c));
  _hg_out_str(o, ",\"kind\":");
  _hg_out_json_str(o, hg_class_kind_name(g->classes[c - 1].kind));
  _hg_out_str(o, ",\"instance_size\":");
  u64(o, g->classes[c - 1].instance_size);
}

static void node_rec(struct _hg_out *o, const struct hg_graph *g, const struct hg_dominators *d,
                     const uint32_t *ids, uint32_t v) {
  _hg_out_printf(o, "\"index\":%" PRIu32 ",\"addr\":\"0x%" PRIx64 "\",\"size\":", v,
                 g->node_addr[v]);
  u64(o, g->node_size[v]);
  _hg_out_printf(o, ",\"class\":%" PRIu32 ",\"flags\":%u,\"heap\":%" PRIu32 ",\"idom\":",
                 g->node_class[v], (unsigned)g->node_flags[v], g->node_heap[v]);
  uint32_t i = d->idom[v];
  if (i == HG_NONE)
    _hg_out_str(o, "null");
  else if (i == HG_SUPER_ROOT)
    _hg_out_str(o, "-1");
  else
    _hg_out_u64(o, i);
  _hg_out_str(o, ",\"retained\":");
  u64(o, d->retained[v]);
  _hg_out_printf(o, ",\"devtools_id\":%" PRIu32, ids[v]);
}

static void edge_rec(struct _hg_out *o, const struct hg_graph *g, uint32_t v, uint32_t e) {
  _hg_out_printf(o, "\"source\":%" PRIu32 ",\"target\":%" PRIu32 ",\"offset\":%" PRIu32 ",\"kind\":",
                 v, g->edge_target[e], g->edge_offset[e]);
  _hg_out_json_str(o, hg_edge_kind_name(g->edge_kind[e]));
  _hg_out_str(o, ",\"field\":");
  _hg_out_json_str(o, hg_graph_edge_field(g, e));
}

static void root_rec(struct _hg_out *o, const struct hg_graph *g, uint32_t i) {
  const struct hg_root *r = &g->roots[i];
  _hg_out_str(o, "\"kind\":");
  _hg_out_json_str(o, hg_root_kind_name(r->kind));
  _hg_out_str(o, ",\"owner\":");
  if (r->owner == HG_NO_OWNER)
    _hg_out_str(o, "null");
  else
    _hg_out_u64(o, r->owner);
  _hg_out_printf(o, ",\"addr\":\"0x%" PRIx64 "\",\"target\":%" PRIu32, r->addr, r->target);
}

/* Opens record number i of a section: "{" after a separator (json) or
 * "{"type":T," on its own line (jsonl). */
static void open_rec(struct _hg_out *o, int lines, const char *type, uint64_t i) {
  if (lines)
    _hg_out_printf(o, "{\"type\":\"%s\",", type);
  else
    _hg_out_str(o, i ? ",\n{" : "{");
}

static void close_rec(struct _hg_out *o, int lines) { _hg_out_str(o, lines ? "}\n" : "}"); }

static void section(struct _hg_out *o, int lines, const char *name) {
  if (!lines) _hg_out_printf(o, "%s\"%s\":[", strcmp(name, "classes") ? "],\n" : ",\n", name);
}

int _hg_export_json(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                    struct hg_export_stats *st) {
  int lines = opt->format == HG_EXPORT_JSONL;
  struct hg_dominators *d = NULL;
  uint32_t *ids = _hg_malloc_big(((size_t)g->node_count + 1) * sizeof *ids);
  int rc = ids ? hg_export_node_ids(g, ids, NULL) : HG_ENOMEM;
  if (!rc) rc = hg_dominators_compute(g, &d);
  if (rc) {
    free(ids);
    return rc;
  }
  if (lines) {
    _hg_out_str(o, "{\"type\":\"meta\",\"format\":\"heapgraph-jsonl\",\"version\":2,");
    meta_fields(o, g);
    _hg_out_str(o, "}\n");
  } else {
    _hg_out_str(o, "{\"format\":\"heapgraph-json\",\"version\":2,\"meta\":{");
    meta_fields(o, g);
    _hg_out_str(o, "}");
  }
  section(o, lines, "classes");
  for (uint32_t c = 1; c <= g->class_count; c++) {
    open_rec(o, lines, "class", c - 1);
    class_rec(o, g, opt, c);
    close_rec(o, lines);
  }
  section(o, lines, "nodes");
  for (uint32_t v = 0; v < g->node_count; v++) {
    open_rec(o, lines, "node", v);
    node_rec(o, g, d, ids, v);
    close_rec(o, lines);
  }
  section(o, lines, "edges");
  for (uint32_t v = 0; v < g->node_count; v++)
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++) {
      open_rec(o, lines, "edge", e);
      edge_rec(o, g, v, e);
      close_rec(o, lines);
    }
  section(o, lines, "roots");
  for (uint32_t i = 0; i < g->root_count; i++) {
    open_rec(o, lines, "root", i);
    root_rec(o, g, i);
    close_rec(o, lines);
  }
  if (!lines) _hg_out_str(o, "]}\n");
  st->nodes = g->node_count;
  st->edges = g->edge_count;
  hg_dominators_free(d);
  free(ids);
  return 0;
}
