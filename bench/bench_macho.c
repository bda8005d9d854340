/*
 * bench_macho.c — `make bench` figures for machoparse: time to parse every
 * fixup of a large dylib (thousands of classes), in-process and through the
 * CLI, against llvm-objdump-14 --macho --bind on the same file, as ratios.
 *
 *   bench_macho FILE.dylib path/to/heapgraph
 *
 * Each figure is the best of several runs (wall clock, CLOCK_MONOTONIC).
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "machoparse/macho.h"

extern char **environ;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Best wall time of `runs` executions of argv with stdout to /dev/null. */
static double run_best(char *const argv[], int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    double t0 = now();
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
      fprintf(stderr, "bench_macho: cannot run %s\n", argv[0]);
      exit(1);
    }
    int st;
    waitpid(pid, &st, 0);
    double t = now() - t0;
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "bench_macho: %s failed\n", argv[0]);
      exit(1);
    }
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_macho FILE HEAPGRAPH\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) { perror(argv[1]); return 1; }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) { perror("mmap"); return 1; }
  static struct macho_image img;
  struct macho_fixup_iter it;
  struct macho_fixup f;
  uint64_t binds = 0, all = 0, types = 0;
  double lib_bind = 1e30, lib_all = 1e30;
  for (int r = 0; r < 20; r++) {
    double t0 = now();
    if (macho_open_file(&img, map, (uint64_t)st.st_size, NULL)) { fprintf(stderr, "%s\n", img.err.message); return 1; }
    uint64_t n = 0;
    macho_fixups_begin(&it, &img, MACHO_SRC_BIND);
    while (macho_fixups_next(&it, &f) > 0) n++;
    double t1 = now();
    uint64_t m = 0;
    macho_fixups_begin(&it, &img, MACHO_SRC_ALL);
    while (macho_fixups_next(&it, &f) > 0) m++;
    double t2 = now();
    binds = n; all = m;
    if (t1 - t0 < lib_bind) lib_bind = t1 - t0;
    if (t2 - t1 < lib_all) lib_all = t2 - t1;
  }
  struct macho_typeinfo_iter ti;
  struct macho_typeinfo t;
  macho_typeinfo_begin(&ti, &img);
  while (macho_typeinfo_next(&ti, &t) > 0) types++;

  char *ours[] = {argv[2], "macho", argv[1], "--bind", NULL};
  char *peer[] = {"llvm-objdump-14", "--macho", "--bind", argv[1], NULL};
  double cli = run_best(ours, 5), obj = run_best(peer, 5);
  printf("bench-macho: %s, %lld bytes, %llu binds, %llu fixups in all tables, %llu type_infos\n",
         argv[1], (long long)st.st_size, (unsigned long long)binds, (unsigned long long)all,
         (unsigned long long)types);
  printf("bench-macho: machoparse bind table (in-process)   %9.3f ms\n", lib_bind * 1e3);
  printf("bench-macho: machoparse all fixup tables          %9.3f ms\n", lib_all * 1e3);
  printf("bench-macho: heapgraph macho --bind (process)     %9.3f ms\n", cli * 1e3);
  printf("bench-macho: llvm-objdump-14 --macho --bind       %9.3f ms\n", obj * 1e3);
  printf("bench-macho: ratio llvm-objdump / heapgraph CLI   %9.1fx (goal >= 5x)\n", obj / cli);
  printf("bench-macho: ratio llvm-objdump / in-process parse %8.1fx\n", obj / lib_bind);
  munmap(map, (size_t)st.st_size);
  return 0;
}
