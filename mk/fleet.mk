# mk/fleet.mk — fleet analysis (graph/fleet*.c, tools/cmd_fleet.c;
# docs/fleet.md): the test app that captures real snapshots with planted
# issues, the CLI test over them, and the benchmark.
#
# The test app captures its own glibc heap, so under SANITIZE=1 it links
# the UBSan-only library of mk/capture.mk (ASan replaces malloc).

FLEET_DIR    := $(BUILD)/fleet
FLEET_TLIB   := $(if $(CAP_LIB),$(CAP_LIB),$(LIB_A))
FLEET_TSAN   := $(if $(filter 1,$(SANITIZE)),$(CAP_SAN),)

$(FLEET_DIR)/fleet_app: tests/fleet/fleet_app.cpp $(FLEET_TLIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -std=c++17 -O2 -g $(WARN) $(FLEET_TSAN) -o $@ $< $(FLEET_TLIB) $(LIBS) $(FLEET_TSAN)

TEST_PROGS   += $(FLEET_DIR)/fleet_app $(CLI)
TEST_SCRIPTS += tests/fleet/test_fleet.py

# Benchmark (`make bench`): summary time per snapshot against `heapgraph
# top` on the same file, and issues over 100,000 summaries.
build/bench/bench_fleet: bench/bench_fleet.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

.PHONY: bench-fleet
bench-fleet: build/bench/bench_fleet $(CLI) $(ANALYSIS_BENCH)
	sh bench/bench_fleet.sh build
BENCH_TARGETS += bench-fleet
