/*
 * test_darwin_helpers.c — the portable logic of the Darwin backend, on
 * Linux: user_tag names and kinds, thread states to register roots and
 * stack ranges, Mach-O in-memory header parsing and root-segment selection.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

static void test_tag_names(void) {
  CHECK(!strcmp(_hg_darwin_tag_name(1), "MALLOC"));
  CHECK(!strcmp(_hg_darwin_tag_name(7), "MALLOC_TINY"));
  CHECK(!strcmp(_hg_darwin_tag_name(11), "MALLOC_NANO"));
  CHECK(!strcmp(_hg_darwin_tag_name(12), "MALLOC_MEDIUM"));
  CHECK(!strcmp(_hg_darwin_tag_name(30), "Stack"));
  CHECK(!strcmp(_hg_darwin_tag_name(51), "CoreAnimation"));
  CHECK(!strcmp(_hg_darwin_tag_name(239), "Rosetta 10"));
  CHECK(_hg_darwin_tag_name(0) == NULL);
  CHECK(_hg_darwin_tag_name(14) == NULL);
  CHECK(_hg_darwin_tag_name(255) == NULL);
  char buf[32];
  CHECK(!strcmp(_hg_darwin_tag_label(0, buf, sizeof buf), "VM_ALLOCATE"));
  CHECK(!strcmp(_hg_darwin_tag_label(200, buf, sizeof buf), "Memory Tag 200"));
  CHECK(!strcmp(_hg_darwin_tag_label(240, buf, sizeof buf), "Application Specific 1"));
  CHECK(!strcmp(_hg_darwin_tag_label(255, buf, sizeof buf), "Application Specific 16"));
  CHECK(!strcmp(_hg_darwin_tag_label(3, buf, sizeof buf), "MALLOC_LARGE"));
  char tiny[8];
  CHECK(!strcmp(_hg_darwin_tag_label(200, tiny, sizeof tiny), "Memory Tag")); /* no overflow */
}

static void test_tag_kinds(void) {
  for (uint32_t t = 0; t < 256; t++) {
    uint32_t k = _hg_darwin_tag_kind(t);
    int m = _hg_darwin_tag_is_malloc(t);
    CHECK(m == (t == 1 || t == 2 || t == 3 || t == 4 || t == 6 || t == 7 || t == 8 || t == 9 ||
                t == 11 || t == 12 || t == 13));
    CHECK(k == (m ? (uint32_t)HG_RK_HEAP : t == 30 ? (uint32_t)HG_RK_STACK : (uint32_t)HG_RK_OTHER));
  }
}

static void put64(uint8_t *p, size_t off, uint64_t v) { memcpy(p + off, &v, 8); }

static void test_arm_state(void) {
  uint8_t gp[HG_ARM_THREAD_STATE64_COUNT * 4];
  uint8_t vec[HG_ARM_NEON_STATE64_COUNT * 4];
  memset(gp, 0, sizeof gp);
  memset(vec, 0, sizeof vec);
  for (int i = 0; i < 29; i++) put64(gp, (size_t)i * 8, 0x1000 + (uint64_t)i);
  put64(gp, HG_ARM_TS_FP, 0xa5b0000100002000ull); /* PAC bits above bit 47 */
  put64(gp, HG_ARM_TS_LR, 0x0000000100003000ull);
  put64(gp, HG_ARM_TS_SP, 0x002f00016fdff000ull);
  put64(gp, HG_ARM_TS_PC, 0x0000000100004000ull);
  for (int i = 0; i < 64; i++) put64(vec, (size_t)i * 8, 0x5000 + (uint64_t)i);
  uint64_t regs[HG_MAX_REGS], sp;
  uint32_t n = _hg_thread_state_regs(HG_CPU_ARM64, gp, sizeof gp, vec, sizeof vec, 0, regs, HG_MAX_REGS, &sp);
  CHECK_EQ_U(n, HG_MAX_REGS); /* 32 general + 64 vector halves, capped at 64 */
  CHECK_EQ_U(regs[0], 0x1000);
  CHECK_EQ_U(regs[28], 0x1000 + 28);
  CHECK_EQ_U(regs[29], 0x0000000100002000ull); /* fp stripped */
  CHECK_EQ_U(regs[30], 0x0000000100003000ull);
  CHECK_EQ_U(regs[31], 0x000000016fdff000ull);
  CHECK_EQ_U(sp, 0x000000016fdff000ull);
  CHECK_EQ_U(regs[32], 0x5000);
  CHECK_EQ_U(regs[63], 0x5000 + 31);
  /* without the vector state: 32 words */
  n = _hg_thread_state_regs(HG_CPU_ARM64, gp, sizeof gp, NULL, 0, 0, regs, HG_MAX_REGS, &sp);
  CHECK_EQ_U(n, 32);
  /* short state: refused */
  CHECK_EQ_U(_hg_thread_state_regs(HG_CPU_ARM64, gp, sizeof gp - 4, NULL, 0, 0, regs, HG_MAX_REGS, &sp), 0);
  CHECK_EQ_U(sp, 0);
  /* a small output buffer is never overrun */
  uint64_t few[5] = {0, 0, 0, 0, 0xdead};
  n = _hg_thread_state_regs(HG_CPU_ARM64, gp, sizeof gp, vec, sizeof vec, 0, few, 4, &sp);
  CHECK_EQ_U(n, 4);
  CHECK_EQ_U(few[4], 0xdead);
  CHECK_EQ_U(_hg_thread_state_regs(99, gp, sizeof gp, NULL, 0, 0, regs, HG_MAX_REGS, &sp), 0);
}

