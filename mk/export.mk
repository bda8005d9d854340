# mk/export.mk — tests and benchmark of the exports (graph/export_*.c,
# tools/cmd_export.c).
#
# tests/export/test_devtools.py loads heapgraph's .heapsnapshot exports with
# Chrome DevTools' own loader (npm chrome-devtools-frontend, bundled with
# esbuild at test time: tests/export/bundle.mjs; both pinned and installed
# into .deps/devtools by scripts/deps.sh check) in node and compares its
# dominators, retained sizes, classes and Comparison view with heapgraph, on
# two captures of tests/export/export_target.cpp; it also renders the DOT
# export with Graphviz into $(BUILD)/export/*.png.
# `make bench-export`: export time against the DevTools loader's time on
# 1 M and 10 M node graphs (bench/bench_export.sh), as ratios.
# The target links the capture library that mk/capture.mk chose (UBSan-only
# under SANITIZE=1: ASan would replace glibc's malloc).

EXPORT_DIR    := $(BUILD)/export
EXPORT_TARGET := $(EXPORT_DIR)/export_target
TEST_PROGS    += $(EXPORT_TARGET)
TEST_SCRIPTS  += tests/export/test_devtools.py
BENCH_TARGETS += bench-export

$(EXPORT_TARGET): tests/export/export_target.cpp $(CAP_LIB) include/heapgraph.h
	@mkdir -p $(dir $@)
	$(CAP_CXX) $(CPPFLAGS) -std=c++17 -O1 -g $(WARN) $(CAP_SAN) -fno-inline-functions -o $@ $< \
	  $(CAP_LINK) $(CAP_SAN)

.PHONY: bench-export
bench-export: $(CLI) $(ANALYSIS_BENCH)
	@sh $(DEPS) check
	BUILD=$(BUILD) sh bench/bench_export.sh
