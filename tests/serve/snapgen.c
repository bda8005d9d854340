/* tests/serve/snapgen.c — snapshots for the store, worker and load tests of
 * `heapgraph serve` (tests/serve/ and bench/bench_serve.sh), written through
 * the streaming writer:
 *   snapgen OUT APP VERSION DEVICE SEED NODES
 * An app object (rooted from the image's globals) holds 8 stores, each a
 * linked list of records; version "2.0" and later add an ImageCache whose
 * entries own big buffers (a new retention issue), and every snapshot has a
 * leaked Session <-> Delegate cycle. SEED varies list lengths and the
 * capture time (so every snapshot has its own checksum); NODES scales the
 * lists (about 7 bytes of file per node). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

/* records 128 bytes apart; the cache's big buffers and the leaked pair in
 * address ranges of their own above them */
static uint32_t cache0, leak0;
static uint64_t addr(uint32_t i) {
  if (i >= leak0) return 0x900000000ull + (uint64_t)(i - leak0) * 1024;
  if (i >= cache0) return 0x800000000ull + (uint64_t)(i - cache0) * 0x20000;
  return 0x200000000ull + (uint64_t)i * 128;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: snapgen OUT APP VERSION DEVICE SEED NODES\n");
    return 2;
  }
  const char *out = argv[1], *app = argv[2], *version = argv[3], *device = argv[4];
  uint64_t seed = strtoull(argv[5], NULL, 10);
  uint32_t n = (uint32_t)strtoul(argv[6], NULL, 10);
  if (n < 64) n = 64;
  int cache = atof(version) >= 2.0;
  struct hg_kv kv[] = {{"app", app}, {"app_version", version}, {"device_id", device}, {"device_model", "testphone"}};
  struct hg_meta m = {.platform = "linux", .pointer_size = 8, .page_size = 4096, .trigger = "test",
                      .process = "servetest", .time_ns = 1700000000000000000ull + seed, .app = kv, .app_count = 4};
  struct hg_writer *w = NULL;
  int rc = hg_writer_open(&w, out);
  if (!rc) rc = hg_writer_meta(w, &m);
  struct hg_image im = {.path = "/opt/servetest/app", .load_addr = 0x400000, .size = 0x100000};
  if (!rc) rc = hg_writer_image(w, &im);
  const char *names[] = {"App", "Store", "Record", "ImageCache", "CacheEntry", "Session", "Delegate"};
  for (size_t i = 0; !rc && i < sizeof names / sizeof *names; i++) {
    struct hg_class k = {names[i], HG_CLASS_CXX, 48};
    rc = hg_writer_class(w, &k, NULL);
  }
  /* layout: 0 App, 1..8 stores, records, [cache, entries+buffers], 2 leaked */
  uint32_t cache_n = cache ? 64 : 0;                /* entries (each + buffer) */
  uint32_t fixed = 1 + 8 + (cache ? 1 + 2 * cache_n : 0) + 2;
  uint32_t records = n > fixed ? n - fixed : 8;
  records -= records % 8;
  records += (uint32_t)(seed % 7) * 8; /* no two sessions retain the same bytes */
  uint32_t per = records / 8;
  uint32_t rec0 = 9;
  cache0 = rec0 + records;
  leak0 = cache0 + (cache ? 1 + 2 * cache_n : 0);
  uint32_t total = leak0 + 2;
  uint64_t jitter = seed * 2654435761u;
  for (uint32_t i = 0; !rc && i < total; i++) {
    uint32_t cls = 0;
    uint64_t size = 48;
    if (i == 0) cls = 1;
    else if (i < rec0) cls = 2;
    else if (i < cache0) cls = 3, size = 48 + 16 * ((i + jitter) % 4);
    else if (i == cache0) cls = 4;
    else if (i < leak0) {
      int entry = (i - cache0 - 1) % 2 == 0;
      cls = entry ? 5 : 0;
      size = entry ? 48 : 64 * 1024 - 64 * ((jitter + i) % 8); /* the big buffers (unclassified) */
    } else {
      cls = i == leak0 ? 6 : 7;
      size = 48 + 16 * (seed % 50);
    }
    rc = hg_writer_node(w, addr(i), size, cls, HG_NODE_MALLOC, 0);
  }
  for (uint32_t i = 0; !rc && i < total; i++) {
    if (i == 0) {
      for (uint32_t k = 1; k <= 8 && !rc; k++) rc = hg_writer_edge(w, 0, 8 * k, k, HG_EDGE_CONSERVATIVE, 0);
      if (!rc && cache) rc = hg_writer_edge(w, 0, 80, cache0, HG_EDGE_CONSERVATIVE, 0);
    } else if (i < rec0) {
      rc = hg_writer_edge(w, i, 8, rec0 + (i - 1) * per, HG_EDGE_CONSERVATIVE, 0);
    } else if (i < cache0) {
      if ((i - rec0 + 1) % per) rc = hg_writer_edge(w, i, 8, i + 1, HG_EDGE_CONSERVATIVE, 0);
    } else if (i == cache0) {
      for (uint32_t k = 0; k < cache_n && !rc; k++)
        rc = hg_writer_edge(w, i, 8 + 8 * (uint64_t)k, cache0 + 1 + 2 * k, HG_EDGE_CONSERVATIVE, 0);
    } else if (i < leak0) {
      if ((i - cache0 - 1) % 2 == 0) rc = hg_writer_edge(w, i, 8, i + 1, HG_EDGE_CONSERVATIVE, 0);
    } else {
      rc = hg_writer_edge(w, i, 8, i == leak0 ? leak0 + 1 : leak0, HG_EDGE_CONSERVATIVE, 0);
    }
  }
  struct hg_root r = {HG_ROOT_GLOBAL, 0, 0x401000, 0};
  if (!rc) rc = hg_writer_root(w, &r);
  if (!rc) rc = hg_writer_finish(w);
  if (rc) fprintf(stderr, "snapgen: %s\n", hg_writer_message(w));
  hg_writer_close(w);
  return rc ? 1 : 0;
}
