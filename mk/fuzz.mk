# mk/fuzz.mk — libFuzzer targets, generic over tests/fuzz/fuzz_NAME.c.
#
# Each target defines LLVMFuzzerTestOneInput. `make fuzz` builds them with
# clang-14 (-fsanitize=fuzzer,address,undefined) into build/fuzz/; `make
# fuzz-run NAME=x FUZZ_SECONDS=N` fuzzes one with its seed corpus
# tests/fuzz/corpus/NAME/ (new inputs go to build/fuzz/corpus-NAME/);
# `make fuzz-ci` fuzzes every target for FUZZ_SECONDS (default 60).
# `make check` replays tests/fuzz/corpus/NAME/ and tests/fuzz/regressions/NAME/
# through a plain (gcc) build of the same target: build/tests/replay_NAME.

FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 60
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES   := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_TARGETS += $(FUZZ_NAMES:%=build/fuzz/fuzz_%)
FUZZ_REPLAY  := $(FUZZ_NAMES:%=$(BUILD)/tests/replay_%)
TEST_PROGS   += $(FUZZ_REPLAY)
TEST_SCRIPTS += $(FUZZ_REPLAY:%=%.sh)
FUZZ_LIB_SRC := $(LIB_SRC)

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_SRC)
	@sh $(DEPS) fuzz
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -std=c11 -O1 -g -Wall -Wextra -Werror -D HG_FUZZING=1 \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $< $(FUZZ_LIB_SRC) $(LIBS)

$(BUILD)/tests/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -D HG_FUZZING=1 -o $@ $< tests/fuzz/replay_main.c $(LIB_A) $(LDFLAGS) $(LIBS)
	printf '#!/bin/sh\nexec %s tests/fuzz/corpus/%s tests/fuzz/regressions/%s\n' "$@" "$*" "$*" > $@.sh

.PHONY: fuzz-run fuzz-ci
fuzz-run: build/fuzz/fuzz_$(NAME)
	@mkdir -p build/fuzz/corpus-$(NAME) tests/fuzz/corpus/$(NAME)
	build/fuzz/fuzz_$(NAME) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	  -artifact_prefix=build/fuzz/ build/fuzz/corpus-$(NAME) tests/fuzz/corpus/$(NAME)

fuzz-ci: $(FUZZ_TARGETS)
	@for n in $(FUZZ_NAMES); do \
	  echo "fuzzing $$n for $(FUZZ_SECONDS)s"; \
	  mkdir -p build/fuzz/corpus-$$n; \
	  build/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=build/fuzz/ build/fuzz/corpus-$$n tests/fuzz/corpus/$$n || exit 1; \
	done
