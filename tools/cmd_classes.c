/*
 * cmd_classes.c — `heapgraph classes FILE [--json] [--mangled] [-n N]`:
 * a histogram of nodes by class (count, total bytes), biggest first;
 * unclassified malloc blocks grouped by power-of-two size class, VM-region
 * nodes grouped together; then, when the snapshot has one, the census of
 * C++ objects counted inside slabs (capture numbers "cxx_census:…").
 */
#include <stdlib.h>
#include <string.h>

#include "cxxabi/cxxabi.h"
#include "graph/size_bucket.h"
#include "tools/analysis_cli.h"
#include "tools/cli_util.h"

struct row {
  const char *label;   /* class name; NULL for a size bucket             */
  uint32_t class_id;   /* 0 for synthetic groups                         */
  int bucket;          /* size bucket of unclassified blocks, else -1    */
  uint64_t count, bytes;
};

/* Label of a row; size-bucket labels are formatted into buf. */
static const char *label_of(const struct row *r, char *buf, size_t size) {
  return r->label ? r->label : _hg_size_bucket_label((unsigned)r->bucket, buf, size);
}

static int by_bytes(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  if (x->label && y->label) return strcmp(x->label, y->label);
  return x->bucket - y->bucket;
}

static int by_value(const void *a, const void *b) {
  const struct hg_num *x = *(const struct hg_num *const *)a, *y = *(const struct hg_num *const *)b;
  if (x->value != y->value) return x->value < y->value ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* The census lines (text only): objects of each class counted inside
 * blocks named "slab starting with …" — never nodes (docs/cxx-types.md). */
static void print_census(const struct hg_meta *m, int mangled, long limit) {
  size_t plen = strlen(HG_CXX_CENSUS_PREFIX), n = 0;
  const struct hg_num **c = calloc(m->capture_count + 1, sizeof *c);
  if (!c) return;
  for (size_t i = 0; i < m->capture_count; i++)
    if (!strncmp(m->capture[i].key, HG_CXX_CENSUS_PREFIX, plen)) c[n++] = &m->capture[i];
  qsort(c, n, sizeof *c, by_value);
  if (n) printf("census: C++ objects counted inside slabs by their vtable words (not nodes)\n");
  for (size_t i = 0; i < n && (limit < 0 || (long)i < limit); i++) {
    const char *name = c[i]->key + plen;
    char *d = mangled ? NULL : cli_demangle_type(name);
    printf("%12llu %14s  %s\n", (unsigned long long)c[i]->value, "", cli_text(d ? d : name));
    free(d);
  }
  free(c);
}

static const char about[] =
    "  Nodes grouped by class: count and total bytes, sorted by bytes.\n"
    "  Unclassified blocks are grouped by size class \"(unclassified <=N B)\".\n"
    "  C++ names are demangled unless --mangled. A C++ class's blocks larger than\n"
    "  4 KiB that hold 4 or more further objects with vtables are \"slab starting\n"
    "  with T\"; the objects counted inside them follow the table as a census.\n";

int cmd_classes(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "classes", "FILE", "at most N rows (the total counts all)", about, NULL, argc, argv, 1);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  size_t nrows = (size_t)g->class_count + HG_SIZE_BUCKETS + 1;
  struct row *rows = calloc(nrows, sizeof *rows);
  if (!rows) {
    fprintf(stderr, "heapgraph classes: out of memory\n");
    acli_close(&s);
    return 1;
  }
  /* rows[0..class_count) classes, then the size buckets, then regions */
  struct row *buckets = rows + g->class_count, *regions = buckets + HG_SIZE_BUCKETS;
  for (uint32_t i = 0; i < g->node_count; i++) {
    uint32_t c = g->node_class[i];
    struct row *r = c ? &rows[c - 1]
                      : (g->node_flags[i] & HG_NODE_REGION) ? regions : &buckets[_hg_size_bucket(g->node_size[i])];
    r->count++;
    r->bytes += g->node_size[i];
  }
  for (uint32_t c = 1; c <= g->class_count; c++) {
    rows[c - 1].label = names[c];
    rows[c - 1].class_id = c;
    rows[c - 1].bucket = -1;
  }
  for (int b = 0; b < HG_SIZE_BUCKETS; b++) buckets[b].bucket = b;
  regions->label = "(VM regions)";
  regions->bucket = -1;
  qsort(rows, nrows, sizeof *rows, by_bytes);
  uint64_t tc = 0, tb = 0;
  long shown = 0;
  if (!s.a.json) printf("%12s %14s  %s\n", "COUNT", "BYTES", "CLASS");
  for (size_t i = 0; i < nrows; i++) {
    if (!rows[i].count) continue;
    tc += rows[i].count;
    tb += rows[i].bytes;
    if (s.a.limit >= 0 && shown >= s.a.limit) continue;
    shown++;
    char lb[HG_SIZE_BUCKET_LABEL];
    const char *label = label_of(&rows[i], lb, sizeof lb);
    if (s.a.json) {
      const struct hg_class *k = rows[i].class_id ? &g->classes[rows[i].class_id - 1] : NULL;
      printf("{\"class\":");
      cli_json_str(stdout, label);
      printf(",\"kind\":");
      cli_json_str(stdout, k ? hg_class_kind_name(k->kind) : NULL);
      printf(",\"mangled\":");
      cli_json_str(stdout, k ? k->name : NULL);
      printf(",\"count\":%llu,\"bytes\":%llu}\n", (unsigned long long)rows[i].count,
             (unsigned long long)rows[i].bytes);
    } else {
      printf("%12llu %14llu  %s\n", (unsigned long long)rows[i].count,
             (unsigned long long)rows[i].bytes, cli_text(label));
    }
  }
  if (!s.a.json) printf("%12llu %14llu  TOTAL\n", (unsigned long long)tc, (unsigned long long)tb);
  if (!s.a.json) print_census(&g->meta, s.a.mangled, s.a.limit);
  free(rows);
  acli_close(&s);
  return 0;
}
