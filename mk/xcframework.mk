# mk/xcframework.mk — `make xcframework IOS_SDK=path`: CHeapGraph.xcframework
# (static libraries + headers + module map per slice) and its zip with the
# SwiftPM checksum, built here with Debian's clang-14 / llvm-ar-14 /
# llvm-lipo-14 (scripts/deps.sh ios + darwin). Sources: DARWIN_SRC
# (mk/darwin.mk: portable + capture/darwin + compat/cbor_lite.c), -Werror.
#
#   library identifier            slices (target triple)                       headers compiled against
#   ios-arm64                     arm64-apple-ios14.0                          IOS_SDK (iPhoneOS)
#   ios-arm64_x86_64-simulator    arm64-apple-ios14.0-simulator                IOS_SDK (iPhoneOS)
#                                 x86_64-apple-ios14.0-simulator               zig's macOS 13 headers, then IOS_SDK
#   macos-arm64_x86_64            arm64-apple-macos11.0, x86_64-apple-macos11.0  zig's macOS 13 headers
#
# The iPhoneOS SDK has no x86_64 headers (its machine/ headers #error on
# x86_64), and there is no iPhoneSimulator or macOS SDK on this machine: the
# macOS headers are the ones zig 0.11 ships (.deps/zig, `make darwin`'s);
# for the x86_64 simulator they come first and the iPhoneOS SDK after them
# (-idirafter: only what macOS lacks, os/proc.h). -nostdlibinc everywhere
# the SDK is not the sysroot: nothing from this machine's /usr/include
# (tests/ios/deps_check.sh over the -MD files proves it for every slice).
# Info.plist is written by tests/ios/xcframework.py as Xcode writes it
# (plistlib, sorted keys); `make xcframework-check` re-reads it and checks
# every library with llvm-objdump-14 (tests/ios/check_xcframework.py).

XCF_NAME   := CHeapGraph
XCF_OUT    := build/xcframework
XCF        := $(XCF_OUT)/$(XCF_NAME).xcframework
XCF_ZIP    := $(XCF_OUT)/$(XCF_NAME).xcframework.zip
XCF_LIPO   := llvm-lipo-14
ZIG_LIBC    = $(dir $(realpath $(ZIG)))lib/libc/include
XCF_MACOS_HDRS = -nostdlibinc -isystem $(ZIG_LIBC)/$(1)-macos.13-none \
                 -isystem $(ZIG_LIBC)/any-macos.13-any -isystem $(ZIG_LIBC)/any-macos-any

XCF_SLICES := ios-arm64 iossim-arm64 iossim-x86_64 macos-arm64 macos-x86_64
xcf_triple.ios-arm64     := arm64-apple-ios$(IOS_MIN)
xcf_triple.iossim-arm64  := arm64-apple-ios$(IOS_MIN)-simulator
xcf_triple.iossim-x86_64 := x86_64-apple-ios$(IOS_MIN)-simulator
xcf_triple.macos-arm64   := arm64-apple-macos11.0
xcf_triple.macos-x86_64  := x86_64-apple-macos11.0
xcf_sys.ios-arm64         = -isysroot $(IOS_SDK)
xcf_sys.iossim-arm64      = -isysroot $(IOS_SDK)
xcf_sys.iossim-x86_64     = $(call XCF_MACOS_HDRS,x86_64) -idirafter $(IOS_SDK)/usr/include
xcf_sys.macos-arm64       = $(call XCF_MACOS_HDRS,aarch64)
xcf_sys.macos-x86_64      = $(call XCF_MACOS_HDRS,x86_64)
XCF_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden \
              -Iinclude -I. -Icompat/include

# library identifier -> the slices lipo'd into it
# identifier:platform:variant:architectures, as Info.plist lists them
XCF_LIBS := ios-arm64 ios-arm64_x86_64-simulator macos-arm64_x86_64
XCF_PLIST := ios-arm64:ios::arm64 ios-arm64_x86_64-simulator:ios:simulator:arm64,x86_64 \
             macos-arm64_x86_64:macos::arm64,x86_64
xcf_parts.ios-arm64                  := ios-arm64
xcf_parts.ios-arm64_x86_64-simulator := iossim-arm64 iossim-x86_64
xcf_parts.macos-arm64_x86_64         := macos-arm64 macos-x86_64

.PHONY: xcframework xcframework-check
DEPS.xcframework       := ios darwin
DEPS.xcframework-check := ios darwin

xcframework: xcframework-check

# $(1) = slice
define XCF_SLICE_RULES
XCF_OBJ_$(1) := $$(DARWIN_SRC:%.c=$(XCF_OUT)/obj/$(1)/%.o)
$(XCF_OUT)/obj/$(1)/%.o: %.c | ios-deps darwin-deps
	@mkdir -p $$(dir $$@)
	$(IOS_CC) --target=$$(xcf_triple.$(1)) $$(xcf_sys.$(1)) $(XCF_CFLAGS) -MD -MP -c $$< -o $$@
$(XCF_OUT)/slices/$(1)/libheapgraph.a: $$(XCF_OBJ_$(1))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && $(IOS_AR) rcs $$@ $$^
ifneq ($(filter xcframework%,$(MAKECMDGOALS)),)
-include $$(XCF_OBJ_$(1):%.o=%.d)
endif
endef
$(foreach s,$(XCF_SLICES),$(eval $(call XCF_SLICE_RULES,$(s))))

# $(1) = library identifier: one archive (lipo'd when two slices), headers, module map
define XCF_LIB_RULES
$(XCF)/$(1)/libheapgraph.a: $$(foreach s,$$(xcf_parts.$(1)),$(XCF_OUT)/slices/$$(s)/libheapgraph.a) \
    include/heapgraph.h include/module.modulemap
	@mkdir -p $(XCF)/$(1)/Headers
	cp include/heapgraph.h include/module.modulemap $(XCF)/$(1)/Headers/
	$$(if $$(word 2,$$(xcf_parts.$(1))),$(XCF_LIPO) -create $$(filter %.a,$$^) -output $$@,cp $$< $$@)
endef
$(foreach l,$(XCF_LIBS),$(eval $(call XCF_LIB_RULES,$(l))))

XCF_ARCHIVES := $(foreach l,$(XCF_LIBS),$(XCF)/$(l)/libheapgraph.a)

# Info.plist, then a reproducible zip (sorted entries, fixed times) and its
# sha256, which is what `swift package compute-checksum` prints.
$(XCF_ZIP): $(XCF_ARCHIVES) tests/ios/xcframework.py
	rm -f $(XCF)/Info.plist
	$(PYTHON) tests/ios/xcframework.py write $(XCF) $(XCF_ZIP) $(XCF_PLIST)

xcframework-check: $(XCF_ZIP)
	$(PYTHON) tests/ios/check_xcframework.py $(XCF) $(XCF_ZIP) llvm-objdump-14 $(XCF_LIPO)
	@for s in $(XCF_SLICES); do sh tests/ios/deps_check.sh $(XCF_OUT)/obj/$$s xcframework/$$s; done
	@echo "xcframework: $(XCF_ZIP) checksum $$(cat $(XCF_ZIP).sha256)"
