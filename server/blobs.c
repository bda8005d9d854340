/*
 * blobs.c — the content-addressed blob directory of `heapgraph serve`:
 * DATA/blobs/ab/<id>-<size>.hgsnap (ab: the id's first two hex digits),
 * shared by every app. An upload is written to DATA/blobs/tmp/ (same file
 * system), fsynced, renamed to its name and the directory fsynced, so a
 * blob is either whole or absent; a server killed mid-upload leaves only a
 * temporary, removed at the next start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int srv_blobs_init(const char *data_dir) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/blobs", data_dir);
  if (mkdir_p(data_dir) || mkdir_p(p)) return -1;
  snprintf(p, sizeof p, "%s/blobs/tmp", data_dir);
  if (mkdir_p(p)) return -1;
  DIR *d = opendir(p);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
  return 0;
}

int srv_blob_temp(const char *data_dir, char *path, size_t path_size) {
  if ((size_t)snprintf(path, path_size, "%s/blobs/tmp/upload-XXXXXX", data_dir) >= path_size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return mkostemp(path, O_CLOEXEC);
}

int srv_blob_commit(const char *data_dir, const char *tmp_path, int fd, const char *id, uint64_t size,
                    char *rel, size_t rel_size) {
  char dir[PATH_MAX], dst[PATH_MAX];
  snprintf(rel, rel_size, "blobs/%.2s/%s-%llu.hgsnap", id, id, (unsigned long long)size);
  snprintf(dir, sizeof dir, "%s/blobs/%.2s", data_dir, id);
  snprintf(dst, sizeof dst, "%s/%s", data_dir, rel);
  struct stat st;
  int err = 0;
  if (!stat(dst, &st) && (uint64_t)st.st_size == size) { /* the same content is already there */
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
