/*
 * test_msl.c — graph/msl.c on index files generated here from the record
 * definitions of libmalloc-166.251.2 src/stack_logging_disk.c:
 *   stack_logging_index_event64 {uint64 argument, address, offset_and_flags}
 *   stack_logging_index_event32 {uint32 argument, address; uint64 offset_and_flags}
 *   address = STACK_LOGGING_DISGUISE(ptr) = ptr ^ 0x00005555
 *     (private/stack_logging.h)
 *   offset_and_flags = STACK_LOGGING_OFFSET_AND_FLAGS(stack id, type_flags)
 *     = (id & 0x0000FFFFFFFFFFFF) | type_flags << 56
 *       | (type_flags & 0xFF000000) << 24   (VM user tag -> bits 48-55)
 * and written the way __disk_stack_logging_log_stack writes them: type
 * flags masked with stack_logging_valid_type_flags (no zone/cleared bits),
 * realloc as a free of the old pointer then an alloc of the new one,
 * free's argument 0, and the compaction that drops a malloc freed right
 * away (the record is removed, not followed by a free).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/msl.h"
#include "heapgraph.h"
#include "hg_test.h"

struct gen {
  uint8_t buf[1 << 16];
  size_t len;
  int wide; /* 24-byte records */
};

static void put(uint8_t *p, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* STACK_LOGGING_OFFSET_AND_FLAGS */
static uint64_t off_flags(uint64_t id, uint32_t type_flags) {
  return (id & 0x0000FFFFFFFFFFFFull) | ((uint64_t)type_flags << 56) |
         (((uint64_t)type_flags & 0xFF000000ull) << 24);
}

static void rec(struct gen *g, uint64_t argument, uint64_t ptr, uint64_t id, uint32_t type_flags) {
  unsigned w = g->wide ? 8 : 4;
  uint8_t *p = g->buf + g->len;
  put(p, argument, w);
  put(p + w, ptr ^ 0x00005555u, w); /* STACK_LOGGING_DISGUISE */
  put(p + 2 * w, off_flags(id, type_flags), 8);
  g->len += 2 * w + 8;
}

/* The writer's calls (malloc.c -> __disk_stack_logging_log_stack). */
static void w_malloc(struct gen *g, uint64_t ptr, uint64_t size, uint64_t id) { rec(g, size, ptr, id, 2); }
static void w_free(struct gen *g, uint64_t ptr, uint64_t id) { rec(g, 0, ptr, id, 4); }
static void w_realloc(struct gen *g, uint64_t old, uint64_t ptr, uint64_t size, uint64_t id) {
  w_free(g, old, id); /* "realloc(arg1, arg2) -> result is same as free(arg1); malloc(arg2)" */
  w_malloc(g, ptr, size, id);
}

/* A session: 3 stacks, frees, a realloc, VM events with a user tag. */
static void session(struct gen *g, int wide) {
  memset(g, 0, sizeof *g);
  g->wide = wide;
  uint64_t base = wide ? 0x600000a00000ull : 0x06b00000u;
  for (uint64_t i = 0; i < 100; i++) w_malloc(g, base + i * 0x40, 48, 0x1111); /* 100 x 48 */
  for (uint64_t i = 0; i < 40; i++) w_free(g, base + i * 0x40, 0x9999);         /* 60 left */
  w_malloc(g, base + 0x10000, 1000, 0x2222);
  w_realloc(g, base + 0x10000, base + 0x20000, 5000, 0x3333);                  /* moves to 0x3333 */
  w_malloc(g, base + 0x30000, 7, 0xABCDEF012345ull);                          /* a 48-bit id */
  w_free(g, base + 0x7770, 0x9999);                                           /* never allocated */
  rec(g, 65536, base + 0x100000, 0x4444, 16 | (33u << 24));                   /* vm_allocate, tag 33 */
  rec(g, 65536, base + 0x100000, 0x4444, 32);                                 /* vm_deallocate */
}

static const struct hg_msl_stack *stack(const struct hg_msl_summary *s, uint64_t id) {
  for (size_t i = 0; i < s->nstacks; i++)
    if (s->stacks[i].id == id) return &s->stacks[i];
  return NULL;
}

static void check_session(const struct hg_msl_summary *s, uint32_t width) {
  CHECK_EQ_U(s->width, width);
  CHECK_EQ_U(s->records, 147);
  CHECK_EQ_U(s->events[HG_MSL_EV_ALLOC], 103);
  CHECK_EQ_U(s->events[HG_MSL_EV_FREE], 42);
  CHECK_EQ_U(s->events[HG_MSL_EV_VM_ALLOCATE], 1);
  CHECK_EQ_U(s->events[HG_MSL_EV_VM_DEALLOCATE], 1);
  CHECK_EQ_U(s->events[HG_MSL_EV_INVALID], 0);
  CHECK_EQ_U(s->unmatched_frees, 1);
  CHECK_EQ_U(s->live_count, 62);
  CHECK_EQ_U(s->live_bytes, 60 * 48 + 5000 + 7);
  CHECK_EQ_U(s->trailing_bytes, 0);
  REQUIRE(s->nstacks == 4);
  CHECK_EQ_U(s->stacks[0].id, 0x3333); /* biggest live bytes first: 5000 */
  CHECK_EQ_U(s->stacks[1].id, 0x1111); /* 60 x 48 */
  CHECK_EQ_U(s->stacks[1].live_count, 60);
  CHECK_EQ_U(s->stacks[1].allocs, 100);
  const struct hg_msl_stack *r = stack(s, 0x3333), *gone = stack(s, 0x2222), *big = stack(s, 0xABCDEF012345ull);
  REQUIRE(r && gone && big);
  CHECK(r->live_count == 1 && r->live_bytes == 5000);
  CHECK(gone->live_count == 0 && gone->live_bytes == 0 && gone->allocs == 1);
  CHECK(big->live_count == 1 && big->live_bytes == 7);
  CHECK(stack(s, 0x9999) == NULL); /* frees' stacks own no blocks */
}

static void test_widths(void) {
  static struct gen g;
  struct hg_msl_summary s;
  struct hg_msl_error e;
  for (int wide = 0; wide <= 1; wide++) {
    session(&g, wide);
    REQUIRE(_hg_msl_read(g.buf, g.len, 0, &s, &e) == 0); /* detected */
    CHECK(s.width_detected);
    check_session(&s, wide ? 24 : 16);
    _hg_msl_free(&s);
    REQUIRE(_hg_msl_read(g.buf, g.len, wide ? 24 : 16, &s, &e) == 0); /* given */
    CHECK(!s.width_detected);
    check_session(&s, wide ? 24 : 16);
    _hg_msl_free(&s);
    /* the wrong width, forced: records read as garbage are flagged invalid */
    REQUIRE(_hg_msl_read(g.buf, g.len, wide ? 16 : 24, &s, &e) == 0);
    CHECK(s.events[HG_MSL_EV_INVALID] > 0);
    _hg_msl_free(&s);
  }
}

static void test_hostile(void) {
  static struct gen g;
  struct hg_msl_summary s;
  struct hg_msl_error e;
  /* a cut file: the partial record is reported with its offset */
  session(&g, 1);
  REQUIRE(_hg_msl_read(g.buf, g.len - 5, 0, &s, &e) == 0);
  CHECK_EQ_U(s.records, 146);
  CHECK_EQ_U(s.trailing_bytes, 19);
  _hg_msl_free(&s);
  /* a record with the zone flag (the writer masks it out) */
  session(&g, 0);
  g.buf[5 * 16 + 15] |= 0x08;
  REQUIRE(_hg_msl_read(g.buf, g.len, 16, &s, &e) == 0);
  CHECK_EQ_U(s.events[HG_MSL_EV_INVALID], 1);
  CHECK_EQ_U(s.first_invalid, 5 * 16);
  _hg_msl_free(&s);
  /* not an index file: an error at offset 0, nothing allocated */
  for (size_t i = 0; i < 4096; i++) g.buf[i] = (uint8_t)(i * 7 + 1);
  CHECK(_hg_msl_read(g.buf, 4096, 0, &s, &e) == HG_EFORMAT);
  CHECK_EQ_U(e.offset, 0);
  CHECK(strstr(e.message, "offset 0") != NULL);
  CHECK(s.stacks == NULL);
  CHECK(_hg_msl_read(g.buf, 4096, 20, &s, &e) == HG_EINVAL);
  /* empty and tiny files */
  CHECK(_hg_msl_read(g.buf, 0, 0, &s, &e) == 0 && s.records == 0);
  CHECK(_hg_msl_read(g.buf, 7, 0, &s, &e) == 0 && s.records == 0 && s.trailing_bytes == 7);
  /* the same address allocated twice without a free between (a lost
   * record): counted once, the latest wins */
  memset(&g, 0, sizeof g);
  g.wide = 1;
  w_malloc(&g, 0x1000, 10, 1);
  w_malloc(&g, 0x1000, 20, 2);
  REQUIRE(_hg_msl_read(g.buf, g.len, 24, &s, &e) == 0);
  CHECK_EQ_U(s.replaced_allocs, 1);
  CHECK_EQ_U(s.live_count, 1);
  CHECK_EQ_U(s.live_bytes, 20);
  _hg_msl_free(&s);
}

/* Many blocks: the tables grow and deletions keep every lookup right. */
static void test_churn(void) {
  size_t n = 30000;
  uint8_t *buf = malloc(n * 2 * 24);
  REQUIRE(buf);
  struct gen *g = malloc(sizeof *g);
  REQUIRE(g);
  size_t len = 0;
  for (size_t i = 0; i < n; i++) { /* alloc all, free the odd ones in another order */
    g->len = 0;
    g->wide = 1;
    w_malloc(g, 0x7f0000000000ull + i * 0x30, 16 + i % 5, i % 97);
    memcpy(buf + len, g->buf, 24);
    len += 24;
  }
  for (size_t k = 0; k < n; k++) {
    size_t i = (k * 7919) % n;
    if (!(i & 1)) continue;
    g->len = 0;
    w_free(g, 0x7f0000000000ull + i * 0x30, 5);
    memcpy(buf + len, g->buf, 24);
    len += 24;
  }
  struct hg_msl_summary s;
  struct hg_msl_error e;
  REQUIRE(_hg_msl_read(buf, len, 0, &s, &e) == 0);
  CHECK_EQ_U(s.width, 24);
  CHECK_EQ_U(s.live_count, n / 2);
  CHECK_EQ_U(s.unmatched_frees, 0);
  uint64_t bytes = 0, count = 0;
  for (size_t i = 0; i < n; i += 2) bytes += 16 + i % 5;
  CHECK_EQ_U(s.live_bytes, bytes);
  for (size_t i = 0; i < s.nstacks; i++) count += s.stacks[i].live_count;
  CHECK_EQ_U(count, n / 2);
  CHECK_EQ_U(s.nstacks, 97);
  _hg_msl_free(&s);
  free(buf);
  free(g);
}

int main(void) {
  RUN(test_widths);
  RUN(test_hostile);
  RUN(test_churn);
  return hg_test_done();
}
