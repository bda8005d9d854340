/*
 * cmd_stacks.c — `heapgraph stacks FILE [--json] [--by retained|bytes|count]
 * [--tree bottom-up|top-down] [-n N]`: allocation stacks of a snapshot taken
 * with stacks recorded — per stack the live count and bytes the recorder
 * kept (estimates when sampled), the snapshot's nodes with that stack and the
 * bytes they retain (dominator tree). --tree merges stacks into a call tree,
 * innermost frame first (bottom-up) or outermost first (top-down). Frames are
 * symbolized on the fly (tools/symbolize.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli_opts.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/stack_table.h"
#include "tools/symbolize.h"

static const char about[] =
    "  Allocation stacks recorded in FILE (heapgraph run --stacks): per stack the\n"
    "  live count and bytes (estimates when sampled), the snapshot's nodes with\n"
    "  that stack and the bytes they retain. Sorted by --by (default retained).\n"
    "  --tree prints a call tree instead. Frames: function (file:line) with debug\n"
    "  info, else function+offset (image), else image+offset.\n";

struct ctx {
  const struct hg_graph *g;
  struct hg_stack_total *t;
  struct symbolizer *sym;
  int by; /* STACK_BY_* */
};

/* ---- call tree ---- */

struct tnode {
  struct hg_stack_frame f;
  uint64_t count, bytes, retained;
  uint32_t first_child, next;  /* indices into the node array, 0 = none */
};

struct tree {
  struct tnode *n;
  size_t len, cap;
};

static uint32_t child(struct tree *t, uint32_t parent, const struct hg_stack_frame *f) {
  for (uint32_t k = t->n[parent].first_child; k; k = t->n[k].next)
    if (t->n[k].f.image == f->image && t->n[k].f.offset == f->offset) return k;
  if (t->len == t->cap) {
    size_t cap = t->cap * 2;
    struct tnode *m = realloc(t->n, cap * sizeof *m);
    if (!m) return 0;
    t->n = m;
    t->cap = cap;
  }
  uint32_t k = (uint32_t)t->len++;
  memset(&t->n[k], 0, sizeof t->n[k]);
  t->n[k].f = *f;
  t->n[k].next = t->n[parent].first_child;
  t->n[parent].first_child = k;
  return k;
}

static uint64_t tkey(const struct ctx *c, const struct tnode *n) {
  return c->by == STACK_BY_COUNT ? n->count : c->by == STACK_BY_BYTES ? n->bytes : n->retained;
}

static void print_tree(struct ctx *c, struct tree *t, uint32_t at, int depth, long limit) {
  uint32_t kids[4096], nk = 0;
  for (uint32_t k = t->n[at].first_child; k && nk < 4096; k = t->n[k].next) kids[nk++] = k;
  for (uint32_t i = 1; i < nk; i++) /* insertion sort by key, biggest first */
    for (uint32_t j = i; j && tkey(c, &t->n[kids[j]]) > tkey(c, &t->n[kids[j - 1]]); j--) {
      uint32_t x = kids[j];
      kids[j] = kids[j - 1];
      kids[j - 1] = x;
    }
  char buf[1024], b1[32], b2[32];
  for (uint32_t i = 0; i < nk && (limit < 0 || i < (uint32_t)limit); i++) {
    const struct tnode *n = &t->n[kids[i]];
    struct sym_frame s;
    sym_resolve(c->sym, &n->f, &s);
    printf("%*s%-10" PRIu64 " %10s %10s  %s\n", depth * 2, "", n->count, cli_bytes(n->bytes, b1, sizeof b1),
           cli_bytes(n->retained, b2, sizeof b2), sym_text(&s, buf, sizeof buf));
    if (depth < 64) print_tree(c, t, kids[i], depth + 1, limit);
  }
}

static int tree(struct ctx *c, int top_down, long limit) {
  struct tree t = {calloc(1024, sizeof(struct tnode)), 1, 1024};
  if (!t.n) return 1;
  const struct hg_graph *g = c->g;
  for (uint32_t id = 1; id <= g->stack_count; id++) {
    const struct hg_stack *st = &g->stacks[id - 1];
    if (!st->count && !c->t[id].nodes) continue; /* all freed */
    uint32_t at = 0;
    for (uint32_t k = 0; k < st->frame_count; k++) {
      const struct hg_stack_frame *f = &st->frames[top_down ? st->frame_count - 1 - k : k];
      at = child(&t, at, f);
      if (!at) {
        free(t.n);
        return 1;
      }
      t.n[at].count += st->count;
      t.n[at].bytes += st->bytes;
      t.n[at].retained += c->t[id].retained; /* an upper bound where stacks nest */
    }
  }
  printf("%-10s %10s %10s  %s (%s)\n", "count", "bytes", "retained", "frame",
         top_down ? "top-down: outermost first" : "bottom-up: allocating function first");
  print_tree(c, &t, 0, 0, limit);
  free(t.n);
  return 0;
}

