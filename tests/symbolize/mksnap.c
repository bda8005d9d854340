/*
 * mksnap.c — writes a snapshot whose allocation stacks point where a test
 * says, through the library's streaming writer (hg_writer_*), for the
 * symbolication tests (tests/symbolize/check_symbolize.py):
 *
 *   mksnap OUT [-i PATH UUID LOAD]... [-s IMG:OFF[,IMG:OFF...]]...
 *
 * -i adds an image record (UUID: an LC_UUID or ELF build-id in hex, at most
 * 32 bytes, or "-" for none; LOAD: its load address, hex); -s adds a stack (frames innermost first: image index
 * and offset from the image's load address, hex; image "-" = no image, the
 * offset is then an absolute address) and one 32-byte node allocated there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

#define MAX 64

static int hexbytes(const char *s, uint8_t *out, size_t max, uint32_t *len) {
  size_t n = strlen(s) / 2;
  if (!n || strlen(s) != 2 * n || n > max) return -1;
  *len = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
    out[i] = (uint8_t)v;
  }
  return 0;
}

int main(int argc, char **argv) {
  static struct hg_image im[MAX];
  static uint8_t ids[MAX][32];
  static struct hg_stack_frame fr[MAX][32];
  static struct hg_stack st[MAX];
  uint32_t ni = 0, ns = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: mksnap OUT [-i PATH UUID LOAD]... [-s IMG:OFF,...]...\n");
    return 2;
  }
  for (int a = 2; a < argc; a++) {
    if (!strcmp(argv[a], "-i") && a + 3 < argc && ni < MAX) {
      im[ni].path = argv[a + 1];
      if (strcmp(argv[a + 2], "-")) {
        if (hexbytes(argv[a + 2], ids[ni], sizeof ids[ni], &im[ni].id_len)) return 2;
        im[ni].id = ids[ni];
      }
      im[ni].load_addr = strtoull(argv[a + 3], NULL, 16);
      im[ni].size = 1ull << 32;
      ni++;
      a += 3;
    } else if (!strcmp(argv[a], "-s") && a + 1 < argc && ns < MAX) {
      char *p = argv[++a];
      uint32_t k = 0;
      while (*p && k < 32) {
        char *colon = strchr(p, ':');
        if (!colon) return 2;
        fr[ns][k].image = *p == '-' ? HG_NO_OWNER : (uint32_t)strtoul(p, NULL, 10);
        fr[ns][k].offset = strtoull(colon + 1, &p, 16);
        k++;
        if (*p == ',') p++;
      }
      st[ns] = (struct hg_stack){1, 32, k, fr[ns]};
      ns++;
    } else {
      fprintf(stderr, "mksnap: bad argument '%s'\n", argv[a]);
      return 2;
    }
  }
  struct hg_writer *w;
  int rc = hg_writer_open(&w, argv[1]);
  struct hg_stack_info si = {32, 0, 1u << 20, 4096, 1024, ns, 0, "ok", "frame-pointer"};
  uint32_t sid[MAX];
  for (uint32_t i = 0; !rc && i < ni; i++) rc = hg_writer_image(w, &im[i]);
  for (uint32_t i = 0; !rc && i < ns; i++) {
    rc = hg_writer_node(w, 0x10000 + 0x100 * (uint64_t)i, 32, 0, HG_NODE_MALLOC, 0);
    sid[i] = i + 1;
  }
  rc = rc ? rc : hg_writer_stack_info(w, &si);
  for (uint32_t i = 0; !rc && i < ns; i++) rc = hg_writer_stack(w, &st[i]);
  rc = rc ? rc : hg_writer_node_stacks(w, 0, ns, sid);
  rc = rc ? rc : hg_writer_finish(w);
  if (rc) fprintf(stderr, "mksnap: %s\n", w ? hg_writer_message(w) : hg_error_string(rc));
  hg_writer_close(w);
  return rc ? 1 : 0;
}
