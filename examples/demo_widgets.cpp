// demo_widgets.cpp — the demo's C++ part: a small widget tree of polymorphic
// classes (single inheritance, a template, a class in a namespace), so the
// snapshot shows C++ objects classified by vtable -> type_info.
#include <string>
#include <vector>

namespace ui {
struct View {
  virtual ~View() = default;
  std::vector<View *> children;
  std::string name;
};
struct Button : View {
  int clicks = 0;
};
struct Label : View {
  std::string text = "a label long enough to live on the heap";
};
template <typename T>
struct Cache : View {
  std::vector<T> items;
};
}  // namespace ui

static ui::View *g_root;  // a root: the widget tree stays reachable

extern "C" long demo_widgets_build(int count) {
  g_root = new ui::View;
  long made = 1;
  for (int i = 0; i < count; i++) {
    ui::View *v;
    if (i % 3 == 0)
      v = new ui::Button;
    else if (i % 3 == 1)
      v = new ui::Label;
    else
      v = new ui::Cache<double>;
    v->name = "widget-" + std::to_string(i) + "-with-a-heap-allocated-name";
    g_root->children.push_back(v);
    made++;
  }
  return made;
}
