/*
 * export_heapsnapshot.c — Chrome DevTools .heapsnapshot writer.
 *
 * Layout (V8's JSON heap snapshot, which DevTools' Memory panel loads):
 * flat "nodes" (7 numbers each: type, name, id, self_size, edge_count,
 * trace_node_id, detachedness), "edges" (3 each: type, name_or_index,
 * to_node = node ordinal x 7) in node order, and a "strings" table.
 *
 *   node 0            synthetic root ""      -> (GC roots), (Unreachable)
 *   node 1            "(GC roots)"           -> one node per root kind present
 *   next              "(Stack roots)" …      -> each root's target (element i)
 *   next (optional)   "(Unreachable)"        -> each root leak (hg_leaks_find)
 *                                               and each region node no root
 *                                               reaches
 *   then              one "native" node per block, named by class;
 *                     unclassified blocks "(unclassified <=N B)" by size
 *                     (as `heapgraph classes`), region nodes "(VM regions)"
 *
 * DevTools computes dominators over "essential" edges, which weak edges are
 * not. So that garbage never retains live blocks, an edge from a block no
 * root reaches to one a root reaches is written as weak (named by its field,
 * else "(from unreachable)"): the reachable blocks then have exactly
 * heapgraph's dominators and retained sizes, and a leak group hangs under
 * its root leak as `heapgraph leaks` shows it.
 *
 * Ids: blocks get hg_export_node_ids (odd, from the address: stable across
 * snapshots of one process, which the Comparison view matches); synthetic
 * nodes 2, 4, 6, … (even: never a block's).
 *
 * Edge types: weak/unowned -> weak; edges with a field name -> property;
 * interior pointers -> internal "interior"; other pointers -> element whose
 * index is the byte offset of the pointer in its block. Every number must
 * fit uint32: sizes beyond are clamped (counted), counts beyond -> HG_ELIMIT.
 * Streams; memory is a reachability bitmap, the ids and the leak list.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "graph/size_bucket.h"

#define NODE_FIELDS 7u
enum { T_HIDDEN = 0, T_NATIVE = 8, T_SYNTHETIC = 9 };
enum { E_ELEMENT = 1, E_PROPERTY = 2, E_INTERNAL = 3, E_WEAK = 6 };

/* Fixed strings, then 64 size buckets, then class names, then the graph's strings. */
enum {
  S_EMPTY, S_GC_ROOTS, S_KIND0, S_UNREACHABLE = S_KIND0 + HG_ROOT_KIND_COUNT, S_WEAK, S_UNOWNED,
  S_INTERIOR, S_REGION, S_FROM_UNREACHABLE, S_BUCKET0, S_FIXED = S_BUCKET0 + HG_SIZE_BUCKETS
};
static const char *const kind_node_name[HG_ROOT_KIND_COUNT] = {
    "(Stack roots)", "(Register roots)", "(Global roots)", "(TLS roots)", "(Other roots)"};

static const char *const meta_json =
    "{\"snapshot\":{\"meta\":{"
    "\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\",\"edge_count\",\"trace_node_id\","
    "\"detachedness\"],"
    "\"node_types\":[[\"hidden\",\"array\",\"string\",\"object\",\"code\",\"closure\",\"regexp\","
    "\"number\",\"native\",\"synthetic\",\"concatenated string\",\"sliced string\",\"symbol\","
    "\"bigint\",\"object shape\"],\"string\",\"number\",\"number\",\"number\",\"number\",\"number\"],"
    "\"edge_fields\":[\"type\",\"name_or_index\",\"to_node\"],"
    "\"edge_types\":[[\"context\",\"element\",\"property\",\"internal\",\"hidden\",\"shortcut\","
    "\"weak\"],\"string_or_number\",\"node\"],"
    "\"trace_function_info_fields\":[\"function_id\",\"name\",\"script_name\",\"script_id\","
    "\"line\",\"column\"],"
    "\"trace_node_fields\":[\"id\",\"function_info_index\",\"count\",\"size\",\"children\"],"
    "\"sample_fields\":[\"timestamp_us\",\"last_assigned_id\"],"
    "\"location_fields\":[\"object_index\",\"script_id\",\"line\",\"column\"]},";

struct hs {
  struct _hg_out *o;
  int first;       /* no comma before the next number group */
};

static void nums(struct hs *h, const uint64_t *v, unsigned k) {
  for (unsigned i = 0; i < k; i++) {
    if (!h->first) _hg_out_mem(h->o, ",", 1);
    h->first = 0;
    _hg_out_u64(h->o, v[i]);
  }
  _hg_out_mem(h->o, "\n", 1);
}

