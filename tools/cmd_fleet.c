/*
 * cmd_fleet.c — `heapgraph fleet DIR|FILES…`: the summaries of many
 * snapshots (cached by the snapshot's checksum), then the issues across
 * them, ranked, with a status against a baseline version; `--growth` and
 * `--tree` print the other two views; `heapgraph fleet regroup` recomputes
 * summaries made by an older signature algorithm from their snapshots. The
 * analysis itself is in graph/fleet*.c (docs/fleet.md).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/fleet.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"
#include "tools/symbolize.h"

static const char about[] =
    "  DIR: every *.hgsnap and *.hgsum in it. A snapshot's summary is cached as\n"
    "  CACHE/CHECKSUM-SIZE.hgsum (CACHE: --cache-dir, default .heapgraph-fleet next\n"
    "  to the snapshot), so a second run reads only summaries. Version and device\n"
    "  come from the snapshot's app metadata (app_version, device_id …).\n"
    "  Status against the baseline (default: the next lower version): new,\n"
    "  regressed (one-sided Mann-Whitney p < 0.001, >= 8 snapshots each side,\n"
    "  median up >= 16 KiB), fixed, ongoing. Issues whose growth an issue below\n"
    "  them explains are shown as its context. --fail-on new,regressed exits 1\n"
    "  when such an issue exists (a CI memory gate). `heapgraph fleet regroup\n"
    "  DIR|FILES…` recomputes cached summaries made by an older algorithm.\n";

struct fopt {
  const char *version, *baseline, *kind, *fail_on, *cache_dir;
  int json, growth, tree, verbose, summaries;
  long limit, min_bytes;
};

/* ---- Inputs ---- */

struct inputs {
  char **path;
  int n, cap;
};

static int push(struct inputs *in, const char *p) {
  if (in->n == in->cap) {
    int c = in->cap ? in->cap * 2 : 64;
    char **q = realloc(in->path, (size_t)c * sizeof *q);
    if (!q) return -1;
    in->path = q;
    in->cap = c;
  }
  return (in->path[in->n++] = strdup(p)) ? 0 : -1;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static int cmp_path(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Files named on the command line, directories expanded (sorted). */
static int collect(struct inputs *in, char **argv, int nargs) {
  for (int i = 1; i <= nargs; i++) {
    struct stat st;
    if (stat(argv[i], &st)) {
      fprintf(stderr, "heapgraph fleet: %s: %s\n", cli_text(argv[i]), strerror(errno));
      return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (push(in, argv[i])) return -1;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) return -1;
    int first = in->n;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.' || !(ends_with(e->d_name, ".hgsnap") || ends_with(e->d_name, ".hgsum"))) continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      if (push(in, p)) {
        closedir(d);
        return -1;
      }
    }
    closedir(d);
    qsort(in->path + first, (size_t)(in->n - first), sizeof *in->path, cmp_path);
  }
  return 0;
}

/* ---- Summaries ---- */

static const char *frame_name(void *ctx, const struct hg_graph *g, const struct hg_stack_frame *f) {
  (void)g;
  struct sym_frame out;
  sym_resolve(ctx, f, &out);
  return out.function; /* the function, never its offset: stable across builds */
}

static void cache_path(const struct fopt *o, const char *snap, uint64_t ck, uint64_t size, char *buf,
                       size_t n) {
  if (o->cache_dir) {
    snprintf(buf, n, "%s/%016" PRIx64 "-%" PRIu64 ".hgsum", o->cache_dir, ck, size);
    return;
  }
  const char *slash = strrchr(snap, '/');
  int dl = slash ? (int)(slash - snap) : 1;
  snprintf(buf, n, "%.*s/.heapgraph-fleet/%016" PRIx64 "-%" PRIu64 ".hgsum", dl, slash ? snap : ".", ck, size);
}

static int stale(const struct hg_fleet_summary *s) {
  for (uint32_t i = 0; i < s->sig_count; i++)
    if (s->sigs[i].algo != HG_FLEET_ALGO) return 1;
  return 0;
}

