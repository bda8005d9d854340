/*
 * replay_main.c — runs a libFuzzer target's LLVMFuzzerTestOneInput over every
 * file in the directories given (seed corpus and saved crashers), without
 * libFuzzer, so `make check` (gcc, optionally ASan) replays them all.
 * Prints "N passed, 0 failed": an input "passes" by returning without a crash.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) { fclose(f); return 0; }
  size_t n;
  while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb; cap *= 2;
    }
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) continue;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      count += replay_file(path);
    }
    closedir(d);
  }
  printf("replay: %d passed, 0 failed\n", count);
  return 0;
}