static void node(struct hs *h, uint64_t type, uint64_t name, uint64_t id, uint64_t size,
                 uint64_t edges) {
  uint64_t v[NODE_FIELDS] = {type, name, id, size, edges, 0, 0};
  nums(h, v, NODE_FIELDS);
}

static void edge(struct hs *h, uint64_t type, uint64_t name, uint64_t to_ordinal) {
  uint64_t v[3] = {type, name, to_ordinal * NODE_FIELDS};
  nums(h, v, 3);
}

/* Name string of block v: its class, else "(VM regions)" or a size bucket. */
static uint64_t block_name(const struct hg_graph *g, uint32_t v) {
  uint32_t c = g->node_class[v];
  if (c && c <= g->class_count) return S_FIXED + (uint64_t)c - 1;
  if (g->node_flags[v] & HG_NODE_REGION) return S_REGION;
  return S_BUCKET0 + _hg_size_bucket(g->node_size[v]);
}

static int whole_region(const struct hg_graph *g, uint32_t v) {
  return (g->node_flags[v] & HG_NODE_REGION) && !(g->node_flags[v] & HG_NODE_MALLOC);
}

/* What "(Unreachable)" points at: each root leak's first block, then each
 * region node no root reaches (the blocks it holds are not leaks, but no
 * root holds them either). Every unreachable block is reachable from these
 * through unreachable blocks. */
static int unreachable_entries(struct hg_graph *g, const uint64_t *reach, uint32_t **out,
                               uint64_t *count) {
  struct hg_leaks *l = NULL;
  int rc = hg_leaks_find(g, &l);
  if (rc) return rc;
  uint64_t k = l->count;
  for (uint32_t v = 0; v < g->node_count; v++) k += whole_region(g, v) && !_hg_bit(reach, v);
  uint32_t *e = malloc((k + 1) * sizeof *e);
  if (!e) {
    hg_leaks_free(l);
    return HG_ENOMEM;
  }
  k = 0;
  for (uint32_t i = 0; i < l->count; i++) e[k++] = l->leaks[i].node;
  for (uint32_t v = 0; v < g->node_count; v++)
    if (whole_region(g, v) && !_hg_bit(reach, v)) e[k++] = v;
  hg_leaks_free(l);
  *out = e;
  *count = k;
  return 0;
}

