/*
 * fuzz_spool.c — the spool's readers of files that may be damaged or
 * hostile: the state file parser (_hg_state_parse) and the trailer checksum
 * finder that tags a snapshot before it is queued (_hg_snapshot_checksum,
 * over the input as a file). Neither may crash, hang or read outside the
 * input; a found checksum must come from a tail that parses to the last byte.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct _hg_state st;
  _hg_state_parse(&st, (const char *)data, size);
  for (int i = 0; i < st.n; i++)
    if (strlen(st.key[i]) >= sizeof st.key[0] || strlen(st.val[i]) >= sizeof st.val[0]) __builtin_trap();
  int fd = memfd_create("fuzz_spool", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) == (ssize_t)size) {
    uint64_t sum = 0;
    if (_hg_snapshot_checksum(fd, &sum) == 0 && (size < 16 || data[size - 1] != 0xff)) __builtin_trap();
  }
  close(fd);
  return 0;
}
