/*
 * export_json.c — the whole graph as one JSON document, with the dominator
 * tree and retained sizes, for viewers and scripts:
 *
 *   {"format":"heapgraph-json","version":1,"meta":{…},
 *    "classes":[{"id","name","kind","instance_size"}],
 *    "nodes":[{"index","addr","size","class","flags","heap","idom","retained"}],
 *    "edges":[{"source","target","offset","kind","field"}],
 *    "roots":[{"kind","owner","addr","target"}]}
 *
 * Addresses are hex strings (JSON numbers lose precision past 2^53); class 0
 * and heap 0 mean none; idom is a node index, -1 for the super-root, null
 * when unreachable. Streams; memory is the dominator result.
 */
#include <inttypes.h>

#include "graph/analysis.h"

static void meta(struct _hg_out *o, const struct hg_graph *g) {
  const struct hg_meta *m = &g->meta;
  _hg_out_str(o, "\"meta\":{\"platform\":");
  _hg_out_json_str(o, m->platform);
  _hg_out_str(o, ",\"os_version\":");
  _hg_out_json_str(o, m->os_version);
  _hg_out_str(o, ",\"arch\":");
  _hg_out_json_str(o, m->arch);
  _hg_out_str(o, ",\"process\":");
  _hg_out_json_str(o, m->process);
  _hg_out_str(o, ",\"trigger\":");
  _hg_out_json_str(o, m->trigger);
  _hg_out_str(o, ",\"allocator\":");
  _hg_out_json_str(o, m->allocator);
  _hg_out_printf(o, ",\"pointer_size\":%" PRIu32 ",\"page_size\":%" PRIu32 ",\"pid\":%" PRId64
                    ",\"time_ns\":%" PRIu64 "}",
                 m->pointer_size, m->page_size, m->pid, m->time_ns);
}

int _hg_export_json(struct hg_graph *g, const struct hg_export_options *opt, struct _hg_out *o,
                    struct hg_export_stats *st) {
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  if (rc) return rc;
  _hg_out_str(o, "{\"format\":\"heapgraph-json\",\"version\":1,");
  meta(o, g);
  _hg_out_str(o, ",\n\"classes\":[");
  for (uint32_t c = 1; c <= g->class_count; c++) {
    _hg_out_printf(o, "%s{\"id\":%" PRIu32 ",\"name\":", c > 1 ? ",\n" : "", c);
    _hg_out_json_str(o, _hg_class_display(g, opt, c));
    _hg_out_str(o, ",\"kind\":");
    _hg_out_json_str(o, hg_class_kind_name(g->classes[c - 1].kind));
    _hg_out_printf(o, ",\"instance_size\":%" PRIu64 "}", g->classes[c - 1].instance_size);
  }
  _hg_out_str(o, "],\n\"nodes\":[");
  for (uint32_t v = 0; v < g->node_count; v++) {
    _hg_out_printf(o,
                   "%s{\"index\":%" PRIu32 ",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64
                   ",\"class\":%" PRIu32 ",\"flags\":%u,\"heap\":%" PRIu32 ",\"idom\":",
                   v ? ",\n" : "", v, g->node_addr[v], g->node_size[v], g->node_class[v],
                   (unsigned)g->node_flags[v], g->node_heap[v]);
    uint32_t i = d->idom[v];
    if (i == HG_NONE)
      _hg_out_str(o, "null");
    else if (i == HG_SUPER_ROOT)
      _hg_out_str(o, "-1");
    else
      _hg_out_u64(o, i);
    _hg_out_printf(o, ",\"retained\":%" PRIu64 "}", d->retained[v]);
  }
  _hg_out_str(o, "],\n\"edges\":[");
  for (uint32_t v = 0, first = 1; v < g->node_count; v++)
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++, first = 0) {
      _hg_out_printf(o,
                     "%s{\"source\":%" PRIu32 ",\"target\":%" PRIu32 ",\"offset\":%" PRIu32
                     ",\"kind\":",
                     first ? "" : ",\n", v, g->edge_target[e], g->edge_offset[e]);
      _hg_out_json_str(o, hg_edge_kind_name(g->edge_kind[e]));
      _hg_out_str(o, ",\"field\":");
      _hg_out_json_str(o, hg_graph_edge_field(g, e));
      _hg_out_str(o, "}");
    }
  _hg_out_str(o, "],\n\"roots\":[");
  for (uint32_t i = 0; i < g->root_count; i++) {
    const struct hg_root *r = &g->roots[i];
    _hg_out_printf(o, "%s{\"kind\":", i ? ",\n" : "");
    _hg_out_json_str(o, hg_root_kind_name(r->kind));
    _hg_out_str(o, ",\"owner\":");
    if (r->owner == HG_NO_OWNER)
      _hg_out_str(o, "null");
    else
      _hg_out_u64(o, r->owner);
    _hg_out_printf(o, ",\"addr\":\"0x%" PRIx64 "\",\"target\":%" PRIu32 "}", r->addr, r->target);
  }
  _hg_out_str(o, "]}\n");
  st->nodes = g->node_count;
  st->edges = g->edge_count;
  hg_dominators_free(d);
  return 0;
}
