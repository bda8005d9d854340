# mk/viewer.mk — `heapgraph view` (tools/cmd_view.c, web/view_*.c, viewer/).
#
# The page files in viewer/ are built into the CLI by web/view_assets.c
# (.incbin), so its object depends on them. The CLI links GNU libmicrohttpd.
# Test: tests/viewer/test_viewer.sh drives Debian's chromium through
# playwright-core (.deps/devtools, installed by scripts/deps.sh check) over
# snapshots made by tests/viewer/mkhostile.c, tests/viewer/mkstacks.c,
# examples/demo, the analysis fixtures and (stacks) `heapgraph run --stacks`
# of tests/stacks/sites.c (mk/stacks.mk builds it). Bench: bench-viewer times startup and each view's first answer on
# the 10M-node / 30M-edge snapshot of bench-analysis's generator, without and with a BASELINE.

VIEWER_FILES   := $(sort $(wildcard viewer/*))
VIEWER_HOSTILE := $(BUILD)/tests/viewer_mkhostile
VIEWER_STACKS  := $(BUILD)/tests/viewer_mkstacks
CLI_LIBS       += -lmicrohttpd
TEST_PROGS     += $(VIEWER_HOSTILE) $(VIEWER_STACKS) $(BUILD)/examples/demo $(BUILD)/tests/analysis_mkfixture
TEST_SCRIPTS   += tests/viewer/test_viewer.sh
BENCH_TARGETS  += bench-viewer

$(BUILD)/obj/web/view_assets.o: $(VIEWER_FILES)

$(VIEWER_HOSTILE): tests/viewer/mkhostile.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

# -g: its frames symbolize to its own functions with file:line
$(VIEWER_STACKS): tests/viewer/mkstacks.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -g -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

.PHONY: bench-viewer
# The analysis bench's snapshot (its generator writes it when missing).
bench-viewer: $(CLI) $(ANALYSIS_BENCH)
	@test -f build/bench_analysis.hgsnap || $(ANALYSIS_BENCH) build/bench_analysis.hgsnap >/dev/null
	$(PYTHON) bench/bench_viewer.py $(CLI) build/bench_analysis.hgsnap
	$(PYTHON) bench/bench_viewer.py $(CLI) build/bench_analysis.hgsnap build/bench_analysis.hgsnap
# Under `make bench` (-j2 or not) the analysis bench runs first: two 10M-node
# benches at once would each time the other, and it rewrites the snapshot.
ifneq ($(filter bench,$(MAKECMDGOALS)),)
bench-viewer: bench-analysis
endif