/* Summarises snapshot `path` and writes its cache file. */
static struct hg_fleet_summary *summarize(const char *path, const char *cache) {
  struct hg_graph *g = cli_load(path, HG_LOAD_NO_EDGE_OFFSETS); /* the summary shows none */
  if (!g) return NULL;
  struct symbolizer *sym = g->has_stacks ? sym_new(g) : NULL;
  struct hg_fleet_summary_options so = {sym ? frame_name : NULL, sym, path};
  struct hg_fleet_summary *s = NULL;
  int rc = hg_fleet_summarize(g, &so, &s);
  sym_free(sym);
  hg_graph_free(g);
  if (rc) {
    fprintf(stderr, "heapgraph fleet: %s: %s\n", cli_text(path), hg_error_string(rc));
    return NULL;
  }
  if (cache) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", cache);
    char *slash = strrchr(dir, '/');
    if (slash) {
      *slash = 0;
      mkdir(dir, 0755);
    }
    rc = hg_fleet_summary_save(s, cache);
    if (rc) fprintf(stderr, "heapgraph fleet: cannot write %s: %s\n", cli_text(cache), hg_error_string(rc));
  }
  return s;
}

/* The summary of one input: a summary file, a cached summary, or a new one. */
static struct hg_fleet_summary *summary_of(const struct fopt *o, const char *path, int *cached) {
  struct hg_load_error err;
  struct hg_fleet_summary *s = NULL;
  *cached = 0;
  if (ends_with(path, ".hgsum")) {
    if (hg_fleet_summary_load(path, &s, &err))
      fprintf(stderr, "heapgraph fleet: %s: at byte %" PRIu64 ": %s\n", cli_text(path), err.offset, err.message);
    *cached = 1;
    return s;
  }
  uint64_t ck, size;
  char cache[4200];
  if (hg_fleet_snapshot_key(path, &ck, &size)) return summarize(path, NULL); /* damaged: the reader says why */
  cache_path(o, path, ck, size, cache, sizeof cache);
  if (!hg_fleet_summary_load(cache, &s, &err)) {
    if (s->checksum == ck && s->file_size == size) {
      *cached = 1;
      return s;
    }
    hg_fleet_summary_free(s);
  }
  return summarize(path, cache);
}

/* ---- Output ---- */

static int out_stdout(void *ctx, const void *p, size_t n) {
  (void)ctx;
  return fwrite(p, 1, n, stdout) == n ? 0 : -1;
}

static const char *step_text(const char *s, char **tofree) {
  *tofree = NULL;
  if (s[0] >= '0' && s[0] <= '9') *tofree = cli_demangle_type(s);
  else if (s[0] == 'N' || s[0] == 'S') *tofree = cli_demangle_type(s);
  return *tofree ? *tofree : s;
}

static void print_path(const struct hg_fleet_issue *is) {
  for (uint32_t i = 0; i < is->step_count; i++) {
    char *d;
    const char *t = step_text(is->steps[i], &d);
    printf("%s%s", i ? (is->kind == HG_FLEET_RETENTION ? " \xe2\x86\x92 " : ", ") : "", cli_text(t));
    free(d);
  }
}

static void print_issue(const struct hg_fleet_issues *r, uint32_t i, int rank) {
  const struct hg_fleet_issue *is = &r->issues[i];
  char b1[32], b2[32], b3[32];
  if (rank) printf("#%d ", rank);
  else printf("    context: ");
  printf("%s %s: median %s, p90 %s, max %s on %" PRIu32 " device%s, %" PRIu32 " snapshot%s (%.0f%% of %s)",
         hg_fleet_status_name(is->status), hg_fleet_kind_name(is->kind), cli_bytes(is->bytes_median, b1, sizeof b1),
         cli_bytes(is->bytes_p90, b2, sizeof b2), cli_bytes(is->bytes_max, b3, sizeof b3), is->devices,
         is->devices == 1 ? "" : "s", is->snapshots, is->snapshots == 1 ? "" : "s", is->share * 100,
         cli_text(r->version));
  if (is->base_snapshots) printf("; baseline median %s", cli_bytes(is->base_median, b1, sizeof b1));
  printf("\n%s", rank ? "    " : "      ");
  print_path(is);
  printf("\n");
  if (!rank) return;
  printf("    signature %016" PRIx64 " (%s .. %s)", is->hash, cli_text(is->first_version), cli_text(is->last_version));
  for (uint32_t k = 0; k < is->exemplar_count; k++)
    printf("%s%s (%s)", k ? ", " : "; exemplars ", cli_text(is->exemplars[k]),
           cli_bytes(is->exemplar_bytes[k], b1, sizeof b1));
  printf("\n");
  for (uint32_t c = 0; c < r->count; c++)
    if (r->issues[c].context_of == (int)i) print_issue(r, c, 0);
}

