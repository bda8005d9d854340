/*
 * cmd_view.c — `heapgraph view SNAP [BASELINE] [--port N] [--host ADDR]
 * [--no-open]`: loads the snapshot, computes the analyses once, serves the
 * viewer (view_http.c) and prints its URL as the first line of stdout, then
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

#include "tools/cli_util.h"
#include "tools/view.h"

extern char **environ;

static const char usage[] =
    "usage: heapgraph view SNAP [BASELINE] [--port N] [--host ADDR] [--no-open]\n"
    "  Explore SNAP in the browser: summary, classes, dominator tree, objects,\n"
    "  leaks, cycles and (with BASELINE) what grew since BASELINE. Prints the\n"
    "  URL (with its access token) as the first line, opens the browser unless\n"
    "  --no-open, and serves until interrupted. --host defaults to 127.0.0.1,\n"
    "  --port to one the system picks.\n";

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
  const char *pos[2] = {NULL, NULL}, *host = "127.0.0.1";
  int npos = 0, no_open = 0;
  uint64_t port = 0;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(s, "--no-open")) no_open = 1;
    else if (!strcmp(s, "--port") && i + 1 < argc && !cli_parse_u64(argv[i + 1], &port) && port < 65536) i++;
    else if (!strcmp(s, "--host") && i + 1 < argc) host = argv[++i];
    else if (s[0] != '-' && npos < 2) pos[npos++] = s;
    else {
      fprintf(stderr, "heapgraph view: unexpected argument '%s'\n%s", s, usage);
      return 2;
    }
  }
  if (!npos) {
    fputs(usage, stderr);
    return 2;
  }
  /* SNAP [BASELINE]: the first is what is viewed, the second what it is compared to. */
  struct view v;
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
  double total = 0;
  for (int i = 0; i < 8; i++) total += v.seconds[i];
  fprintf(stderr, "heapgraph view: %u nodes, %u edges ready in %.2f s; serving until interrupted (Ctrl-C)\n",
          v.g->node_count, v.g->edge_count, total);
  if (!no_open) open_browser(url);
  int sig = 0;
  sigwait(&set, &sig);
  view_server_stop(s);
  view_close(&v);
  return 0;
}
