/*
 * test_cli_opts.c — unit tests of the CLI's one option parser
 * (tools/cli_opts.c): strict numbers, aliases, --opt=value, required
 * options, choices, positional counts, `--` and CLI_STOP_AT_ARG, and that
 * the usage lists every option of the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hg_test.h"
#include "tools/cli_opts.h"

/* A command with one option of every kind. */
struct vals {
  int json, mode;
  long limit;
  const char *out, *fmt;
};

static const char *text_of(const struct cli_cmd *c) {
  static char buf[4096];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cli_usage(c, f);
  fclose(f);
  return buf;
}

/* Parses the NULL-terminated words (argv[0] = "t") with the test table. */
static int parse(struct vals *v, unsigned flags, int *nargs, char **argv, const char *req) {
  memset(v, 0, sizeof *v);
  v->limit = -1;
  const struct cli_opt opts[] = {
      CLI_JSON(&v->json),
      CLI_LIMIT(&v->limit, "at most N"),
      CLI_OPT_STR("-o", "FILE", &v->out, "output"),
      CLI_OPT_SET("--two", &v->mode, 2, "mode two"),
      req ? (struct cli_opt)CLI_REQ_CHOICE("--format", "a|bb|c", &v->fmt, "format")
          : (struct cli_opt)CLI_OPT_CHOICE("--format", "a|bb|c", &v->fmt, "format"),
      CLI_END};
  const struct cli_cmd c = {"t", "FILE [MORE]", 1, 2, opts, "  about\n", flags};
  int argc = 0;
  while (argv[argc]) argc++;
  FILE *keep = stderr;
  stderr = fopen("/dev/null", "w"); /* usage errors print; keep the log short */
  int st = cli_parse(&c, argc, argv, nargs);
  fclose(stderr);
  stderr = keep;
  return st;
}

#define ARGV(...) ((char *[]){"t", __VA_ARGS__, NULL})

static void test_numbers_are_strict(void) {
  long x = 7;
  CHECK(cli_parse_num("0", 0, 10, &x) == 0 && x == 0);
  CHECK(cli_parse_num("10", 0, 10, &x) == 0 && x == 10);
  CHECK(cli_parse_num("0x1f", 0, 100, &x) == 0 && x == 31);
  CHECK(cli_parse_num("010", 0, 100, &x) == 0 && x == 10); /* decimal, not octal */
  x = 7;
  const char *bad[] = {"", "abc", "-1", "+1", " 1", "1 ", "5x", "0x", "0x0x1", "11", "1e3",
                       "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(cli_parse_num(bad[i], 0, 10, &x) != 0);
  CHECK(x == 7);
  CHECK(cli_parse_num(NULL, 0, 10, &x) != 0);
  CHECK(cli_parse_num("3", 5, 10, &x) != 0);
}

static void test_limit_aliases(void) {
  struct vals v;
  int n;
  CHECK(parse(&v, 0, &n, ARGV("f", "-n", "5"), NULL) == -1 && v.limit == 5);
  CHECK(parse(&v, 0, &n, ARGV("f", "--limit", "6"), NULL) == -1 && v.limit == 6);
  CHECK(parse(&v, 0, &n, ARGV("--limit=7", "f"), NULL) == -1 && v.limit == 7);
  CHECK(parse(&v, 0, &n, ARGV("f", "-n", "abc"), NULL) == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "--limit", "-1"), NULL) == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "-n", "100000001"), NULL) == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "-n"), NULL) == 2);
}

static void test_kinds(void) {
  struct vals v;
  int n;
  char **a = ARGV("--json", "f", "-o", "x", "--two", "--format=bb", "g");
  REQUIRE(parse(&v, 0, &n, a, NULL) == -1);
  CHECK(v.json == 1 && v.mode == 2 && v.out && !strcmp(v.out, "x") && !strcmp(v.fmt, "bb"));
  CHECK(n == 2 && !strcmp(a[1], "f") && !strcmp(a[2], "g") && a[3] == NULL);
  CHECK(parse(&v, 0, &n, ARGV("f", "--format", "b"), NULL) == 2);     /* not a choice */
  CHECK(parse(&v, 0, &n, ARGV("f", "--format", "a|bb"), NULL) == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "--json=1"), NULL) == 2);          /* flag with value */
  CHECK(parse(&v, 0, &n, ARGV("f", "--bogus"), NULL) == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "-json"), NULL) == 2);
}