static int parse_fail_on(const char *s, unsigned *mask) {
  *mask = 0;
  if (!s) return 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    unsigned k;
    for (k = 0; k < 4 && strcmp(t, hg_fleet_status_name(k)); k++) {}
    if (k == 4) return -1;
    *mask |= 1u << k;
  }
  return 0;
}

/* ---- regroup ---- */

static int regroup(const struct fopt *o, struct inputs *in) {
  uint32_t redone = 0, current = 0, failed = 0, made = 0;
  for (int i = 0; i < in->n; i++) {
    const char *path = in->path[i];
    if (ends_with(path, ".hgsum")) continue;
    uint64_t ck, size;
    char cache[4200];
    struct hg_load_error err;
    struct hg_fleet_summary *s = NULL;
    if (hg_fleet_snapshot_key(path, &ck, &size)) {
      failed++;
      continue;
    }
    cache_path(o, path, ck, size, cache, sizeof cache);
    int have = !hg_fleet_summary_load(cache, &s, &err);
    int old = have && (stale(s) || s->format != HG_FLEET_SUMMARY_FORMAT);
    hg_fleet_summary_free(s);
    if (have && !old) {
      current++;
      continue;
    }
    s = summarize(path, cache);
    if (!s) failed++;
    else if (have) redone++;
    else made++;
    hg_fleet_summary_free(s);
  }
  printf("regroup: %" PRIu32 " summaries recomputed with algorithm %u, %" PRIu32 " new, %" PRIu32
         " already current, %" PRIu32 " failed\n",
         redone, HG_FLEET_ALGO, made, current, failed);
  return failed ? 1 : 0;
}

/* ---- The command ---- */

