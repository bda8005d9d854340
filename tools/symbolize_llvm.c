/*
 * symbolize_llvm.c — file:line for Mach-O frames from a dSYM, by running
 * LLVM's llvm-symbolizer (Debian package llvm-NN) as a child process: one
 * process per image, every address of the image at once (addresses on stdin
 * from an unlinked temporary file, answers read from a pipe, so neither side
 * can block the other). elfutils libdw reads no Mach-O, and LLVM's DWARF
 * reader is the one Apple's own tools share; running it as a process keeps
 * libLLVM out of the CLI and a crash or hang on a hostile dSYM out of
 * heapgraph (it is killed after HG_LLVM_TIMEOUT_S seconds).
 *
 * Output read: per address, pairs of lines "function" and
 * "file:line:column" (with --inlines, the innermost inlined function first,
 * the function that holds the code last), then an empty line; "??" is
 * unknown. The last pair is kept: the line in the function the symbol
 * table names (an inlined callee's line would contradict that name).
 */
#include "tools/symbolize_macho.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HG_LLVM_TIMEOUT_S 60
#define HG_LLVM_MAX_OUT (256u << 20) /* bytes of answers read at most */

static int executable(const char *dir, size_t dlen, const char *name, char *buf, size_t size) {
  int n = snprintf(buf, size, "%.*s%s%s", (int)dlen, dir, dlen ? "/" : "", name);
  return n > 0 && (size_t)n < size && access(buf, X_OK) == 0;
}

const char *sym_llvm_program(char *buf, size_t size) {
  const char *env = getenv("HEAPGRAPH_LLVM_SYMBOLIZER");
  if (env) {
    if (!*env || strlen(env) >= size) return NULL;
    memcpy(buf, env, strlen(env) + 1);
    return buf;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  char name[32];
  for (int v = 21; v >= 13; v--) { /* 21: the unversioned name */
    if (v == 21) snprintf(name, sizeof name, "llvm-symbolizer");
    else snprintf(name, sizeof name, "llvm-symbolizer-%d", v);
    for (const char *p = path;;) {
      size_t len = strcspn(p, ":");
      if (executable(p, len, name, buf, size)) return buf;
      if (!p[len]) break;
      p += len + 1;
    }
  }
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Reads the child's stdout until EOF, the size limit or the deadline. */
static char *read_all(int fd, size_t *len, int *timed_out) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) return NULL;
  double end = now_s() + HG_LLVM_TIMEOUT_S;
  *timed_out = 0;
  for (;;) {
    double left = end - now_s();
    if (left <= 0) {
      *timed_out = 1;
      break;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    if (n == cap) {
      if (cap >= HG_LLVM_MAX_OUT) break;
      char *m = realloc(buf, cap * 2 + 1);
      if (!m) break;
      buf = m;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Next line of s (NUL-terminated in place), advancing *pos; NULL at the end. */
static char *next_line(char *s, size_t len, size_t *pos) {
  if (*pos >= len) return NULL;
  char *line = s + *pos, *nl = memchr(line, '\n', len - *pos);
  if (!nl) {
    *pos = len;
    return line;
  }
  *nl = 0;
  *pos = (size_t)(nl - s) + 1;
  return line;
}

/* "file:line:column" (the file may itself hold ':'). */
static void parse_loc(char *loc, struct sym_line *out) {
  char *c2 = strrchr(loc, ':');
  if (!c2) return;
  *c2 = 0;
  char *c1 = strrchr(loc, ':');
  if (!c1) return;
  *c1 = 0;
  long line = strtol(c1 + 1, NULL, 10);
  if (line <= 0 || line > 0x7fffffff || !strcmp(loc, "??") || !*loc) return;
  out->file = strdup(loc);
  out->line = out->file ? (int)line : 0;
}

int sym_llvm_lines(const char *obj, const char *arch, const uint64_t *addr, size_t n,
                   struct sym_line *out, char *why, size_t whylen) {
  memset(out, 0, n * sizeof *out);
  char prog[4096];
  if (!sym_llvm_program(prog, sizeof prog)) {
    const char *env = getenv("HEAPGRAPH_LLVM_SYMBOLIZER");
    snprintf(why, whylen, "%s", env && !*env ? "HEAPGRAPH_LLVM_SYMBOLIZER is empty"
                                             : "no llvm-symbolizer on PATH (Debian package llvm)");
    return -1;
  }
  FILE *in = tmpfile();
  if (!in) {
    snprintf(why, whylen, "temporary file: %s", strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < n; i++) fprintf(in, "0x%llx\n", (unsigned long long)addr[i]);
  if (fflush(in) || fseek(in, 0, SEEK_SET)) {
    snprintf(why, whylen, "temporary file: %s", strerror(errno));
    fclose(in);
    return -1;
  }
  int fds[2];
  if (pipe(fds)) {
    snprintf(why, whylen, "pipe: %s", strerror(errno));
    fclose(in);
    return -1;
  }
  char a_obj[4200], a_arch[64];
  snprintf(a_obj, sizeof a_obj, "--obj=%s", obj);
  snprintf(a_arch, sizeof a_arch, "--default-arch=%s", arch ? arch : "");
  char *argv[] = {prog, a_obj, "--inlines", "--functions=linkage", "--demangle", a_arch, NULL};
  if (!arch) argv[5] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid;
  int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  fclose(in);
  if (rc) {
    snprintf(why, whylen, "%s: %s", prog, strerror(rc));
    close(fds[0]);
    return -1;
  }
  size_t len = 0;
  int timed_out = 0;
  char *text = read_all(fds[0], &len, &timed_out);
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!text || timed_out || !WIFEXITED(status) || WEXITSTATUS(status)) {
    snprintf(why, whylen, "%s %s", prog,
             !text ? "output: out of memory" : timed_out ? "timed out" : "failed on the dSYM");
    free(text);
    return -1;
  }
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) { /* pairs until an empty line: the last is the real function */
    char *fn = NULL, *loc = NULL, *line;
    while ((line = next_line(text, len, &pos)) && *line) {
      loc = next_line(text, len, &pos);
      if (!loc || !*loc) break;
      fn = line;
    }
    if (line && *line) break; /* out of step (a pair cut short): trust nothing after */
    if (!fn) {
      if (!line) break; /* the end */
      continue;
    }
    if (strcmp(fn, "??") && *fn) out[i].function = strdup(fn);
    parse_loc(loc, &out[i]);
  }
  free(text);
  return 0;
}
