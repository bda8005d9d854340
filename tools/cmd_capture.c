/*
 * cmd_capture.c — `heapgraph capture`: how to take snapshots, and a
 * self-capture for trying the engine out (`heapgraph capture -o FILE`).
 * Owns only argument parsing; the work is hg_capture().
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"
#include "tools/commands.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: heapgraph capture [-o FILE] [--mode fork|suspend] [--json]\n"
          "       heapgraph capture --pid PID [--signal SIG]\n"
          "\n"
          "Snapshots are taken inside the process. Three ways:\n"
          "  1. From code:     #include <heapgraph.h>\n"
          "                    hg_capture(\"app.hgsnap\", NULL);      /* link -lheapgraph */\n"
          "  2. Unmodified program, with the agent preloaded:\n"
          "       LD_PRELOAD=libheapgraph.so HEAPGRAPH_OUTPUT=app-%%n.hgsnap \\\n"
          "       HEAPGRAPH_SIGNAL=USR2 ./app &          # then: kill -USR2 $!\n"
          "       LD_PRELOAD=libheapgraph.so HEAPGRAPH_AT_EXIT=1 ./app   # on exit\n"
          "  3. The same through heapgraph:\n"
          "       heapgraph run -o app-%%n.hgsnap --signal USR2 -- ./app ARGS\n"
          "       heapgraph run -o app.hgsnap --at-exit -- ./app ARGS\n"
          "\n"
          "  --pid PID [--signal SIG]  send SIG (default USR2) to a process started that way\n"
          "  -o FILE                   capture this heapgraph process itself (a demo)\n"
          "  --mode fork|suspend       freeze mode (default fork)\n");
}

int cmd_capture(int argc, char **argv) {
  const char *out = NULL, *mode = NULL, *sig = "USR2";
  long pid = 0;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
      mode = argv[++i];
    } else if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
      pid = strtol(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--signal") && i + 1 < argc) {
      sig = argv[++i];
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (pid > 0) {
    static const struct { const char *n; int s; } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
    const char *s = strncmp(sig, "SIG", 3) ? sig : sig + 3;
    int signo = atoi(s);
    for (size_t k = 0; k < 2; k++)
      if (!strcmp(s, names[k].n)) signo = names[k].s;
    if (signo <= 0 || kill((pid_t)pid, signo) != 0) {
      perror("heapgraph capture: kill");
      return 1;
    }
    return 0;
  }
  if (!out) {
    usage(stderr);
    return 2;
  }
  struct hg_options o;
  struct hg_capture_stats st;
  hg_options_init(&o);
  o.stats = &st;
  if (mode) o.mode = !strcmp(mode, "suspend") ? HG_MODE_SUSPEND : HG_MODE_FORK;
  int rc = hg_capture(out, &o);
  if (rc && rc != HG_EUNSUPPORTED) {
    fprintf(stderr, "heapgraph capture: %s\n", hg_error_string(rc));
    return 1;
  }
  if (json)
    printf("{\"file\":\"%s\",\"nodes\":%llu,\"edges\":%llu,\"roots\":%llu,\"pause_ns\":%llu,"
           "\"walk_ns\":%llu,\"scan_ns\":%llu,\"write_ns\":%llu,\"scratch_peak_bytes\":%llu,"
           "\"file_bytes\":%llu}\n", out, (unsigned long long)st.nodes, (unsigned long long)st.edges,
           (unsigned long long)st.roots, (unsigned long long)st.pause_ns,
           (unsigned long long)st.walk_ns, (unsigned long long)st.scan_ns,
           (unsigned long long)st.write_ns, (unsigned long long)st.scratch_peak_bytes,
           (unsigned long long)st.file_bytes);
  else
    printf("%s: %llu nodes, %llu edges, %llu roots; pause %.2f ms, walk %.2f ms, scan %.2f ms, "
           "write %.2f ms, scratch %llu bytes\n", out, (unsigned long long)st.nodes,
           (unsigned long long)st.edges, (unsigned long long)st.roots, st.pause_ns / 1e6,
           st.walk_ns / 1e6, st.scan_ns / 1e6, st.write_ns / 1e6,
           (unsigned long long)st.scratch_peak_bytes);
  return rc ? 3 : 0;
}
