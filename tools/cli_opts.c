/*
 * cli_opts.c — the table-driven option parser and usage generator of the
 * heapgraph CLI (see cli_opts.h). Owns option syntax, strict numbers and the
 * layout of usage text; knows nothing about any one command.
 */
#include "tools/cli_opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- Numbers ---- */

int cli_parse_num(const char *s, long min, long max, long *out) {
  if (!s) return -1;
  int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
  const char *d = base == 16 ? s + 2 : s;
  if (!(base == 16 ? isxdigit((unsigned char)*d) : isdigit((unsigned char)*d))) return -1;
  if (base == 16 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) return -1; /* "0x0x1" */
  char *end;
  errno = 0;
  unsigned long long v = strtoull(d, &end, base);
  if (errno || *end || v > (unsigned long long)max || (long long)v < (long long)min) return -1;
  *out = (long)v;
  return 0;
}

/* ---- Matching ---- */

/* True when the '|'-separated list names contains the spelling s[0..n). */
static int has_name(const char *names, const char *s, size_t n) {
  for (const char *p = names; *p;) {
    size_t len = strcspn(p, "|");
    if (len == n && !memcmp(p, s, n)) return 1;
    p += len;
    if (*p) p++;
  }
  return 0;
}

static const struct cli_opt *find_opt(const struct cli_opt *opts, const char *s, size_t n) {
  for (const struct cli_opt *o = opts; o->names; o++)
    if (has_name(o->names, s, n)) return o;
  return NULL;
}

static int is_help(const char *s) { return !strcmp(s, "-h") || !strcmp(s, "--help"); }

static int usage_error(const struct cli_cmd *c, const char *what, const char *arg) {
  fprintf(stderr, "heapgraph %s: %s%s%s%s\n", c->name, what, arg ? " '" : "", arg ? arg : "",
          arg ? "'" : "");
  cli_usage(c, stderr);
  return 2;
}

/* Stores value v (NULL for a flag) for option o; 0 or an exit status. */
static int store(const struct cli_cmd *c, const struct cli_opt *o, const char *v) {
  switch (o->kind) {
    case CLI_FLAG: *(int *)o->dest = 1; return 0;
    case CLI_SET: *(int *)o->dest = (int)o->max; return 0;
    case CLI_STR: *(const char **)o->dest = v; return 0;
    case CLI_CHOICE:
      if (!*v || strchr(v, '|') || !has_name(o->arg, v, strlen(v))) {
        fprintf(stderr, "heapgraph %s: %.*s is one of %s, not '%s'\n", c->name,
                (int)strcspn(o->names, "|"), o->names, o->arg, v);
        cli_usage(c, stderr);
        return 2;
      }
      *(const char **)o->dest = v;
      return 0;
    case CLI_NUM:
      if (cli_parse_num(v, o->min, o->max, (long *)o->dest)) {
        fprintf(stderr, "heapgraph %s: %.*s needs a number from %ld to %ld, not '%s'\n", c->name,
                (int)strcspn(o->names, "|"), o->names, o->min, o->max, v);
        cli_usage(c, stderr);
        return 2;
      }
      return 0;
    case CLI_LIST: {
      struct cli_list *l = o->dest;
      if (l->n >= CLI_LIST_MAX) {
        fprintf(stderr, "heapgraph %s: %.*s given more than %d times\n", c->name,
                (int)strcspn(o->names, "|"), o->names, CLI_LIST_MAX);
        cli_usage(c, stderr);
        return 2;
      }
      l->v[l->n++] = v;
      return 0;
    }
  }
  return 2;
}

/* ---- Parsing ---- */

