/*
 * blobs.c — the content-addressed blob directory of `heapgraph serve`:
 * DATA/blobs/ab/<id>-<size>.hgsnap (ab: the id's first two hex digits),
 * shared by every app. An upload is written to DATA/blobs/tmp/ (same file
 * system), fsynced, renamed to its name and the directory fsynced, so a
 * blob is either whole or absent; a server killed mid-upload leaves only a
 * temporary. Temporaries are named after their host and process
 * (up.<pid>.<host>.XXXXXX) because several servers may share the directory:
 * a start removes those of its host whose process is gone, and any older
 * than a day (a host that never came back). The sweep removes blob files
 * no row keeps (an upload whose row was never written, a re-upload of a
 * file retention had dropped) once they are an hour old.
 *
 * Deleting never loses a blob an upload is about to acknowledge, on any of
 * the hosts sharing the directory: an upload whose content is already there
 * marks that file fresh (its mtime) before its row is written, or places
 * its own copy if the file is gone; a deleter (retention, the sweep) first
 * moves the file out of the way (tmp/del.<pid>.<host>.<name>), then looks
 * at the mtime of what it moved, and puts back anything fresh (younger than
 * SRV_ORPHAN_GRACE) instead of deleting it. Either the upload's mark came
 * first (the moved file is fresh: put back) or the file was already moved
 * (the mark fails, the upload places its copy). A start puts back the fresh
 * del.* files of its host's dead processes and removes the rest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/serve.h"

static int mkdir_p(const char *path) { return mkdir(path, 0750) && errno != EEXIST ? -1 : 0; }

static int fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

#define TEMP_ABANDONED (24 * 3600) /* seconds: another host's temporary */

static void host_name(char *h, size_t n) {
  if (gethostname(h, n - 1)) snprintf(h, n, "host");
  h[n - 1] = 0;
  for (char *p = h; *p; p++) /* '.' separates the name's fields */
    if (*p == '.' || *p == '/') *p = '_';
}

/* 1 when the temporary `name` (in directory fd dir; up.* or del.*) may
 * go: its process is gone (same host), or it has not changed for
 * TEMP_ABANDONED seconds. *mtime: its modification time. */
static int temp_dead(int dir, const char *name, const char *host, time_t now, time_t *mtime) {
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW)) return 0;
  *mtime = st.st_mtime;
  if (now - st.st_mtime > TEMP_ABANDONED) return 1;
  char *end;
  size_t pl = !strncmp(name, "up.", 3) ? 3 : !strncmp(name, "del.", 4) ? 4 : 0;
  if (!pl) return 1; /* not ours */
  long pid = strtol(name + pl, &end, 10);
  size_t hl = strlen(host);
  if (*end != '.' || strncmp(end + 1, host, hl) || end[1 + hl] != '.') return 0; /* another host's */
  return pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) && errno == ESRCH);
}

/* The blob path (relative to DATA) of a blob file's name "<id>-<size>.hgsnap";
 * 0, or -1 when name is not one. */
static int blob_rel(const char *name, char *rel, size_t n) {
  size_t len = strlen(name);
  if (len < 2 + 7 || strcmp(name + len - 7, ".hgsnap") || strchr(name, '/') || name[0] == '.') return -1;
  return (size_t)snprintf(rel, n, "blobs/%.2s/%s", name, name) < n ? 0 : -1;
}

/* Puts a moved-away blob file back (never over one that is there again). */
static void put_back(const char *moved, const char *dst) {
  if (link(moved, dst) && errno != EEXIST) return; /* keep `moved`: a later start retries */
  unlink(moved);
}

int srv_blobs_init(const char *data_dir) {
  char p[PATH_MAX], host[128];
  snprintf(p, sizeof p, "%s/blobs", data_dir);
  if (mkdir_p(data_dir) || mkdir_p(p)) return -1;
  snprintf(p, sizeof p, "%s/blobs/tmp", data_dir);
  if (mkdir_p(p)) return -1;
  DIR *d = opendir(p);
  if (!d) return -1;
  host_name(host, sizeof host);
  time_t now = time(NULL), mtime;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *n = e->d_name;
    if (n[0] == '.' || !temp_dead(dirfd(d), n, host, now, &mtime)) continue;
    const char *blob = !strncmp(n, "del.", 4) ? strchr(n + 4, '.') : NULL; /* del.<pid>.<host>.<name> */
    if (blob) blob = strchr(blob + 1, '.');
    char rel[PATH_MAX], moved[PATH_MAX], dst[PATH_MAX];
    if (blob && now - mtime < SRV_ORPHAN_GRACE && !blob_rel(blob + 1, rel, sizeof rel)) {
      /* a deleter died holding a fresh blob: it goes back */
      if ((size_t)snprintf(moved, sizeof moved, "%s/%s", p, n) < sizeof moved &&
          (size_t)snprintf(dst, sizeof dst, "%s/%s", data_dir, rel) < sizeof dst)
        put_back(moved, dst);
    } else {
      unlinkat(dirfd(d), n, 0);
    }
  }
  closedir(d);
  return 0;
}

