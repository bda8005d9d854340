# mk/capture.mk — tests and benchmarks of the capture engine (capture/).
#
# The capture test programs must run on glibc's own malloc, so in the
# sanitizer build (SANITIZE=1) they link a UBSan-only copy of the library
# ($(CAP_DIR)/libheapgraph-ubsan.a) instead of the ASan one: ASan replaces
# malloc, and then there is no ptmalloc heap to check. The unit test
# tests/unit/test_capture.c runs under ASan as usual (and checks the
# "unsupported allocator" path there). Every object and program here is
# compiled with -MMD -MP and its .d file included, so a header change
# rebuilds it.

CAP_DIR      := $(BUILD)/capture
CAP_CXX      ?= g++
ifeq ($(SANITIZE),1)
  CAP_SAN    := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  CAP_CFLAGS := -std=c11 -O1 -g $(WARN) -fPIC $(CAP_SAN)
  CAP_LIB    := $(CAP_DIR)/libheapgraph-ubsan.a
  CAP_OBJ    := $(LIB_SRC:%.c=$(CAP_DIR)/obj/%.o)
$(CAP_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CAP_CFLAGS) -MMD -MP -c $< -o $@
$(CAP_LIB): $(CAP_OBJ)
	rm -f $@ && ar rcs $@ $^
-include $(CAP_OBJ:.o=.d)
else
  CAP_SAN    :=
  CAP_CFLAGS := $(CFLAGS)
  CAP_LIB    := $(LIB_A)
