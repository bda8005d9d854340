/*
 * cmd_info.c — `heapgraph info FILE [--json]`: metadata, counts, sizes and
 * whether the checksum holds (a file whose only fault is its checksum is
 * still shown, with the mismatch reported and exit status 1).
 */
#include <string.h>
#include <time.h>

#include "tools/analysis_json.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static void totals(const struct hg_graph *g, uint64_t *bytes, uint64_t *classified) {
  *bytes = 0;
  *classified = 0;
  for (uint32_t i = 0; i < g->node_count; i++) {
    *bytes += g->node_size[i];
    *classified += g->node_class[i] != 0;
  }
}

static void print_json(const struct hg_graph *g, const char *path) {
  ajson_info(stdout, g, path);
  printf("\n");
}

static void print_text(const struct hg_graph *g, const char *path) {
  const struct hg_meta *m = &g->meta;
  char b1[32], b2[32];
  uint64_t bytes, classified;
  totals(g, &bytes, &classified);
  printf("file        %s (%s)\n", cli_text(path), cli_bytes(g->file_size, b1, sizeof b1));
  printf("format      v%u, checksum %s (xxh64 0x%016llx)\n", g->format_version,
         g->checksum_ok ? "ok" : "MISMATCH", (unsigned long long)g->checksum);
  printf("platform    %s %s %s, pointer %u bytes, page %u bytes\n", m->platform ? cli_text(m->platform) : "?",
         m->arch ? cli_text(m->arch) : "?", m->os_version ? cli_text(m->os_version) : "", m->pointer_size, m->page_size);
  printf("process     %s (pid %lld)\n", m->process ? cli_text(m->process) : "?", (long long)m->pid);
  if (m->time_ns) {
    time_t t = (time_t)(m->time_ns / 1000000000u);
    struct tm tm;
    char when[64];
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    printf("time        %s\n", when);
  }
  if (m->trigger) printf("trigger     %s\n", cli_text(m->trigger));
  if (m->allocator || m->heap_status)
    printf("heap        %s: %s\n", m->allocator ? cli_text(m->allocator) : "?", m->heap_status ? cli_text(m->heap_status) : "?");
  for (size_t i = 0; i < m->capture_count; i++)
    printf("%-11s %s = %llu\n", i ? "" : "capture", cli_text(m->capture[i].key),
           (unsigned long long)m->capture[i].value);
  for (size_t i = 0; i < m->app_count; i++)
    printf("%-11s %s = %s\n", i ? "" : "app", cli_text(m->app[i].key), cli_text(m->app[i].value));
  printf("regions     %u\nimages      %u\nthreads     %u\nclasses     %u\n", g->region_count,
         g->image_count, g->thread_count, g->class_count);
  printf("nodes       %u (%s), %llu classified (%.1f%%)\n", g->node_count,
         cli_bytes(bytes, b2, sizeof b2), (unsigned long long)classified,
         g->node_count ? 100.0 * (double)classified / g->node_count : 0.0);
  printf("edges       %u\nroots       %u\n", g->edge_count, g->root_count);
  if (g->node_count)
    printf("encoding    %.2f bytes per node+edge record\n",
           (double)g->file_size / ((double)g->node_count + g->edge_count));
}

static const char about[] =
    "  Metadata (platform, process, trigger, capture timings, app key/values),\n"
    "  record counts, total node bytes, and whether the checksum holds.\n";

int cmd_info(int argc, char **argv) {
  int json = 0, nargs;
  const struct cli_opt opts[] = {CLI_JSON(&json), CLI_END};
  const struct cli_cmd cmd = {"info", "FILE", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  const char *path = argv[1];
  struct hg_graph *g = cli_load(path, HG_LOAD_ALLOW_BAD_CHECKSUM);
  if (!g) return 1;
  if (json)
    print_json(g, path);
  else
    print_text(g, path);
  int rc = g->checksum_ok ? 0 : 1;
  hg_graph_free(g);
  return rc;
}
