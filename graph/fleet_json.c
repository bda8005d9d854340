/*
 * fleet_json.c — the one JSON writer of each fleet result (an issue, class
 * growth, the merged retention tree, a summary), through the exporters'
 * buffered output (_hg_out: valid UTF-8 and escaping always). The CLI and
 * a server print the same bytes. Signatures are 16 hex digits; byte counts
 * are plain numbers (below 2^53 in practice: they are heap sizes).
 */
#include <stdio.h>
#include <string.h>

#include "graph/analysis.h"
#include "graph/fleet.h"

static void key(struct _hg_out *o, const char *k, int first) {
  if (!first) _hg_out_str(o, ",");
  _hg_out_json_str(o, k);
  _hg_out_str(o, ":");
}

static void kv_u64(struct _hg_out *o, const char *k, uint64_t v) {
  key(o, k, 0);
  _hg_out_u64(o, v);
}

static void kv_str(struct _hg_out *o, const char *k, const char *v) {
  key(o, k, 0);
  _hg_out_json_str(o, v);
}

static void str_array(struct _hg_out *o, const char *const *s, uint32_t n) {
  _hg_out_str(o, "[");
  for (uint32_t i = 0; i < n; i++) {
    if (i) _hg_out_str(o, ",");
    _hg_out_json_str(o, s[i]);
  }
  _hg_out_str(o, "]");
}

static void hash_hex(struct _hg_out *o, uint64_t h) { _hg_out_printf(o, "\"%016llx\"", (unsigned long long)h); }

static int finish(struct _hg_out *o) {
  _hg_out_flush(o);
  return o->err;
}

int hg_fleet_issue_json(const struct hg_fleet_issues *r, uint32_t i, hg_write_fn write, void *ctx) {
  if (!r || i >= r->count) return HG_EINVAL;
  const struct hg_fleet_issue *is = &r->issues[i];
  struct _hg_out o = {.write = write, .ctx = ctx};
  _hg_out_str(&o, "{\"signature\":");
  hash_hex(&o, is->hash);
  kv_u64(&o, "algo", is->algo);
  kv_str(&o, "kind", hg_fleet_kind_name(is->kind));
  kv_str(&o, "title", is->title);
  key(&o, "path", 0);
  str_array(&o, is->steps, is->step_count);
  kv_str(&o, "status", hg_fleet_status_name(is->status));
  kv_str(&o, "version", r->version);
  kv_str(&o, "baseline", r->baseline);
  kv_u64(&o, "snapshots", is->snapshots);
  kv_u64(&o, "devices", is->devices);
  key(&o, "versions", 0);
  str_array(&o, is->versions, is->version_count);
  kv_str(&o, "first_version", is->first_version);
  kv_str(&o, "last_version", is->last_version);
  key(&o, "share", 0);
  _hg_out_printf(&o, "%.4f", is->share);
  kv_u64(&o, "bytes_median", is->bytes_median);
  kv_u64(&o, "bytes_p90", is->bytes_p90);
  kv_u64(&o, "bytes_max", is->bytes_max);
  kv_u64(&o, "baseline_snapshots", is->base_snapshots);
  kv_u64(&o, "baseline_bytes_median", is->base_median);
  key(&o, "p_value", 0);
  _hg_out_printf(&o, "%.3g", is->p_value);
  kv_u64(&o, "unexplained_growth", is->unexplained);
  key(&o, "context_of", 0);
  if (is->context_of >= 0) hash_hex(&o, r->issues[is->context_of].hash);
  else _hg_out_str(&o, "null");
  key(&o, "impact", 0);
  _hg_out_printf(&o, "%.0f", is->impact);
  key(&o, "exemplars", 0);
  _hg_out_str(&o, "[");
  for (uint32_t k = 0; k < is->exemplar_count; k++) {
    if (k) _hg_out_str(&o, ",");
    _hg_out_str(&o, "{\"snapshot\":");
    _hg_out_json_str(&o, is->exemplars[k]);
    kv_u64(&o, "bytes", is->exemplar_bytes[k]);
    _hg_out_str(&o, "}");
  }
  _hg_out_str(&o, "]}");
  return finish(&o);
}

int hg_fleet_growth_json(const struct hg_fleet_growth *g, uint32_t limit, hg_write_fn write,
                         void *ctx) {
  struct _hg_out o = {.write = write, .ctx = ctx};
  _hg_out_str(&o, "{\"version\":");
  _hg_out_json_str(&o, g->version);
  kv_str(&o, "baseline", g->baseline);
  _hg_out_str(&o, ",\"classes\":[");
  for (uint32_t i = 0; i < g->count && i < limit; i++) {
    const struct hg_fleet_growth_row *r = &g->rows[i];
    _hg_out_str(&o, i ? ",{\"class\":" : "{\"class\":");
    _hg_out_json_str(&o, r->name);
    kv_u64(&o, "median", r->median);
    kv_u64(&o, "baseline_median", r->base_median);
    key(&o, "delta", 0);
    _hg_out_printf(&o, "%lld", (long long)r->delta);
    kv_u64(&o, "snapshots", r->snapshots);
    kv_u64(&o, "baseline_snapshots", r->base_snapshots);
    _hg_out_str(&o, "}");
  }
  _hg_out_str(&o, "]}");
  return finish(&o);
}

