/*
 * bench_format.c — `make bench` figures for the snapshot format: writer and
 * reader throughput (nodes/s, MB/s) and bytes per node and per edge on the
 * synthetic 1 M-node graph (bench/synthetic.h), against the format goal of
 * at most 6 bytes per node plus 4 bytes per edge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "bench/synthetic.h"
#include "heapgraph.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t file_size(const char *p) {
  struct stat st;
  return stat(p, &st) ? 0 : (uint64_t)st.st_size;
}

static int write_one(const char *path, uint32_t n, int edges, uint64_t *ne, double *secs) {
  struct hg_writer *w = NULL;
  double t0 = now();
  int rc = hg_writer_open(&w, path);
  if (!rc) rc = syn_write(w, n, edges, ne, NULL);
  if (!rc) rc = hg_writer_finish(w);
  *secs = now() - t0;
  if (rc) fprintf(stderr, "bench_format: %s: %s\n", hg_error_string(rc), hg_writer_message(w));
  hg_writer_close(w);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build";
  uint32_t n = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 1000000u;
  char full[512], nodes_only[512];
  snprintf(full, sizeof full, "%s/bench-format.hgsnap", dir);
  snprintf(nodes_only, sizeof nodes_only, "%s/bench-format-nodes.hgsnap", dir);
  uint64_t ne = 0, ne0 = 0;
  double tw, tw0, tr;
  if (write_one(nodes_only, n, 0, &ne0, &tw0) || write_one(full, n, 1, &ne, &tw)) return 1;
  uint64_t size = file_size(full), size0 = file_size(nodes_only);

  struct hg_load_error err;
  double t0 = now();
  struct hg_graph *g = hg_graph_load(full, &err);
  tr = now() - t0;
  if (!g) {
    fprintf(stderr, "bench_format: load: %s at %llu\n", err.message, (unsigned long long)err.offset);
    return 1;
  }
  if (g->node_count != n || g->edge_count != ne) {
    fprintf(stderr, "bench_format: read back %u nodes / %u edges, wrote %u / %llu\n", g->node_count,
            g->edge_count, n, (unsigned long long)ne);
    return 1;
  }
  hg_graph_free(g);

  double per_node = (double)size0 / n;
  double per_edge = (double)(size - size0) / (double)ne;
  double budget = 6.0 * n + 4.0 * (double)ne;
  printf("format bench: %u nodes, %llu edges (synthetic heap, bench/synthetic.h)\n", n, (unsigned long long)ne);
  printf("  file size          %llu bytes (%.2f MB)\n", (unsigned long long)size, (double)size / 1e6);
  printf("  bytes per node     %.2f  (goal <= 6)   [nodes-only file %llu bytes]\n", per_node,
         (unsigned long long)size0);
  printf("  bytes per edge     %.2f  (goal <= 4)\n", per_edge);
  printf("  total vs budget    %.1f%% of 6*nodes + 4*edges\n", 100.0 * (double)size / budget);
  printf("  writer             %.3f s, %.2f M nodes/s, %.0f MB/s\n", tw, n / tw / 1e6, (double)size / tw / 1e6);
  printf("  reader             %.3f s, %.2f M nodes/s, %.0f MB/s (full validation + CSR)\n", tr,
         n / tr / 1e6, (double)size / tr / 1e6);
  int ok = per_node <= 6.0 && per_edge <= 4.0;
  printf("  compactness goal   %s\n", ok ? "met" : "NOT MET");
  remove(full);
  remove(nodes_only);
  return ok ? 0 : 1;
}
