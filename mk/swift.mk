# mk/swift.mk — the Swift classifier (capture/classify/swift_*.c) on real
# Swift programs: tests/swift/run_swift.sh builds them with swiftc in the
# cached Debian trixie root with swiftlang (scripts/swiftroot.sh; needs root,
# skips loudly without), runs them with the agent built there and checks
# their snapshots with this tree's CLI. Unit tests of the parser are in
# tests/unit/test_objc_apple.c and test_swift_*.c.
TEST_SCRIPTS += tests/swift/run_swift.sh

.PHONY: swift-root
swift-root:
	@sh scripts/swiftroot.sh base

# make bench: the capture of 1 M Swift objects with and without the Swift
# classifier, in the same root (HG_BENCH_SWIFT_OBJECTS to change the count).
.PHONY: bench-swift
bench-swift:
	@sh tests/swift/run_swift.sh bench
BENCH_TARGETS += bench-swift

# The same captures' instruction counts under callgrind (independent of the
# machine's load; about 3 minutes): one capture per configuration.
.PHONY: bench-swift-callgrind
bench-swift-callgrind:
	@sh tests/swift/run_swift.sh callgrind
BENCH_TARGETS += bench-swift-callgrind

# The Darwin path of the parser on real swiftc output (iOS Mach-O made in
# the root, linked here with ld64.lld-16): run by tests/swift/run_swift.sh.
$(BUILD)/tests/swift/test_swift_macho: tests/swift/test_swift_macho.c $(LIB_A) tests/hg_test.h tests/unit/test_format_util.h capture/classify/swift.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)
TEST_PROGS += $(BUILD)/tests/swift/test_swift_macho
