# mk/reliability.mk — tests of capture reliability (issue 18): captures
# under a busy allocator (success rate, counted), roots clipped to the live
# stack, re-entry from a signal handler, agent signals, output paths.
# Built like the other capture tests (mk/capture.mk: glibc malloc, UBSan
# only under SANITIZE=1).

REL_PROGS := $(CAP_DIR)/busy_alloc $(CAP_DIR)/dead_stack $(CAP_DIR)/reentry $(CAP_DIR)/park_signal $(CAP_DIR)/output_path $(CAP_DIR)/privacy
TEST_PROGS   += $(REL_PROGS)
TEST_SCRIPTS += $(REL_PROGS) tests/capture/agent_env.sh

$(REL_PROGS): $(CAP_DIR)/%: tests/capture/%.c $(CAP_LIB) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CAP_CFLAGS) -MMD -MP -o $@ $< $(CAP_LINK) $(CAP_SAN)

# ---- bench: make bench-busy (part of `make bench`): success rate and
# capture times under a busy allocator, 100 captures per mode ----
BENCH_TARGETS += bench-busy
.PHONY: bench-busy
bench-busy: $(CAP_DIR)/busy_alloc
	@$(CAP_DIR)/busy_alloc 100 2>&1 | grep '^busy_alloc'

# ---- the CLI: control characters escaped (test_cli_escape.sh), small
# defects and bad values (test_cli_defects.sh) ----
TEST_PROGS   += $(BUILD)/tools/evil_names
TEST_SCRIPTS += tests/tools/test_cli_escape.sh tests/tools/test_cli_defects.sh

$(BUILD)/tools/evil_names: tests/tools/evil_names.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LIBS)