int cmd_stacks(int argc, char **argv) {
  int json = 0, nargs;
  long limit = -1;
  const char *by = "retained", *treemode = NULL;
  const struct cli_opt opts[] = {
      CLI_JSON(&json),
      CLI_OPT_CHOICE("--by", "retained|bytes|count", &by, "sort key (default retained)"),
      CLI_OPT_CHOICE("--tree", "bottom-up|top-down", &treemode, "print a merged call tree"),
      CLI_LIMIT(&limit, "at most N stacks (N children per tree level)"),
      SYM_CLI_OPTS,
      CLI_END};
  const struct cli_cmd cmd = {"stacks", "FILE", 1, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  struct hg_graph *g = cli_load(argv[1], 0);
  if (!g) return 1;
  if (!g->has_stacks) {
    fprintf(stderr, "heapgraph stacks: %s has no allocation stacks (capture with heapgraph run --stacks)\n", argv[1]);
    hg_graph_free(g);
    return 1;
  }
  struct ctx c = {g, NULL, sym_new(g), stack_table_key(by)};
  struct hg_dominators *d = NULL;
  int rc = hg_dominators_compute(g, &d);
  if (!rc) rc = hg_stack_totals(g, d, &c.t);
  uint32_t *ids = NULL;
  int64_t listed = rc || !c.sym ? -1 : stack_table_sorted(g, c.t, c.by, &ids);
  if (rc || listed < 0) {
    fprintf(stderr, "heapgraph stacks: %s\n", hg_error_string(rc ? rc : HG_ENOMEM));
    st = 1;
    goto out;
  }
  const struct hg_stack_info *si = &g->stack_info;
  if (treemode && !json) {
    st = tree(&c, !strcmp(treemode, "top-down"), limit);
    goto out;
  }
  uint32_t n = (uint32_t)listed;
  if (limit >= 0 && (uint32_t)limit < n) n = (uint32_t)limit;
  if (json) {
    stack_table_json(stdout, g, c.t, c.sym, ids, (uint32_t)listed, 0, n);
    putchar('\n');
  } else {
    char b1[32], b2[32], b3[32];
    printf("allocation stacks: %u (status %s, unwinder %s, %u frames max, %s)\n", g->stack_count,
           si->status, si->unwinder && *si->unwinder ? si->unwinder : "?", si->max_frames,
           si->sample_bytes ? "sampled" : "every block");
    if (si->sample_bytes)
      printf("sampling: one block per %" PRIu64 " bytes on average; count and bytes are estimates\n",
             si->sample_bytes);
    printf("recorder: %" PRIu64 " live blocks, %s of tracking memory (budget %s), %" PRIu64 " not recorded\n",
           si->live_blocks, cli_bytes(si->tracking_bytes, b1, sizeof b1), cli_bytes(si->budget_bytes, b2, sizeof b2),
           si->dropped);
    printf("nodes without a recorded stack: %" PRIu64 " (%s)\n\n", c.t[0].nodes,
           cli_bytes(c.t[0].node_bytes, b3, sizeof b3));
    for (uint32_t i = 0; i < n; i++) {
      uint32_t id = ids[i];
      const struct hg_stack *s = &g->stacks[id - 1];
      printf("#%u  count %" PRIu64 ", bytes %s, nodes %" PRIu64 ", retained %s\n", id, s->count,
             cli_bytes(s->bytes, b1, sizeof b1), c.t[id].nodes, cli_bytes(c.t[id].retained, b2, sizeof b2));
      sym_print_stack(stdout, c.sym, s, 0, "    ");
    }
    if (g->large_count) printf("\nlarge allocations (last %u):\n", g->large_count);
    for (uint32_t i = 0; i < g->large_count; i++) {
      printf("  %s at 0x%" PRIx64 " (thread %" PRIu64 "), stack #%u\n", cli_bytes(g->large[i].size, b1, sizeof b1),
             g->large[i].addr, g->large[i].tid, g->large[i].stack);
      if (g->large[i].stack) sym_print_stack(stdout, c.sym, &g->stacks[g->large[i].stack - 1], 0, "    ");
    }
  }
  st = 0;
out:
  free(ids);
  free(c.t);
  sym_free(c.sym);
  hg_dominators_free(d);
  hg_graph_free(g);
  return st;
}
