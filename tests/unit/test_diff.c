/*
 * test_diff.c — per-class snapshot comparison: growth order, new and gone
 * classes, the unclassified bucket, classes matched by name not id.
 */
#include "hg_test.h"
#include "graph_fixture.h"

static void test_diff(void) {
  struct fx *a = fx_new(4);
  uint32_t a_foo = fx_class(a, "Foo"), a_bar = fx_class(a, "Bar");
  a->cls[0] = a_foo, a->cls[1] = a_bar, a->cls[2] = a_bar; /* node 3 unclassified */
  struct hg_graph *old = fx_build(a);
  struct fx *b = fx_new(6);
  uint32_t b_bar = fx_class(b, "Bar"), b_baz = fx_class(b, "Baz"), b_foo = fx_class(b, "Foo");
  b->cls[0] = b_bar, b->cls[1] = b_baz, b->cls[2] = b_baz, b->cls[3] = b_foo, b->cls[4] = b_foo;
  b->size[1] = 100;
  struct hg_graph *nw = fx_build(b); /* node 5 unclassified */
  struct hg_diff *d = NULL;
  REQUIRE(hg_diff_classes(old, nw, &d) == 0);
  REQUIRE(d->count == 4);
  CHECK(!strcmp(d->classes[0].name, "Baz")); /* +101 bytes, new class */
  CHECK_EQ_U(d->classes[0].old_count, 0);
  CHECK_EQ_U(d->classes[0].new_count, 2);
  CHECK_EQ_U(d->classes[0].new_bytes, 101);
  CHECK(!strcmp(d->classes[1].name, "Foo")); /* +1 */
  CHECK_EQ_U(d->classes[1].old_count, 1);
  CHECK_EQ_U(d->classes[1].new_count, 2);
  CHECK(d->classes[2].name == NULL);         /* unclassified: 0 */
  CHECK(!strcmp(d->classes[3].name, "Bar")); /* -1 */
  CHECK_EQ_U(d->old_count, 4);
  CHECK_EQ_U(d->new_bytes, 105);
  hg_diff_free(d);
  hg_graph_free(old);
  hg_graph_free(nw);
}

static void test_many_classes(void) {
  /* More classes than the initial table: forces rehashing. */
  static char names[1000][16];
  struct fx *a = fx_new(1000);
  struct hg_graph *old = NULL, *nw = NULL;
  uint32_t *cls = a->cls;
  a->nclasses = 0;
  struct hg_class *classes = calloc(1000, sizeof *classes);
  for (int i = 0; i < 1000; i++) {
    snprintf(names[i], sizeof names[i], "C%d", i);
    classes[i] = (struct hg_class){names[i], HG_CLASS_CXX, 0};
    cls[i] = (uint32_t)i + 1;
  }
  old = fx_build(a);
  free(old->classes);
  old->classes = classes;
  old->class_count = 1000;
  nw = fx_build(fx_new(0));
  struct hg_diff *d = NULL;
  REQUIRE(hg_diff_classes(old, nw, &d) == 0);
  CHECK_EQ_U(d->count, 1000);
  CHECK_EQ_U(d->old_count, 1000);
  hg_diff_free(d);
  hg_graph_free(old);
  hg_graph_free(nw);
}

int main(void) {
  RUN(test_diff);
  RUN(test_many_classes);
  return hg_test_done();
}
