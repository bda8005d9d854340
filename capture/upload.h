/*
 * upload.h — internals of the uploader (upload.c, linux/upload_curl.c),
 * exposed for tests.
 */
#ifndef HG_CAPTURE_UPLOAD_H
#define HG_CAPTURE_UPLOAD_H

#include <stdint.h>

#include "heapgraph.h"

uint64_t _hg_unix_ms(void);
/* enum hg_upload_action of an HTTP status (0 = no answer). */
int _hg_upload_classify(int status);
/* The delay before try `tries` + 1: base x 2^(tries-1) capped at one hour,
 * drawn in [d/2, d] with rnd. */
uint64_t _hg_upload_backoff_ms(uint32_t base_ms, uint32_t tries, uint64_t rnd);
/* hg_upload_report with the server's message for the log; *wait_ms (may be
 * NULL) gets the delay before the next try. Returns the action. */
int _hg_upload_settle(struct hg_spool *s, const struct hg_upload_item *it, int status, uint32_t retry_after_s,
                      const char *msg, uint64_t *wait_ms);
/* "Retry-After: N" header line (seconds form; an HTTP date is 0). */
uint32_t _hg_retry_after(const char *line, size_t n);

#endif
