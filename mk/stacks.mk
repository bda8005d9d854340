# mk/stacks.mk — allocation stacks (capture/alloc_*.c, capture/stacks/,
# tools/cmd_stacks.c, tools/symbolize.c): the interposer objects, the
# libheapgraph_stacks.a archive for static links, the tests and the bench.
#
# capture/stacks/linux_hook.c defines malloc & co. It is linked into
# libheapgraph.so (LD_PRELOAD / DT_NEEDED interpose) and archived alone as
# libheapgraph_stacks.a; it is never in libheapgraph.a (a static link of that
# would otherwise pull in a malloc replacement just by calling malloc).

STK_DIR      := $(BUILD)/stacks
HOOK_OBJ     := $(BUILD)/obj/capture/stacks/linux/linux_hook.o $(BUILD)/obj/capture/stacks/linux/unwind_cache.o
STACKS_A     := $(BUILD)/libheapgraph_stacks.a

$(LIB_SO): $(HOOK_OBJ)
$(LIB_SO): LIBS += -lunwind
$(LIB_SO): LDFLAGS += -Wl,-z,start-stop-visibility=hidden
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
endif
$(STK_DIR)/inproc $(STK_DIR)/memo: $(STK_DIR)/%: tests/stacks/%.c $(STACKS_A) $(LIB_A) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests -std=c11 -O2 -g -fomit-frame-pointer $(WARN) -o $@ $< \
	  $(STACKS_A) $(LIB_A) $(LIBS) -lunwind
