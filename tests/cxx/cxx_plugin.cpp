// cxx_plugin.cpp — a shared library the C++ classification test dlopen()s:
// its classes' type_infos live in this image and are discovered only when it
// is loaded (ELF relocations against the cxxabi vtables in its own .rela.dyn).
#include <typeinfo>

namespace plug {
struct PlugBase {
  virtual ~PlugBase() {}
  virtual int kind() const { return 0; }
  long payload = 7;
};
struct PlugObject : PlugBase {
  int kind() const override { return 1; }
  double extra[3] = {1, 2, 3};
};
template <int N> struct PlugTemplate : PlugObject {
  int kind() const override { return N; }
};
}  // namespace plug

extern "C" __attribute__((visibility("default"))) void *plug_make(int which) {
  switch (which) {
  case 0: return new plug::PlugObject();
  case 1: return new plug::PlugTemplate<42>();
  default: return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) const char *plug_name(int which) {
  switch (which) {
  case 0: return typeid(plug::PlugObject).name();
  case 1: return typeid(plug::PlugTemplate<42>).name();
  default: return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void plug_free(int which, void *p) {
  if (which == 0) delete static_cast<plug::PlugObject *>(p);
  else delete static_cast<plug::PlugTemplate<42> *>(p);
}
