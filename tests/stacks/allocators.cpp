// allocators.cpp — one C++ program for every allocator (tests/stacks/
// allocators.sh links it with glibc, jemalloc, tcmalloc and mimalloc, and
// preloads them): known numbers of objects of three classes (held from a
// global array, no destructor runs at exit), every allocation entry point
// the interposer forwards (malloc family, aligned, C++ new/delete plain,
// nothrow, sized, aligned, arrays), churn on two threads, and one planted
// leak: a cycle of two Leaked objects dropped at the end of main.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <thread>

struct Base {
  virtual ~Base() {}
  long x[3] = {1, 2, 3};
};
struct Alpha : Base {
  Base *peer = nullptr;
};
struct Beta : Base {
  char *text = strdup("beta beta beta beta beta beta");
};
struct alignas(64) Wide : Base {
  long y[10] = {};
};
// A size class the churn never uses (it stays under 256 bytes). The
// churn threads' stacks, cached by glibc after they exit, hold stale block
// addresses; they are not roots (docs/capture.md "Threads that exited"),
// which the planted cycle checks on every allocator.
struct Leaked : Base {
  Leaked *other = nullptr;
  char pad[400] = {};
};

enum { N_ALPHA = 1000, N_BETA = 500, N_WIDE = 100 };
Base *keep[N_ALPHA + N_BETA + N_WIDE]; // global: the stores are not dead

static void churn(unsigned seed) {
  for (unsigned i = 0; i < 20000; i++) {
    size_t n = (i * 7919u + seed) % 120 + 1;
    void *p = (i & 3) == 0 ? calloc(1, n) : malloc(n);
    if (!p) abort();
    memset(p, 1, n);
    if ((i & 7) == 1) p = realloc(p, n * 2);
    free(p);
    char *a = new char[n];
    delete[] a;
    Alpha *q = new (std::nothrow) Alpha;
    delete q;
    Wide *w = new Wide; // aligned new and (sized) aligned delete
    delete w;
  }
}

Base *guard; // global: held

// The cycle, then a third Leaked held after it (the same size, so on glibc
// it comes right after b): a free chunk that follows a block (the top
// chunk, a remainder) has its header inside that block's usable size, and
// the arena's pointer to it, in libc's data, would conservatively root the
// block (found here; a concern of the scan, not of this test).
__attribute__((noinline)) static void plant_leak() {
  Leaked *a = new Leaked, *b = new Leaked;
  a->other = b;
  b->other = a;
  guard = new Leaked;
  __asm__ volatile("" ::: "memory");
}

// The cycle's addresses off the stack below main's frame, where
// plant_leak ran (the capture at exit runs over that depth again).
// plant_leak keeps b in a callee-saved register across `new`, whose frames
// spill it deeper down; 64 KiB covers them and what printing "ok" leaves.
// Then the caller-saved registers are zeroed too (x86_64: the only target
// of this Linux test; gcc 16 on glibc 2.43 left b in a spilled slot at the
// capture at exit, a conservative root).
__attribute__((noinline)) static void wipe_stack() {
  volatile char wipe[65536];
  memset((char *)wipe, 0, sizeof wipe);
  __asm__ volatile("" ::: "memory");
#if defined(__x86_64__)
  __asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"
                   "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"
                   "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d"
                   ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11");
#endif
}

int main() {
  std::thread t1(churn, 1), t2(churn, 2);
  t1.join();
  t2.join();
  size_t k = 0;
  for (int i = 0; i < N_ALPHA; i++) keep[k++] = new Alpha;
  for (int i = 0; i < N_BETA; i++) keep[k++] = new Beta;
  for (int i = 0; i < N_WIDE; i++) keep[k++] = new Wide;
  void *p = nullptr;
  if (posix_memalign(&p, 256, 1000)) return 1;
  free(p);
  p = aligned_alloc(128, 1024);
  free(p);
  p = memalign(64, 100);
  free(p);
  p = valloc(100);
  free(p);
  p = malloc(100);
  if (malloc_usable_size(p) < 100) return 1;
  free(p);
  std::puts("ok");
  plant_leak();
  wipe_stack();
  return 0;
}
