# mk/cxx.mk — C++ classification (issue 5): the end-to-end C++ test programs
# (shared and -static-libstdc++ builds, plus the plugin they dlopen), the CLI
# check on their snapshots, and the classification-cost benchmark.
#
# The end-to-end programs capture their own glibc heap, so under SANITIZE=1
# they link the UBSan-only library of mk/capture.mk ($(CAP_LIB), $(CAP_SAN))
# instead of the ASan one (ASan replaces malloc: no ptmalloc heap to walk).
# The portable core and the ELF discovery also run under ASan in
# tests/unit/test_cxxabi.c.

CXX_TEST_DIR := $(BUILD)/cxx
CXX_TLIB     := $(if $(CAP_LIB),$(CAP_LIB),$(LIB_A))
CXX_TSAN     := $(if $(filter 1,$(SANITIZE)),$(CAP_SAN),)
CXX_TFLAGS   := -std=c++17 -O2 -g $(WARN) $(CXX_TSAN)
CXX_LINK     := $(CXX_TLIB) $(LIBS) $(CXX_TSAN)

$(CXX_TEST_DIR)/libcxx_plugin.so: tests/cxx/cxx_plugin.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXX_TFLAGS) -fPIC -shared -o $@ $<

$(CXX_TEST_DIR)/cxx_classes: tests/cxx/cxx_classes.cpp $(CXX_TLIB) cxxabi/cxxabi.h $(CXX_TEST_DIR)/libcxx_plugin.so
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXX_TFLAGS) -o $@ $< $(CXX_LINK)

$(CXX_TEST_DIR)/cxx_classes_static: tests/cxx/cxx_classes.cpp $(CXX_TLIB) cxxabi/cxxabi.h $(CXX_TEST_DIR)/libcxx_plugin.so
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXX_TFLAGS) -DHG_CXX_LABEL='"static"' -static-libstdc++ -static-libgcc -o $@ $< $(CXX_LINK)

# blocks that hold many objects: slabs and their census (issue 26)
$(CXX_TEST_DIR)/cxx_slabs: tests/cxx/cxx_slabs.cpp $(CXX_TLIB) cxxabi/cxxabi.h
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXX_TFLAGS) -o $@ $< $(CXX_LINK)

# The same two with the pipelined scan's 64-entry ring and 16-node chunks
# (mk/capture.mk, scan_ring64.o before the library): chunks change hands
# all the time, so both scan lanes identify C++ blocks at once and the
# capturing thread re-identifies the rest of every chunk it steals — the
# slab census must still count each slab once, and each lane's caches must
# stay its own (capture/classify/classify.h).
$(CXX_TEST_DIR)/cxx_classes_ring64: tests/cxx/cxx_classes.cpp $(CAP_DIR)/scan_ring64.o $(CXX_TLIB) cxxabi/cxxabi.h $(CXX_TEST_DIR)/libcxx_plugin.so
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXX_TFLAGS) -DHG_CXX_LABEL='"ring"' -o $@ $< $(CAP_DIR)/scan_ring64.o $(CXX_LINK)

$(CXX_TEST_DIR)/cxx_slabs_ring64: tests/cxx/cxx_slabs.cpp $(CAP_DIR)/scan_ring64.o $(CXX_TLIB) cxxabi/cxxabi.h
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXX_TFLAGS) -o $@ $< $(CAP_DIR)/scan_ring64.o $(CXX_LINK)

TEST_PROGS   += $(CXX_TEST_DIR)/cxx_classes $(CXX_TEST_DIR)/cxx_classes_static $(CLI) \
                $(CXX_TEST_DIR)/cxx_slabs $(CXX_TEST_DIR)/cxx_classes_ring64 $(CXX_TEST_DIR)/cxx_slabs_ring64
TEST_SCRIPTS += $(CXX_TEST_DIR)/cxx_classes $(CXX_TEST_DIR)/cxx_classes_static tests/cxx/test_cxx_cli.sh \
                $(CXX_TEST_DIR)/cxx_slabs $(CXX_TEST_DIR)/cxx_classes_ring64 $(CXX_TEST_DIR)/cxx_slabs_ring64

# Benchmark (`make bench`): capture time with and without the C++ classifier.
build/bench/bench_cxx: bench/bench_cxx.cpp $(LIB_A)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -std=c++17 -O2 -g $(WARN) -o $@ $< $(LIB_A) $(LIBS)

.PHONY: bench-cxx
bench-cxx: build/bench/bench_cxx
	build/bench/bench_cxx build/bench
BENCH_TARGETS += bench-cxx
