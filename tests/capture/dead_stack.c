/*
 * dead_stack.c — stale words below a thread's stack pointer are not roots
 * (issue 18, item 2). Four threads each keep the only copy of a
 * malloc(100) pointer below the red zone (rsp-136 … rsp-184), clear the red
 * zone and their registers (general purpose and XMM) and wait in a raw
 * futex syscall from a shallow stack (the thread's start routine), where
 * glibc's static TLS range reaches below the stack pointer. In both modes
 * every one of the four blocks must be a leak, and no memory word may be
 * reported as a root twice (stack and TLS used to overlap). Also a unit
 * test of the range arithmetic (capture/root_clip.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/root_clip.h"
#include "heapgraph.h"
#include "hg_test.h"

#define HOLDERS 4
#define KEY 0x5a5a5a5a5a5a5a5aull

/* hg_dead_park(p, off, word): stores p at rsp - off, zeroes the red zone,
 * clears every register that could hold p and waits while *word == 0. */
void hg_dead_park(void *p, long off, _Atomic int *word);
__asm__(".text\n.globl hg_dead_park\n.type hg_dead_park,@function\nhg_dead_park:\n"
        "  push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
        "  mov %rsp, %rax\n sub %rsi, %rax\n mov %rdi, (%rax)\n"
        "  lea -128(%rsp), %rcx\n xor %eax, %eax\n"
        "1: movq $0, (%rcx)\n add $8, %rcx\n cmp %rsp, %rcx\n jb 1b\n"
        "  mov %rdx, %rdi\n xor %esi, %esi\n mov $128, %esi\n xor %edx, %edx\n"
        "  xor %r10, %r10\n xor %r8, %r8\n xor %r9, %r9\n xor %rbx, %rbx\n xor %rbp, %rbp\n"
        "  xor %r12, %r12\n xor %r13, %r13\n xor %r14, %r14\n xor %r15, %r15\n xor %rcx, %rcx\n"
        "  pxor %xmm0, %xmm0\n pxor %xmm1, %xmm1\n pxor %xmm2, %xmm2\n pxor %xmm3, %xmm3\n"
        "  pxor %xmm4, %xmm4\n pxor %xmm5, %xmm5\n pxor %xmm6, %xmm6\n pxor %xmm7, %xmm7\n"
        "  pxor %xmm8, %xmm8\n pxor %xmm9, %xmm9\n pxor %xmm10, %xmm10\n pxor %xmm11, %xmm11\n"
        "  pxor %xmm12, %xmm12\n pxor %xmm13, %xmm13\n pxor %xmm14, %xmm14\n pxor %xmm15, %xmm15\n"
        "2: mov $202, %eax\n syscall\n cmpl $0, (%rdi)\n je 2b\n"
        "  pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n ret\n"
        ".size hg_dead_park, .-hg_dead_park\n");

static _Atomic int go_home;
static _Atomic uint64_t hidden[HOLDERS]; /* addresses, xor KEY: not pointers */
static _Atomic int ready;

static void *holder(void *arg) {
  long k = (long)(intptr_t)arg;
  void *p = malloc(100);
  atomic_store(&hidden[k], (uint64_t)(uintptr_t)p ^ KEY);
  atomic_fetch_add(&ready, 1);
  hg_dead_park(p, 136 + 16 * k, &go_home);
  return NULL;
}

static void test_range_minus(void) {
  uint64_t o[2][2];
  CHECK_EQ_U(_hg_range_minus(10, 20, 30, 40, o), 1);
  CHECK(o[0][0] == 10 && o[0][1] == 20);
  CHECK_EQ_U(_hg_range_minus(10, 20, 5, 15, o), 1);
  CHECK(o[0][0] == 15 && o[0][1] == 20);
  CHECK_EQ_U(_hg_range_minus(10, 20, 12, 15, o), 2);
  CHECK(o[0][0] == 10 && o[0][1] == 12 && o[1][0] == 15 && o[1][1] == 20);
  CHECK_EQ_U(_hg_range_minus(10, 20, 0, 40, o), 0);
  CHECK_EQ_U(_hg_range_minus(10, 20, 15, 15, o), 1);
  CHECK_EQ_U(_hg_range_minus(20, 10, 0, 5, o), 0);
}