/* Signed pointers per VA size: a 39-bit iOS process carries signature
 * bits from bit 39 up, which a 47-bit mask leaves in place. */
static void test_pac_va(void) {
  CHECK_EQ_U(_hg_pac_va_mask(0x0000007fffffffffull), HG_ARM64_VA_MASK_39);
  CHECK_EQ_U(_hg_pac_va_mask(0x00007fffffffffffull), HG_ARM64_VA_MASK);
  CHECK_EQ_U(_hg_pac_va_mask(0x0000000fffffffffull), 0x0000000fffffffffull); /* 36 bits */
  CHECK_EQ_U(_hg_pac_va_mask(0), HG_ARM64_VA_MASK);                  /* no probe    */
  CHECK_EQ_U(_hg_pac_va_mask(0x0000007ffffff0ffull), HG_ARM64_VA_MASK); /* not 2^k-1 */
  CHECK_EQ_U(_hg_pac_va_mask(0xfffffffull), HG_ARM64_VA_MASK);        /* too small  */
  CHECK_EQ_U(_hg_pac_va_mask(UINT64_MAX), HG_ARM64_VA_MASK);          /* too large  */
  uint64_t addr39 = 0x000000016fdff010ull;
  uint64_t signed39 = addr39 | (0x5a3bull << 39); /* signature in bits 39..54 */
  CHECK_EQ_U(_hg_pac_strip(signed39, HG_ARM64_VA_MASK_39), addr39);
  CHECK(_hg_pac_strip(signed39, HG_ARM64_VA_MASK) != addr39); /* the old 47-bit strip */
  uint64_t addr47 = 0x00006ffe12345670ull;
  uint64_t signed47 = addr47 | (0x7full << 47);
  CHECK_EQ_U(_hg_pac_strip(signed47, HG_ARM64_VA_MASK), addr47);
  CHECK_EQ_U(_hg_pac_strip(signed47, 0), addr47);
  /* thread state of a 39-bit arm64e process */
  uint8_t gp[HG_ARM_THREAD_STATE64_COUNT * 4];
  memset(gp, 0, sizeof gp);
  put64(gp, HG_ARM_TS_FP, 0x000000016fdff100ull | (0x1234ull << 39));
  put64(gp, HG_ARM_TS_LR, 0x0000000102003000ull | (0x7777ull << 39));
  put64(gp, HG_ARM_TS_SP, 0x000000016fdff000ull | (0x00a1ull << 39));
  uint64_t regs[HG_MAX_REGS], sp;
  uint32_t n = _hg_thread_state_regs(HG_CPU_ARM64, gp, sizeof gp, NULL, 0, HG_ARM64_VA_MASK_39,
                                     regs, HG_MAX_REGS, &sp);
  CHECK_EQ_U(n, 32);
  CHECK_EQ_U(regs[29], 0x000000016fdff100ull);
  CHECK_EQ_U(regs[30], 0x0000000102003000ull);
  CHECK_EQ_U(sp, 0x000000016fdff000ull);
}

