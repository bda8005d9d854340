/*
 * cmd_leaks.c — `heapgraph leaks FILE [-n N] [--json]`: blocks no root
 * reaches, folded into root leaks like libmemunreachable / Apple's leaks.
 * Exit status 1 when there are leaks (like `leaks`), 2 on errors.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis_cli.h"
#include "tools/analysis_json.h"
#include "tools/cli_util.h"

static const char about[] =
    "  Blocks unreachable from every root through strong, conservative or\n"
    "  interior references. Leaked blocks referencing each other are folded:\n"
    "  each root leak (a block or cycle no other leaked block points to) is\n"
    "  listed with everything it holds; N (default 50) root leaks are shown.\n"
    "  Exit status: 0 no leaks, 1 leaks found, 2 error.\n";

int cmd_leaks(int argc, char **argv) {
  struct acli_snap s;
  int st = acli_open(&s, "leaks", "FILE", "root leaks shown (default 50)", about, NULL, argc, argv, 2);
  if (st >= 0) return st;
  struct hg_graph *g = s.g;
  char **names = s.names;
  uint32_t k = acli_limit(&s.a, 50);
  struct hg_leaks *l = NULL;
  int rc = hg_leaks_find(g, &l);
  if (rc) {
    fprintf(stderr, "heapgraph leaks: %s\n", hg_error_string(rc));
    acli_close(&s);
    return 2;
  }
  if (s.a.json) {
    ajson_leaks(stdout, g, names, l, 0, k);
    printf("\n");
  } else {
    printf("%" PRIu32 " leak%s for %" PRIu64 " total leaked bytes (%" PRIu32 " root leak%s).\n",
           l->leaked_count, l->leaked_count == 1 ? "" : "s", l->leaked_bytes, l->count,
           l->count == 1 ? "" : "s");
    for (uint32_t i = 0; i < l->count && i < k; i++) {
      const struct hg_leak *x = &l->leaks[i];
      printf("\nROOT LEAK: ");
      acli_node_text(stdout, g, names, x->node);
      if (x->group_count > 1)
        printf(" — cycle of %" PRIu32 " blocks, %" PRIu64 " B", x->group_count, x->group_bytes);
      printf("\n  holds %" PRIu32 " block%s, %" PRIu64 " B", x->count, x->count == 1 ? "" : "s",
             x->bytes);
      if (x->owned_count != x->count)
        printf(" (%" PRIu32 " blocks, %" PRIu64 " B held by it alone)", x->owned_count, x->owned_bytes);
      printf("\n");
    }
    if (l->count > k) printf("\n… %" PRIu32 " more root leaks (-n)\n", l->count - k);
    if (!l->held_exact)
      printf("\nnote: some root leaks share so much that exact sizes were too costly; those show"
             " what they alone hold.\n");
  }
  st = l->leaked_count ? 1 : 0;
  hg_leaks_free(l);
  acli_close(&s);
  return st;
}
