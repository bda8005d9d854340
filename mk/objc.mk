# mk/objc.mk — the Objective-C classifier (capture/classify/objc_*.c, classify_objc.c):
# its end-to-end test program built with Debian's gobjc against the GNU
# runtime (libobjc), and its benchmark. Unit tests (tests/unit/test_objc_*.c)
# are picked up by the top-level Makefile.

# The test captures itself, so it needs glibc's malloc: in the sanitizer
# build it links mk/capture.mk's UBSan-only library (ASan replaces malloc
# and leaves no ptmalloc heap); the portable core runs under ASan in the
# unit tests.
OBJCC      ?= gcc
OBJC_SAN   := $(if $(filter 1,$(SANITIZE)),$(CAP_SAN),)
OBJC_LIB   := $(if $(filter 1,$(SANITIZE)),$(CAP_LIB),$(LIB_A))
OBJC_FLAGS := -std=gnu11 -x objective-c $(OPT) $(WARN) $(OBJC_SAN)
OBJC_LIBS  := -lobjc

$(BUILD)/tests/objc/%: tests/objc/%.m $(OBJC_LIB) tests/hg_test.h capture/classify/objc.h capture/classify/classify.h
	@sh $(DEPS) objc
	@mkdir -p $(dir $@)
	$(OBJCC) $(CPPFLAGS) -Itests $(OBJC_FLAGS) -o $@ $< -x none $(OBJC_LIB) $(OBJC_SAN) $(OBJC_LIBS) $(LIBS)

TEST_PROGS   += $(BUILD)/tests/objc/test_objc_graph
TEST_SCRIPTS += $(BUILD)/tests/objc/test_objc_graph

$(BUILD)/bench/bench_objc: bench/bench_objc.m $(LIB_A) capture/classify/objc.h capture/classify/classify.h
	@sh $(DEPS) objc
	@mkdir -p $(dir $@)
	$(OBJCC) $(CPPFLAGS) $(OBJC_FLAGS) -o $@ $< -x none $(LIB_A) $(LDFLAGS) $(OBJC_LIBS) $(LIBS)

.PHONY: bench-objc
bench-objc: $(BUILD)/bench/bench_objc
	$(BUILD)/bench/bench_objc $(BUILD)
BENCH_TARGETS += bench-objc
