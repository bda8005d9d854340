/*
 * leak_cycle.cpp — an unmodified C++ program (never linked with
 * libheapgraph) that leaks a cycle of two objects at the end of main, for
 * leak_cycle.sh (issue 26: with --stacks the leak was rooted by "global …
 * in libc.so.6"). The cycle is made last, so that the second object sits
 * right before the top chunk, whose address in main_arena (libc's data)
 * falls in that object's last 8 bytes (the top chunk's prev_size field).
 * Every small size class is cached before, so that what runs after main
 * (stdio, the at-exit capture) allocates from the tcache and the bins, not
 * from the top chunk. Prints the two addresses ("cycle 0x… 0x…").
 */
#include <cstdio>
#include <cstdlib>

struct Node {
  virtual ~Node() {}
  Node *other = nullptr;
  long payload[4] = {};
};

Node *volatile g_sink;
static void *g_pre[64][16];

__attribute__((noinline)) static void leak_cycle() {
  Node *a = new Node, *b = new Node;
  a->other = b;
  b->other = a;
  std::printf("cycle %p %p\n", static_cast<void *>(a), static_cast<void *>(b));
  g_sink = a; /* no copy of a or b stays in a register or on the stack */
  g_sink = nullptr;
}

/* Overwrites the dead stack below main's frame. */
__attribute__((noinline)) static void scrub() {
  char buf[4096];
  for (int i = 0; i < 4096; i++) buf[i] = 0;
  __asm__ volatile("" : : "r"(buf) : "memory");
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (int s = 0; s < 64; s++)
    for (int i = 0; i < 16; i++) g_pre[s][i] = std::malloc(16 + 16 * static_cast<size_t>(s));
  void *big = std::malloc(60000);
  leak_cycle();
  for (int s = 0; s < 64; s++)
    for (int i = 0; i < 16; i++) std::free(g_pre[s][i]);
  std::free(big);
  scrub();
  return 0;
}
