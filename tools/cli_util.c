/*
 * cli_util.c — shared CLI helpers (see cli_util.h). The CLI's one
 * declaration of __cxa_demangle (libstdc++, linked into the CLI only) is
 * here; the library has its own demangler in cxxabi/ and stays plain C.
 */
#include "tools/cli_util.h"

#include "cxxabi/cxxabi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* The reader takes regular files only, but opening a FIFO with no writer
 * would block before it can say so: non-regular files are refused here
 * first, without opening them. */
static int regular_or_absent(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0; /* the load reports a missing file */
  fprintf(stderr, "heapgraph: %s: not a regular file (%s)\n", path,
          S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
  return -1;
}

struct hg_graph *cli_load(const char *path, unsigned flags) {
  struct hg_load_error err;
  if (regular_or_absent(path) != 0) return NULL;
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
  size_t slab = strlen(HG_CXX_SLAB_PREFIX);
  if (!strncmp(name, HG_CXX_SLAB_PREFIX, slab)) { /* classify_cxx.c: "slab starting with T" */
    char *t = cli_demangle_type(name + slab), *out = NULL;
    if (asprintf(&out, "slab starting with %s", t ? t : name + slab) < 0) out = NULL;
    free(t);
    return out;
  }
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

/* ---- escaping control characters in text output ---- */

/* Escape for byte p[0] (next byte p[1]) or NULL when it is printable; *used
 * = bytes consumed. keep_lines: newline and tab pass through. */
static const char *escape_at(const unsigned char *p, size_t avail, int keep_lines, char tmp[8],
                             size_t *used) {
  unsigned char b = p[0];
  *used = 1;
  if (b == '\n' || b == '\t') {
    if (keep_lines) return NULL;
    return b == '\n' ? "\\n" : "\\t";
  }
  if (b == '\r') return "\\r";
  if (b < 0x20 || b == 0x7f) {
    snprintf(tmp, 8, "\\x%02x", b);
    return tmp;
  }
  if (b == 0xc2 && avail > 1 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1 control in UTF-8 */
    snprintf(tmp, 8, "\\u00%02x", p[1]);
    *used = 2;
    return tmp;
  }
  return NULL;
}

const char *cli_text(const char *s) {
  static char *bufs[8];
  static size_t caps[8];
  static unsigned next;
  if (!s) return NULL;
  size_t n = strlen(s), i, used;
  char tmp[8];
  for (i = 0; i < n; i += used)
    if (escape_at((const unsigned char *)s + i, n - i, 0, tmp, &used)) break;
  if (i == n) return s;
  unsigned k = next++ % 8;
  if (caps[k] < 6 * n + 1) {
    char *b = realloc(bufs[k], 6 * n + 1);
    if (!b) return "(out of memory)";
    bufs[k] = b;
    caps[k] = 6 * n + 1;
  }
  char *o = bufs[k];
  for (i = 0; i < n; i += used) {
    const char *e = escape_at((const unsigned char *)s + i, n - i, 0, tmp, &used);
    if (e) {
      size_t el = strlen(e);
      memcpy(o, e, el);
      o += el;
    } else {
      *o++ = s[i];
    }
  }
  *o = 0;
  return bufs[k];
}

struct guard {
  int fd;
  int held_c2; /* a 0xC2 byte at the end of the last write: C1 or not? */
};

static int write_fd(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static ssize_t guard_write(void *cookie, const char *buf, size_t n) {
  struct guard *g = cookie;
  char out[4096 + 16], tmp[8];
  size_t o = 0, i = 0, used;
  unsigned char join[2];
  if (g->held_c2 && n) { /* resolve the held byte against the first new one */
    join[0] = 0xc2;
    join[1] = (unsigned char)buf[0];
    const char *e = escape_at(join, 2, 1, tmp, &used);
    g->held_c2 = 0;
    if (e) {
      memcpy(out, e, strlen(e));
      o = strlen(e);
      i = 1;
    } else {
      out[o++] = (char)0xc2;
    }
  }
  for (; i < n; i += used) {
    const unsigned char *p = (const unsigned char *)buf + i;
    used = 1;
    if ((p[0] >= 0x20 && p[0] != 0x7f && p[0] != 0xc2) || p[0] == '\n' || p[0] == '\t') {
      out[o++] = (char)p[0]; /* the common case */
      if (o >= 4096 && write_fd(g->fd, out, o) != 0) return -1;
      if (o >= 4096) o = 0;
      continue;
    }
    if (p[0] == 0xc2 && i + 1 == n) {
      g->held_c2 = 1;
      used = 1;
      continue;
    }
    const char *e = escape_at(p, n - i, 1, tmp, &used);
    if (e) {
      size_t el = strlen(e);
      memcpy(out + o, e, el);
      o += el;
    } else {
      out[o++] = (char)p[0];
    }
    if (o >= 4096 && write_fd(g->fd, out, o) == 0) o = 0;
    else if (o >= 4096) return -1;
  }
  if (o && write_fd(g->fd, out, o) != 0) return -1;
  return (ssize_t)n;
}

static int guard_close(void *cookie) {
  struct guard *g = cookie;
  if (g->held_c2) write_fd(g->fd, "\xc2", 1);
  return 0;
}

void cli_guard_output(void) {
  static struct guard gs[2] = {{1, 0}, {2, 0}};
  cookie_io_functions_t io = {NULL, guard_write, NULL, guard_close};
  FILE *o = fopencookie(&gs[0], "w", io), *e = fopencookie(&gs[1], "w", io);
  if (o) {
    fflush(stdout);
    setvbuf(o, NULL, isatty(1) ? _IOLBF : _IOFBF, 1 << 16);
    stdout = o;
  }
  if (e) {
    fflush(stderr);
    setvbuf(e, NULL, _IOLBF, 4096);
    stderr = e;
  }
}