endif
CAP_LINK     := $(CAP_LIB) $(LIBS)
# header dependencies of the test programs too (and of the UBSan library's
# objects above): a stale object built against an older struct layout must
# never be linked with fresh ones
-include $(wildcard $(CAP_DIR)/*.d)

CAP_PROGS    := $(CAP_DIR)/ground_truth $(CAP_DIR)/leaks $(CAP_DIR)/stress $(CAP_DIR)/jemalloc \
                $(CAP_DIR)/churn $(CAP_DIR)/agent_target $(CAP_DIR)/ground_truth_ring64 \
                $(CAP_DIR)/named_edges $(CAP_DIR)/named_edges_ring64 $(CAP_DIR)/test_scan_ring64 \
                $(CAP_DIR)/full_bins $(CAP_DIR)/leak_cycle $(CAP_DIR)/tight_as \
                $(CAP_DIR)/ground_truth_nosteal $(CAP_DIR)/named_edges_nosteal
TEST_PROGS   += $(CAP_PROGS)
TEST_SCRIPTS += $(CAP_DIR)/ground_truth $(CAP_DIR)/ground_truth_ring64 tests/capture/leaks_vs_valgrind.sh \
                $(CAP_DIR)/named_edges $(CAP_DIR)/named_edges_ring64 $(CAP_DIR)/test_scan_ring64 \
                $(CAP_DIR)/stress $(CAP_DIR)/jemalloc $(CAP_DIR)/churn \
                tests/capture/objc_direct_first.sh tests/capture/agent.sh tests/capture/full_bins.sh \
                tests/capture/agent_children.sh tests/capture/leak_cycle.sh $(CAP_DIR)/tight_as \
                $(CAP_DIR)/ground_truth_nosteal $(CAP_DIR)/named_edges_nosteal

$(CAP_DIR)/ground_truth: tests/capture/ground_truth.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

# The same ground truth with the pipelined scan's ring cut from 65,536 to 64
# entries (capture/scan_pipe.c, HG_SCAN_RING): the ring wraps and fills all the
# time and both threads wait on each other — paths a small heap never
# reaches at the real size. This object comes before the library on the
# link line, so the library's scan_pipe.o is not used.
$(CAP_DIR)/scan_ring64.o: capture/scan_pipe.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CAP_CFLAGS) -DHG_SCAN_RING=64 -MMD -MP -c $< -o $@

$(CAP_DIR)/ground_truth_ring64: tests/capture/ground_truth.c $(CAP_DIR)/scan_ring64.o $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/scan_ring64.o $(CAP_LINK) $(CAP_SAN)

# With the 64-entry ring, chunks of 16 nodes are shared out between the two
# threads (the capturing thread takes free chunks and steals the rest of the
# helper's when nothing is ready). Built once more without that
# (HG_SCAN_STEAL=0): the helper then does every chunk, so the full-ring and
# both wait paths run all the time.
$(CAP_DIR)/scan_ring64_nosteal.o: capture/scan_pipe.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CAP_CFLAGS) -DHG_SCAN_RING=64 -DHG_SCAN_STEAL=0 -MMD -MP -c $< -o $@

$(CAP_DIR)/ground_truth_nosteal: tests/capture/ground_truth.c $(CAP_DIR)/scan_ring64_nosteal.o $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/scan_ring64_nosteal.o $(CAP_LINK) $(CAP_SAN)

$(CAP_DIR)/named_edges_nosteal: tests/capture/named_edges.c $(CAP_DIR)/scan_ring64_nosteal.o $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/scan_ring64_nosteal.o $(CAP_LINK) $(CAP_SAN)

# The scan's unit test (tests/unit/test_scan.c, also built as a unit test)
# with the 64-entry ring.
$(CAP_DIR)/test_scan_ring64: tests/unit/test_scan.c $(CAP_DIR)/scan_ring64.o $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/scan_ring64.o $(CAP_LINK) $(CAP_SAN)

# Edge naming by classifier halves on both scan paths (and, with the small
# ring, with named entries wrapping around it).
$(CAP_DIR)/named_edges: tests/capture/named_edges.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

$(CAP_DIR)/named_edges_ring64: tests/capture/named_edges.c $(CAP_DIR)/scan_ring64.o $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/scan_ring64.o $(CAP_LINK) $(CAP_SAN)

$(CAP_DIR)/leaks: tests/capture/leaks.c $(CAP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

$(CAP_DIR)/churn: tests/capture/churn.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

$(CAP_DIR)/full_bins: tests/capture/full_bins.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

# captures under a tight RLIMIT_AS (ulimit -v): scratch reservations
$(CAP_DIR)/tight_as: tests/capture/tight_as.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

# an unmodified program for the LD_PRELOAD agent test: never sanitized,
# never linked with libheapgraph
$(CAP_DIR)/agent_target: tests/capture/agent_target.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g $(WARN) -o $@ $<

# the C++ leak of issue 26 for leak_cycle.sh: never sanitized, never linked
# with libheapgraph
$(CAP_DIR)/leak_cycle: tests/capture/leak_cycle.cpp
	@mkdir -p $(dir $@)
	$(CAP_CXX) -std=c++17 -O2 -g $(WARN) -o $@ $<

$(CAP_DIR)/stress_cxx.o: tests/capture/stress_cxx.cpp
	@mkdir -p $(dir $@)
	$(CAP_CXX) -std=c++17 -O2 -g $(WARN) $(CAP_SAN) -MMD -MP -c $< -o $@

$(CAP_DIR)/stress: tests/capture/stress.c $(CAP_DIR)/stress_cxx.o $(CAP_LIB) tests/hg_test.h
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_DIR)/stress_cxx.o $(CAP_LINK) -lstdc++ $(CAP_SAN)

$(CAP_DIR)/jemalloc: tests/capture/jemalloc.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< -ljemalloc $(CAP_LINK) $(CAP_SAN)

# ---- bench: make bench-capture (part of `make bench`) ----
BENCH_TARGETS += bench-capture
CAP_BENCH    := build/bench/bench_capture build/bench/bench_capture_lsan

build/bench/bench_capture: bench/bench_capture.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 -O2 -g $(WARN) -o $@ $< $(LIB_A) $(LIBS)

build/bench/bench_capture_lsan: bench/bench_capture.c
	@sh $(DEPS) bench
	@mkdir -p $(dir $@)
	gcc $(CPPFLAGS) -std=c11 -O2 -g $(WARN) -DHG_BENCH_LSAN=1 -fsanitize=leak -o $@ $<

.PHONY: bench-capture
bench-capture: $(CAP_BENCH)
	@sh bench/bench_capture.sh build/bench

# dead threads' cached stacks are not roots (issue 26): never sanitized,
# never linked with libheapgraph
TEST_PROGS   += $(CAP_DIR)/exited_stack
# (run by tests/capture/leak_cycle.sh)
$(CAP_DIR)/exited_stack: tests/capture/exited_stack.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g $(WARN) -o $@ $< -pthread
