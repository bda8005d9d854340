/*
 * cmd_upload.c — `heapgraph upload`: sends snapshots to the backend for
 * machines and CI, with the library's uploader (hg_upload_next: libcurl,
 * backoff, 429 Retry-After, drop on 413/422). --spool DIR empties a spool;
 * FILE is queued in a private temporary spool (gzip, checksum tag) and sent
 * from there, the file itself is left alone. Owns only the options and the
 * loop; docs/upload.md has the protocol.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapgraph.h"
#include "tools/cli_opts.h"
#include "tools/commands.h"

static const char about[] =
    "  Uploads FILE (a .hgsnap, sent gzip-compressed), or every snapshot queued in\n"
    "  the spool DIR, oldest first: POST URL with \"Authorization: Bearer KEY\".\n"
    "  201 and 200 (duplicate) remove a spooled file, 413/422 drop it with the\n"
    "  server's reason; 429/503/5xx/no answer keep it: with --wait SECONDS the\n"
    "  command sleeps the backoff (or Retry-After) up to that long in total,\n"
    "  else it stops. Exit 0: all sent; 1: some dropped; 75: some left to retry.\n";

/* Copies FILE into a fresh private spool as NAME.hgsnap and queues it. */
static int stage_file(const char *file, char *dir, size_t dir_size, struct hg_spool **sp) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, dir_size, "%s/heapgraph-upload.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return HG_EIO;
  struct hg_spool_limits l;
  hg_spool_limits_init(&l);
  l.min_free_bytes = 0;
  l.max_bytes = UINT64_MAX;
  int rc = hg_spool_open(dir, &l, sp);
  if (rc) return rc;
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  char dst[4400];
  size_t bl = strlen(base);
  if (bl > 7 && !strcmp(base + bl - 7, ".hgsnap")) bl -= 7;
  if (snprintf(dst, sizeof dst, "%s/%.*s.hgsnap", dir, (int)(bl > 150 ? 150 : bl), base) >= (int)sizeof dst)
    return HG_ELIMIT;
  FILE *in = fopen(file, "rb"), *out = in ? fopen(dst, "wb") : NULL;
  rc = in && out ? 0 : HG_EIO;
  char buf[65536];
  size_t k;
  while (!rc && (k = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, k, out) != k) rc = HG_EIO;
  if (in && ferror(in)) rc = HG_EIO;
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = HG_EIO;
  return rc ? rc : hg_spool_add(*sp, dst);
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4400];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
      unlink(p);
  closedir(d);
  rmdir(dir);
}

int cmd_upload(int argc, char **argv) {
  const char *url = NULL, *key = NULL, *spool_dir = NULL, *rate = NULL;
  int insecure = 0, nargs;
  long wait_s = 0;
  const struct cli_opt opts[] = {
      CLI_OPT_STR("--url", "URL", &url, "the backend's POST URL (http or https)"),
      CLI_OPT_STR("--key", "KEY", &key, "bearer key (also HEAPGRAPH_UPLOAD_KEY)"),
      CLI_OPT_STR("--spool", "DIR", &spool_dir, "upload everything queued in this spool"),
      CLI_OPT_NUM("--wait", "SECONDS", &wait_s, 0, 86400, "sleep through backoff up to this long (default 0)"),
      CLI_OPT_STR("--rate", "BYTES", &rate, "send rate cap per second (default 1000000; 0 = none)"),
      CLI_OPT_FLAG("--insecure", &insecure, "do not verify the server's TLS certificate"),
      CLI_END};
  const struct cli_cmd cmd = {"upload", "[FILE]", 0, 1, opts, about, 0};
  int st = cli_parse(&cmd, argc, argv, &nargs);
  if (st >= 0) return st;
  if (!key) key = getenv("HEAPGRAPH_UPLOAD_KEY");
  if (!url || (!spool_dir) == (nargs != 1)) {
    fprintf(stderr, "heapgraph upload: need --url and exactly one of FILE or --spool DIR\n");
    return 2;
  }
  struct hg_upload_options o;
  hg_upload_options_init(&o);
  o.insecure = (uint32_t)insecure;
  if (rate) {
    char *end;
    o.max_bytes_per_s = strtoull(rate, &end, 10);
    if (end == rate || *end) {
      fprintf(stderr, "heapgraph upload: --rate '%s' is not a number\n", rate);
      return 2;
    }
  }
  struct hg_spool *sp = NULL;
  char tmpdir[4096] = "";
  /* the spool's owner set its budgets: opening it here must never drop a file */
  struct hg_spool_limits keep;
  hg_spool_limits_init(&keep);
  keep.max_files = UINT32_MAX;
  keep.max_bytes = UINT64_MAX;
  keep.min_free_bytes = 0;
  int rc = spool_dir ? hg_spool_open(spool_dir, &keep, &sp) : stage_file(argv[1], tmpdir, sizeof tmpdir, &sp);
  if (rc) {
    fprintf(stderr, "heapgraph upload: %s: %s\n", spool_dir ? spool_dir : argv[1], hg_error_string(rc));
    if (tmpdir[0]) remove_dir(tmpdir);
    hg_spool_close(sp);
    return 1;
  }
  int dropped = 0, pending = 0;
  uint64_t waited_ms = 0;
  for (;;) {
    struct hg_upload_result r;
    rc = hg_upload_next(sp, url, key, &o, &r);
    if (rc) {
      fprintf(stderr, "heapgraph upload: %s\n", rc == HG_EUNSUPPORTED ? "libcurl.so.4 not found" : hg_error_string(rc));
      pending = 1;
      break;
    }
    if (r.action == HG_UPLOAD_EMPTY) break;
    if (r.action == HG_UPLOAD_SENT || r.action == HG_UPLOAD_DUPLICATE) {
      printf("%s %s (HTTP %d) %s\n", r.action == HG_UPLOAD_SENT ? "sent" : "duplicate", r.name, r.http_status,
             r.message);
      continue;
    }
    if (r.action == HG_UPLOAD_DROPPED) {
      fprintf(stderr, "heapgraph upload: %s refused (HTTP %d: %s); dropped\n", r.name, r.http_status, r.message);
      dropped++;
      continue;
    }
    if (r.action == HG_UPLOAD_RETRY)
      fprintf(stderr, "heapgraph upload: %s not accepted (HTTP %d%s%s); retry in %.1f s\n", r.name,
              r.http_status, r.message[0] ? ": " : "", r.message, r.wait_ms / 1e3);
    if (waited_ms + r.wait_ms > (uint64_t)wait_s * 1000u) {
      pending = 1;
      break;
    }
    waited_ms += r.wait_ms;
    struct timespec ts = {(time_t)(r.wait_ms / 1000), (long)(r.wait_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  hg_spool_close(sp);
  if (tmpdir[0]) remove_dir(tmpdir);
  return pending ? 75 : dropped ? 1 : 0;
}