/* The pthread_t (TSD slots) as a TLS root range. */
static void test_tls_range(void) {
  uint64_t lo, hi;
  /* a secondary thread: the pthread_t at the top of its stack allocation */
  CHECK(_hg_darwin_tls_range(0x16f000000 + 0x80000 + 0x3000, HG_DARWIN_PTHREAD_SIZE, 0x16f000000,
                             0x16f000000 + 0x80000 + 0x3000 + 0x2000, &lo, &hi));
  CHECK_EQ_U(lo, 0x16f083000ull);
  CHECK_EQ_U(hi, 0x16f085000ull);
  /* clipped at the region's end */
  CHECK(_hg_darwin_tls_range(0x10000, HG_DARWIN_PTHREAD_SIZE, 0x8000, 0x11000, &lo, &hi));
  CHECK_EQ_U(hi, 0x11000);
  /* no pthread, misaligned, outside the region, empty, wrapping */
  CHECK(!_hg_darwin_tls_range(0, HG_DARWIN_PTHREAD_SIZE, 0x8000, 0x11000, &lo, &hi));
  CHECK(!_hg_darwin_tls_range(0x10004, HG_DARWIN_PTHREAD_SIZE, 0x8000, 0x11000, &lo, &hi));
  CHECK(!_hg_darwin_tls_range(0x20000, HG_DARWIN_PTHREAD_SIZE, 0x8000, 0x11000, &lo, &hi));
  CHECK(!_hg_darwin_tls_range(0x10000, HG_DARWIN_PTHREAD_SIZE, 0, 0, &lo, &hi));
  CHECK(!_hg_darwin_tls_range(0x10000, 0, 0x8000, 0x11000, &lo, &hi));
  CHECK(_hg_darwin_tls_range(UINT64_MAX - 0xfff, 0x2000, UINT64_MAX - 0x1fff, UINT64_MAX, &lo, &hi));
  CHECK(hi > lo && hi <= UINT64_MAX);
}

static void test_x86_state(void) {
  uint8_t gp[HG_X86_THREAD_STATE64_COUNT * 4];
  uint8_t avx[HG_X86_AVX_STATE64_COUNT * 4];
  memset(gp, 0, sizeof gp);
  memset(avx, 0xee, sizeof avx);
  for (int i = 0; i < 21; i++) put64(gp, (size_t)i * 8, 0x7000 + (uint64_t)i);
  for (int i = 0; i < 32; i++) put64(avx, HG_X86_AVX_XMM0 + (size_t)i * 8, 0x8000 + (uint64_t)i);
  for (int i = 0; i < 32; i++) put64(avx, HG_X86_AVX_YMMH0 + (size_t)i * 8, 0x9000 + (uint64_t)i);
  uint64_t regs[HG_MAX_REGS + 16], sp;
  uint32_t n = _hg_thread_state_regs(HG_CPU_X86_64, gp, sizeof gp, avx, sizeof avx, 0, regs,
                                     HG_MAX_REGS + 16, &sp);
  CHECK_EQ_U(n, 16 + 64);
  CHECK_EQ_U(sp, 0x7000 + 7); /* rsp is the 8th word */
  CHECK_EQ_U(regs[7], 0x7000 + 7);
  CHECK_EQ_U(regs[15], 0x7000 + 15); /* r15; rip/rflags/segments are not roots */
  CHECK_EQ_U(regs[16], 0x8000);
  CHECK_EQ_U(regs[47], 0x8000 + 31);
  CHECK_EQ_U(regs[48], 0x9000);
  CHECK_EQ_U(regs[79], 0x9000 + 31);
  /* float state only (no AVX): xmm halves */
  n = _hg_thread_state_regs(HG_CPU_X86_64, gp, sizeof gp, avx, 524, 0, regs, HG_MAX_REGS, &sp);
  CHECK_EQ_U(n, 16 + 32);
  CHECK_EQ_U(regs[47], 0x8000 + 31);
}

