/*
 * cmd_run.c — `heapgraph run`: starts a program with the capture agent
 * preloaded (LD_PRELOAD=libheapgraph.so, or libheapgraph_stacks.so — the
 * agent with the malloc interposer — for --stacks) and the HEAPGRAPH_*
 * variables set,
 * then execs it. Owns only argument parsing and finding the library.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/signal_names.h"
#include "tools/cli_opts.h"
#include "tools/commands.h"

static const char about[] =
    "  Runs PROGRAM with libheapgraph.so preloaded (libheapgraph_stacks.so, which\n"
    "  also interposes malloc, with --stacks). With --signal SIG (e.g. USR2) a\n"
    "  snapshot is written each time the process receives SIG (kill -USR2 PID);\n"
    "  with --at-exit one is written when it exits (the default when neither is given).\n"
    "  FILE may contain %p (pid) and %n (capture number); default heapgraph-%p-%n.hgsnap.\n"
    "  Only PROGRAM's process captures (also after it execs another program, as\n"
    "  wrappers and shims do); its child processes do not, and the exit message\n"
    "  says so when it had any. With --follow-children every process captures to\n"
    "  its own file: a child's pid goes before FILE's extension unless FILE has %p\n"
    "  (app.hgsnap -> app.4242.hgsnap).\n"
    "  The library is looked up next to this executable, then in ../lib; set\n"
    "  HEAPGRAPH_LIB (HEAPGRAPH_STACKS_LIB) to override. --stacks records each live block's allocation\n"
    "  stack (see `heapgraph stacks`); --sample-bytes and --large-alloc imply it.\n"
    "  --watch captures when memory runs short: at --rss BYTES of resident memory,\n"
    "  or at --limit-fraction F (default 0.9) of the nearest limit (cgroup memory.max/\n"
    "  memory.high, RLIMIT_AS), or on a cgroup memory event; at most --watch-max N\n"
    "  (default 1) per process, into --spool DIR (budgets, gzip; docs/upload.md) or\n"
    "  the current directory. With --upload-url URL --upload-key KEY the spool is\n"
    "  uploaded by a background thread of the program.\n";

static int find_lib(char *out, size_t cap, int stacks) {
  const char *env = getenv(stacks ? "HEAPGRAPH_STACKS_LIB" : "HEAPGRAPH_LIB");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return access(out, R_OK) == 0 ? 0 : -1;
  }
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return -1;
  exe[k] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = 0;
  const char *plain[] = {"%s/libheapgraph.so", "%s/../lib/libheapgraph.so", "%s/../lib/libheapgraph.so.1"};
  const char *with[] = {"%s/libheapgraph_stacks.so", "%s/../lib/libheapgraph_stacks.so", NULL};
  const char **cands = stacks ? with : plain;
  for (size_t i = 0; i < sizeof plain / sizeof plain[0] && cands[i]; i++) {
    snprintf(out, cap, cands[i], exe);
    char real[PATH_MAX];
    if (access(out, R_OK) == 0 && realpath(out, real)) {
      snprintf(out, cap, "%s", real);
      return 0;
    }
  }
  return -1;
}

int cmd_run(int argc, char **argv) {
  const char *out = NULL, *sig = NULL, *mode = NULL, *omit = NULL;
  const char *sample = NULL, *large = NULL, *frames = NULL, *budget = NULL;
  const char *rss = NULL, *frac = NULL, *wmax = NULL, *spool = NULL, *url = NULL, *key = NULL;
  int at_exit = 0, stacks = 0, follow = 0, watch = 0, nargs;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("-o", "FILE", &out, "snapshot path (HEAPGRAPH_OUTPUT)"),
      CLI_OPT_STR("--signal", "SIG", &sig, "capture each time SIG arrives (HEAPGRAPH_SIGNAL)"),
      CLI_OPT_FLAG("--at-exit", &at_exit, "capture when the program exits"),
      CLI_OPT_CHOICE("--mode", "fork|suspend", &mode, "freeze mode (default fork)"),
      CLI_OPT_FLAG("--follow-children", &follow, "child processes capture too, each to its own file"),
      CLI_OPT_CHOICE("--omit", "paths|names|device|all", &omit,
                     "leave file paths, thread and process names and/or device ids out"),
      CLI_OPT_FLAG("--stacks", &stacks, "record allocation stacks (HEAPGRAPH_STACKS)"),
      CLI_OPT_STR("--sample-bytes", "N", &sample, "with --stacks: sample one block per N bytes (Poisson)"),
      CLI_OPT_STR("--large-alloc", "BYTES", &large, "report allocations >= BYTES on stderr, with stacks"),
      CLI_OPT_STR("--stack-frames", "N", &frames, "frames per stack (default 32, at most 64)"),
      CLI_OPT_STR("--stacks-budget", "BYTES", &budget, "tracking memory budget (default 256M)"),
      CLI_OPT_FLAG("--watch", &watch, "capture when memory runs short (HEAPGRAPH_WATCH)"),
      CLI_OPT_STR("--rss", "BYTES", &rss, "with --watch: at this resident set size"),
      CLI_OPT_STR("--limit-fraction", "F", &frac, "with --watch: at this fraction of the nearest limit"),
      CLI_OPT_STR("--watch-max", "N", &wmax, "with --watch: captures per process (default 1)"),
      CLI_OPT_STR("--spool", "DIR", &spool, "with --watch: captures go into this spool"),
      CLI_OPT_STR("--upload-url", "URL", &url, "upload the spool from the program (needs --spool)"),
      CLI_OPT_STR("--upload-key", "KEY", &key, "bearer key for --upload-url"),
      CLI_END};
  const struct cli_cmd cmd = {"run", "[--] PROGRAM [ARGS...]", 1, -1, opts, about, CLI_STOP_AT_ARG};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  if (sig && _hg_trigger_signal(sig) < 0) {
    fprintf(stderr, "heapgraph run: signal '%s' cannot trigger a capture (USR1, USR2, RTMIN+n, RTMAX-n "
                    "except RTMIN+4; never one that would change how the program dies)\n", sig);
    return 2;
  }
  if ((rss || frac || wmax) && !watch) {
    fprintf(stderr, "heapgraph run: --rss, --limit-fraction and --watch-max need --watch\n");
    return 2;
  }
  if (url && !spool) {
    fprintf(stderr, "heapgraph run: --upload-url needs --spool DIR (the directory it uploads from)\n");
    return 2;
  }
  char lib[PATH_MAX];
  stacks = stacks || sample || large;
  if (find_lib(lib, sizeof lib, stacks) != 0) {
    fprintf(stderr, "heapgraph run: %s not found (set %s)\n", stacks ? "libheapgraph_stacks.so" : "libheapgraph.so",
            stacks ? "HEAPGRAPH_STACKS_LIB" : "HEAPGRAPH_LIB");
    return 1;
  }
  const char *pre = getenv("LD_PRELOAD");
  char preload[2 * PATH_MAX];
  snprintf(preload, sizeof preload, "%s%s%s", lib, pre && *pre ? ":" : "", pre && *pre ? pre : "");
  setenv("LD_PRELOAD", preload, 1);
  if (out) setenv("HEAPGRAPH_OUTPUT", out, 1);
  if (sig) setenv("HEAPGRAPH_SIGNAL", sig, 1);
  if (at_exit || (!sig && !watch)) setenv("HEAPGRAPH_AT_EXIT", "1", 1);
  if (watch) setenv("HEAPGRAPH_WATCH", "1", 1);
  if (rss) setenv("HEAPGRAPH_WATCH_RSS", rss, 1);
  if (frac) setenv("HEAPGRAPH_WATCH_LIMIT_FRACTION", frac, 1);
  if (wmax) setenv("HEAPGRAPH_WATCH_MAX", wmax, 1);
  if (spool) setenv("HEAPGRAPH_SPOOL", spool, 1);
  if (url) setenv("HEAPGRAPH_UPLOAD_URL", url, 1);
  if (key) setenv("HEAPGRAPH_UPLOAD_KEY", key, 1);
  if (mode) setenv("HEAPGRAPH_MODE", mode, 1);
  if (omit) setenv("HEAPGRAPH_OMIT", omit, 1);
  char pid[24]; /* PROGRAM is exec'd in place: it keeps this pid */
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  setenv("HEAPGRAPH_PID", pid, 1);
  if (follow) setenv("HEAPGRAPH_FOLLOW_CHILDREN", "1", 1);
  else unsetenv("HEAPGRAPH_FOLLOW_CHILDREN");
  /* allocation stacks: the interposer in libheapgraph_stacks.so reads these (K/M/G suffixes ok) */
  if (stacks) setenv("HEAPGRAPH_STACKS", "1", 1);
  if (sample) setenv("HEAPGRAPH_SAMPLE_BYTES", sample, 1);
  if (large) setenv("HEAPGRAPH_LARGE_ALLOC", large, 1);
  if (frames) setenv("HEAPGRAPH_STACK_FRAMES", frames, 1);
  if (budget) setenv("HEAPGRAPH_STACKS_BUDGET", budget, 1);
  if (sig) fprintf(stderr, "heapgraph: pid %d, send SIG%s to capture\n", (int)getpid(), sig);
  execvp(argv[1], argv + 1);
  perror("heapgraph run: exec");
  return 127;
}
