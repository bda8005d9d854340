# mk/stacks.mk — allocation stacks (capture/alloc_*.c, capture/stacks/,
# tools/cmd_stacks.c, tools/symbolize.c): the interposer objects, the
# libheapgraph_stacks.a archive for static links, the tests and the bench.
#
# capture/stacks/linux/linux_hook.c defines malloc & co. It is linked into
# libheapgraph_stacks.so (libheapgraph.so's objects plus the interposer, with
# libheapgraph.so's SONAME: `heapgraph run --stacks` preloads it, and a
# program linked with libheapgraph.so then gets it in place of that one) and
# archived alone as libheapgraph_stacks.a for static links; it is never in
# libheapgraph.so or libheapgraph.a (their users would otherwise get malloc
# interposed just by linking them).

STK_DIR      := $(BUILD)/stacks
HOOK_OBJ     := $(patsubst %,$(BUILD)/obj/capture/stacks/linux/%.o,linux_hook next_alloc unwind_cache)
STACKS_A     := $(BUILD)/libheapgraph_stacks.a
STACKS_SO    := $(BUILD)/libheapgraph_stacks.so.$(VERSION)

$(STACKS_SO): $(LIB_OBJ) $(HOOK_OBJ)
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=include/heapgraph.map \
	  -Wl,-z,start-stop-visibility=hidden $(LDFLAGS) -o $@ $^ $(LIBS) -lunwind

$(BUILD)/libheapgraph_stacks.so: $(STACKS_SO)
	ln -sf libheapgraph_stacks.so.$(VERSION) $@

all: $(BUILD)/libheapgraph_stacks.so
# symbolication in the CLI (ELF: elfutils libdw)
CLI_LIBS     += -ldw -lelf

$(STACKS_A): $(HOOK_OBJ)
	rm -f $@ && ar rcs $@ $^

all: $(STACKS_A)
-include $(HOOK_OBJ:.o=.d)

# ---- tests ----
# Test programs are never sanitized and never linked with libheapgraph: they
# run under `heapgraph run --stacks` (LD_PRELOAD). No frame pointers, so
# stacks must come from .eh_frame.
STK_NOFP     := -std=c11 -O2 -g -fomit-frame-pointer $(WARN)
TEST_PROGS   += $(STK_DIR)/sites $(STK_DIR)/libsite.so
TEST_SCRIPTS += tests/stacks/stacks.sh

$(STK_DIR)/sites: tests/stacks/sites.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE $(STK_NOFP) -o $@ $< -lpthread -ldl

$(STK_DIR)/libsite.so: tests/stacks/libsite.c
	@mkdir -p $(dir $@)
	$(CC) $(STK_NOFP) -fPIC -shared -o $@ $<

# Every allocator (tests/stacks/allocators.sh): one C++ program linked with
# glibc, jemalloc, tcmalloc_minimal and mimalloc (scripts/deps.sh check and
# allocators install ALLOC_PKG.*), run under `heapgraph run` with and without
# --stacks, and preloaded. Never sanitized (the preloaded agent would need
# ASan first). Whether an allocator is there is decided when its program's
# recipe runs, not when make reads this file: make runs deps.sh at the end
# of that read, so on a fresh machine the packages arrive only then. A
# library that does not link leaves $@.absent instead of the program, and
# the script fails unless this system's apt has no such package at all.
ALLOC_ALL    := glibc jemalloc tcmalloc mimalloc
ALLOC_SO.jemalloc   := jemalloc
ALLOC_SO.tcmalloc   := tcmalloc_minimal
ALLOC_SO.mimalloc   := mimalloc
ALLOC_PROGS  := $(ALLOC_ALL:%=$(STK_DIR)/allocators-%)
ifneq ($(SANITIZE),1)
TEST_PROGS   += $(ALLOC_PROGS)
TEST_SCRIPTS += tests/stacks/allocators.sh
endif
# the glibc matrix's target (scripts/check-matrix.sh): the library, the CLI
# and the programs of the allocators this root has, then the script
.PHONY: check-allocators
check-allocators: all $(ALLOC_PROGS)
	@BUILD=$(BUILD) sh tests/stacks/allocators.sh

$(STK_DIR)/allocators-%: tests/stacks/allocators.cpp
	@mkdir -p $(dir $@)
	@rm -f $@.absent
	@so='$(ALLOC_SO.$*)'; \
	if [ -n "$$so" ] && ! $(CXX) -print-file-name=lib$$so.so | grep -q /; then \
	  rm -f $@; echo "$@: lib$$so.so not found by $(CXX); not built" | tee $@.absent; \
	else set -x; $(CXX) -std=c++17 -O1 -g -Wall -Wextra -Werror -o $@ $< -pthread $${so:+-l$$so}; fi

# ---- bench: make bench-stacks (part of `make bench`) ----
BENCH_TARGETS += bench-stacks
build/bench/bench_stacks_work: bench/bench_stacks_work.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<

.PHONY: bench-stacks
bench-stacks: build/bench/bench_stacks_work all
	@sh $(DEPS) bench
	@sh bench/bench_stacks.sh build

# In-process: a static link with the interposer archive (never sanitized:
# ASan owns malloc; the ASan library has no interposer to test).
# memo: the unwinder's memo of the last walk checked against libunwind.
ifneq ($(SANITIZE),1)
TEST_PROGS   += $(STK_DIR)/inproc $(STK_DIR)/memo
TEST_SCRIPTS += $(STK_DIR)/inproc $(STK_DIR)/memo
# stop: hg_stacks_stop and a restart
TEST_PROGS   += $(STK_DIR)/stop
TEST_SCRIPTS += $(STK_DIR)/stop
endif
$(STK_DIR)/inproc $(STK_DIR)/memo $(STK_DIR)/stop: $(STK_DIR)/%: tests/stacks/%.c $(STACKS_A) $(LIB_A) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests -std=c11 -O2 -g -fomit-frame-pointer $(WARN) -o $@ $< \
	  $(STACKS_A) $(LIB_A) $(LIBS) -lunwind
