/*
 * hg_test.h — the tiny unit-test harness every tests/unit/test_*.c uses.
 *
 *   static void test_something(void) { CHECK(x == 1); CHECK_EQ_U(a, b); }
 *   int main(void) { RUN(test_something); return hg_test_done(); }
 *
 * Each RUN counts one test as passed if none of its CHECKs failed, as
 * skipped if it called SKIP(why) (a test that cannot make its key check in
 * this build or on this machine: never counted as passed). The last line
 * printed is "N passed, N failed" plus ", N skipped" when some were (what
 * tests/run.sh and CI read).
 */
#ifndef HG_TEST_H
#define HG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* HG_TEST_ASAN: 1 in an AddressSanitizer build (where, among others, the
 * capture starts no helper thread: capture/linux/helper.c), else 0. */
#if defined(__SANITIZE_ADDRESS__)
#define HG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HG_TEST_ASAN 1
#endif
#endif
#ifndef HG_TEST_ASAN
#define HG_TEST_ASAN 0
#endif

static int hg_test_passed, hg_test_failed, hg_test_skipped, hg_test_cur_failed, hg_test_cur_skipped;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      hg_test_cur_failed = 1;                                                  \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U(a, b)                                                       \
  do {                                                                         \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                           \
    if (a_ != b_) {                                                            \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%" PRIu64 " vs %" PRIu64 ")\n", \
              __FILE__, __LINE__, #a, #b, a_, b_);                             \
      hg_test_cur_failed = 1;                                                  \
    }                                                                          \
  } while (0)

/* Fails the current test and returns from it. */
#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
      hg_test_cur_failed = 1;                                                  \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* Ends the current test as skipped, saying why on stderr. Checks that
 * failed before it still fail the test. */
#define SKIP(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "%s:%d: SKIP: %s\n", __FILE__, __LINE__, why);             \
    hg_test_cur_skipped = 1;                                                   \
    return;                                                                    \
  } while (0)

#define RUN(fn)                                                                \
  do {                                                                         \
    hg_test_cur_failed = hg_test_cur_skipped = 0;                              \
    fn();                                                                      \
    if (hg_test_cur_failed) {                                                  \
      hg_test_failed++;                                                        \
      fprintf(stderr, "FAIL %s\n", #fn);                                       \
    } else if (hg_test_cur_skipped) {                                          \
      hg_test_skipped++;                                                       \
      fprintf(stderr, "SKIP %s\n", #fn);                                       \
    } else {                                                                   \
      hg_test_passed++;                                                        \
    }                                                                          \
  } while (0)

static inline int hg_test_done(void) {
  if (hg_test_skipped)
    printf("%d passed, %d failed, %d skipped\n", hg_test_passed, hg_test_failed, hg_test_skipped);
  else
    printf("%d passed, %d failed\n", hg_test_passed, hg_test_failed);
  return hg_test_failed ? 1 : 0;
}

#endif
