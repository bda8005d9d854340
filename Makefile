# heapgraph — top-level build.
#
#   make               libheapgraph.a, libheapgraph.so (SONAME libheapgraph.so.1), heapgraph CLI
#   make check         unit + integration tests (add SANITIZE=1 for ASan+UBSan)
#   make demo          build and run examples/demo, then inspect its snapshot
#   make bench         benchmarks that print figures
#   make fuzz          build libFuzzer targets (clang-14); `make fuzz-run FUZZ_SECONDS=60`
#   make install PREFIX=/usr/local DESTDIR=   /   make uninstall
#   make darwin        cross-compile for macOS (zig)
#   make xcframework   CHeapGraph.xcframework + zip + SwiftPM checksum (IOS_SDK=…; mk/xcframework.mk)
#
# Packages: each goal names the scripts/deps.sh group it needs (DEPS.<goal>,
# at the bottom of this file) and make runs deps.sh for the goals asked for
# while it reads the makefiles, before any rule runs, so nothing is compiled
# before what compiles it is installed.
#
# Library sources are picked up by wildcard from graph/ cxxabi/ machoparse/ capture/,
# capture/classify/, capture/darwin_portable/ and capture/linux/ (capture/darwin/ only
# in the Darwin cross build). Each component
# keeps its own rules in mk/COMPONENT.mk (tests, fixtures, bench, fuzz), included
# below, so no component needs to edit this file to add a test or a fixture.

VERSION      := 0.1.0
SOVERSION    := 1
CC           ?= cc
CXX          ?= c++
PREFIX       ?= /usr/local
DESTDIR      ?=
PYTHON       ?= /usr/bin/python3
DEPS         := scripts/deps.sh

ifeq ($(SANITIZE),1)
  BUILD      ?= build/san
  SANFLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  OPT        := -O1 -g
else
  BUILD      ?= build
  SANFLAGS   :=
  # 64-byte function alignment: without it the capture's hot loops (scan,
  # writer) ran up to 4% faster or slower depending only on where the
  # linker placed them (bench_capture, issue 19)
  OPT        := -O2 -g -falign-functions=64
endif

WARN         := -Wall -Wextra -Werror
CPPFLAGS     += -D_GNU_SOURCE -Iinclude -I.
CFLAGS       ?=
CFLAGS       += -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden $(SANFLAGS)
CXXFLAGS     ?=
CXXFLAGS     += -std=c++17 $(OPT) $(WARN) $(SANFLAGS)
LDFLAGS      += $(SANFLAGS)
LIBS         := -lcbor -lxxhash -lpthread -ldl -lz

LIB_DIRS     := graph cxxabi machoparse capture capture/classify capture/darwin_portable capture/linux capture/stacks
LIB_SRC      := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJ      := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_A        := $(BUILD)/libheapgraph.a
LIB_SO       := $(BUILD)/libheapgraph.so.$(VERSION)
LIB_SONAME   := libheapgraph.so.$(SOVERSION)

