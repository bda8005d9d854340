/*
 * bench_compress.c — size on the wire (issue 30 item 1): general-purpose
 * compressors on whole snapshot files, side by side: deflate (zlib, as the
 * spool writes it, and as every Apple SDK has it) at levels 1, 3 and 6, and
 * zstd at -1 (fast), 1, 3 and 9. Per codec: compressed/original ratio, CPU
 * ms (CLOCK_PROCESS_CPUTIME_ID, best of 3) and MB/s of input, and a round
 * trip check (decompressed bytes equal the file).
 *
 *   bench_compress FILE...     one line per file and codec, key=value
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static size_t deflate_buf(const unsigned char *in, size_t n, unsigned char *out, size_t cap, int level) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  size_t k = rc == Z_STREAM_END ? z.total_out : 0;
  deflateEnd(&z);
  return k;
}

static int inflate_ok(const unsigned char *c, size_t k, const unsigned char *orig, size_t n) {
  unsigned char *d = malloc(n + 1);
  z_stream z;
  memset(&z, 0, sizeof z);
  int ok = d && inflateInit2(&z, 15 + 16) == Z_OK;
  if (ok) {
    z.next_in = (unsigned char *)c;
    z.avail_in = (uInt)k;
    z.next_out = d;
    z.avail_out = (uInt)(n + 1);
    ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == n && !memcmp(d, orig, n);
    inflateEnd(&z);
  }
  free(d);
  return ok;
}

int main(int argc, char **argv) {
  static const struct { const char *name; int zstd, level; } codecs[] = {
      {"deflate-1", 0, 1}, {"deflate-3", 0, 3}, {"deflate-6", 0, 6},
      {"zstd--1", 1, -1}, {"zstd-1", 1, 1},    {"zstd-3", 1, 3},   {"zstd-9", 1, 9}};
  for (int a = 1; a < argc; a++) {
    FILE *f = fopen(argv[a], "rb");
    if (!f) {
      perror(argv[a]);
      return 1;
    }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *in = malloc(n), *out = malloc(n + n / 8 + 65536);
    size_t cap = n + n / 8 + 65536;
    if (!in || !out || fread(in, 1, n, f) != n) return 1;
    fclose(f);
    const char *base = strrchr(argv[a], '/');
    base = base ? base + 1 : argv[a];
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
      double best = 1e30;
      size_t k = 0;
      for (int rep = 0; rep < 3; rep++) {
        double t = cpu_ms();
        k = codecs[c].zstd ? ZSTD_compress(out, cap, in, n, codecs[c].level)
                           : deflate_buf(in, n, out, cap, codecs[c].level);
        t = cpu_ms() - t;
        if (t < best) best = t;
      }
      int ok;
      if (codecs[c].zstd) {
        unsigned char *d = malloc(n + 1);
        ok = !ZSTD_isError(k) && d && ZSTD_decompress(d, n + 1, out, k) == n && !memcmp(d, in, n);
        free(d);
      } else {
        ok = k && inflate_ok(out, k, in, n);
      }
      printf("compress file=%s bytes=%zu codec=%s out=%zu ratio=%.3f cpu_ms=%.1f mb_per_s=%.0f roundtrip=%s\n", base, n,
             codecs[c].name, k, (double)k / n, best, n / 1e6 / (best / 1e3), ok ? "ok" : "FAILED");
      if (!ok) return 1;
    }
    free(in);
    free(out);
  }
  return 0;
}