int hg_fleet_tree_json(const struct hg_fleet_tree *t, hg_write_fn write, void *ctx) {
  struct _hg_out o = {.write = write, .ctx = ctx};
  /* Iterative pre-order: a stack of (node, next child) pairs on the heap. */
  uint32_t *stk = malloc(((size_t)t->count + 1) * 2 * sizeof *stk);
  if (!stk) return HG_ENOMEM;
  _hg_out_str(&o, "{\"version\":");
  _hg_out_json_str(&o, t->version);
  kv_u64(&o, "snapshots", t->snapshots);
  _hg_out_str(&o, ",\"tree\":");
  uint32_t sp = 0;
  stk[sp++] = 0;
  stk[sp++] = 0;
  int opened = 0;
  while (sp) {
    uint32_t id = stk[sp - 2], next = stk[sp - 1];
    const struct hg_fleet_tree_node *n = &t->nodes[id];
    if (!next && !opened) {
      _hg_out_str(&o, "{\"name\":");
      _hg_out_json_str(&o, n->name);
      kv_u64(&o, "value", n->total);
      key(&o, "mean", 0);
      _hg_out_printf(&o, "%.0f", n->mean);
      kv_u64(&o, "snapshots", n->snapshots);
      _hg_out_str(&o, ",\"children\":[");
    }
    opened = 0;
    if (next < n->child_count) {
      if (next) _hg_out_str(&o, ",");
      stk[sp - 1] = next + 1;
      stk[sp++] = n->first_child + next;
      stk[sp++] = 0;
      continue;
    }
    _hg_out_str(&o, "]}");
    sp -= 2;
    opened = 1; /* the parent resumes: do not reopen it */
  }
  _hg_out_str(&o, "}");
  free(stk);
  return finish(&o);
}

int hg_fleet_summary_json(const struct hg_fleet_summary *s, hg_write_fn write, void *ctx) {
  struct _hg_out o = {.write = write, .ctx = ctx};
  _hg_out_str(&o, "{\"format\":");
  _hg_out_u64(&o, s->format);
  const char *texts[] = {"app", s->app, "app_version", s->app_version, "build", s->build,
                         "os_version", s->os_version, "device_model", s->device_model,
                         "device_id", s->device_id, "session_id", s->session_id,
                         "trigger", s->trigger, "platform", s->platform, "process", s->process,
                         "snapshot", s->snapshot};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i += 2) kv_str(&o, texts[i], texts[i + 1]);
  key(&o, "checksum", 0);
  hash_hex(&o, s->checksum);
  const struct { const char *k; uint64_t v; } nums[] = {
      {"time_ns", s->time_ns}, {"footprint", s->footprint}, {"limit", s->limit},
      {"file_size", s->file_size}, {"nodes", s->nodes}, {"edges", s->edges},
      {"heap_bytes", s->heap_bytes}, {"reachable_bytes", s->reachable_bytes},
      {"leaked_bytes", s->leaked_bytes}, {"dropped", s->dropped}};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) kv_u64(&o, nums[i].k, nums[i].v);
  _hg_out_str(&o, ",\"classes\":[");
  for (uint32_t i = 0; i < s->class_count; i++) {
    _hg_out_str(&o, i ? ",{\"class\":" : "{\"class\":");
    _hg_out_json_str(&o, s->classes[i].name);
    kv_u64(&o, "count", s->classes[i].count);
    kv_u64(&o, "bytes", s->classes[i].bytes);
    kv_u64(&o, "retained", s->classes[i].retained);
    _hg_out_str(&o, "}");
  }
  _hg_out_str(&o, "],\"signatures\":[");
  for (uint32_t i = 0; i < s->sig_count; i++) {
    const struct hg_fleet_sig *g = &s->sigs[i];
    _hg_out_str(&o, i ? ",{\"signature\":" : "{\"signature\":");
    hash_hex(&o, g->hash);
    kv_str(&o, "kind", hg_fleet_kind_name(g->kind));
    kv_u64(&o, "algo", g->algo);
    kv_u64(&o, "bytes", g->bytes);
    kv_u64(&o, "count", g->count);
    key(&o, "path", 0);
    str_array(&o, g->steps, g->step_count);
    _hg_out_str(&o, "}");
  }
  _hg_out_str(&o, "]}");
  return finish(&o);
}