CLI_SRC      := $(sort $(wildcard tools/*.c))
CLI_OBJ      := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CLI          := $(BUILD)/heapgraph
CLI_LIBS     := $(LIBS) -lstdc++

UNIT_SRC     := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN     := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Extra programs tests need (mk/*.mk files append here); built before `check` runs.
TEST_PROGS   :=
# Test scripts run by `make check` in addition to the unit binaries (mk/*.mk files append).
TEST_SCRIPTS :=
# Benchmarks: each mk/*.mk appends a target name to BENCH_TARGETS.
BENCH_TARGETS :=
FUZZ_TARGETS :=

.PHONY: all deps check demo bench fuzz fuzz-run install uninstall clean darwin
all: $(LIB_A) $(BUILD)/libheapgraph.so $(CLI)

# `make deps`: install every group (what the goal needs happens at parse time).
deps:
	@:

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=include/heapgraph.map $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/libheapgraph.so: $(LIB_SO)
	ln -sf libheapgraph.so.$(VERSION) $(BUILD)/$(LIB_SONAME)
	ln -sf libheapgraph.so.$(VERSION) $@

$(CLI): $(CLI_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB_A) $(CLI_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB_A) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

-include $(sort $(wildcard mk/*.mk))
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

check: all $(UNIT_BIN) $(TEST_PROGS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) SANITIZE=$(SANITIZE) sh tests/run.sh $(UNIT_BIN) $(TEST_SCRIPTS)

demo: all $(BUILD)/examples/demo
	@mkdir -p out
	$(BUILD)/examples/demo out/demo.hgsnap
	$(CLI) info out/demo.hgsnap
	$(CLI) classes out/demo.hgsnap -n 15
	$(CLI) leaks out/demo.hgsnap || true
	$(CLI) top out/demo.hgsnap -n 5

bench: all $(BENCH_TARGETS)

fuzz: $(FUZZ_TARGETS)

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 0644 include/heapgraph.h $(DESTDIR)$(PREFIX)/include/heapgraph.h
	install -m 0644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/libheapgraph.a
	install -m 0755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/libheapgraph.so.$(VERSION)
	ln -sf libheapgraph.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(LIB_SONAME)
	ln -sf libheapgraph.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libheapgraph.so
	install -m 0755 $(BUILD)/libheapgraph_stacks.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libheapgraph_stacks.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' heapgraph.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/heapgraph.pc
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/heapgraph

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/heapgraph.h \
	  $(DESTDIR)$(PREFIX)/lib/libheapgraph.a \
	  $(DESTDIR)$(PREFIX)/lib/libheapgraph.so.$(VERSION) \
	  $(DESTDIR)$(PREFIX)/lib/$(LIB_SONAME) \
	  $(DESTDIR)$(PREFIX)/lib/libheapgraph.so \
	  $(DESTDIR)$(PREFIX)/lib/libheapgraph_stacks.so \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/heapgraph.pc \
	  $(DESTDIR)$(PREFIX)/bin/heapgraph

clean:
	rm -rf build out

# ---- packages, before anything is built ----
# DEPS.<goal> is the scripts/deps.sh group(s) that goal needs; a group holds
# everything its goal needs (deps.sh composes groups, e.g. check includes
# build). mk/*.mk files may set DEPS.<their goal>; benchmarks and fuzz targets
# are mapped below. A goal without an entry (e.g. a file such as
# build/tests/test_x) gets darwin or ios under build/darwin|ios/, else check, which
# holds every package but the Darwin cross build's: a new goal installs too
# much, not too little. make runs deps.sh once for all goals asked for, when it reads
# this file: before any recipe, whatever the prerequisites or -j. Not under
# -n/-q (nothing runs then). HG_DEPS=0 skips it (deps.sh must have run).
DEPS.all       := build
DEPS.demo      := build
DEPS.install   := build
DEPS.check     := check
DEPS.bench     := bench
DEPS.fuzz      := fuzz
DEPS.fuzz-run  := fuzz
DEPS.fuzz-ci   := fuzz
DEPS.darwin    := darwin
DEPS.ios       := ios
DEPS.check-matrix := build roots
DEPS.deps      := all
DEPS.uninstall :=
DEPS.clean     :=
$(foreach g,$(BENCH_TARGETS),$(eval DEPS.$(g) ?= bench))
$(foreach g,$(FUZZ_TARGETS),$(eval DEPS.$(g) ?= fuzz))
deps_of     = $(if $(filter undefined,$(origin DEPS.$(1))),$(if $(filter build/darwin/% darwin%,$(1)),darwin,$(if \
                $(filter build/ios/% ios%,$(1)),ios,check)),$(DEPS.$(1)))
DEPS_GROUPS := $(sort $(foreach g,$(or $(MAKECMDGOALS),$(.DEFAULT_GOAL)),$(call deps_of,$(g))))
DEPS_SKIP   := $(filter 0,$(HG_DEPS))$(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS)))
ifeq ($(DEPS_SKIP),)
ifneq ($(DEPS_GROUPS),)
ifneq ($(shell sh $(DEPS) $(DEPS_GROUPS) >&2 && echo ok),ok)
$(error $(DEPS) $(DEPS_GROUPS) failed (see above))
endif
endif
endif
