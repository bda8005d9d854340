/*
 * spool.h — internals shared by the spool (spool.c), its state file
 * (spool_state.c), the capture policy (policy.c), device metadata
 * (device.c), the uploader's portable half (upload.c) and the watcher.
 */
#ifndef HG_CAPTURE_SPOOL_H
#define HG_CAPTURE_SPOOL_H

#include <stdint.h>

#include "heapgraph.h"

struct hg_spool {
  char *dir;
  struct hg_spool_limits l;
  char install_id[33];
};

/* ---- the state file DIR/state: "key value" lines, rewritten by temp +
 * rename under an flock of DIR/.lock (shared by every process using the
 * spool). Bounded: at most HG_STATE_MAX entries, keys and values cut. */
#define HG_STATE_MAX 48
struct _hg_state {
  int n;
  char key[HG_STATE_MAX][48];
  char val[HG_STATE_MAX][208];
};
/* Lock (blocking) and load; unlock. The fd returned is the lock. */
int _hg_state_lock(struct hg_spool *s, struct _hg_state *st);
int _hg_state_save(struct hg_spool *s, const struct _hg_state *st);
void _hg_state_unlock(int lockfd);
const char *_hg_state_get(const struct _hg_state *st, const char *key);
uint64_t _hg_state_u64(const struct _hg_state *st, const char *key);
void _hg_state_set(struct _hg_state *st, const char *key, const char *val);
void _hg_state_set_u64(struct _hg_state *st, const char *key, uint64_t v);
/* Parses text into st (unknown or malformed lines skipped): for tests. */
void _hg_state_parse(struct _hg_state *st, const char *text, size_t n);

/* ---- queue */
struct _hg_spool_entry {
  char name[256];
  uint64_t bytes;
  int64_t mtime_ns;
};
/* Queued files (tagged names, see spool.c), oldest first, into *out
 * (malloc'd; free()). Returns the count or an HG_E* code. */
int _hg_spool_list(struct hg_spool *s, struct _hg_spool_entry **out);
/* 1 when name is a queued snapshot: BASE.HHHHHHHHHHHHHHHH.hgsnap[.gz]; the
 * 16 hex digits (the snapshot's checksum) into hex[17] when not NULL. */
int _hg_spool_tagged(const char *name, char *hex);
/* The snapshot's trailer checksum (xxh64) from the end of an uncompressed
 * file; 0 or HG_EFORMAT. */
int _hg_snapshot_checksum(int fd, uint64_t *sum);
/* Removes DIR/name and counts it as dropped. */
void _hg_spool_drop(struct hg_spool *s, const char *name, const char *why);
/* Free bytes for unprivileged users on the spool's file system (or UINT64_MAX). */
uint64_t _hg_spool_free_bytes(const struct hg_spool *s);
/* hg_spool_add, and the queued file's path into out (may be NULL). */
int _hg_spool_add(struct hg_spool *s, const char *path, char *out, size_t out_size);
/* Subtracts n from the dropped count (n went into a snapshot). */
void _hg_spool_took_dropped(struct hg_spool *s, uint64_t n);
/* gzip src into dst (temp + rename next to dst). 0 or HG_E*. */
int _hg_gzip_file(const char *src, const char *dst, int level);

/* ---- capture policy (policy.c). Per-process part (fires in a window,
 * once per session); the persisted part is in the spool's state. */
enum {
  HG_POLICY_CAPTURE = 0,
  HG_POLICY_WAIT_FIRES = 1,   /* fewer than K fires within the window */
  HG_POLICY_SESSION = 2,      /* this process already captured        */
  HG_POLICY_QUOTA = 3,        /* N per app version per period reached */
  HG_POLICY_NOT_SAMPLED = 4,  /* this install is outside the sample   */
  HG_POLICY_BATTERY = 5,      /* battery low and not charging         */
  HG_POLICY_DISK = 6          /* free disk under the spool's guard    */
};
#define HG_POLICY_MAX_FIRES 64
struct _hg_policy {
  struct hg_policy_options o;
  uint64_t fire_ns[HG_POLICY_MAX_FIRES];
  uint32_t nfires;
  int captured;
};
void _hg_policy_init(struct _hg_policy *p, const struct hg_policy_options *o);
/* Pure part: a fire at now_ns; decides from the in-process state and the
 * persisted count of captures of this version within the period. */
int _hg_policy_fire(struct _hg_policy *p, uint64_t now_ns, uint32_t captures_in_period,
                    int sampled, int battery_percent, int charging);
/* Stable sample choice: 1 when install_id falls in the first permille/1000. */
int _hg_policy_sampled(const char *install_id, uint32_t permille);
/* Persisted: captures of app_version in the period ending now_s (counted
 * from the state), and recording one (under the state lock). */
uint32_t _hg_policy_count(struct hg_spool *s, const char *app_version, uint32_t period_days, uint64_t now_s);
int _hg_policy_record(struct hg_spool *s, const char *app_version, uint32_t period_days, uint64_t now_s);
const char *_hg_policy_reason(int verdict);

/* ---- device metadata (device.c) */
#define HG_DEVICE_KV 20
struct _hg_device_kv {
  int n;
  struct hg_kv kv[HG_DEVICE_KV];
  char buf[HG_DEVICE_KV][128];
};
/* Fills app.* and device.* keys: info may be NULL, spool may be NULL (no
 * install id / dropped count), omit = HG_OMIT_* of the capture. */
void _hg_device_collect(struct _hg_device_kv *d, const struct hg_device_info *info,
                        struct hg_spool *s, uint32_t omit, uint64_t footprint, uint64_t limit,
                        uint64_t dropped);
/* The app-fed state of hg_device_state(). */
void _hg_device_get_state(int *foreground, int *battery, int *charging);

#endif
