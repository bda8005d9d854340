/*
 * policy.c — the capture policy the watcher applies before it captures
 * (public hg_policy_options; defaults after KOOM and LeakCanary, see
 * docs/upload.md): K fires within a window, at most one capture per
 * session, at most N per app version per period (counted in the spool's
 * state, so restarts do not reset it), only on a sampled fraction of
 * installs (a stable choice from the install id), never on low battery
 * while not charging (where the app told us the level).
 *
 * The decision is pure (_hg_policy_fire, unit-tested with a fake clock);
 * the persisted counter is read and written under the spool's state lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/spool.h"

void hg_policy_options_init(struct hg_policy_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->version = HG_POLICY_OPTIONS_VERSION;
  o->fires = 3;
  o->window_ms = 60000;
  o->max_per_version = 5;
  o->period_days = 15;
  o->once_per_session = 1;
  o->sample_permille = 1000;
  o->min_battery_percent = 20;
}

void _hg_policy_init(struct _hg_policy *p, const struct hg_policy_options *o) {
  memset(p, 0, sizeof *p);
  if (o) p->o = *o;
  else hg_policy_options_init(&p->o);
  if (p->o.fires > HG_POLICY_MAX_FIRES) p->o.fires = HG_POLICY_MAX_FIRES;
}

int _hg_policy_fire(struct _hg_policy *p, uint64_t now_ns, uint32_t captures_in_period, int sampled,
                    int battery_percent, int charging) {
  uint64_t win = (uint64_t)p->o.window_ms * 1000000u;
  uint32_t k = 0; /* keep the fires still inside the window */
  for (uint32_t i = 0; i < p->nfires; i++)
    if (now_ns - p->fire_ns[i] < win) p->fire_ns[k++] = p->fire_ns[i];
  p->nfires = k;
  if (p->nfires == HG_POLICY_MAX_FIRES) {
    memmove(p->fire_ns, p->fire_ns + 1, (HG_POLICY_MAX_FIRES - 1) * sizeof p->fire_ns[0]);
    p->nfires--;
  }
  p->fire_ns[p->nfires++] = now_ns;
  if (!sampled) return HG_POLICY_NOT_SAMPLED;
  if (p->o.once_per_session && p->captured) return HG_POLICY_SESSION;
  if (p->o.max_per_version && captures_in_period >= p->o.max_per_version) return HG_POLICY_QUOTA;
  if (battery_percent >= 0 && !charging && (uint32_t)battery_percent < p->o.min_battery_percent)
    return HG_POLICY_BATTERY;
  if (p->nfires < (p->o.fires ? p->o.fires : 1)) return HG_POLICY_WAIT_FIRES;
  p->captured = 1;
  p->nfires = 0;
  return HG_POLICY_CAPTURE;
}

/* FNV-1a of the id and a fixed salt: uniform enough for a per-mille cut,
 * and stable across versions of the library. */
int _hg_policy_sampled(const char *install_id, uint32_t permille) {
  if (permille >= 1000) return 1;
  uint64_t h = 1469598103934665603ull;
  for (const char *c = "heapgraph-sample:"; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  for (const char *c = install_id; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  return (h >> 11) % 1000 < permille;
}

const char *_hg_policy_reason(int v) {
  static const char *const r[] = {"capture", "waiting for more fires in the window", "already captured this session",
                                  "captures per version and period used up", "install not sampled",
                                  "battery low", "free disk under the spool's guard"};
  return v >= 0 && v <= HG_POLICY_DISK ? r[v] : "?";
}

/* State key "cap.VERSION" = comma list of capture times (unix seconds). */
static void version_key(char *key, size_t size, const char *v) {
  snprintf(key, size, "cap.%.40s", v && *v ? v : "-");
  for (char *c = key; *c; c++)
    if (*c == ' ' || (unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e) *c = '_';
}

static uint32_t count_in(const char *list, uint64_t since) {
  uint32_t n = 0;
  for (const char *c = list; c && *c;) {
    char *end;
    uint64_t t = strtoull(c, &end, 10);
    if (end == c) break;
    if (t >= since) n++;
    c = *end == ',' ? end + 1 : end;
  }
  return n;
}

uint32_t _hg_policy_count(struct hg_spool *s, const char *app_version, uint32_t period_days, uint64_t now_s) {
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return 0;
  char key[48];
  version_key(key, sizeof key, app_version);
  uint64_t period = (uint64_t)period_days * 86400u;
  uint32_t n = count_in(_hg_state_get(&st, key), now_s > period ? now_s - period : 0);
  _hg_state_unlock(lk);
  return n;
}

int _hg_policy_record(struct hg_spool *s, const char *app_version, uint32_t period_days, uint64_t now_s) {
  struct _hg_state st;
  int lk = _hg_state_lock(s, &st);
  if (lk < 0) return lk;
  char key[48], list[200] = "";
  version_key(key, sizeof key, app_version);
  uint64_t period = (uint64_t)period_days * 86400u, since = now_s > period ? now_s - period : 0;
  const char *old = _hg_state_get(&st, key);
  size_t o = 0;
  /* keep the times still inside the period (the newest that fit), then now */
  for (const char *c = old; c && *c;) {
    char *end;
    uint64_t t = strtoull(c, &end, 10);
    if (end == c) break;
    if (t >= since && o < 160) o += (size_t)snprintf(list + o, sizeof list - o, "%" PRIu64 ",", t);
    c = *end == ',' ? end + 1 : end;
  }
  snprintf(list + o, sizeof list - o, "%" PRIu64, now_s);
  /* other versions' counters are over: this one only */
  int k = 0;
  for (int i = 0; i < st.n; i++)
    if (strncmp(st.key[i], "cap.", 4) || !strcmp(st.key[i], key)) {
      if (k != i) {
        memcpy(st.key[k], st.key[i], sizeof st.key[0]);
        memcpy(st.val[k], st.val[i], sizeof st.val[0]);
      }
      k++;
    }
  st.n = k;
  _hg_state_set(&st, key, list);
  int rc = _hg_state_save(s, &st);
  _hg_state_unlock(lk);
  return rc;
}