static void test_clip(void) {
  /* mapping [1000, 9000); SP-128 at 8000; TLS computed as [7500, 8800) */
  struct hg_root_clip k = {1000, 9000, 8000, 7500, 8800, 0, 0};
  _hg_clip_thread_roots(&k);
  CHECK(k.tls_lo == 8000 && k.tls_hi == 8800);
  CHECK(k.stack_lo == 8800 && k.stack_hi == 9000); /* no word twice */
  /* deep stack: TLS above SP; the stack stops where TLS begins */
  struct hg_root_clip d = {1000, 9000, 3000, 7500, 8800, 0, 0};
  _hg_clip_thread_roots(&d);
  CHECK(d.tls_lo == 7500 && d.tls_hi == 8800);
  CHECK(d.stack_lo == 3000 && d.stack_hi == 7500);
  /* TLS elsewhere (the main thread's): untouched, stack = live part */
  struct hg_root_clip m = {1000, 9000, 3000, 20000, 21000, 0, 0};
  _hg_clip_thread_roots(&m);
  CHECK(m.tls_lo == 20000 && m.tls_hi == 21000);
  CHECK(m.stack_lo == 3000 && m.stack_hi == 9000);
  /* TLS wholly in the dead stack: gone */
  struct hg_root_clip g = {1000, 9000, 8000, 2000, 3000, 0, 0};
  _hg_clip_thread_roots(&g);
  CHECK(g.tls_hi <= g.tls_lo);
  /* no stack mapping known: TLS kept, no stack */
  struct hg_root_clip n = {0, 0, 0, 5000, 6000, 0, 0};
  _hg_clip_thread_roots(&n);
  CHECK(n.tls_lo == 5000 && n.tls_hi == 6000 && n.stack_hi <= n.stack_lo);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void capture_and_check(uint32_t mode) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/hg_dead_stack_%d.hgsnap", (int)getpid());
  struct hg_options o;
  hg_options_init(&o);
  o.mode = mode;
  REQUIRE(hg_capture(path, &o) == 0);
  struct hg_load_error err;
  struct hg_graph *g = hg_graph_load(path, &err);
  unlink(path);
  REQUIRE(g != NULL);
  struct hg_leaks *l = NULL;
  REQUIRE(hg_leaks_find(g, &l) == 0);
  int found = 0;
  for (int k = 0; k < HOLDERS; k++) {
    int64_t n = hg_graph_find(g, atomic_load(&hidden[k]) ^ KEY);
    CHECK(n >= 0);
    for (uint32_t i = 0; n >= 0 && i < l->count; i++)
      if (l->leaks[i].node == (uint32_t)n) {
        found++;
        break;
      }
  }
  fprintf(stderr, "dead_stack %s: %d of %d planted blocks are leaks\n",
          mode == HG_MODE_FORK ? "fork" : "suspend", found, HOLDERS);
  CHECK_EQ_U(found, HOLDERS);
  /* no memory word reported twice (registers have no address) */
  uint64_t *addrs = calloc(g->root_count + 1, sizeof *addrs);
  size_t na = 0, dup = 0;
  for (uint32_t r = 0; r < g->root_count; r++)
    if (g->roots[r].kind != HG_ROOT_REGISTER) addrs[na++] = g->roots[r].addr;
  qsort(addrs, na, sizeof *addrs, cmp_u64);
  for (size_t i = 1; i < na; i++) dup += addrs[i] == addrs[i - 1];
  CHECK_EQ_U(dup, 0);
  free(addrs);
  hg_leaks_free(l);
  hg_graph_free(g);
}

static void test_fork(void) { capture_and_check(HG_MODE_FORK); }
static void test_suspend(void) { capture_and_check(HG_MODE_SUSPEND); }

int main(void) {
  RUN(test_range_minus);
  RUN(test_clip);
  pthread_t th[HOLDERS];
  for (long k = 0; k < HOLDERS; k++) pthread_create(&th[k], NULL, holder, (void *)(intptr_t)k);
  while (atomic_load(&ready) < HOLDERS) usleep(1000);
  usleep(20000); /* all in the futex wait */
  RUN(test_fork);
  RUN(test_suspend);
  atomic_store(&go_home, 1);
  for (int k = 0; k < HOLDERS; k++) {
    syscall(202, &go_home, 129 /* FUTEX_WAKE_PRIVATE */, 1, NULL, NULL, 0);
  }
  for (int k = 0; k < HOLDERS; k++) {
    syscall(202, &go_home, 129, HOLDERS, NULL, NULL, 0);
    pthread_join(th[k], NULL);
  }
  for (int k = 0; k < HOLDERS; k++) free((void *)(uintptr_t)(atomic_load(&hidden[k]) ^ KEY));
  return hg_test_done();
}