int cmd_fleet(int argc, char **argv) {
  struct fopt o = {.limit = -1};
  const struct cli_opt opts[] = {
      CLI_OPT_STR("--version", "V", &o.version, "the version to report (default: the highest)"),
      CLI_OPT_STR("--baseline-version", "V0", &o.baseline, "compare with V0 (default: the next lower version)"),
      CLI_JSON(&o.json),
      CLI_OPT_CHOICE("--kind", "retention|leak|site|large", &o.kind, "only issues of this kind"),
      CLI_LIMIT(&o.limit, "issues shown (default 20; --json: all)"),
      CLI_OPT_STR("--fail-on", "STATUSES", &o.fail_on, "exit 1 if an issue has one of these statuses (new,regressed)"),
      CLI_OPT_STR("--cache-dir", "DIR", &o.cache_dir, "where summaries are cached"),
      CLI_OPT_NUM("--min-bytes", "N", &o.min_bytes, 0, 0x7fffffffffffffffL, "leave out issues below N bytes (median)"),
      CLI_OPT_FLAG("--growth", &o.growth, "class growth between the version and its baseline instead"),
      CLI_OPT_FLAG("--tree", &o.tree, "the version's merged retention tree (JSON, icicle-ready) instead"),
      CLI_OPT_FLAG("-v|--verbose", &o.verbose, "say which summaries came from the cache"),
      CLI_OPT_FLAG("--summaries", &o.summaries, "print each summary (one JSON object per line) instead"),
      SYM_CLI_OPTS,
      CLI_END};
  int is_regroup = argc > 1 && !strcmp(argv[1], "regroup");
  if (is_regroup) {
    argv++;
    argc--;
  }
  const struct cli_cmd cmd = {is_regroup ? "fleet regroup" : "fleet", "DIR|FILE...", 1, -1, opts, about, 0};
  int nargs, st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  unsigned fail_mask;
  if (parse_fail_on(o.fail_on, &fail_mask)) {
    fprintf(stderr, "heapgraph fleet: --fail-on: a comma-separated list of new, regressed, fixed, ongoing\n");
    return 2;
  }
  struct inputs in = {0};
  if (collect(&in, argv, nargs)) return 2;
  if (is_regroup) {
    st = regroup(&o, &in);
    goto done;
  }
  struct hg_fleet *f = hg_fleet_new();
  uint32_t ok = 0, cached = 0, failed = 0, old = 0;
  for (int i = 0; f && i < in.n; i++) {
    int c;
    struct hg_fleet_summary *s = summary_of(&o, in.path[i], &c);
    if (!s) {
      failed++;
      continue;
    }
    if (!ends_with(in.path[i], ".hgsum")) s->snapshot = strrchr(in.path[i], '/') ? strrchr(in.path[i], '/') + 1 : in.path[i];
    old += stale(s);
    if (o.summaries) {
      hg_fleet_summary_json(s, out_stdout, NULL);
      printf("\n");
    }
    if (o.verbose) fprintf(stderr, "%s: %s\n", cli_text(in.path[i]), c ? "cached" : "summarised");
    cached += c;
    if (hg_fleet_add(f, s)) {
      hg_fleet_summary_free(s);
      failed++;
      break;
    }
    ok++;
    hg_fleet_summary_free(s);
  }
  if (!f || !ok) {
    fprintf(stderr, "heapgraph fleet: no summaries (%" PRIu32 " inputs failed)\n", failed);
    hg_fleet_free(f);
    st = 2;
    goto done;
  }
  if (old)
    fprintf(stderr, "heapgraph fleet: %" PRIu32 " summaries were made by an older signature algorithm "
                    "(run `heapgraph fleet regroup`)\n", old);
  int rc = 0;
  if (o.summaries) {
  } else if (o.tree) {
    struct hg_fleet_tree *t = NULL;
    rc = hg_fleet_tree(f, o.version, &t);
    if (!rc) rc = hg_fleet_tree_json(t, out_stdout, NULL);
    if (!rc) printf("\n");
    hg_fleet_tree_free(t);
  } else if (o.growth) {
    struct hg_fleet_growth *g = NULL;
    rc = hg_fleet_class_growth(f, o.version, o.baseline, &g);
    uint32_t k = o.limit < 0 ? 30 : (uint32_t)o.limit;
    if (!rc && o.json) {
      rc = hg_fleet_growth_json(g, k, out_stdout, NULL);
      printf("\n");
    } else if (!rc) {
      printf("class growth %s -> %s (median bytes per snapshot)\n", g->baseline ? cli_text(g->baseline) : "(none)",
             cli_text(g->version));
      for (uint32_t i = 0; i < g->count && i < k; i++) {
        char *d, b1[32], b2[32];
        const char *name = step_text(g->rows[i].name, &d);
        printf("%+14" PRId64 "  %10s -> %-10s  %s\n", g->rows[i].delta, cli_bytes(g->rows[i].base_median, b1, sizeof b1),
               cli_bytes(g->rows[i].median, b2, sizeof b2), cli_text(name));
        free(d);
      }
    }
    hg_fleet_growth_free(g);
  } else {
    struct hg_fleet_query q = {o.version, o.baseline, o.kind ? hg_fleet_kind_parse(o.kind) : -1,
                               (uint64_t)o.min_bytes};
    struct hg_fleet_issues *r = NULL;
    rc = hg_fleet_issues(f, &q, &r);
    if (!rc) {
      uint32_t counts[4] = {0}, shown = 0, k = o.limit < 0 ? (o.json ? UINT32_MAX : 20) : (uint32_t)o.limit;
      for (uint32_t i = 0; i < r->count; i++)
        if (r->issues[i].context_of < 0) counts[r->issues[i].status]++;
      if (!o.json)
        printf("fleet: %" PRIu32 " snapshots (%" PRIu32 " from the cache); version %s: %" PRIu32
               " snapshots, baseline %s: %" PRIu32 "; %" PRIu32 " new, %" PRIu32 " regressed, %" PRIu32
               " fixed, %" PRIu32 " ongoing\n\n",
               ok, cached, cli_text(r->version), r->version_snapshots, r->baseline ? cli_text(r->baseline) : "(none)",
               r->baseline_snapshots, counts[1], counts[2], counts[3], counts[0]);
      for (uint32_t i = 0; i < r->count && shown < k && !rc; i++) {
        if (o.json) {
          rc = hg_fleet_issue_json(r, i, out_stdout, NULL);
          printf("\n");
          shown++;
        } else if (r->issues[i].context_of < 0) {
          print_issue(r, i, (int)++shown);
        }
      }
      for (unsigned s2 = 0; s2 < 4; s2++)
        if ((fail_mask >> s2 & 1) && counts[s2]) st = 1;
    }
    hg_fleet_issues_free(r);
  }
  if (rc) {
    fprintf(stderr, "heapgraph fleet: %s\n",
            rc == HG_ENOTFOUND ? "no snapshots of that version" : hg_error_string(rc));
    st = 2;
  } else if (st < 0) {
    st = 0;
  }
  hg_fleet_free(f);
done:
  for (int i = 0; i < in.n; i++) free(in.path[i]);
  free(in.path);
  return st;
}
