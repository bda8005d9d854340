/*
 * cmd_msl.c — `heapgraph msl FILE.index [--json] [--width 16|24] [-n N]`:
 * summarises a MallocStackLogging index file of libmalloc <= 166 (iOS <= 12,
 * macOS <= 10.14; graph/msl.c reads it): the record width, events by type,
 * the blocks still live at the end of the log, and per stack id the live
 * count and bytes, biggest first. Backtraces are not in the file (they were
 * in the process's uniquing table), so stacks are shown by id.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/msl.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Reads a stack-logs.<pid>.<addr>.<name>.XXXXXX.index file written by\n"
    "  MallocStackLogging up to libmalloc-166 (iOS 12, macOS 10.14): 16-byte\n"
    "  records (32-bit processes) or 24-byte ones (64-bit), detected unless\n"
    "  --width is given. Replays allocs and frees (realloc is logged as both)\n"
    "  and prints events by type, the blocks live at the end and, per stack\n"
    "  id, their count and bytes (biggest first; -n limits the rows, default\n"
    "  20 in text, all in JSON). Backtraces are not in the file.\n";

/* The whole file, bounded by its size; NULL with a message on failure. */
static uint8_t *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0 || st.st_size < 0) {
    fprintf(stderr, "heapgraph msl: %s: %s\n", path, strerror(errno));
    if (f) fclose(f);
    return NULL;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf || fread(buf, 1, n, f) != n) {
    fprintf(stderr, "heapgraph msl: %s: %s\n", path, buf ? "short read" : "out of memory");
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *size = n;
  return buf;
}

static void print_json(const struct hg_msl_summary *s, size_t rows) {
  printf("{\"width\":%u,\"width_detected\":%s,\"records\":%llu,\"events\":{", s->width,
         s->width_detected ? "true" : "false", (unsigned long long)s->records);
  for (int e = 0; e < HG_MSL_EV_COUNT; e++)
    printf("%s\"%s\":%llu", e ? "," : "", _hg_msl_event_name((enum hg_msl_event)e),
           (unsigned long long)s->events[e]);
  printf("},\"live_count\":%llu,\"live_bytes\":%llu,\"unmatched_frees\":%llu,"
         "\"replaced_allocs\":%llu,\"trailing_bytes\":%llu",
         (unsigned long long)s->live_count, (unsigned long long)s->live_bytes,
         (unsigned long long)s->unmatched_frees, (unsigned long long)s->replaced_allocs,
         (unsigned long long)s->trailing_bytes);
  if (s->events[HG_MSL_EV_INVALID]) printf(",\"first_invalid\":%llu", (unsigned long long)s->first_invalid);
  printf(",\"stack_count\":%zu,\"stacks\":[", s->nstacks);
  for (size_t i = 0; i < rows; i++)
    printf("%s{\"stack_id\":%llu,\"live_count\":%llu,\"live_bytes\":%llu,\"allocs\":%llu}", i ? "," : "",
           (unsigned long long)s->stacks[i].id, (unsigned long long)s->stacks[i].live_count,
           (unsigned long long)s->stacks[i].live_bytes, (unsigned long long)s->stacks[i].allocs);
  printf("]}\n");
}

static void print_text(const struct hg_msl_summary *s, size_t rows) {
  char b[32];
  printf("records: %llu of %u bytes (%s-bit process, %s)\n", (unsigned long long)s->records, s->width,
         s->width == 24 ? "64" : "32", s->width_detected ? "detected" : "given");
  printf("events:");
  for (int e = 0; e < HG_MSL_EV_COUNT; e++)
    if (s->events[e] || e <= HG_MSL_EV_FREE)
      printf(" %s %llu", _hg_msl_event_name((enum hg_msl_event)e), (unsigned long long)s->events[e]);
  printf("\nlive at the end: %llu blocks, %s\n", (unsigned long long)s->live_count,
         cli_bytes(s->live_bytes, b, sizeof b));
  if (s->unmatched_frees || s->replaced_allocs)
    printf("unmatched frees: %llu, allocs over a live block: %llu\n",
           (unsigned long long)s->unmatched_frees, (unsigned long long)s->replaced_allocs);
  if (s->events[HG_MSL_EV_INVALID])
    printf("warning: %llu records with invalid type flags, the first at offset %llu\n",
           (unsigned long long)s->events[HG_MSL_EV_INVALID], (unsigned long long)s->first_invalid);
  if (s->trailing_bytes)
    printf("warning: %llu bytes after the last whole record (offset %llu): the file was cut\n",
           (unsigned long long)s->trailing_bytes, (unsigned long long)(s->records * s->width));
  printf("%16s %12s %14s %10s\n", "STACK ID", "LIVE", "LIVE BYTES", "ALLOCS");
  for (size_t i = 0; i < rows; i++)
    printf("%16llx %12llu %14llu %10llu\n", (unsigned long long)s->stacks[i].id,
           (unsigned long long)s->stacks[i].live_count, (unsigned long long)s->stacks[i].live_bytes,
           (unsigned long long)s->stacks[i].allocs);
  if (rows < s->nstacks) printf("(%zu more stacks; -n N shows more)\n", s->nstacks - rows);
}

int cmd_msl(int argc, char **argv) {
  int json = 0, nargs;
  long limit = -1;
  const char *width = NULL;
  const struct cli_opt opts[] = {
      CLI_JSON(&json), CLI_LIMIT(&limit, "at most N stacks (text default 20)"),
      CLI_OPT_CHOICE("--width", "16|24", &width, "record size: 16 (32-bit process) or 24 (64-bit)"),
      CLI_END};
  const struct cli_cmd cmd = {"msl", "FILE.index", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  size_t size = 0;
  uint8_t *data = slurp(argv[1], &size);
  if (!data) return 1;
  struct hg_msl_summary s;
  struct hg_msl_error err;
  int rc = _hg_msl_read(data, size, width ? (uint32_t)atoi(width) : 0, &s, &err);
  free(data);
  if (rc) {
    fprintf(stderr, "heapgraph msl: %s: %s\n", argv[1], err.message);
    return 1;
  }
  size_t rows = s.nstacks;
  if (limit >= 0 && (size_t)limit < rows) rows = (size_t)limit;
  else if (limit < 0 && !json && rows > 20) rows = 20;
  if (json) print_json(&s, rows);
  else print_text(&s, rows);
  _hg_msl_free(&s);
  return 0;
}
