/*
 * fuzz_msl.c — libFuzzer target for the MallocStackLogging index reader
 * (graph/msl.c): every input is read with the width detected and forced to
 * 16 and 24 bytes; on success the summary is checked for consistency (live
 * counts per stack add up, stacks sorted). Must never crash, hang or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "graph/msl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint32_t widths[3] = {0, 16, 24};
  for (int w = 0; w < 3; w++) {
    struct hg_msl_summary s;
    struct hg_msl_error e;
    if (_hg_msl_read(data, size, widths[w], &s, &e) != 0) continue;
    uint64_t live = 0, records = 0;
    for (size_t i = 0; i < s.nstacks; i++) {
      live += s.stacks[i].live_count;
      if (i && s.stacks[i - 1].live_bytes < s.stacks[i].live_bytes) abort();
    }
    for (int k = 0; k < HG_MSL_EV_COUNT; k++) records += s.events[k];
    if (live != s.live_count || records != s.records || s.records * s.width + s.trailing_bytes != size)
      abort();
    _hg_msl_free(&s);
  }
  return 0;
}
