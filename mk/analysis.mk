# mk/analysis.mk — analysis component (graph/dominators.c … export_*.c,
# tools/cmd_{top,dominators,leaks,cycles,path,show,diff,export}.c).
#
# Tests: the unit tests are picked up from tests/unit/test_*.c by the main
# Makefile; here the CLI fixture writer and the CLI/DevTools-format test.
# Bench: `make bench` runs bench-analysis (10M nodes / 30M edges, written
# through the streaming writer into build/, then load + analyses timed).

ANALYSIS_FIXTURE := $(BUILD)/tests/analysis_mkfixture
ANALYSIS_BENCH   := $(BUILD)/bench/bench_analysis
TEST_PROGS       += $(ANALYSIS_FIXTURE)
TEST_SCRIPTS     += tests/analysis/test_cli.py
BENCH_TARGETS    += bench-analysis

$(ANALYSIS_FIXTURE): tests/analysis/mkfixture.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

$(ANALYSIS_BENCH): bench/bench_analysis.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

.PHONY: bench-analysis
bench-analysis: $(ANALYSIS_BENCH) $(CLI)
	$(ANALYSIS_BENCH) build/bench_analysis.hgsnap

# `make bench-top` (issue 33): heapgraph top, the fleet summary, the viewer's
# start and the DevTools export against the base build (main 85daa17, built
# from git archive into build/bench/base once), same run, ratios
# (bench/bench_top.sh; HG_BENCH_TOP_NODES=100000000 for the 100 M case).
BENCH_TARGETS += bench-top
.PHONY: bench-top
bench-top: $(ANALYSIS_BENCH) $(CLI)
	BUILD=$(BUILD) sh bench/bench_top.sh
ifneq ($(filter bench,$(MAKECMDGOALS)),)
bench-top: bench-analysis
endif
