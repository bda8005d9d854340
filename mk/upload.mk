# mk/upload.mk — tests of the device half of the upload (docs/upload.md):
# the spool, capture policy and uploader are unit-tested by
# tests/unit/test_spool.c (picked up by the Makefile's wildcard); this adds
# the program that grows until the watcher fires (never linked with
# libheapgraph: it runs under the preload agent) and the end-to-end script
# (test server, kill -9 at every step, the agent under RLIMIT_AS).

UPLOAD_DIR   := $(BUILD)/upload
TEST_PROGS   += $(UPLOAD_DIR)/grow
TEST_SCRIPTS += tests/upload/upload.sh

$(UPLOAD_DIR)/grow: tests/upload/grow.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g $(WARN) -o $@ $<

# ---- bench: make bench-compress (part of `make bench`) ----
BENCH_TARGETS += bench-compress
build/bench/bench_compress: bench/bench_compress.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -lz -lzstd

.PHONY: bench-compress
bench-compress: build/bench/bench_compress build/bench/bench_capture $(BUILD)/examples/demo $(CLI) $(BUILD)/libheapgraph.so
	@sh bench/bench_compress.sh build/bench
