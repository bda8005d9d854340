# mk/symbolize.mk — offline symbolication of Mach-O frames (tools/symbolize*.c,
# machoparse/macho_symbols.c).
#
# `make check` builds real Mach-O fixtures into $(BUILD)/symbolize/ from
# tests/symbolize/sites.cpp: clang++-14 -g for arm64 and x86_64 macOS,
# ld64.lld-14 against the .tbd stubs of tests/macho/sdk (an executable and a
# dylib per arch, a fat executable from llvm-lipo-14), dSYM bundles from
# dsymutil-14 (Debian llvm-14, scripts/deps.sh group macho), and a second
# build of the executable (another LC_UUID) for the mismatch cases; and
# the same source as a Linux ELF program, for the libdwfl path.
# tests/symbolize/mksnap writes snapshots whose stacks point into them;
# tests/symbolize/symbol_at prints machoparse's macho_symbol_at() answers;
# tests/symbolize/check_symbolize.py runs `heapgraph stacks` / `show` with
# --image-dir / --dsym and compares with llvm-nm-14, llvm-objdump-14 and
# llvm-dwarfdump-14, plus damaged and truncated images.

SYM_FIX      := $(BUILD)/symbolize
SYM_CXX      := clang++-14 -nostdinc++ -fno-exceptions -O0 -g -w
SYM_LD       := ld64.lld-14 -platform_version macos 11.0 11.0 -syslibroot tests/macho/sdk -lSystem
SYM_ARCHS    := arm64 x86_64
SYM_BINS     := $(foreach a,$(SYM_ARCHS),$(SYM_FIX)/App-$(a) $(SYM_FIX)/libsites-$(a).dylib \
                  $(SYM_FIX)/App-$(a).dSYM/.stamp $(SYM_FIX)/libsites-$(a).dylib.dSYM/.stamp) \
                $(SYM_FIX)/App-fat $(SYM_FIX)/App-fat.dSYM/.stamp \
                $(SYM_FIX)/rebuilt/App-arm64 $(SYM_FIX)/rebuilt/App-arm64.dSYM/.stamp
SYM_BINS     += $(SYM_FIX)/elf-sites
SYM_MKSNAP   := $(BUILD)/tests/symbolize_mksnap
SYM_AT       := $(BUILD)/tests/symbolize_symbol_at

TEST_PROGS   += $(SYM_BINS) $(SYM_MKSNAP) $(SYM_AT)
TEST_SCRIPTS += tests/symbolize/check_symbolize.py

# the objects stay: a relink would give the image a new LC_UUID (the stabs
# name the objects' mtimes) and leave its dSYM behind
.SECONDARY: $(foreach a,$(SYM_ARCHS),$(SYM_FIX)/main-$(a).o $(SYM_FIX)/lib-$(a).o) \
            $(SYM_FIX)/rebuilt/main-arm64.o

$(SYM_FIX)/.dir:
	@sh $(DEPS) macho
	@mkdir -p $(SYM_FIX)/rebuilt && touch $@

$(SYM_FIX)/main-%.o: tests/symbolize/sites.cpp mk/symbolize.mk | $(SYM_FIX)/.dir
	$(SYM_CXX) --target=$*-apple-macos11 -DWITH_MAIN -c $< -o $@
$(SYM_FIX)/lib-%.o: tests/symbolize/sites.cpp mk/symbolize.mk | $(SYM_FIX)/.dir
	$(SYM_CXX) --target=$*-apple-macos11 -c $< -o $@
$(SYM_FIX)/App-%: $(SYM_FIX)/main-%.o
	$(SYM_LD) -arch $* -o $@ $<
$(SYM_FIX)/libsites-%.dylib: $(SYM_FIX)/lib-%.o
	$(SYM_LD) -arch $* -dylib -install_name @rpath/libsites.dylib -o $@ $<
$(SYM_FIX)/App-fat: $(SYM_FIX)/App-arm64 $(SYM_FIX)/App-x86_64
	llvm-lipo-14 -create $^ -output $@
# another build of the same program: -DREBUILT moves code, so a new LC_UUID
$(SYM_FIX)/rebuilt/main-arm64.o: tests/symbolize/sites.cpp mk/symbolize.mk | $(SYM_FIX)/.dir
	$(SYM_CXX) --target=arm64-apple-macos11 -DWITH_MAIN -DREBUILT -c $< -o $@
$(SYM_FIX)/rebuilt/App-arm64: $(SYM_FIX)/rebuilt/main-arm64.o
	$(SYM_LD) -arch arm64 -o $@ $<
# the same source as a Linux ELF program (the libdwfl path: demangling and
# inlined calls must print as on the Mach-O side); never sanitized
$(SYM_FIX)/elf-sites: tests/symbolize/sites.cpp mk/symbolize.mk | $(SYM_FIX)/.dir
	g++ -O0 -g -w -DWITH_MAIN -o $@ $<
# dsymutil merges a fat dSYM with `lipo`, which Debian lacks: llvm-lipo-14 instead
$(SYM_FIX)/App-fat.dSYM/.stamp: $(SYM_FIX)/App-arm64.dSYM/.stamp $(SYM_FIX)/App-x86_64.dSYM/.stamp
	rm -rf $(SYM_FIX)/App-fat.dSYM
	mkdir -p $(SYM_FIX)/App-fat.dSYM/Contents/Resources/DWARF
	llvm-lipo-14 -create $(SYM_FIX)/App-arm64.dSYM/Contents/Resources/DWARF/App-arm64 \
	  $(SYM_FIX)/App-x86_64.dSYM/Contents/Resources/DWARF/App-x86_64 \
	  -output $(SYM_FIX)/App-fat.dSYM/Contents/Resources/DWARF/App-fat
	touch $@
# dsymutil reads the debug map (N_OSO stabs) the linker left in the image
$(SYM_FIX)/%.dSYM/.stamp: $(SYM_FIX)/%
	rm -rf $(SYM_FIX)/$*.dSYM
	dsymutil-14 $< -o $(SYM_FIX)/$*.dSYM
	touch $@

$(SYM_AT): tests/symbolize/symbol_at.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)
$(SYM_MKSNAP): tests/symbolize/mksnap.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

# ---- bench: make bench-symbolize (part of `make bench`) ----
BENCH_TARGETS += bench-symbolize
.PHONY: bench-symbolize
bench-symbolize: $(CLI) $(SYM_MKSNAP)
	@sh $(DEPS) macho
	BUILD=$(BUILD) $(PYTHON) bench/bench_symbolize.py
