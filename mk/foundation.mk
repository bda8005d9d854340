# mk/foundation.mk — rules for the foundation: the demo app, the format
# tests' extras (golden file, cbor2 cross-check) and the format benchmark.

# The demo app: C core plus, on Linux, its C++ module (HG_DEMO_WIDGETS).
$(BUILD)/examples/demo_widgets.o: examples/demo_widgets.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c -o $@ $<

$(BUILD)/examples/demo: examples/demo.c $(BUILD)/examples/demo_widgets.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DHG_DEMO_WIDGETS -o $@ $< $(BUILD)/examples/demo_widgets.o $(LIB_A) \
	  $(LDFLAGS) $(LIBS) -lstdc++

$(BUILD)/bench/bench_format: bench/bench_format.c bench/synthetic.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

.PHONY: bench-format
bench-format: $(BUILD)/bench/bench_format
	$(BUILD)/bench/bench_format $(BUILD)
BENCH_TARGETS += bench-format

# `make install` into a DESTDIR, pkg-config consumer, uninstall. Not in the
# sanitizer pass: an ASan-built shared library cannot serve a plain consumer.
ifneq ($(SANITIZE),1)
TEST_SCRIPTS += tests/install/test_install.sh
endif

# ---- snapshot format tests (tests/unit/test_format_*.c, tests/format/) ----
# The unit tests copy every good snapshot they write to $(BUILD)/test-snapshots/;
# the scripts below run after them (tests/run.sh runs unit binaries first).
# Format tests read tests/golden/ relative to the repository root.
$(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_format_*.c)): tests/unit/test_format_util.h
TEST_PROGS   += $(CLI)
TEST_SCRIPTS += tests/format/test_cli.sh tests/format/check_cbor2.py