int _hg_export_heapsnapshot(struct hg_graph *g, const struct hg_export_options *opt,
                            struct _hg_out *o, struct hg_export_stats *st) {
  uint32_t n = g->node_count;
  uint64_t per_kind[HG_ROOT_KIND_COUNT] = {0}, unreachable = 0, roots = 0, entries = 0;
  for (uint32_t i = 0; i < g->root_count; i++)
    if (g->roots[i].kind < HG_ROOT_KIND_COUNT && g->roots[i].target < n) per_kind[g->roots[i].kind]++;
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++) roots += per_kind[k];
  if ((uint64_t)n + 16 > UINT32_MAX / NODE_FIELDS) return HG_ELIMIT;
  uint32_t *ids = _hg_malloc_big(((size_t)n + 1) * sizeof *ids), *entry = NULL;
  uint64_t *reach = ids ? _hg_reachable(g, 0) : NULL;
  int rc = reach ? hg_export_node_ids(g, ids, &st->moved_ids) : HG_ENOMEM;
  if (!rc) {
    for (uint32_t v = 0; v < n; v++) unreachable += !_hg_bit(reach, v);
    if (unreachable) rc = unreachable_entries(g, reach, &entry, &entries);
  }
  if (rc) {
    free(ids);
    free(reach);
    return rc;
  }

  /* Ordinals of the synthetic nodes. */
  uint64_t kind_ord[HG_ROOT_KIND_COUNT], ord = 2, kinds = 0;
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++) {
    kind_ord[k] = per_kind[k] ? ord++ : 0;
    kinds += per_kind[k] != 0;
  }
  uint64_t unreach_ord = unreachable ? ord++ : 0, base = ord;
  uint64_t total_nodes = base + n;
  uint64_t total_edges = 1 + (unreachable != 0) + kinds + roots + entries + g->edge_count;
  if (total_nodes * NODE_FIELDS > UINT32_MAX || total_edges > UINT32_MAX ||
      S_FIXED + (uint64_t)g->class_count + g->string_count > UINT32_MAX) {
    free(ids);
    free(reach);
    free(entry);
    return HG_ELIMIT;
  }

  struct hs h = {.o = o, .first = 1};
  _hg_out_str(o, meta_json);
  _hg_out_printf(o, "\"node_count\":%llu,\"edge_count\":%llu,\"trace_function_count\":0},\n",
                 (unsigned long long)total_nodes, (unsigned long long)total_edges);

  /* ---- nodes ---- */
  _hg_out_str(o, "\"nodes\":[");
  uint64_t sid = 2; /* synthetic ids: even */
  node(&h, T_SYNTHETIC, S_EMPTY, sid, 0, 1 + (unreachable != 0));
  node(&h, T_SYNTHETIC, S_GC_ROOTS, sid += 2, 0, kinds);
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++)
    if (per_kind[k]) node(&h, T_SYNTHETIC, S_KIND0 + k, sid += 2, 0, per_kind[k]);
  if (unreachable) node(&h, T_SYNTHETIC, S_UNREACHABLE, sid += 2, 0, entries);
  for (uint32_t v = 0; v < n; v++) {
    uint64_t size = g->node_size[v];
    if (size > UINT32_MAX) {
      size = UINT32_MAX;
      st->clamped_sizes++;
    }
    node(&h, T_NATIVE, block_name(g, v), ids[v], size, g->edge_start[v + 1] - g->edge_start[v]);
  }
  free(ids);
  _hg_out_str(o, "],\n\"edges\":[");

  /* ---- edges ---- */
  h.first = 1;
  edge(&h, E_ELEMENT, 1, 1);
  if (unreachable) edge(&h, E_ELEMENT, 2, unreach_ord);
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++)
    if (per_kind[k]) edge(&h, E_ELEMENT, k + 1, kind_ord[k]);
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++) {
    uint64_t idx = 0;
    for (uint32_t i = 0; i < g->root_count && per_kind[k]; i++)
      if (g->roots[i].kind == k && g->roots[i].target < n)
        edge(&h, E_ELEMENT, idx++, base + g->roots[i].target);
  }
  for (uint64_t i = 0; i < entries; i++) edge(&h, E_ELEMENT, i, base + entry[i]);
  free(entry);
  uint32_t named = 0;
  for (uint32_t v = 0; v < n; v++) {
    int garbage = !_hg_bit(reach, v);
    for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++) {
      while (named < g->named_count && g->named_edge[named] < e) named++;
      uint32_t field = 0;
      if (named < g->named_count && g->named_edge[named] == e) {
        field = g->named_field[named];
        if (field > g->string_count) field = 0;
      }
      uint8_t kind = g->edge_kind[e];
      uint32_t t = g->edge_target[e];
      uint64_t to = base + t;
      uint64_t fname = field ? S_FIXED + (uint64_t)g->class_count + field - 1 : 0;
      if (kind == HG_EDGE_WEAK || kind == HG_EDGE_UNOWNED)
        edge(&h, E_WEAK, field ? fname : kind == HG_EDGE_WEAK ? S_WEAK : S_UNOWNED, to);
      else if (garbage && _hg_bit(reach, t)) /* garbage never retains live blocks */
        edge(&h, E_WEAK, field ? fname : S_FROM_UNREACHABLE, to);
      else if (field)
        edge(&h, E_PROPERTY, fname, to);
      else if (kind == HG_EDGE_INTERIOR)
        edge(&h, E_INTERNAL, S_INTERIOR, to);
      else
        edge(&h, E_ELEMENT, g->edge_offset[e], to);
    }
  }
  free(reach);

  /* ---- strings ---- */
  _hg_out_str(o, "],\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],"
                 "\"locations\":[],\n\"strings\":[\"\",\"(GC roots)\"");
  for (unsigned k = 0; k < HG_ROOT_KIND_COUNT; k++) {
    _hg_out_mem(o, ",", 1);
    _hg_out_json_str(o, kind_node_name[k]);
  }
  _hg_out_str(o, ",\"(Unreachable)\",\"weak\",\"unowned\",\"interior\",\"(VM regions)\","
                 "\"(from unreachable)\"");
  for (unsigned b = 0; b < HG_SIZE_BUCKETS; b++) {
    char label[HG_SIZE_BUCKET_LABEL];
    _hg_out_printf(o, ",\"%s\"", _hg_size_bucket_label(b, label, sizeof label));
  }
  for (uint32_t c = 1; c <= g->class_count; c++) {
    const char *s = _hg_class_display(g, opt, c);
    _hg_out_mem(o, ",\n", 2);
    _hg_out_json_str(o, s ? s : "(unnamed class)");
  }
  for (uint32_t i = 0; i < g->string_count; i++) {
    _hg_out_mem(o, ",\n", 2);
    _hg_out_json_str(o, g->strings[i] ? g->strings[i] : "");
  }
  _hg_out_str(o, "]}\n");
  st->nodes = total_nodes;
  st->edges = total_edges;
  return 0;
}
