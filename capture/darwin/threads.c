/*
 * threads.c — freezing the task: every thread but the caller is suspended
 * with thread_suspend (task_threads re-listed until no new thread appears),
 * its registers read with thread_get_state (general + NEON / AVX state,
 * turned into root words by thread_state.c), and every suspended thread is
 * resumed by _hg_plat_thaw, on every path; all thread ports are released.
 *
 * libpthread lookups (pthread_from_mach_thread_np, stack address and size,
 * names) take libpthread's thread-list lock, which a suspended thread may
 * hold, so they are made for every thread BEFORE anything is suspended; a
 * thread born in between gets the VM region around its SP as its stack.
 * Each thread's pthread_t (TSD slots: thread-local variables, autorelease
 * pool page) is its TLS root range (thread_state.c). The suspension loop is
 * thread_set.c; _hg_darwin_threads_changed is asked after each zone's
 * enumeration.
 *
 * While frozen: Mach calls only, fixed tables in this file, no malloc.
 */
#include <mach/mach.h>
#include <pthread.h>
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

#include "capture/darwin/darwin.h"
#include "capture/platform.h"

#if defined(__aarch64__) || defined(__arm64__)
#define CPU HG_CPU_ARM64
_Static_assert(offsetof(arm_thread_state64_t, __x) == 0, "x0 offset");
_Static_assert(sizeof(arm_thread_state64_t) == HG_ARM_THREAD_STATE64_COUNT * 4, "arm state size");
_Static_assert(ARM_THREAD_STATE64 == HG_ARM_THREAD_STATE64, "arm flavor");
_Static_assert(ARM_NEON_STATE64 == HG_ARM_NEON_STATE64, "neon flavor");
_Static_assert(sizeof(arm_neon_state64_t) >= 520, "neon state size");
#else
#define CPU HG_CPU_X86_64
_Static_assert(sizeof(x86_thread_state64_t) == HG_X86_THREAD_STATE64_COUNT * 4, "x86 state size");
_Static_assert(offsetof(x86_thread_state64_t, __rsp) == HG_X86_TS_RSP, "rsp offset");
_Static_assert(offsetof(x86_avx_state64_t, __fpu_xmm0) == HG_X86_AVX_XMM0, "xmm0 offset");
_Static_assert(offsetof(x86_avx_state64_t, __fpu_ymmh0) == HG_X86_AVX_YMMH0, "ymmh0 offset");
_Static_assert(x86_THREAD_STATE64 == HG_X86_THREAD_STATE64, "x86 flavor");
_Static_assert(x86_AVX_STATE64 == HG_X86_AVX_STATE64, "avx flavor");
#endif

struct pinfo {            /* gathered before the freeze, matched by thread id */
  uint64_t tid;
  uint64_t top, size;
  uint64_t pthread;       /* the pthread_t: TSD slots, the TLS root range   */
  char name[16];
};

_Static_assert(sizeof(struct _opaque_pthread_t) == HG_DARWIN_PTHREAD_SIZE, "pthread_t size");

static struct {
  thread_act_t held[HG_DARWIN_MAX_THREADS];
  thread_act_t list[HG_DARWIN_MAX_THREADS];
  struct hg_tset set;
  struct pinfo info[HG_DARWIN_MAX_THREADS];
  uint32_t ninfo;
  uint64_t va_mask;
} S;

static uint64_t thread_id(thread_act_t t) {
  thread_identifier_info_data_t id;
  mach_msg_type_number_t n = THREAD_IDENTIFIER_INFO_COUNT;
  if (thread_info(t, THREAD_IDENTIFIER_INFO, (thread_info_t)&id, &n) != KERN_SUCCESS) return 0;
  return id.thread_id;
}

static void gather_pthread_info(void) {
  thread_act_array_t list;
  mach_msg_type_number_t n = 0;
  S.ninfo = 0;
  if (task_threads(mach_task_self(), &list, &n) != KERN_SUCCESS) return;
  for (mach_msg_type_number_t i = 0; i < n; i++) {
    if (S.ninfo < HG_DARWIN_MAX_THREADS) {
      struct pinfo *p = &S.info[S.ninfo];
      memset(p, 0, sizeof *p);
      p->tid = thread_id(list[i]);
      pthread_t pt = pthread_from_mach_thread_np(list[i]);
      if (pt) {
        p->pthread = (uint64_t)(uintptr_t)pt;
        p->top = (uint64_t)(uintptr_t)pthread_get_stackaddr_np(pt);
        p->size = (uint64_t)pthread_get_stacksize_np(pt);
        pthread_getname_np(pt, p->name, sizeof p->name);
      }
      S.ninfo++;
    }
    mach_port_deallocate(mach_task_self(), list[i]);
  }
  vm_deallocate(mach_task_self(), (vm_address_t)list, n * sizeof(thread_act_t));
}

