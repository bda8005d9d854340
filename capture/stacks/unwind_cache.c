/*
 * unwind_cache.c — the interposer's fast unwinder (x86_64 Linux): a cache of
 * "CFA = RSP + k at this return address" rules, learnt from libunwind's
 * .eh_frame unwinding, so the common allocation walks one cached rule per
 * frame instead of interpreting CFI.
 *
 * A frame at return address pc with stack pointer sp has its caller's return
 * address at *(sp + k - 8) and the caller's sp = sp + k. The rule table is
 * global, open-addressed, 2^16 entries of one 64-bit word (pc << 16 | k),
 * written with relaxed atomics (a torn entry cannot exist). A walk uses only
 * cached rules; at the first frame whose pc is not cached (or whose rule
 * leads off the thread's stack) the whole stack is unwound by libunwind
 * (unw_step, CFI from .eh_frame) and every frame's k learnt. libunwind
 * reports the frame where unwinding ends (e.g. _start, clone): its pc is
 * cached as terminal. Signal frames are never cached.
 *
 * Where k is not a constant of the return address (frames sized at run
 * time, alloca), a learnt rule can be wrong on a later walk; every step is
 * checked (the next sp stays inside the thread's stack and above the last,
 * the next pc must itself be cached or the walk falls back to libunwind), so
 * a wrong rule can at worst cut or misattribute the outer part of a stack,
 * never read outside the stack. HEAPGRAPH_UNWIND=libunwind turns the cache
 * off (docs/stacks.md has the measurements behind this choice).
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>

#include "capture/stacks/unwind_cache.h"

#define RULES (1u << 16)
#define K_TERMINAL 0xffffu  /* unwinding ends at this pc                     */
#define K_SLOW 0xfffeu      /* never use a rule here (signal frame …)        */

static uint64_t rules[RULES];
static __thread uintptr_t stack_hi __attribute__((tls_model("initial-exec")));

static inline uint32_t slot(uintptr_t pc) { return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 48); }

static inline uint32_t lookup(uintptr_t pc) {
  for (uint32_t i = slot(pc), n = 0; n < 8; i = (i + 1) & (RULES - 1), n++) {
    uint64_t e = __atomic_load_n(&rules[i], __ATOMIC_RELAXED);
    if (!e) return 0;
    if ((e >> 16) == pc) return (uint32_t)(e & 0xffff);
  }
  return 0;
}

static void learn_rule(uintptr_t pc, uint32_t k) {
  if (pc >> 48) return;
  uint64_t e = ((uint64_t)pc << 16) | k;
  for (uint32_t i = slot(pc), n = 0; n < 8; i = (i + 1) & (RULES - 1), n++) {
    uint64_t cur = __atomic_load_n(&rules[i], __ATOMIC_RELAXED);
    if (cur && (cur >> 16) != pc) continue;
    if (cur == e) return;
    __atomic_store_n(&rules[i], e, __ATOMIC_RELAXED);
    return;
  }
}

static uintptr_t thread_stack_hi(void) {
  if (stack_hi) return stack_hi;
  pthread_attr_t a;
  void *lo;
  size_t sz;
  /* may call malloc (main thread): the caller's re-entrancy guard is set */
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &lo, &sz) == 0) stack_hi = (uintptr_t)lo + sz;
    pthread_attr_destroy(&a);
  }
  if (!stack_hi) stack_hi = UINTPTR_MAX;
  return stack_hi;
}

/* Full libunwind walk from our own frame; frames before (pc0, sp0) are ours
 * and skipped; every later frame's rule is learnt. */
static __attribute__((noinline)) int slow(uintptr_t *out, int max, uintptr_t pc0, uintptr_t sp0) {
  unw_context_t uc;
  unw_cursor_t c;
  if (unw_getcontext(&uc) || unw_init_local(&c, &uc)) return 0;
  int n = 0, found = 0;
  for (int guard = 0; guard < 512; guard++) {
    unw_word_t ip = 0, sp = 0;
    unw_get_reg(&c, UNW_REG_IP, &ip);
    unw_get_reg(&c, UNW_REG_SP, &sp);
    if (!found && ip == pc0 && sp == sp0) found = 1;
    int sig = unw_is_signal_frame(&c) > 0;
    if (found && n < max) out[n++] = (uintptr_t)ip;
    int r = unw_step(&c);
    if (r <= 0) {
      if (found) learn_rule((uintptr_t)ip, K_TERMINAL);
      break;
    }
    if (!found) continue;
    unw_word_t sp2 = 0;
    unw_get_reg(&c, UNW_REG_SP, &sp2);
    uint64_t k = (uint64_t)(sp2 - sp);
    learn_rule((uintptr_t)ip, sig || sp2 <= sp || k >= K_SLOW || (k & 7) ? K_SLOW : (uint32_t)k);
    if (n >= max) break;
  }
  return n;
}

int _hg_unwind_cached(uintptr_t *out, int max) {
  uintptr_t pc = (uintptr_t)__builtin_return_address(0);
  uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa(), pc0 = pc, sp0 = sp;
  uintptr_t hi = thread_stack_hi();
  int n = 0;
  while (n < max) {
    uint32_t k = lookup(pc);
    if (k == K_TERMINAL) {
      out[n++] = pc;
      return n;
    }
    if (!k || k == K_SLOW || sp + k > hi || sp + k < sp) return slow(out, max, pc0, sp0);
    out[n++] = pc;
    uintptr_t ra = *(const uintptr_t *)(sp + k - 8);
    sp += k;
    pc = ra;
    if (!pc) return n;
  }
  return n;
}
