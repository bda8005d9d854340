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
 *
 * The memo (unwind_cache.h): a cached walk is a function of its starting
 * (pc, sp), the rules and the words it loads: from frame (pc, sp) the next is
 * (*(sp + k - 8), sp + k) with k = rule(pc), so every frame after the first
 * has its return address at its own sp - 8. When a walk reaches a frame
 * whose (pc, sp) the thread's last complete walk also had, the rules have
 * not changed since (a generation counter) and every outer frame's slot
 * sp - 8 still holds that frame's pc, the rest of the walk would load the
 * same words and follow the same rules: it is the memo's outer part, taken
 * without a rule lookup, and its stack hash state with it. The slots lie
 * between the current sp and the top of the thread's stack (the memo's
 * frames passed the same bounds check), so checking them reads nothing the
 * walk would not. Only walks that end at a terminal frame are remembered.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>

#include "capture/stacks/alloc_record.h"
#include "capture/stacks/linux/unwind_cache.h"

#define RULES (1u << 16)
#define K_TERMINAL 0xffffu  /* unwinding ends at this pc                     */
#define K_SLOW 0xfffeu      /* never use a rule here (signal frame …)        */

static uint64_t rules[RULES];
static uint32_t rules_gen; /* changes when a pc's rule changes (memos made before are void) */
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
    if (cur) __atomic_fetch_add(&rules_gen, 1, __ATOMIC_RELEASE);
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

/* The memo's outer frames 0..j-1 still hold their return addresses: read
 * from the inside out, stopping at the first that changed, as the walk
 * would (the loads do not depend on each other, so they overlap). Returns
 * -1, or the index of that frame: no frame inside it can match either. */
static inline int outer_changed(const struct hg_unwind_memo *m, int j) {
  for (int q = j - 1; q >= 0; q--)
    if (*(const uintptr_t *)(m->sp[q] - 8) != m->pc[q]) return q;
  return -1;
}

/* The walk found its frames 0..n-1 (pcs p, sps s, innermost first) and, when
 * j >= 0, that the memo's frames 0..j continue it: out[] gets the memo's pcs
 * up to max, the memo the new frames (inner to j, their hash states folded
 * on). Returns the frames in out. */
static int finish(uintptr_t *out, int max, struct hg_unwind_memo *m, const uintptr_t *p, const uintptr_t *s,
                  int n, int j, uint32_t gen) {
  int total = n + j + 1, w = n < max ? n : max;
  for (int q = j; q >= 0 && w < max; q--) out[w++] = m->pc[q];
  if (total > HG_UNWIND_MEMO) {
    m->depth = m->whole = 0;
    return w;
  }
  uint64_t h = j >= 0 ? m->h[j] : HG_REC_HASH_SEED;
  for (int i = n - 1, q = j + 1; i >= 0; i--, q++) {
    m->pc[q] = p[i];
    m->sp[q] = s[i];
    m->h[q] = h = _hg_rec_hash_step(h, p[i]);
  }
  m->depth = (uint32_t)total;
  m->gen = gen;
  m->whole = total == w;
  return w;
}

/* One cached step from frame (*pc, *sp): STEP_SLOW when no usable rule
 * (libunwind must walk), STEP_LAST when the frame is the outermost, else
 * the caller's frame in (*pc, *sp), STEP_END when its return address is 0. */
enum { STEP_ON, STEP_LAST, STEP_END, STEP_SLOW };
static inline int step(uintptr_t *pc, uintptr_t *sp, uintptr_t hi) {
  uint32_t k = lookup(*pc);
  if (k == K_TERMINAL) return STEP_LAST;
  if (!k || k == K_SLOW || *sp + k > hi || *sp + k < *sp) return STEP_SLOW;
  *pc = *(const uintptr_t *)(*sp + k - 8);
  *sp += k;
  return *pc ? STEP_ON : STEP_END;
}