static const struct pinfo *info_of(uint64_t tid) {
  for (uint32_t i = 0; i < S.ninfo && tid; i++)
    if (S.info[i].tid == tid) return &S.info[i];
  return NULL;
}

/* ---- the Mach side of thread_set.c ---- */

static int op_list(void *ctx, uint32_t *ids, uint32_t max, uint32_t *count) {
  (void)ctx;
  thread_act_array_t list;
  mach_msg_type_number_t n = 0;
  if (task_threads(mach_task_self(), &list, &n) != KERN_SUCCESS) return HG_EIO;
  for (mach_msg_type_number_t i = 0; i < n; i++) {
    if (i < max) ids[i] = list[i];
    else mach_port_deallocate(mach_task_self(), list[i]);
  }
  vm_deallocate(mach_task_self(), (vm_address_t)list, n * sizeof(thread_act_t));
  *count = n;
  return 0;
}

static int op_suspend(void *ctx, uint32_t t) {
  (void)ctx;
  return thread_suspend(t) == KERN_SUCCESS ? 0 : -1;
}

static void op_resume(void *ctx, uint32_t t) {
  (void)ctx;
  thread_resume(t);
}

static void op_release(void *ctx, uint32_t t) {
  (void)ctx;
  mach_port_deallocate(mach_task_self(), t);
}

static uint64_t op_now(void *ctx) {
  (void)ctx;
  return _hg_now_ns();
}

static const struct hg_tset_ops OPS = {op_list, op_suspend, op_resume, op_release, op_now};

static void resume_all(void) {
  _hg_tset_thaw(&S.set, &OPS, NULL);
  if (S.set.self != MACH_PORT_NULL) mach_port_deallocate(mach_task_self(), S.set.self);
  S.set.self = MACH_PORT_NULL;
}

/* The VA mask pointer authentication leaves: the hardware's own answer in
 * an arm64e build (xpaci of an all-ones address); arm64 processes get
 * unsigned thread state (xnu osfmk/arm64/status.c signs for arm64e only),
 * so the default mask is only a bound there. */
static uint64_t va_mask(void) {
#if defined(__arm64e__) && defined(__has_builtin)
#if __has_builtin(__builtin_ptrauth_strip)
  return _hg_pac_va_mask(
      (uint64_t)(uintptr_t)__builtin_ptrauth_strip((void *)0x007fffffffffffffull, 0));
#endif
#endif
  return HG_ARM64_VA_MASK;
}

static void set_name(struct hg_cthread *ct) {
  const struct pinfo *p = info_of(ct->tid);
  if (p) memcpy(ct->name, p->name, sizeof ct->name);
  ct->name[sizeof ct->name - 1] = 0;
}

static int read_state(thread_act_t t, struct hg_cthread *ct) {
#if defined(__aarch64__) || defined(__arm64__)
  arm_thread_state64_t gp;
  arm_neon_state64_t vec;
  mach_msg_type_number_t ng = ARM_THREAD_STATE64_COUNT, nv = ARM_NEON_STATE64_COUNT;
  if (thread_get_state(t, ARM_THREAD_STATE64, (thread_state_t)&gp, &ng) != KERN_SUCCESS)
    return -1;
  int have_vec = thread_get_state(t, ARM_NEON_STATE64, (thread_state_t)&vec, &nv) == KERN_SUCCESS;
#else
  x86_thread_state64_t gp;
  x86_avx_state64_t vec;
  mach_msg_type_number_t ng = x86_THREAD_STATE64_COUNT, nv = x86_AVX_STATE64_COUNT;
  if (thread_get_state(t, x86_THREAD_STATE64, (thread_state_t)&gp, &ng) != KERN_SUCCESS)
    return -1;
  int have_vec = thread_get_state(t, x86_AVX_STATE64, (thread_state_t)&vec, &nv) == KERN_SUCCESS;
  if (!have_vec) { /* no AVX: the float state has the same xmm layout */
    nv = x86_FLOAT_STATE64_COUNT;
    have_vec = thread_get_state(t, x86_FLOAT_STATE64, (thread_state_t)&vec, &nv) == KERN_SUCCESS;
  }
#endif
  ct->nregs = _hg_thread_state_regs(CPU, &gp, (size_t)ng * 4, have_vec ? &vec : NULL,
                                    have_vec ? (size_t)nv * 4 : 0, S.va_mask, ct->regs,
                                    HG_MAX_REGS, &ct->sp);
  return 0;
}

