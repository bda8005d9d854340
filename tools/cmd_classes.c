/*
 * cmd_classes.c — `heapgraph classes FILE [--json] [--mangled] [-n N]`:
 * a histogram of nodes by class (count, total bytes), biggest first;
 * unclassified malloc blocks grouped by power-of-two size class, VM-region
 * nodes grouped together.
 */
#include <stdlib.h>
#include <string.h>

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
  if (r->label) return r->label;
  snprintf(buf, size, "(unclassified <=%llu B)", (unsigned long long)((uint64_t)1 << r->bucket));
  return buf;
}

static int by_bytes(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  if (x->label && y->label) return strcmp(x->label, y->label);
  return x->bucket - y->bucket;
}

/* Bucket b holds sizes in (2^(b-1), 2^b]; bucket 0 holds 1. */
static unsigned bucket(uint64_t size) {
  unsigned b = 0;
  while (b < 63 && ((uint64_t)1 << b) < size) b++;
  return b;
}

static const char about[] =
    "  Nodes grouped by class: count and total bytes, sorted by bytes.\n"
    "  Unclassified blocks are grouped by size class \"(unclassified <=N B)\".\n"
    "  C++ names are demangled unless --mangled.\n";

int cmd_classes(int argc, char **argv) {
  struct acli a;
  int st = acli_parse(&a, "classes", "FILE", "at most N rows (the total counts all)", about, NULL, argc, argv);
  if (st >= 0) return st;
  const char *path = argv[1];
  struct hg_graph *g = cli_load(path, 0);
  if (!g) return 1;
  char **names = cli_class_names(g, a.mangled);
  size_t nrows = (size_t)g->class_count + 64 + 1;
  struct row *rows = calloc(nrows, sizeof *rows);
  if (!names || !rows) {
    fprintf(stderr, "heapgraph classes: out of memory\n");
    return 1;
  }
  /* rows[0..class_count) classes, then 64 size buckets, then regions */
  struct row *buckets = rows + g->class_count, *regions = buckets + 64;
  for (uint32_t i = 0; i < g->node_count; i++) {
    uint32_t c = g->node_class[i];
    struct row *r = c ? &rows[c - 1]
                      : (g->node_flags[i] & HG_NODE_REGION) ? regions : &buckets[bucket(g->node_size[i])];
    r->count++;
    r->bytes += g->node_size[i];
  }
  for (uint32_t c = 1; c <= g->class_count; c++) {
    rows[c - 1].label = names[c];
    rows[c - 1].class_id = c;
    rows[c - 1].bucket = -1;
  }
  for (int b = 0; b < 64; b++) buckets[b].bucket = b;
  regions->label = "(VM regions)";
  regions->bucket = -1;
  qsort(rows, nrows, sizeof *rows, by_bytes);
  uint64_t tc = 0, tb = 0;
  long shown = 0;
  if (!a.json) printf("%12s %14s  %s\n", "COUNT", "BYTES", "CLASS");
  for (size_t i = 0; i < nrows; i++) {
    if (!rows[i].count) continue;
    tc += rows[i].count;
    tb += rows[i].bytes;
    if (a.limit >= 0 && shown >= a.limit) continue;
    shown++;
    char lb[48];
    const char *label = label_of(&rows[i], lb, sizeof lb);
    if (a.json) {
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
  if (!a.json) printf("%12llu %14llu  TOTAL\n", (unsigned long long)tc, (unsigned long long)tb);
  free(rows);
  cli_class_names_free(g, names);
  hg_graph_free(g);
  return 0;
}
