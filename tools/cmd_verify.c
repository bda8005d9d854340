/*
 * cmd_verify.c — `heapgraph verify FILE…`: exit 0 when every file is a valid
 * snapshot, else 1 with the reason and byte offset on stderr.
 */
#include <stdio.h>

#include "tools/cli_opts.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Fully decodes and validates each snapshot (structure, counts, references,\n"
    "  checksum). Exit 0 if all are valid; otherwise the reason and byte offset\n"
    "  go to stderr and the exit status is 1.\n";

int cmd_verify(int argc, char **argv) {
  const struct cli_opt opts[] = {CLI_END};
  const struct cli_cmd cmd = {"verify", "FILE…", 1, -1, opts, about, 0};
  int nargs, st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  int bad = 0;
  for (int i = 1; i <= nargs; i++) {
    struct hg_graph *g = cli_load(argv[i], 0);
    if (!g) {
      bad = 1;
      continue;
    }
    hg_graph_free(g);
  }
  return bad;
}
