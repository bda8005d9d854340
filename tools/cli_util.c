/*
 * cli_util.c — shared CLI helpers (see cli_util.h). The CLI's one
 * declaration of __cxa_demangle (libstdc++, linked into the CLI only) is
 * here; the library has its own demangler in cxxabi/ and stays plain C.
 */
#include "tools/cli_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct hg_graph *cli_load(const char *path, unsigned flags) {
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load_flags(path, flags, &err);
  if (!g) {
    if (err.code == HG_EIO || err.code == HG_EPERM)
      fprintf(stderr, "heapgraph: %s\n", err.message);
    else
      fprintf(stderr, "heapgraph: %s: at byte %llu: %s (%s)\n", path,
              (unsigned long long)err.offset, err.message, hg_error_string(err.code));
  }
  return g;
}

void cli_json_str(FILE *out, const char *s) {
  if (!s) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      default:
        if (*p < 0x20)
          fprintf(out, "\\u%04x", *p);
        else
          fputc(*p, out);
    }
  }
  fputc('"', out);
}

void cli_json_addr(FILE *out, uint64_t a) { fprintf(out, "\"0x%llx\"", (unsigned long long)a); }

int cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

char *cli_demangle_type(const char *name) {
  if (!name || !*name) return NULL;
  int status = 0;
  char *d = __cxa_demangle(name, NULL, NULL, &status);
  if (status == 0 && d) return d;
  free(d);
  return NULL;
}

char **cli_class_names(const struct hg_graph *g, int mangled) {
  char **names = calloc((size_t)g->class_count + 1, sizeof *names);
  if (!names) return NULL;
  for (uint32_t c = 1; c <= g->class_count; c++) {
    const struct hg_class *k = &g->classes[c - 1];
    char *d = (!mangled && k->kind == HG_CLASS_CXX) ? cli_demangle_type(k->name) : NULL;
    names[c] = d ? d : strdup(k->name);
  }
  return names;
}

void cli_class_names_free(const struct hg_graph *g, char **names) {
  if (!names) return;
  for (uint32_t c = 0; c <= g->class_count; c++) free(names[c]);
  free(names);
}

const char *cli_bytes(uint64_t n, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%llu B", (unsigned long long)n);
  else
    snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}