static void test_stack_range(void) {
  uint64_t lo, hi;
  /* pthread info: stack [0x10000, 0x20000) */
  CHECK(_hg_stack_range(0x1f000, 0x20000, 0x10000, 0, 0, &lo, &hi));
  CHECK_EQ_U(lo, 0x1f000 - 128);
  CHECK_EQ_U(hi, 0x20000);
  /* red zone clipped at the bottom */
  CHECK(_hg_stack_range(0x10010, 0x20000, 0x10000, 0, 0, &lo, &hi));
  CHECK_EQ_U(lo, 0x10000);
  /* pthread info wins over the region */
  CHECK(_hg_stack_range(0x1f000, 0x20000, 0x10000, 0x1e000, 0x1f800, &lo, &hi));
  CHECK_EQ_U(hi, 0x20000);
  /* region fallback */
  CHECK(_hg_stack_range(0x1f000, 0, 0, 0x1e000, 0x1f800, &lo, &hi));
  CHECK_EQ_U(lo, 0x1f000 - 128);
  CHECK_EQ_U(hi, 0x1f800);
  /* sp outside the stack */
  CHECK(!_hg_stack_range(0x30000, 0x20000, 0x10000, 0, 0, &lo, &hi));
  CHECK(!_hg_stack_range(0x0f000, 0x20000, 0x10000, 0, 0, &lo, &hi));
  CHECK_EQ_U(lo | hi, 0);
  /* nothing known */
  CHECK(!_hg_stack_range(0x1f000, 0, 0, 0, 0, &lo, &hi));
  /* absurd size is not trusted: region used */
  CHECK(_hg_stack_range(0x1f000, 0x20000, 0x30000, 0x1e000, 0x1f800, &lo, &hi));
  CHECK_EQ_U(hi, 0x1f800);
  /* unaligned sp */
  CHECK(_hg_stack_range(0x1f00b, 0x20000, 0x10000, 0, 0, &lo, &hi));
  CHECK_EQ_U(lo & 7, 0);
}

/* A hand-built in-memory Mach-O header. */
struct mbuf {
  uint8_t b[4096];
  size_t len;
  uint32_t ncmds;
};
static void m_u32(struct mbuf *m, uint32_t v) { memcpy(m->b + m->len, &v, 4); m->len += 4; }
static void m_u64(struct mbuf *m, uint64_t v) { memcpy(m->b + m->len, &v, 8); m->len += 8; }
static void m_name(struct mbuf *m, const char *s) {
  memset(m->b + m->len, 0, 16);
  memcpy(m->b + m->len, s, strlen(s));
  m->len += 16;
}
static void m_header(struct mbuf *m) {
  memset(m, 0, sizeof *m);
  m_u32(m, 0xfeedfacf); m_u32(m, 0x0100000c); m_u32(m, 0); m_u32(m, 2);
  m_u32(m, 0); m_u32(m, 0); m_u32(m, 0); m_u32(m, 0);
}
static void m_seg(struct mbuf *m, const char *name, uint64_t vmaddr, uint64_t vmsize, uint32_t prot,
                  uint32_t nsects) {
  m_u32(m, 0x19); m_u32(m, 72 + 80 * nsects); m_name(m, name);
  m_u64(m, vmaddr); m_u64(m, vmsize); m_u64(m, 0); m_u64(m, vmsize);
  m_u32(m, 7); m_u32(m, prot); m_u32(m, nsects); m_u32(m, 0);
  memset(m->b + m->len, 0, 80 * nsects);
  m->len += 80 * nsects;
  m->ncmds++;
}
static void m_finish(struct mbuf *m) {
  uint32_t sz = (uint32_t)(m->len - 32);
  memcpy(m->b + 16, &m->ncmds, 4);
  memcpy(m->b + 20, &sz, 4);
}

