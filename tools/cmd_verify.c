/*
 * cmd_verify.c — `heapgraph verify FILE…`: exit 0 when every file is a valid
 * snapshot, else 1 with the reason and byte offset on stderr.
 */
#include <stdio.h>

#include "tools/cli_util.h"

int cmd_verify(int argc, char **argv) {
  if (argc < 2 || cli_is_help(argv[1])) {
    fprintf(argc < 2 ? stderr : stdout,
            "usage: heapgraph verify FILE…\n"
            "  Fully decodes and validates each snapshot (structure, counts, references,\n"
            "  checksum). Exit 0 if all are valid; otherwise the reason and byte offset\n"
            "  go to stderr and the exit status is 1.\n");
    return argc < 2 ? 2 : 0;
  }
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    struct hg_graph *g = cli_load(argv[i], 0);
    if (!g) {
      bad = 1;
      continue;
    }
    hg_graph_free(g);
  }
  return bad;
}
