/*
 * decode.c — the upload body of `heapgraph serve` into its temporary file:
 * identity, gzip (zlib, one member, RFC 1952) or zstd (libzstd streaming,
 * window at most 2^23 bytes), decoded piece by piece through one 64 KiB
 * buffer. The output is counted before it is written: a bomb stops at the
 * decompressed-size limit and nothing beyond it is ever expanded in memory
 * or written to disk. Memory is constant per upload. Written-behind: every
 * WRITE_BEHIND bytes the kernel is asked to start writing what came
 * (sync_file_range, no wait), so the disk works while the body arrives and
 * is verified, and the commit's fsync finds little left to do.
 */
#include <errno.h>
#include <fcntl.h> /* sync_file_range */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "server/serve.h"

#define OUT_CHUNK 65536
#define WRITE_BEHIND (2u << 20)

struct srv_decoder {
  int enc, fd, err, ended, zinit;
  size_t zpending;  /* zstd: nonzero while a frame is incomplete */
  uint64_t out, limit, kicked; /* kicked: bytes handed to writeback */
  z_stream z;
  ZSTD_DStream *zs;
  const char *reason;
  unsigned char buf[OUT_CHUNK];
};

int srv_encoding(const char *ce) {
  if (!ce || !*ce || !strcasecmp(ce, "identity")) return SRV_ENC_IDENTITY;
  if (!strcasecmp(ce, "gzip") || !strcasecmp(ce, "x-gzip")) return SRV_ENC_GZIP;
  if (!strcasecmp(ce, "zstd")) return SRV_ENC_ZSTD;
  return -1;
}

struct srv_decoder *srv_decoder_new(int enc, int fd, uint64_t limit) {
  struct srv_decoder *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->enc = enc;
  d->fd = fd;
  d->limit = limit;
  if (enc == SRV_ENC_GZIP) {
    if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
      free(d);
      return NULL;
    }
    d->zinit = 1;
  } else if (enc == SRV_ENC_ZSTD) {
    d->zpending = 1;
    d->zs = ZSTD_createDStream();
    if (!d->zs || ZSTD_isError(ZSTD_DCtx_setParameter(d->zs, ZSTD_d_windowLogMax, 23))) {
      ZSTD_freeDStream(d->zs);
      free(d);
      return NULL;
    }
  }
  return d;
}

void srv_decoder_free(struct srv_decoder *d) {
  if (!d) return;
  if (d->zinit) inflateEnd(&d->z);
  ZSTD_freeDStream(d->zs);
  free(d);
}

/* Starts writeback of what was written since the last call (a hint: its
 * failure changes nothing, the commit's fsync is what makes it durable). */
static void write_behind(struct srv_decoder *d) {
#ifdef SYNC_FILE_RANGE_WRITE
  if (d->out > d->kicked) sync_file_range(d->fd, (off_t)d->kicked, (off_t)(d->out - d->kicked), SYNC_FILE_RANGE_WRITE);
#endif
  d->kicked = d->out;
}

/* Writes n decoded bytes, or refuses them all when they pass the limit. */
static int out(struct srv_decoder *d, const unsigned char *p, size_t n) {
  if (n > d->limit - d->out) return SRV_DEC_LIMIT;
  d->out += n;
  while (n) {
    ssize_t w = write(d->fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      d->err = w < 0 ? errno : ENOSPC;
      return SRV_DEC_IO;
    }
    p += w;
    n -= (size_t)w;
  }
  if (d->out - d->kicked >= WRITE_BEHIND) write_behind(d);
  return SRV_DEC_OK;
}

int srv_decoder_feed(struct srv_decoder *d, const void *in, size_t n) {
  if (!n) return SRV_DEC_OK;
  if (d->enc == SRV_ENC_IDENTITY) return out(d, in, n);
  if (d->ended) {
    d->reason = "data after the end of the compressed stream";
    return SRV_DEC_BAD;
  }
  if (d->enc == SRV_ENC_GZIP) {
    d->z.next_in = (unsigned char *)in;
    d->z.avail_in = (unsigned)n;
    while (d->z.avail_in) {
      d->z.next_out = d->buf;
      d->z.avail_out = OUT_CHUNK;
      int zr = inflate(&d->z, Z_NO_FLUSH);
      if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
        d->reason = d->z.msg ? d->z.msg : "gzip data is corrupt";
        return SRV_DEC_BAD;
      }
      int rc = out(d, d->buf, OUT_CHUNK - d->z.avail_out);
      if (rc) return rc;
      if (zr == Z_STREAM_END) {
        d->ended = 1;
        if (d->z.avail_in) {
          d->reason = "data after the end of the gzip stream";
          return SRV_DEC_BAD;
        }
      } else if (zr == Z_BUF_ERROR && d->z.avail_out) {
        break;
      }
    }
    return SRV_DEC_OK;
  }
  ZSTD_inBuffer ib = {in, n, 0};
  int full = 0; /* the last call filled the buffer: more output may be held */
  while (ib.pos < ib.size || full) {
    ZSTD_outBuffer ob = {d->buf, OUT_CHUNK, 0};
    size_t before = ib.pos, zr = ZSTD_decompressStream(d->zs, &ob, &ib);
    if (ZSTD_isError(zr)) {
      d->reason = ZSTD_getErrorName(zr);
      return SRV_DEC_BAD;
    }
    if (ib.pos == before && !ob.pos) break; /* nothing held after all */
    int rc = out(d, d->buf, ob.pos);
    if (rc) return rc;
    d->zpending = zr; /* 0: a frame is complete */
    full = ob.pos == ob.size;
  }
  return SRV_DEC_OK;
}

int srv_decoder_finish(struct srv_decoder *d) {
  if (d->enc == SRV_ENC_GZIP && !d->ended) {
    d->reason = "the gzip stream ends early";
    return SRV_DEC_BAD;
  }
  if (d->enc == SRV_ENC_ZSTD && d->zpending) {
    d->reason = "the zstd stream ends early";
    return SRV_DEC_BAD;
  }
  write_behind(d);
  return SRV_DEC_OK;
}

uint64_t srv_decoder_out(const struct srv_decoder *d) { return d->out; }
const char *srv_decoder_reason(const struct srv_decoder *d) { return d->reason ? d->reason : ""; }
int srv_decoder_errno(const struct srv_decoder *d) { return d->err; }
