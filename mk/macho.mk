# mk/macho.mk — machoparse tests, fixtures and benchmark.
#
# `make check` builds real Mach-O fixtures into $(BUILD)/macho-fixtures/ from
# tests/macho/classes.cpp (clang++-14 for arm64 and x86_64 macOS; ld64.lld-14
# for LC_DYLD_INFO executables/dylibs/bundles, ld64.lld-16 -fixup_chains for
# chained ones; llvm-lipo-14 for fat files) against the hand-written .tbd stubs
# in tests/macho/sdk, plus byte-level fixtures from tests/macho/gen_macho.py.
# tests/macho/check_fixtures.py diffs `heapgraph macho` with llvm-objdump-14/16;
# tests/macho/check_generated.py checks generated files against the fixups
# they were built with, and malformed variants.
# `make bench` runs bench-macho: a dylib with thousands of classes, parsed by
# heapgraph and by llvm-objdump-14 --macho --bind.

MACHO_FIX    := $(BUILD)/macho-fixtures
MACHO_SDK    := tests/macho/sdk
MACHO_CXX    := clang++-14 -nostdinc++ -fno-exceptions -O0 -w
MACHO_LIBS   := -syslibroot $(MACHO_SDK) -lSystem -lc++abi -lextra
MACHO_LD14   := ld64.lld-14 -platform_version macos 11.0 11.0 $(MACHO_LIBS)
MACHO_LD16   := ld64.lld-16 -platform_version macos 13.0 13.0 $(MACHO_LIBS) -fixup_chains
MACHO_ARCHS  := arm64 x86_64
MACHO_KINDS  := exe dylib bundle
MACHO_BINS   := $(foreach a,$(MACHO_ARCHS),$(foreach k,$(MACHO_KINDS),\
                  $(MACHO_FIX)/$(k)-$(a) $(MACHO_FIX)/chained-$(k)-$(a)))
MACHO_BINS   += $(MACHO_FIX)/fat-exe $(MACHO_FIX)/fat-chained-dylib
MACHO_BINS   += $(foreach a,$(MACHO_ARCHS),$(MACHO_FIX)/exe16-$(a))
MACHO_BINS   += $(MACHO_FIX)/chained-encryptable-dylib-arm64
MACHO_GEN    := $(MACHO_FIX)/gen/.stamp
MACHO_TBD    := $(wildcard $(MACHO_SDK)/usr/lib/*.tbd)

TEST_PROGS   += $(MACHO_BINS) $(MACHO_GEN)
TEST_SCRIPTS += tests/macho/check_fixtures.py tests/macho/check_generated.py
BENCH_TARGETS += bench-macho

$(MACHO_FIX)/.dir:
	@sh $(DEPS) macho
	@mkdir -p $(MACHO_FIX) && touch $@

$(MACHO_FIX)/main-%.o: tests/macho/classes.cpp mk/macho.mk | $(MACHO_FIX)/.dir
	$(MACHO_CXX) --target=$*-apple-macos11 -DWITH_MAIN -c $< -o $@
$(MACHO_FIX)/lib-%.o: tests/macho/classes.cpp mk/macho.mk | $(MACHO_FIX)/.dir
	$(MACHO_CXX) --target=$*-apple-macos11 -c $< -o $@

$(MACHO_FIX)/exe-%: $(MACHO_FIX)/main-%.o $(MACHO_TBD)
	$(MACHO_LD14) -arch $* -o $@ $<
$(MACHO_FIX)/dylib-%: $(MACHO_FIX)/lib-%.o $(MACHO_TBD)
	$(MACHO_LD14) -arch $* -dylib -install_name @rpath/libclasses.dylib -o $@ $<
$(MACHO_FIX)/bundle-%: $(MACHO_FIX)/lib-%.o $(MACHO_TBD)
	$(MACHO_LD14) -arch $* -bundle -o $@ $<
$(MACHO_FIX)/chained-exe-%: $(MACHO_FIX)/main-%.o $(MACHO_TBD)
	$(MACHO_LD16) -arch $* -o $@ $<
$(MACHO_FIX)/chained-dylib-%: $(MACHO_FIX)/lib-%.o $(MACHO_TBD)
	$(MACHO_LD16) -arch $* -dylib -install_name @rpath/libclasses.dylib -o $@ $<
$(MACHO_FIX)/chained-bundle-%: $(MACHO_FIX)/lib-%.o $(MACHO_TBD)
	$(MACHO_LD16) -arch $* -bundle -o $@ $<

# -encryptable: LC_ENCRYPTION_INFO_64 (cryptid 0) over __TEXT from 0x4000, as
# ld64 makes App Store builds (test_darwin_imagefile encrypts it like FairPlay).
$(MACHO_FIX)/chained-encryptable-dylib-%: $(MACHO_FIX)/lib-%.o $(MACHO_TBD)
	$(MACHO_LD16) -encryptable -arch $* -dylib -install_name @rpath/libclasses.dylib -o $@ $<

# ld64.lld-16 without -fixup_chains: LC_DYLD_INFO with "strong" weak-bind entries.
$(MACHO_FIX)/exe16-%: $(MACHO_FIX)/main-%.o $(MACHO_TBD)
	$(subst -fixup_chains,,$(MACHO_LD16)) -arch $* -o $@ $<

$(MACHO_FIX)/fat-exe: $(MACHO_FIX)/exe-arm64 $(MACHO_FIX)/exe-x86_64
	llvm-lipo-14 -create $^ -output $@
$(MACHO_FIX)/fat-chained-dylib: $(MACHO_FIX)/chained-dylib-arm64 $(MACHO_FIX)/chained-dylib-x86_64
	llvm-lipo-14 -create $^ -output $@

$(MACHO_GEN): tests/macho/gen_macho.py | $(MACHO_FIX)/.dir
	$(PYTHON) tests/macho/gen_macho.py $(MACHO_FIX)/gen && touch $@

# ---- bench ----
MACHO_BENCH  := $(BUILD)/macho-bench
MACHO_BENCH_CLASSES ?= 4000

$(MACHO_BENCH)/big.cpp: bench/bench_macho_gen.py
	@sh $(DEPS) macho
	@mkdir -p $(MACHO_BENCH)
	$(PYTHON) bench/bench_macho_gen.py $(MACHO_BENCH_CLASSES) > $@
$(MACHO_BENCH)/big.dylib: $(MACHO_BENCH)/big.cpp $(MACHO_TBD)
	$(MACHO_CXX) --target=arm64-apple-macos11 -O0 -c $< -o $(MACHO_BENCH)/big.o
	$(MACHO_LD14) -arch arm64 -dylib -install_name @rpath/libbig.dylib -o $@ $(MACHO_BENCH)/big.o
$(MACHO_BENCH)/bench_macho: bench/bench_macho.c $(LIB_A)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

.PHONY: bench-macho
bench-macho: $(CLI) $(MACHO_BENCH)/big.dylib $(MACHO_BENCH)/bench_macho
	$(MACHO_BENCH)/bench_macho $(MACHO_BENCH)/big.dylib $(CLI)