int srv_blob_delete(const char *data_dir, const char *rel, int64_t now, int grace_seconds) {
  const char *name = strrchr(rel, '/');
  char check[PATH_MAX], dst[PATH_MAX], moved[PATH_MAX], host[128];
  if (!name || strncmp(rel, "blobs/", 6) || strstr(rel, "..") || blob_rel(name + 1, check, sizeof check) ||
      strcmp(check, rel)) {
    errno = EINVAL;
    return -1;
  }
  host_name(host, sizeof host);
  snprintf(dst, sizeof dst, "%s/%s", data_dir, rel);
  if ((size_t)snprintf(moved, sizeof moved, "%s/blobs/tmp/del.%ld.%s.%s", data_dir, (long)getpid(), host,
                       name + 1) >= sizeof moved) {
    errno = ENAMETOOLONG;
    return -1;
  }
  snprintf(check, sizeof check, "%s/blobs/tmp", data_dir);
  if (mkdir_p(check)) return -1;
  if (rename(dst, moved)) return errno == ENOENT ? 0 : -1;
  struct stat st;
  if (!stat(moved, &st) && now - (int64_t)st.st_mtime < grace_seconds) { /* an upload's, just now */
    put_back(moved, dst);
    return 0;
  }
  return unlink(moved) && errno != ENOENT ? -1 : 1;
}

int srv_blob_temp(const char *data_dir, char *path, size_t path_size) {
  char host[128];
  host_name(host, sizeof host);
  if ((size_t)snprintf(path, path_size, "%s/blobs/tmp/up.%ld.%s.XXXXXX", data_dir, (long)getpid(), host) >=
      path_size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return mkostemp(path, O_CLOEXEC);
}

/* ---- the sweep of unkept blob files ---- */

/* The sweep's set of kept names: the store's blob paths of one directory,
 * by file name. */
static int kept_add(void *ctx, const char *blob) {
  const char *slash = strrchr(blob, '/');
  return srv_strset_add(ctx, slash ? slash + 1 : blob);
}

int srv_blobs_sweep(const char *data_dir, struct srv_store *s, int64_t now, int grace_seconds, uint64_t *removed) {
  *removed = 0;
  char p[PATH_MAX];
  int rc = 0;
  for (int b = 0; b < 256 && !rc; b++) {
    char dir[16];
    snprintf(dir, sizeof dir, "blobs/%02x", b);
    snprintf(p, sizeof p, "%s/%s", data_dir, dir);
    DIR *d = opendir(p);
    if (!d) continue;
    struct srv_strset k = {0};
    if ((rc = srv_store_blobs_kept(s, dir, kept_add, &k))) {
      closedir(d);
      srv_strset_free(&k);
      break;
    }
    srv_strset_seal(&k);
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t len = strlen(e->d_name);
      if (len < 7 || strcmp(e->d_name + len - 7, ".hgsnap")) continue;
      const char *name = e->d_name;
      if (srv_strset_has(&k, name)) continue;
      struct stat st;
      if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
      if (now - (int64_t)st.st_mtime < grace_seconds) continue; /* its row may be on its way */
      char rel[PATH_MAX];
      if (!blob_rel(name, rel, sizeof rel) && !strncmp(rel, dir, 8) &&
          srv_blob_delete(data_dir, rel, now, grace_seconds) == 1)
        ++*removed;
    }
    closedir(d);
    srv_strset_free(&k);
  }
  return rc;
}

int srv_blob_commit(const char *data_dir, const char *tmp_path, int fd, const char *id, uint64_t size,
                    char *rel, size_t rel_size) {
  char dir[PATH_MAX], dst[PATH_MAX];
  snprintf(rel, rel_size, "blobs/%.2s/%s-%llu.hgsnap", id, id, (unsigned long long)size);
  snprintf(dir, sizeof dir, "%s/blobs/%.2s", data_dir, id);
  snprintf(dst, sizeof dst, "%s/%s", data_dir, rel);
  struct stat st;
  int err = 0;
  /* The same content is already there: marked fresh, so no deleter takes
   * it before this upload's row is written (a deleter that moved it first
   * makes the mark fail, and this upload's own copy goes in its place). */
  if (!stat(dst, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size && !utimensat(AT_FDCWD, dst, NULL, 0)) {
    unlink(tmp_path);
    return 0;
  }
  if (fsync(fd) || mkdir_p(dir) || rename(tmp_path, dst) || fsync_dir(dir)) err = errno;
  if (err) {
    unlink(tmp_path);
    errno = err;
    return -1;
  }
  return 0;
}
