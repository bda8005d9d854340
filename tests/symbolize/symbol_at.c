/*
 * symbol_at.c — prints machoparse's answer for each address given: the
 * symbol macho_symbol_at() finds (name as stored and its address) and what
 * the symbol iterator walks, for tests/symbolize/check_symbolize.py:
 *
 *   symbol_at FILE ARCH|- ADDR...    ->  one "ADDR NAME SYMADDR" or "ADDR -" line each,
 *                                        then "symbols N" (defined symbols walked)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machoparse/macho.h"

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) return 2;
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) return 2;
  static struct macho_image img;
  if (macho_open_file(&img, m, (uint64_t)st.st_size, strcmp(argv[2], "-") ? argv[2] : NULL)) {
    printf("error %s\n", img.err.message);
    return 1;
  }
  for (int i = 3; i < argc; i++) {
    uint64_t a = strtoull(argv[i], NULL, 16);
    struct macho_symbol s;
    struct macho_error err;
    int rc = macho_symbol_at(&img, a, &s, &err);
    if (rc == 0) printf("%llx %s %llx\n", (unsigned long long)a, s.name, (unsigned long long)s.addr);
    else printf("%llx -\n", (unsigned long long)a);
  }
  struct macho_symbol_iter it;
  struct macho_symbol s;
  unsigned n = 0;
  macho_symbols_begin(&it, &img);
  while (macho_symbols_next(&it, &s) > 0) n++;
  printf("symbols %u\n", n);
  return 0;
}