static int required(const struct cli_opt *o) {
  return (o->kind == CLI_STR || o->kind == CLI_CHOICE) && o->min == 1;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, int *nargs) {
  int n = 0, i = 1, options = 1;
  for (const struct cli_opt *o = c->opts; o->names; o++)
    if (required(o)) *(const char **)o->dest = NULL;
  for (; i < argc; i++) {
    char *s = argv[i];
    if (!options || s[0] != '-' || !s[1]) { /* positional ("-" is one too) */
      argv[1 + n++] = s;
      if (c->flags & CLI_STOP_AT_ARG) options = 0;
      continue;
    }
    if (!strcmp(s, "--")) {
      options = 0;
      continue;
    }
    if (is_help(s)) {
      cli_usage(c, stdout);
      return 0;
    }
    const char *eq = !strncmp(s, "--", 2) ? strchr(s, '=') : NULL;
    const struct cli_opt *o = find_opt(c->opts, s, eq ? (size_t)(eq - s) : strlen(s));
    if (!o) return usage_error(c, "unknown option", s);
    const char *v = NULL;
    if (o->arg) {
      if (eq) v = eq + 1;
      else if (i + 1 < argc) v = argv[++i];
      else return usage_error(c, "missing value after", s);
    } else if (eq) {
      return usage_error(c, "takes no value:", s);
    }
    int st = store(c, o, v);
    if (st) return st;
  }
  argv[1 + n] = NULL;
  for (const struct cli_opt *o = c->opts; o->names; o++)
    if (required(o) && !*(const char **)o->dest) {
      fprintf(stderr, "heapgraph %s: %.*s is required\n", c->name, (int)strcspn(o->names, "|"),
              o->names);
      cli_usage(c, stderr);
      return 2;
    }
  if (n < c->min_args || (c->max_args >= 0 && n > c->max_args))
    return usage_error(c, n < c->min_args ? "missing argument" : "unexpected argument",
                       n < c->min_args ? NULL : argv[1 + c->max_args]);
  *nargs = n;
  return -1;
}

/* ---- Usage ---- */

/* Adds word to the synopsis line, wrapping under the command name. */
static void syn_word(FILE *out, int *col, int indent, const char *w) {
  int len = (int)strlen(w);
  if (*col + 1 + len > 79) {
    fprintf(out, "\n%*s", indent, "");
    *col = indent;
  } else {
    fputc(' ', out);
    (*col)++;
  }
  fputs(w, out);
  *col += len;
}

/* "-n N" / "--mode fork|suspend" / "--json": the first spelling. */
static void first_form(const struct cli_opt *o, char *buf, size_t size) {
  snprintf(buf, size, "%.*s%s%s", (int)strcspn(o->names, "|"), o->names, o->arg ? " " : "",
           o->arg ? o->arg : "");
}

void cli_usage(const struct cli_cmd *c, FILE *out) {
  char w[128];
  int col = fprintf(out, "usage: heapgraph %s", c->name);
  int indent = col + 1 < 40 ? col + 1 : 8;
  if (c->args && !(c->flags & CLI_STOP_AT_ARG)) syn_word(out, &col, indent, c->args);
  for (const struct cli_opt *o = c->opts; o->names; o++) {
    char f[112];
    first_form(o, f, sizeof f);
    snprintf(w, sizeof w, required(o) ? "%s" : o->kind == CLI_LIST ? "[%s]..." : "[%s]", f);
    syn_word(out, &col, indent, w);
  }
  if (c->args && (c->flags & CLI_STOP_AT_ARG)) syn_word(out, &col, indent, c->args);
  fputc('\n', out);
  if (c->about) fputs(c->about, out);
  fputs("options:\n", out);
  for (const struct cli_opt *o = c->opts; o->names; o++) {
    /* all spellings: "-n, --limit N" */
    char *p = w;
    size_t left = sizeof w;
    for (const char *s = o->names; *s;) {
      size_t len = strcspn(s, "|");
      int k = snprintf(p, left, "%s%.*s", s == o->names ? "" : ", ", (int)len, s);
      if (k < 0 || (size_t)k >= left) break;
      p += k;
      left -= (size_t)k;
      s += len;
      if (*s) s++;
    }
    if (o->arg) snprintf(p, left, " %s", o->arg);
    if (strlen(w) > 24) fprintf(out, "  %s\n%27s", w, "");
    else fprintf(out, "  %-24s ", w);
    fprintf(out, "%s\n", o->help ? o->help : "");
  }
  fprintf(out, "  %-24s %s\n", "-h, --help", "this text");
}