/* The capturing thread at hg_capture() entry: callee-saved registers
 * spilled by setjmp (the application's values live there or in the
 * caller's frames); the scan starts at the caller's frame, so the capture's
 * own frames are not roots. */
__attribute__((noinline)) void _hg_plat_self_context(struct hg_cthread *t) {
  jmp_buf jb;
  setjmp(jb);
  memset(t, 0, sizeof *t);
  uint32_t n = 0;
  uint64_t w[sizeof jb / 8];
  memcpy(w, &jb, sizeof w);
  for (size_t i = 0; i < sizeof w / 8 && n < HG_MAX_REGS; i++) t->regs[n++] = w[i];
  t->nregs = n;
  t->sp = (uint64_t)(uintptr_t)__builtin_frame_address(0) + 16;
  t->self = 1;
  thread_act_t me = mach_thread_self();
  t->tid = thread_id(me);
  mach_port_deallocate(mach_task_self(), me);
}

static int add_thread(struct hg_cap *c, thread_act_t port) {
  struct hg_cthread *t = _hg_vec_push(&c->threads, 1);
  if (!t) return HG_ENOMEM;
  t->tid = thread_id(port);
  set_name(t);
  if (read_state(port, t) != 0) t->nregs = 0; /* stack still scanned from its region */
  return 0;
}

int _hg_plat_freeze(struct hg_cap *c) {
  gather_pthread_info(); /* before anything is suspended: takes libpthread locks */
  S.va_mask = va_mask();
  _hg_vec_truncate(&c->threads, 0);
  S.set.held = S.held;
  S.set.max = HG_DARWIN_MAX_THREADS;
  S.set.scratch = S.list;
  S.set.scratch_max = HG_DARWIN_MAX_THREADS;
  S.set.self = mach_thread_self();
  uint64_t limit = (uint64_t)(c->opt->freeze_timeout_ms ? c->opt->freeze_timeout_ms : 2000) * 1000000u;
  int rc = _hg_tset_freeze(&S.set, &OPS, NULL, _hg_now_ns() + limit);
  if (rc) {
    resume_all();
    return rc;
  }
  struct hg_cthread *me = _hg_vec_push(&c->threads, 1);
  if (!me) {
    resume_all();
    return HG_ENOMEM;
  }
  *me = c->self;
  me->self = 1;
  set_name(me);
  for (uint32_t i = 0; i < S.set.nheld; i++) {
    if ((rc = add_thread(c, S.held[i]))) {
      resume_all();
      return rc;
    }
  }
  return 0;
}

/* Between two zones of the walk: a thread the kernel made since the
 * freeze (a workqueue thread) runs and may allocate; zones.c then redoes
 * the freeze and the walk (zone_policy.c _hg_zones_walk_stable). */
int _hg_darwin_threads_changed(void) { return _hg_tset_changed(&S.set, &OPS, NULL); }

void _hg_plat_thaw(struct hg_cap *c) {
  (void)c;
  resume_all();
}

/* Stack ranges: pthread's record when we have one, else the VM region that
 * holds the SP; that region is marked as a stack. */
int _hg_plat_threads_finish(struct hg_cap *c) {
  size_t n = _hg_vec_len(&c->threads);
  for (size_t i = 0; i < n; i++) {
    struct hg_cthread *t = _hg_vec_at(&c->threads, i);
    const struct pinfo *p = info_of(t->tid);
    uint64_t rlo = 0, rhi = 0;
    int64_t ri = _hg_region_find(c, t->sp);
    if (ri >= 0) {
      struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ri);
      rlo = r->start;
      rhi = r->end;
      if (r->kind != HG_RK_OWN) r->kind = HG_RK_STACK;
    }
    if (!_hg_stack_range(t->sp, p ? p->top : 0, p ? p->size : 0, rlo, rhi, &t->stack_lo,
                         &t->stack_hi))
      t->stack_lo = t->stack_hi = 0;
    /* TLS: the pthread_t and its TSD slots, unless it lies in an image's
     * data: the main thread's is a static in dyld (dyld-1378 owns it, not
     * libpthread), a global root because images.c lists dyld itself */
    t->tls_lo = t->tls_hi = 0;
    int64_t ti = p && p->pthread ? _hg_region_find(c, p->pthread) : -1;
    if (ti >= 0) {
      const struct hg_cregion *r = _hg_vec_at(&c->regions, (size_t)ti);
      if (r->kind != HG_RK_IMAGE && r->kind != HG_RK_OWN && (r->prot & HG_PROT_READ))
        _hg_darwin_tls_range(p->pthread, HG_DARWIN_PTHREAD_SIZE, r->start, r->end, &t->tls_lo,
                             &t->tls_hi);
    }
  }
  return 0;
}
