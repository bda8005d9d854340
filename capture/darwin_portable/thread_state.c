/*
 * thread_state.c — Darwin thread states (the bytes thread_get_state fills)
 * to register root words, the stack pointer, and the stack range to scan.
 *
 * Layouts, defined here by offset (checked against the SDK's structs by
 * static asserts in capture/darwin/threads.c when cross-compiling):
 *   ARM_THREAD_STATE64   x0..x28 @0, fp @232, lr @240, sp @248, pc @256,
 *                        cpsr u32 @264, flags u32 @268 (arm64e: fp/lr/sp/pc
 *                        may carry pointer-authentication bits)
 *   ARM_NEON_STATE64     q0..q31 (16 bytes each) @0, fpsr @512, fpcr @516
 *   x86_THREAD_STATE64   rax rbx rcx rdx rdi rsi rbp rsp r8..r15 rip rflags
 *                        cs fs gs, 8 bytes each
 *   x86_AVX_STATE64      fxsave-like: xmm0..15 @168 (16 bytes each),
 *                        ymm high halves @588 (16 bytes each)
 * Every vector register is split into its two 64-bit halves: each may hold
 * a pointer (compilers keep pointers in vector registers when copying).
 *
 * Pointer authentication: xnu signs fp/lr/sp/pc in the thread state of
 * arm64e processes only (osfmk/arm64/status.c); the signature sits above
 * the process's VA size, which is 47 bits on macOS but 39 on iOS
 * (osfmk/arm64/proc_reg.h T0SZ_BOOT 25 with 16K pages and subpage L1), or
 * 47 again for iOS processes with extended VA. The mask is therefore a
 * runtime fact (_hg_pac_va_mask) passed in by the caller.
 *
 * TLS: libpthread puts each thread's pthread_t, whose tsd[] slots hold the
 * thread-local-variable buffers (dyld ThreadLocalVariables.cpp) and the
 * autorelease pool's hot page (objc4 NSObject.mm), at the top of the
 * thread's stack allocation (libpthread pthread.c _pthread_allocate:
 * t = allocaddr + pthreadoff); _hg_darwin_tls_range clips that struct
 * (sizeof(struct _opaque_pthread_t), public) to the VM region holding it.
 *
 * Pure and portable (unit-tested on Linux); never calls malloc.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

static uint64_t word(const uint8_t *p, size_t off) {
  uint64_t v;
  memcpy(&v, p + off, sizeof v);
  return v;
}

static uint32_t put(uint64_t *regs, uint32_t n, uint32_t max, uint64_t v) {
  if (n < max) regs[n++] = v;
  return n;
}

uint64_t _hg_pac_va_mask(uint64_t probe) {
  /* a stripped all-ones address is 2^k - 1 for a VA size of k bits */
  if (probe & (probe + 1)) return HG_ARM64_VA_MASK;
  if (probe < (1ull << 32) - 1 || probe > (1ull << 55) - 1) return HG_ARM64_VA_MASK;
  return probe;
}

uint64_t _hg_pac_strip(uint64_t v, uint64_t va_mask) {
  return v & (va_mask ? va_mask : HG_ARM64_VA_MASK);
}

uint32_t _hg_thread_state_regs(int cpu, const void *gp, size_t gp_bytes, const void *vec,
                               size_t vec_bytes, uint64_t va_mask, uint64_t *regs, uint32_t max,
                               uint64_t *sp) {
  const uint8_t *g = gp, *v = vec;
  uint32_t n = 0;
  *sp = 0;
  if (!g) return 0;
  if (cpu == HG_CPU_ARM64) {
    if (gp_bytes < HG_ARM_THREAD_STATE64_COUNT * 4u) return 0;
    for (size_t i = 0; i < 29; i++) n = put(regs, n, max, word(g, i * 8));
    n = put(regs, n, max, _hg_pac_strip(word(g, HG_ARM_TS_FP), va_mask));
    n = put(regs, n, max, _hg_pac_strip(word(g, HG_ARM_TS_LR), va_mask));
    *sp = _hg_pac_strip(word(g, HG_ARM_TS_SP), va_mask);
    n = put(regs, n, max, *sp);
    if (v && vec_bytes >= 512)
      for (size_t i = 0; i < 64; i++) n = put(regs, n, max, word(v, i * 8));
    return n;
  }
  if (cpu == HG_CPU_X86_64) {
    if (gp_bytes < HG_X86_THREAD_STATE64_COUNT * 4u) return 0;
    for (size_t i = 0; i < 16; i++) n = put(regs, n, max, word(g, i * 8)); /* rax … r15 */
    *sp = word(g, HG_X86_TS_RSP);
    if (v && vec_bytes >= HG_X86_AVX_YMMH0 + 256) {
      for (size_t i = 0; i < 32; i++) n = put(regs, n, max, word(v, HG_X86_AVX_XMM0 + i * 8));
      for (size_t i = 0; i < 32; i++) n = put(regs, n, max, word(v, HG_X86_AVX_YMMH0 + i * 8));
    } else if (v && vec_bytes >= HG_X86_AVX_XMM0 + 256) {
      for (size_t i = 0; i < 32; i++) n = put(regs, n, max, word(v, HG_X86_AVX_XMM0 + i * 8));
    }
    return n;
  }
  return 0;
}

#define RED_ZONE 128u

int _hg_stack_range(uint64_t sp, uint64_t top, uint64_t size, uint64_t rlo, uint64_t rhi,
                    uint64_t *lo, uint64_t *hi) {
  *lo = *hi = 0;
  uint64_t bottom, end;
  if (top && size && size <= top) { /* pthread's own record wins */
    bottom = top - size;
    end = top;
  } else if (rhi > rlo) {           /* else the VM region holding sp */
    bottom = rlo;
    end = rhi;
  } else {
    return 0;
  }
  if (sp < bottom || sp > end) return 0;
  uint64_t start = sp >= RED_ZONE ? sp - RED_ZONE : 0;
  if (start < bottom) start = bottom;
  *lo = start & ~(uint64_t)7;
  *hi = end & ~(uint64_t)7;
  return *hi > *lo;
}

int _hg_darwin_tls_range(uint64_t pthread, uint64_t size, uint64_t rlo, uint64_t rhi,
                         uint64_t *lo, uint64_t *hi) {
  *lo = *hi = 0;
  if (!pthread || (pthread & 7) || !size || rhi <= rlo || pthread < rlo || pthread >= rhi)
    return 0;
  uint64_t end = pthread + size < pthread || pthread + size > rhi ? rhi : pthread + size;
  *lo = pthread;
  *hi = end & ~(uint64_t)7;
  return *hi > *lo;
}
