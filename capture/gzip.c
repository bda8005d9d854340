/*
 * gzip.c — compresses a finished snapshot into a gzip file (RFC 1952,
 * zlib's deflate) for the spool: temp + fsync + rename, so the .gz either
 * exists whole or not at all. Why deflate and level 1: docs/upload.md
 * ("Size on the wire"). Runs after the capture (never during the freeze),
 * on the watcher's thread; memory: zlib's ~270 KB state plus two 64 KiB
 * buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "capture/spool.h"

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return errno == ENOSPC ? HG_ENOSPC : HG_EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int _hg_gzip_file(const char *src, const char *dst, int level) {
  const char *slash = strrchr(dst, '/');
  char tmp[4500];
  int k = slash ? snprintf(tmp, sizeof tmp, "%.*s/.%s.tmp.%ld.gz", (int)(slash - dst), dst, slash + 1, (long)getpid())
                : snprintf(tmp, sizeof tmp, ".%s.tmp.%ld.gz", dst, (long)getpid());
  if (k < 0 || (size_t)k >= sizeof tmp) return HG_ELIMIT;
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return errno == ENOENT ? HG_ENOENT : HG_EIO;
  int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    return HG_EIO;
  }
  enum { CHUNK = 65536 };
  unsigned char *ib = malloc(CHUNK), *ob = malloc(CHUNK);
  z_stream z;
  memset(&z, 0, sizeof z);
  int rc = ib && ob ? 0 : HG_ENOMEM;
  /* windowBits 15 + 16: a gzip wrapper; memLevel 8 (zlib's default) */
  if (!rc && deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) rc = HG_ENOMEM;
  int flush = Z_NO_FLUSH, inited = !rc;
  while (!rc && flush != Z_FINISH) {
    ssize_t n = read(in, ib, CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = HG_EIO;
      break;
    }
    flush = n == 0 ? Z_FINISH : Z_NO_FLUSH;
    z.next_in = ib;
    z.avail_in = (uInt)n;
    do {
      z.next_out = ob;
      z.avail_out = CHUNK;
      if (deflate(&z, flush) == Z_STREAM_ERROR) {
        rc = HG_EINTERNAL;
        break;
      }
      rc = write_all(out, ob, CHUNK - z.avail_out);
    } while (!rc && z.avail_out == 0);
  }
  if (inited) deflateEnd(&z);
  free(ib);
  free(ob);
  close(in);
  if (!rc && fsync(out) != 0) rc = HG_EIO;
  if (close(out) != 0 && !rc) rc = HG_EIO;
  if (!rc && rename(tmp, dst) != 0) rc = HG_EIO;
  if (rc) unlink(tmp);
  return rc;
}