static void test_macho_parse(void) {
  struct mbuf m;
  m_header(&m);
  m_seg(&m, "__PAGEZERO", 0, 0x100000000ull, 0, 0);
  m_seg(&m, "__TEXT", 0x100000000ull, 0x4000, 5, 2);
  m_seg(&m, "__DATA_CONST", 0x100004000ull, 0x4000, 3, 1);
  m_seg(&m, "__DATA", 0x100008000ull, 0x4000, 3, 3);
  m_seg(&m, "__DATA_DIRTY", 0x10000c000ull, 0x4000, 3, 0);
  m_seg(&m, "__AUTH_CONST", 0x100010000ull, 0x4000, 3, 0);
  m_seg(&m, "__OBJC_RO", 0x100014000ull, 0x4000, 1, 0);
  m_u32(&m, 0x1b); m_u32(&m, 24);
  for (int i = 0; i < 16; i++) m.b[m.len++] = (uint8_t)(0xa0 + i);
  m.ncmds++;
  m_seg(&m, "__LINKEDIT", 0x100018000ull, 0x8000, 1, 0);
  m_finish(&m);
  struct hg_macho_info info;
  REQUIRE(_hg_macho_parse(m.b, m.len, &info) == 0);
  CHECK_EQ_U(info.cputype, 0x0100000c);
  CHECK_EQ_U(info.filetype, 2);
  CHECK_EQ_U(info.nsegs, 8);
  CHECK(info.has_uuid);
  CHECK_EQ_U(info.uuid[0], 0xa0);
  CHECK_EQ_U(info.uuid[15], 0xaf);
  CHECK_EQ_U(info.text_vmaddr, 0x100000000ull);
  CHECK_EQ_U(info.lo, 0x100000000ull); /* __PAGEZERO excluded */
  CHECK_EQ_U(info.hi, 0x100020000ull);
  const char *roots[] = {"__DATA_CONST", "__DATA", "__DATA_DIRTY", "__AUTH_CONST"};
  int nroot = 0;
  for (uint32_t i = 0; i < info.nsegs; i++) {
    int want = 0;
    for (int k = 0; k < 4; k++) want |= !strcmp(info.segs[i].name, roots[k]);
    CHECK_EQ_U(info.segs[i].root, want);
    nroot += info.segs[i].root;
  }
  CHECK_EQ_U(nroot, 4);
  CHECK(_hg_macho_is_root_segment("__AUTH\0\0\0\0\0\0\0\0\0\0"));
  CHECK(!_hg_macho_is_root_segment("__DATAX\0\0\0\0\0\0\0\0\0"));
  /* a full 16-character name without NUL is handled */
  CHECK(!_hg_macho_is_root_segment("__DATA_CONST_XYZ"));
}

static void test_macho_hostile(void) {
  struct mbuf m;
  m_header(&m);
  m_seg(&m, "__TEXT", 0x100000000ull, 0x4000, 5, 0);
  m_seg(&m, "__DATA", 0x100004000ull, 0x4000, 3, 0);
  m_finish(&m);
  struct hg_macho_info info;
  REQUIRE(_hg_macho_parse(m.b, m.len, &info) == 0);
  /* every truncation is refused, never read past */
  for (size_t cut = 0; cut < m.len; cut++) CHECK(_hg_macho_parse(m.b, cut, &info) == HG_EFORMAT);
  /* bad magic */
  uint8_t save = m.b[0];
  m.b[0] = 0xce;
  CHECK(_hg_macho_parse(m.b, m.len, &info) == HG_EFORMAT);
  m.b[0] = save;
  /* ncmds larger than the commands present */
  uint32_t big = 3;
  memcpy(m.b + 16, &big, 4);
  CHECK(_hg_macho_parse(m.b, m.len, &info) == HG_EFORMAT);
  big = 2;
  memcpy(m.b + 16, &big, 4);
  /* cmdsize 0 (would loop forever), too small, past the end */
  uint32_t bad[] = {0, 4, 71, 0x10000};
  for (int i = 0; i < 4; i++) {
    memcpy(m.b + 32 + 4, &bad[i], 4);
    CHECK(_hg_macho_parse(m.b, m.len, &info) == HG_EFORMAT);
  }
  uint32_t ok = 72;
  memcpy(m.b + 32 + 4, &ok, 4);
  /* vmaddr + vmsize wrapping */
  uint64_t wrap = UINT64_MAX - 10;
  memcpy(m.b + 32 + 24, &wrap, 8);
  CHECK(_hg_macho_parse(m.b, m.len, &info) == HG_EFORMAT);
  CHECK(_hg_macho_parse(NULL, 100, &info) == HG_EFORMAT);
}

int main(void) {
  RUN(test_tag_names);
  RUN(test_tag_kinds);
  RUN(test_arm_state);
  RUN(test_pac_va);
  RUN(test_tls_range);
  RUN(test_x86_state);
  RUN(test_stack_range);
  RUN(test_macho_parse);
  RUN(test_macho_hostile);
  return hg_test_done();
}