/* The walk without a memo. */
static int walk(uintptr_t *out, int max, uintptr_t pc, uintptr_t sp, uintptr_t hi) {
  uintptr_t pc0 = pc, sp0 = sp;
  int n = 0;
  while (n < max) {
    uintptr_t cur = pc;
    int st = step(&pc, &sp, hi);
    if (st == STEP_SLOW) return slow(out, max, pc0, sp0);
    out[n++] = cur;
    if (st != STEP_ON) return n;
  }
  return n;
}

/* ---- kept walks (unwind_cache.h) ---- */

static inline struct hg_walk *walk_slot(struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp) {
  return &m->walks[(((pc ^ (sp << 7)) * 0x9e3779b97f4a7c15ull) >> 60) & (HG_WALKS - 1)];
}

uint32_t _hg_unwind_recall(struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp) {
  const struct hg_walk *w = walk_slot(m, pc, sp);
  if (w->sp0 != sp || w->pc[0] != pc || w->gen != __atomic_load_n(&rules_gen, __ATOMIC_ACQUIRE)) return 0;
  /* frame i's return address is at its sp - 8: read inside out, as the
   * walk would, up to the first that changed */
  for (uint32_t i = 1; i < w->n; i++)
    if (*(const uintptr_t *)(sp + w->off[i] - 8) != w->pc[i]) return 0;
  m->recalled++;
  return w->id;
}

void _hg_unwind_keep(struct hg_unwind_memo *m, int n, uint32_t id) {
  if (!m || !m->whole || (uint32_t)n != m->depth || n > HG_WALK_FRAMES || !id) return;
  uintptr_t pc = m->pc[n - 1], sp = m->sp[n - 1];
  if (m->sp[0] - sp > UINT32_MAX) return;
  struct hg_walk *w = walk_slot(m, pc, sp);
  for (int i = 0; i < n; i++) {
    w->pc[i] = m->pc[n - 1 - i];
    w->off[i] = (uint32_t)(m->sp[n - 1 - i] - sp);
  }
  w->sp0 = sp;
  w->id = id;
  w->n = (uint32_t)n;
  w->gen = m->gen;
}

#define DEEP_PAUSE 64u /* walks without the memo after one too deep for it */

int _hg_unwind_cached(uintptr_t *out, int max, struct hg_unwind_memo *m, uintptr_t pc, uintptr_t sp) {
  uintptr_t pc0 = pc, sp0 = sp;
  uintptr_t hi = thread_stack_hi();
  if (!m || m->deep_pause) {
    if (m) {
      m->deep_pause--;
      m->whole = 0;
    }
    return walk(out, max, pc, sp, hi);
  }
  /* new frames go to p/s (and out, up to max); j scans the memo outward for
   * the first frame at or above sp */
  uintptr_t p[HG_UNWIND_MEMO], s[HG_UNWIND_MEMO];
  uint32_t gen = __atomic_load_n(&rules_gen, __ATOMIC_ACQUIRE);
  int j = m->depth && m->gen == gen ? (int)m->depth - 1 : -1, n = 0;
  m->whole = 0;
  while (n < HG_UNWIND_MEMO) {
    while (j >= 0 && m->sp[j] < sp) j--;
    if (j >= 0 && m->sp[j] == sp && m->pc[j] == pc) {
      int q = outer_changed(m, j);
      if (q < 0) {
        m->spliced++;
        return finish(out, max, m, p, s, n, j, gen);
      }
      m->changed++;
      j = q - 1; /* the frames from q in cannot match: go on outside it */
    }
    p[n] = pc;
    s[n] = sp;
    if (n < max) out[n] = pc;
    int st = step(&pc, &sp, hi);
    if (st == STEP_SLOW) return slow(out, max, pc0, sp0);
    n++;
    if (st == STEP_LAST) return finish(out, max, m, p, s, n, -1, gen);
    if (st == STEP_END) break; /* an end the memo could not check: not remembered */
  }
  if (n == HG_UNWIND_MEMO) m->deep_pause = DEEP_PAUSE; /* deeper than the memo */
  m->depth = 0;
  return n < max ? n : max;
}
