/*
 * stack_table.c — listing, ordering and the JSON of the allocation-stack
 * table (see stack_table.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli_util.h"
#include "tools/stack_table.h"

int stack_table_key(const char *name) {
  if (!name || !strcmp(name, "retained")) return STACK_BY_RETAINED;
  if (!strcmp(name, "bytes")) return STACK_BY_BYTES;
  if (!strcmp(name, "count")) return STACK_BY_COUNT;
  return -1;
}

struct keyed {
  uint64_t key;
  uint32_t id;
};

static int by_key_desc(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? 1 : -1;
  return x->id < y->id ? -1 : x->id > y->id;
}

int64_t stack_table_sorted(const struct hg_graph *g, const struct hg_stack_total *t, int key,
                           uint32_t **out) {
  struct keyed *k = malloc(((size_t)g->stack_count + 1) * sizeof *k);
  uint32_t *ids = malloc(((size_t)g->stack_count + 1) * sizeof *ids);
  if (!k || !ids) {
    free(k), free(ids);
    return -1;
  }
  uint32_t n = 0;
  for (uint32_t id = 1; id <= g->stack_count; id++) {
    const struct hg_stack *s = &g->stacks[id - 1];
    if (!s->count && !t[id].nodes) continue; /* all freed */
    k[n].id = id;
    k[n++].key = key == STACK_BY_COUNT ? s->count : key == STACK_BY_BYTES ? s->bytes : t[id].retained;
  }
  qsort(k, n, sizeof *k, by_key_desc);
  for (uint32_t i = 0; i < n; i++) ids[i] = k[i].id;
  free(k);
  *out = ids;
  return n;
}

void stack_table_entry_json(FILE *f, const struct hg_graph *g, const struct hg_stack_total *t,
                            struct symbolizer *sym, uint32_t id) {
  const struct hg_stack *s = &g->stacks[id - 1];
  fprintf(f, "{\"id\":%u,\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"nodes\":%" PRIu64 ",\"node_bytes\":%" PRIu64
             ",\"retained\":%" PRIu64 ",\"frames\":",
          id, s->count, s->bytes, t[id].nodes, t[id].node_bytes, t[id].retained);
  sym_print_stack(f, sym, s, 1, "");
}

void stack_table_json(FILE *f, const struct hg_graph *g, const struct hg_stack_total *t,
                      struct symbolizer *sym, const uint32_t *ids, uint32_t n, uint32_t off, uint32_t k) {
  const struct hg_stack_info *si = &g->stack_info;
  fputs("{\"info\":{\"status\":", f);
  cli_json_str(f, si->status);
  fputs(",\"unwinder\":", f);
  cli_json_str(f, si->unwinder);
  fprintf(f, ",\"max_frames\":%u,\"sample_bytes\":%" PRIu64 ",\"budget_bytes\":%" PRIu64 ",\"tracking_bytes\":%" PRIu64
             ",\"map_bytes\":%" PRIu64 ",\"live_blocks\":%" PRIu64 ",\"dropped\":%" PRIu64
             ",\"stacks\":%u,\"unattributed_nodes\":%" PRIu64 "},\"total\":%u,\"stacks\":[",
          si->max_frames, si->sample_bytes, si->budget_bytes, si->tracking_bytes, si->map_bytes, si->live_blocks,
          si->dropped, g->stack_count, t[0].nodes, n);
  for (uint32_t i = off; i < n && i - off < k; i++) {
    fputs(i == off ? "\n" : ",\n", f);
    stack_table_entry_json(f, g, t, sym, ids[i]);
    fputc('}', f);
  }
  fputs("],\"large_allocations\":[", f);
  for (uint32_t i = 0; i < g->large_count; i++)
    fprintf(f, "%s{\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"stack\":%u,\"time_ns\":%" PRIu64 ",\"tid\":%" PRIu64 "}",
            i ? "," : "", g->large[i].addr, g->large[i].size, g->large[i].stack, g->large[i].time_ns,
            g->large[i].tid);
  fputs("]}", f);
}
