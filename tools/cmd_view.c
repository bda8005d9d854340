/*
 * cmd_view.c — `heapgraph view SNAP [BASELINE] [--port N] [--host ADDR]
 * [--no-open]`: loads the snapshot, computes the analyses once, serves the
 * viewer (web/view_http.c) and prints its URL as the first line of stdout, then
 * opens the default browser (xdg-open, when there is one) and serves until
 * SIGINT or SIGTERM.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli_opts.h"
#include "tools/symbolize.h"
#include "web/view.h"

extern char **environ;

/* Opens url with xdg-open when present; never fails the command. */
static void open_browser(const char *url) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa)) return;
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char *argv[] = {"xdg-open", (char *)url, NULL};
  pid_t pid;
  if (posix_spawnp(&pid, "xdg-open", &fa, NULL, argv, environ))
    fprintf(stderr, "heapgraph view: no xdg-open; open the URL above in a browser\n");
  posix_spawn_file_actions_destroy(&fa);
}

int cmd_view(int argc, char **argv) {
  const char *host = "127.0.0.1";
  int no_open = 0, nargs = 0;
  long port = 0;
  const struct cli_opt opts[] = {
      CLI_OPT_NUM("--port", "N", &port, 0, 65535, "port to listen on (default: one the system picks)"),
      CLI_OPT_STR("--host", "ADDR", &host, "IP address to listen on (default 127.0.0.1)"),
      CLI_OPT_FLAG("--no-open", &no_open, "do not open the browser"),
      SYM_CLI_OPTS,
      CLI_END};
  const struct cli_cmd cmd = {
      "view", "SNAP [BASELINE]", 1, 2, opts,
      "  Explore SNAP in the browser: summary, classes, dominator tree, allocation\n"
      "  stacks, objects, leaks, cycles and (with BASELINE, an earlier snapshot)\n"
      "  what grew. Prints the URL (with its access token) as the first line,\n"
      "  opens the browser unless --no-open, and serves until interrupted.\n"
      "  docs/viewer.md.\n",
      0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  const char *pos[2] = {argv[1], nargs > 1 ? argv[2] : NULL};
  /* SNAP [BASELINE]: the first is what is viewed, the second what it is compared to. */
  struct view v;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (view_open(&v, pos[0], pos[1])) {
    view_close(&v);
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the server's thread starts */
  char url[160];
  struct view_server *s = view_serve(&v, host, (unsigned)port, url, sizeof url);
  if (!s) {
    view_close(&v);
    return 1;
  }
  printf("%s\n", url);
  fflush(stdout);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double total = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  fprintf(stderr, "heapgraph view: %u nodes, %u edges ready in %.2f s; serving until interrupted (Ctrl-C)\n",
          v.g->node_count, v.g->edge_count, total);
  if (!no_open) open_browser(url);
  int sig = 0;
  sigwait(&set, &sig);
  view_server_stop(s);
  view_close(&v);
  return 0;
}
