// classes.cpp — fixture source for the Mach-O tests (built by mk/macho.mk with
// clang++-14 for arm64/x86_64 macOS, linked by ld64.lld as executable, dylib
// and bundle). Every polymorphic class below must show up in
// `heapgraph macho --typeinfo`; classes.expected lists them. No #include: the
// fake SDK has no headers.
namespace std { class type_info; }
extern "C" int puts(const char *);

struct Base { virtual ~Base() {} virtual int f() { return 1; } int b = 0; };
struct Derived : Base { int f() override { return 2; } };                 // single
struct Other { virtual void g() {} };
struct Multi : Base, Other { int f() override { return 3; } };           // multiple
struct Left : virtual Base { int f() override { return 4; } };           // virtual
struct Right : virtual Base { int f() override { return 5; } };
struct Diamond : Left, Right { int f() override { return 6; } };
template <class T> struct Tmpl : Base { T t{}; int f() override { return (int)sizeof(T); } };
namespace ns { struct Outer { struct Inner : Other { void g() override {} }; }; }

// Weak definitions and a weak import, so weak-bind tables are not empty.
__attribute__((weak)) int weak_fn() { return 1; }
extern int maybe_there __attribute__((weak_import));
int (*fixture_fp)() = weak_fn;
int *fixture_mp = &maybe_there;

// A strong operator new overriding libc++abi's weak one: ld64.lld-16 lists it
// as a "strong" (non-weak definition) weak-bind entry.
void *operator new(unsigned long n) { return (void *)n; }

// typeid of a pointer and of a function pointer: __pointer_type_info and
// __function_type_info objects.
const std::type_info &ti_ptr() { return typeid(Base *); }
const std::type_info &ti_fn() { return typeid(void (*)(int)); }

static int use(Base *b) { return b->f(); }
int fixture_run() {
  Derived d; Multi m; Left l; Right r; Diamond dd; Tmpl<int> ti; Tmpl<double> td;
  ns::Outer::Inner in; in.g();
  puts("fixture");
  return use(&d) + use(&m) + use(&l) + use(&r) + use(&dd) + use(&ti) + use(&td) + fixture_fp() +
         (fixture_mp ? 1 : 0);
}

#ifdef WITH_MAIN
int main() { return fixture_run(); }
#endif
