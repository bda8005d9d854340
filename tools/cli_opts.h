/*
 * cli_opts.h — the one option parser of the heapgraph CLI. Every subcommand
 * describes its options in a table (struct cli_opt) and its positional
 * arguments in a struct cli_cmd; cli_parse() reads argv against it, and the
 * usage text (--help, usage errors) is generated from the same table, so it
 * cannot drift from what is accepted.
 *
 * Rules shared by every command:
 *   - `-h` / `--help` prints the usage on stdout, exit 0;
 *   - an unknown option, a missing value, a bad number or a wrong count of
 *     positionals prints "heapgraph CMD: reason" and the usage on stderr,
 *     exit 2;
 *   - numbers are strict: decimal or 0x hex, digits only, within the
 *     option's range (`-n abc`, `-n -1`, `-n 5x` are errors, never 0);
 *   - `--opt VALUE` and `--opt=VALUE` are both accepted; `--` ends options;
 *   - options and positionals may be mixed, unless the command sets
 *     CLI_STOP_AT_ARG (then the first positional and all after it are kept
 *     as they are: `heapgraph run … -- PROGRAM ARGS`).
 *   - the result limit is `-n N` / `--limit N` in every command (CLI_LIMIT).
 *
 * Example (a command taking FILE, --json and a limit):
 *
 *   int json = 0; long limit = -1;
 *   const struct cli_opt opts[] = {
 *       CLI_JSON(&json),
 *       CLI_LIMIT(&limit, "at most N rows"),
 *       CLI_END};
 *   const struct cli_cmd cmd = {"classes", "FILE", 1, 1, opts,
 *                               "  Nodes grouped by class.\n", 0};
 *   int nargs, st = cli_parse(&cmd, argc, argv, &nargs);
 *   if (st >= 0) return st;      // --help or usage error: exit with it
 *   const char *path = argv[1];  // positionals are argv[1..nargs]
 */
#ifndef HG_TOOLS_CLI_OPTS_H
#define HG_TOOLS_CLI_OPTS_H

#include <stdio.h>

enum cli_kind {
  CLI_FLAG,   /* no value: *(int *)dest = 1                                 */
  CLI_SET,    /* no value: *(int *)dest = max (one of several modes)         */
  CLI_STR,    /* value: *(const char **)dest = the argument                 */
  CLI_CHOICE, /* value: like CLI_STR, but must be one of arg's '|' words    */
  CLI_NUM,    /* value: *(long *)dest = strict number in [min, max]         */
  CLI_LIST,   /* value, repeatable: appended to *(struct cli_list *)dest    */
};

/* Values of a repeatable option, in command-line order. */
#define CLI_LIST_MAX 64
struct cli_list {
  int n;
  const char *v[CLI_LIST_MAX];
};

struct cli_opt {
  const char *names;  /* spellings, '|'-separated: "-n|--limit"           */
  const char *arg;    /* value name in usage ("N", "FILE"); CLI_CHOICE:
                         the allowed words ("fork|suspend"); NULL: flag    */
  enum cli_kind kind;
  void *dest;         /* int* (FLAG, SET), const char** (STR, CHOICE),
                         long* (NUM), struct cli_list* (LIST)               */
  long min, max;      /* NUM: accepted range; SET: the value stored (max);
                         STR, CHOICE: min 1 = required (CLI_REQ_*)  */
  const char *help;   /* one line for the option list                      */
};

/* Table entries. CLI_END terminates every table. */
#define CLI_END {0}
#define CLI_OPT_FLAG(names, dest, help) {names, NULL, CLI_FLAG, dest, 0, 1, help}
#define CLI_OPT_SET(names, dest, value, help) {names, NULL, CLI_SET, dest, 0, value, help}
#define CLI_OPT_STR(names, arg, dest, help) {names, arg, CLI_STR, dest, 0, 0, help}
#define CLI_OPT_CHOICE(names, words, dest, help) {names, words, CLI_CHOICE, dest, 0, 0, help}
#define CLI_OPT_NUM(names, arg, dest, min, max, help) {names, arg, CLI_NUM, dest, min, max, help}
/* Repeatable: each occurrence adds a value (at most CLI_LIST_MAX). */
#define CLI_OPT_LIST(names, arg, dest, help) {names, arg, CLI_LIST, dest, 0, 0, help}
/* Options that must be given: shown unbracketed in usage, an error when absent. */
#define CLI_REQ_STR(names, arg, dest, help) {names, arg, CLI_STR, dest, 1, 0, help}
#define CLI_REQ_CHOICE(names, words, dest, help) {names, words, CLI_CHOICE, dest, 1, 0, help}
/* The options most commands share, spelled the same everywhere. */
#define CLI_MAX_COUNT 100000000L
#define CLI_JSON(dest) CLI_OPT_FLAG("--json", dest, "JSON output")
#define CLI_MANGLED(dest) CLI_OPT_FLAG("--mangled", dest, "C++ class names as stored, not demangled")
#define CLI_LIMIT(dest, help) CLI_OPT_NUM("-n|--limit", "N", dest, 0, CLI_MAX_COUNT, help)

enum { CLI_STOP_AT_ARG = 1 }; /* cli_cmd.flags */

struct cli_cmd {
  const char *name;          /* subcommand, for usage and messages ("top")  */
  const char *args;          /* positionals as shown in usage ("FILE ADDR") */
  int min_args, max_args;    /* accepted positional count; max -1: any      */
  const struct cli_opt *opts;/* table ending in CLI_END                     */
  const char *about;         /* text after the option list, or NULL; each
                                line indented two spaces, ending in \n      */
  unsigned flags;            /* CLI_STOP_AT_ARG                             */
};

/* Parses argv[1..argc) (argv[0] is the subcommand name) against c and
 * stores option values through the table's dest pointers (options absent
 * from argv leave their dest untouched: initialise defaults first).
 * Returns -1 when the command should run: the positionals are then
 * argv[1..*nargs] in order and argv[*nargs + 1] is NULL (argv is rearranged
 * in place, as getopt does). Otherwise returns the exit status to return:
 * 0 after --help (usage printed on stdout), 2 on a usage error (reason and
 * usage printed on stderr). */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, int *nargs);

/* Prints the usage generated from c (what --help prints). */
void cli_usage(const struct cli_cmd *c, FILE *out);

/* Strict number: decimal or 0x hex, digits only, no sign or spaces, within
 * [min, max]. 0 on success, -1 otherwise (*out untouched). */
int cli_parse_num(const char *s, long min, long max, long *out);

#endif
