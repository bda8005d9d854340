// stress_cxx.cpp — C++ churn for the capture stress test: new/delete of
// polymorphic objects and containers while captures run.
#include <memory>
#include <string>
#include <vector>

namespace {
struct Base {
  virtual ~Base() = default;
  virtual int f() const { return 1; }
};
struct Derived : Base {
  std::string name;
  std::vector<int> v;
  explicit Derived(int n) : name(static_cast<size_t>(n % 64) + 20, 'x'), v(static_cast<size_t>(n % 100)) {}
  int f() const override { return static_cast<int>(v.size()); }
};
}  // namespace

extern "C" int stress_cxx_churn(unsigned seed) {
  std::vector<std::unique_ptr<Base>> keep;
  int sum = 0;
  for (int i = 0; i < 64; i++) {
    seed = seed * 1103515245u + 12345u;
    if (seed & 1) keep.emplace_back(new Derived(static_cast<int>(seed >> 8)));
    else keep.emplace_back(new Base());
    if (keep.size() > 16) keep.erase(keep.begin());
  }
  for (auto &p : keep) sum += p->f();
  return sum;
}
