/*
 * heapgraph.c — CLI entry point: dispatches `heapgraph SUBCOMMAND …` through
 * the table in commands.h. Owns only argument dispatch and the top-level help.
 */
#include <stdio.h>
#include <string.h>

#include "heapgraph.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

struct command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
};

#define HG_COMMAND_ENTRY(name, summary) {#name, summary, cmd_##name},
static const struct command commands[] = {HG_COMMANDS(HG_COMMAND_ENTRY)};
#undef HG_COMMAND_ENTRY

static void usage(FILE *out) {
  fprintf(out, "usage: heapgraph SUBCOMMAND [ARGS…]   (heapgraph SUBCOMMAND --help)\n\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nheapgraph %s, snapshot format v%u\n", HG_VERSION_STRING, HG_FORMAT_VERSION);
}

int main(int argc, char **argv) {
  cli_guard_output(); /* no control character of a snapshot reaches the terminal */
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("heapgraph %s\n", HG_VERSION_STRING);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "heapgraph: unknown subcommand '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
