/*
 * device.c — the device metadata the watcher puts into each snapshot for
 * the backend's grouping (app.* and device.* keys of the app key/values;
 * docs/capture.md "What leaves the device"): app name, version and build
 * (from the app), OS version and device model (detected), the per-install
 * id (the spool's), a per-process session id, time since the library was
 * loaded (about the launch), foreground/background and battery (what the
 * app reported with hg_device_state), footprint and limit at the capture,
 * and the spool's dropped count. HG_OMIT_DEVICE leaves out the install and
 * session ids, the model and the OS version.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <stdlib.h>
#include <sys/sysctl.h>
#else
#include <fcntl.h>
#include <sys/random.h>
#endif

#include "capture/spool.h"

static uint64_t loaded_ns;
static char session[17];
static int st_fg = -1, st_batt = -1, st_charging;
static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void device_loaded(void) { loaded_ns = mono_ns(); }

void hg_device_state(int foreground, int battery_percent, int charging) {
  pthread_mutex_lock(&st_lock);
  st_fg = foreground < 0 ? -1 : foreground != 0;
  st_batt = battery_percent < 0 || battery_percent > 100 ? -1 : battery_percent;
  st_charging = charging != 0;
  pthread_mutex_unlock(&st_lock);
}

void _hg_device_get_state(int *foreground, int *battery, int *charging) {
  pthread_mutex_lock(&st_lock);
  *foreground = st_fg;
  *battery = st_batt;
  *charging = st_charging;
  pthread_mutex_unlock(&st_lock);
}

static const char *session_id(void) {
  pthread_mutex_lock(&st_lock);
  if (!session[0]) {
    uint8_t r[8];
#if defined(__APPLE__)
    arc4random_buf(r, sizeof r);
#else
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      uint64_t x = mono_ns() ^ ((uint64_t)getpid() << 40);
      memcpy(r, &x, sizeof r);
    }
#endif
    for (int i = 0; i < 8; i++) snprintf(session + 2 * i, 3, "%02x", r[i]);
  }
  pthread_mutex_unlock(&st_lock);
  return session;
}

static void add(struct _hg_device_kv *d, const char *key, const char *val) {
  if (!val || !*val || d->n >= HG_DEVICE_KV) return;
  snprintf(d->buf[d->n], sizeof d->buf[0], "%s", val);
  for (char *c = d->buf[d->n]; *c; c++)
    if ((unsigned char)*c < 0x20) *c = ' ';
  d->kv[d->n].key = key;
  d->kv[d->n].value = d->buf[d->n];
  d->n++;
}

static void add_u64(struct _hg_device_kv *d, const char *key, uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%" PRIu64, v);
  add(d, key, b);
}

static void detect(char *os, size_t os_size, char *model, size_t model_size) {
  os[0] = model[0] = 0;
#if defined(__APPLE__)
  size_t n = os_size;
  if (sysctlbyname("kern.osproductversion", os, &n, NULL, 0) != 0) os[0] = 0;
  n = model_size;
  if (sysctlbyname("hw.machine", model, &n, NULL, 0) != 0) model[0] = 0;
  if (!strncmp(model, "x86_64", 6) || !strncmp(model, "arm64", 5)) { /* a Mac: the model name */
    n = model_size;
    if (sysctlbyname("hw.model", model, &n, NULL, 0) != 0) model[0] = 0;
  }
#else
  struct utsname u;
  if (uname(&u) != 0 || snprintf(os, os_size, "%s %s", u.sysname, u.release) < 0) os[0] = 0;
  int fd = open("/sys/class/dmi/id/product_name", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t k = read(fd, model, model_size - 1);
    close(fd);
    model[k > 0 ? k : 0] = 0;
    char *nl = strchr(model, '\n');
    if (nl) *nl = 0;
  }
  if (!model[0] && (uname(&u) != 0 || snprintf(model, model_size, "%s", u.machine) < 0)) model[0] = 0;
#endif
}

void _hg_device_collect(struct _hg_device_kv *d, const struct hg_device_info *info, struct hg_spool *s,
                        uint32_t omit, uint64_t footprint, uint64_t limit, uint64_t dropped) {
  d->n = 0;
  int ok = info && info->version == HG_DEVICE_INFO_VERSION;
  if (ok) {
    add(d, "app.name", info->app);
    add(d, "app.version", info->app_version);
    add(d, "app.build", info->build);
  }
  if (!(omit & HG_OMIT_DEVICE)) {
    char os[96], model[96];
    detect(os, sizeof os, model, sizeof model);
    add(d, "device.os_version", ok && info->os_version ? info->os_version : os);
    add(d, "device.model", ok && info->device_model ? info->device_model : model);
    if (s) add(d, "device.install_id", hg_spool_install_id(s));
    add(d, "device.session_id", session_id());
  }
  add_u64(d, "device.since_launch_ms", (mono_ns() - loaded_ns) / 1000000u);
  int fg, batt, chg;
  _hg_device_get_state(&fg, &batt, &chg);
  if (fg >= 0) add(d, "device.state", fg ? "foreground" : "background");
  if (batt >= 0) add_u64(d, "device.battery_percent", (uint64_t)batt);
  if (footprint) add_u64(d, "device.footprint", footprint);
  if (limit) add_u64(d, "device.limit", limit);
  if (s) add_u64(d, "spool.dropped", dropped);
}
