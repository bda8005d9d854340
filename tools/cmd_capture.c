/*
 * cmd_capture.c — `heapgraph capture`: how to take snapshots, and a
 * self-capture for trying the engine out (`heapgraph capture -o FILE`).
 * Owns only argument parsing; the work is hg_capture().
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"
#include "capture/signal_names.h"
#include "tools/cli_opts.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

static const char about[] =
    "  Snapshots are taken inside the process. Three ways:\n"
    "  1. From code:     #include <heapgraph.h>\n"
    "                    hg_capture(\"app.hgsnap\", NULL);      /* link -lheapgraph */\n"
    "  2. Unmodified program, with the agent preloaded:\n"
    "       LD_PRELOAD=libheapgraph.so HEAPGRAPH_OUTPUT=app-%n.hgsnap \\\n"
    "       HEAPGRAPH_SIGNAL=USR2 ./app &          # then: kill -USR2 $!\n"
    "       LD_PRELOAD=libheapgraph.so HEAPGRAPH_AT_EXIT=1 ./app   # on exit\n"
    "  3. The same through heapgraph:\n"
    "       heapgraph run -o app-%n.hgsnap --signal USR2 -- ./app ARGS\n"
    "       heapgraph run -o app.hgsnap --at-exit -- ./app ARGS\n"
    "  heapgraph capture --pid PID [--signal SIG] signals a process started that way;\n"
    "  heapgraph capture -o FILE captures this heapgraph process itself (a demo).\n";

int cmd_capture(int argc, char **argv) {
  const char *out = NULL, *mode = NULL, *sig = "USR2", *omit = NULL;
  long pid = 0;
  int json = 0, nargs;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("-o", "FILE", &out, "capture this heapgraph process itself into FILE"),
      CLI_OPT_CHOICE("--mode", "fork|suspend", &mode, "freeze mode (default fork)"),
      CLI_JSON(&json),
      CLI_OPT_NUM("--pid", "PID", &pid, 1, INT_MAX, "send SIG to process PID"),
      CLI_OPT_STR("--signal", "SIG", &sig, "signal for --pid: USR1, USR2 (default), RTMIN+n, RTMAX-n"),
      CLI_OPT_CHOICE("--omit", "paths|names|all", &omit, "leave file paths and/or thread and process names out"),
      CLI_END};
  const struct cli_cmd cmd = {"capture", NULL, 0, 0, opts, about, 0};
  int parsed = cli_parse(&cmd, argc, argv, &nargs);
  if (parsed >= 0) return parsed;
  if (pid > 0) {
    int signo = _hg_trigger_signal(sig);
    if (signo < 0) {
      fprintf(stderr, "heapgraph capture: signal '%s' cannot trigger a capture (USR1, USR2, RTMIN+n, "
                      "RTMAX-n except RTMIN+4)\n", cli_text(sig));
      return 2;
    }
    if (kill((pid_t)pid, signo) != 0) {
      perror("heapgraph capture: kill");
      return 1;
    }
    return 0;
  }
  if (!out) {
    cli_usage(&cmd, stderr);
    return 2;
  }
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.stats = &st;
  if (mode) o.mode = !strcmp(mode, "suspend") ? HG_MODE_SUSPEND : HG_MODE_FORK;
  if (omit) o.omit = !strcmp(omit, "paths") ? HG_OMIT_PATHS : !strcmp(omit, "names") ? HG_OMIT_NAMES
                                                                                  : HG_OMIT_PATHS | HG_OMIT_NAMES;
  int rc = hg_capture(out, &o);
  if (rc && rc != HG_EUNSUPPORTED) {
    fprintf(stderr, "heapgraph capture: %s\n", hg_error_string(rc));
    return 1;
  }
  if (json) {
    printf("{\"file\":");
    cli_json_str(stdout, out);
    printf(",\"nodes\":%llu,\"edges\":%llu,\"roots\":%llu,\"pause_ns\":%llu,"
           "\"walk_ns\":%llu,\"scan_ns\":%llu,\"write_ns\":%llu,\"scratch_peak_bytes\":%llu,"
           "\"file_bytes\":%llu}\n", (unsigned long long)st.nodes, (unsigned long long)st.edges,
           (unsigned long long)st.roots, (unsigned long long)st.pause_ns,
           (unsigned long long)st.walk_ns, (unsigned long long)st.scan_ns,
           (unsigned long long)st.write_ns, (unsigned long long)st.scratch_peak_bytes,
           (unsigned long long)st.file_bytes);
  }
  else
    printf("%s: %llu nodes, %llu edges, %llu roots; pause %.2f ms, walk %.2f ms, scan %.2f ms, "
           "write %.2f ms, scratch %llu bytes\n", cli_text(out), (unsigned long long)st.nodes,
           (unsigned long long)st.edges, (unsigned long long)st.roots, st.pause_ns / 1e6,
           st.walk_ns / 1e6, st.scan_ns / 1e6, st.write_ns / 1e6,
           (unsigned long long)st.scratch_peak_bytes);
  return rc ? 3 : 0;
}
