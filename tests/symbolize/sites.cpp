// sites.cpp — fixture for the Mach-O symbolication tests (mk/symbolize.mk
// builds it with clang++-14 -g for arm64 and x86_64 macOS, links it with
// ld64.lld-14 as an executable and a dylib, and makes dSYMs with dsymutil).
// Every call whose return address a test frame uses is on a line ending in
// "// CALL name" (an inlined call: the line in the function that holds it):
// check_symbolize.py reads the expected line numbers from here. No #include:
// the test SDK has no headers.
extern "C" void *malloc(unsigned long);
extern "C" int puts(const char *);

#ifdef REBUILT  // another build: code moves, the linker gives a new LC_UUID
extern "C" int rebuilt_marker() { return puts("rebuilt"); }
#endif

namespace app {
struct Cache {
  void *grow(unsigned long n);
  template <class T> T *make();
};
void *Cache::grow(unsigned long n) {
  return malloc(n);  // CALL grow
}
template <class T> T *Cache::make() {
  return (T *)grow(sizeof(T));  // CALL make
}
}  // namespace app

static void *helper(int k) {
  puts("helper");  // CALL helper_puts
  return malloc((unsigned long)k);  // CALL helper
}

// Inlined even at -O0: the frame is in uses_inline, on the line of its call.
__attribute__((always_inline)) static inline void *inlined_alloc(unsigned long n) {
  return malloc(n * 2);  // INLINED (not the frame's line)
}
extern "C" void *uses_inline(unsigned long n) {
  return inlined_alloc(n + 1);  // CALL uses_inline
}

extern "C" void *c_alloc(int k) {
  app::Cache c;
  void *p = c.grow(16);  // CALL c_alloc_grow
  double *d = c.make<double>();  // CALL c_alloc_make
  return p && d ? p : helper(k);  // CALL c_alloc_helper
}

#ifdef WITH_MAIN
int main() {
  return c_alloc(3) != 0;  // CALL main
}
#endif