static void test_required(void) {
  struct vals v;
  int n;
  CHECK(parse(&v, 0, &n, ARGV("f"), "req") == 2);
  CHECK(parse(&v, 0, &n, ARGV("f", "--format", "c"), "req") == -1 && !strcmp(v.fmt, "c"));
}

static void test_positionals(void) {
  struct vals v;
  int n;
  CHECK(parse(&v, 0, &n, ARGV("--json"), NULL) == 2);             /* too few */
  CHECK(parse(&v, 0, &n, ARGV("a", "b", "c"), NULL) == 2);        /* too many */
  char **a = ARGV("-", "--", "-n");                                /* "-" and after -- */
  CHECK(parse(&v, 0, &n, a, NULL) == -1 && n == 2 && !strcmp(a[2], "-n") && v.limit == -1);
  char **b = ARGV("-n", "1", "prog", "-n", "2");
  CHECK(parse(&v, CLI_STOP_AT_ARG, &n, b, NULL) == 2);            /* 3 positionals > 2 */
  char **c = ARGV("-n", "1", "prog", "-n");
  CHECK(parse(&v, CLI_STOP_AT_ARG, &n, c, NULL) == -1 && v.limit == 1 && n == 2 &&
        !strcmp(c[1], "prog") && !strcmp(c[2], "-n") && !c[3]);
}

static void test_help(void) {
  struct vals v;
  int n;
  FILE *keep = stdout;
  stdout = fopen("/dev/null", "w");
  int a = parse(&v, 0, &n, ARGV("--help"), NULL), b = parse(&v, 0, &n, ARGV("f", "-h", "--bogus"), NULL);
  fclose(stdout);
  stdout = keep;
  CHECK(a == 0 && b == 0);
}

static void test_usage_lists_every_option(void) {
  long l;
  int j, m;
  const char *s, *f;
  const struct cli_opt opts[] = {CLI_JSON(&j), CLI_LIMIT(&l, "at most N"),
                                 CLI_OPT_SET("--x|--y", &m, 1, "x or y"),
                                 CLI_REQ_STR("--req", "V", &s, "needed"),
                                 CLI_OPT_CHOICE("--format", "a|b", &f, "fmt"), CLI_END};
  const struct cli_cmd c = {"t", "FILE", 1, 1, opts, "  about text\n", 0};
  const char *u = text_of(&c);
  CHECK(!strncmp(u, "usage: heapgraph t FILE [--json] [-n N] [--x] --req V [--format a|b]\n", 69));
  CHECK(strstr(u, "  about text\n") != NULL);
  CHECK(strstr(u, "  -n, --limit N ") != NULL);
  CHECK(strstr(u, "  --x, --y ") != NULL);
  CHECK(strstr(u, "  --format a|b ") != NULL);
  CHECK(strstr(u, "  -h, --help ") != NULL);
}

/* A repeatable option keeps every value in order and stops at CLI_LIST_MAX. */
static void test_list(void) {
  struct cli_list l = {0};
  const struct cli_opt opts[] = {CLI_OPT_LIST("--dir|-d", "PATH", &l, "a directory"), CLI_END};
  const struct cli_cmd c = {"t", "FILE", 1, 1, opts, NULL, 0};
  int n;
  char **a = ARGV("--dir", "a", "f", "-d", "b", "--dir=c");
  CHECK(cli_parse(&c, 7, a, &n) == -1 && n == 1);
  CHECK(l.n == 3 && !strcmp(l.v[0], "a") && !strcmp(l.v[1], "b") && !strcmp(l.v[2], "c"));
  CHECK(strstr(text_of(&c), "usage: heapgraph t FILE [--dir PATH]...\n") != NULL);
  char *many[2 * CLI_LIST_MAX + 8];
  int k = 0;
  many[k++] = "t";
  for (int i = 0; i <= CLI_LIST_MAX; i++) {
    many[k++] = "-d";
    many[k++] = "x";
  }
  many[k++] = "f";
  many[k] = NULL;
  l.n = 0;
  FILE *keep = stderr;
  stderr = fopen("/dev/null", "w");
  CHECK(cli_parse(&c, k, many, &n) == 2);
  fclose(stderr);
  stderr = keep;
  CHECK(l.n == CLI_LIST_MAX);
}

int main(void) {
  RUN(test_numbers_are_strict);
  RUN(test_limit_aliases);
  RUN(test_kinds);
  RUN(test_required);
  RUN(test_positionals);
  RUN(test_help);
  RUN(test_usage_lists_every_option);
  RUN(test_list);
  return hg_test_done();
}
