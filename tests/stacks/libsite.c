/* libsite.c — a dlopen'd library with one allocation site (30 blocks),
 * built without frame pointers, for tests/stacks/stacks.sh. */
#include <stdlib.h>

__attribute__((noinline)) static void lib_alloc(void (*hold)(void *)) { hold(malloc(72)); }

void lib_site(void (*hold)(void *)) {
  for (int i = 0; i < 30; i++) lib_alloc(hold);
}
