/*
 * fuzz_memfd.h — a fuzz input as a file for the targets that read paths
 * (fuzz_reader.c, fuzz_verify.c): written to a memfd, named by
 * /proc/self/fd/N. Header-only (each target is one translation unit).
 */
#ifndef HG_FUZZ_MEMFD_H
#define HG_FUZZ_MEMFD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* The memfd holding data (close it after use) with its path in path[n], or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t n) {
  int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < size) {
    ssize_t k = write(fd, data + done, size - done);
    if (k <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)k;
  }
  snprintf(path, n, "/proc/self/fd/%d", fd);
  return fd;
}

#endif
