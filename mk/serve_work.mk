# mk/serve_work.mk — the store, workers, issues cache and retention of
# `heapgraph serve` (server/store*.c, worker.c, issues_cache.c, retention.c;
# docs/serve.md section 3): their libraries, the store test suite run on
# SQLite and PostgreSQL, the multi-host (netns) test and `make bench-serve`.

SERVE_WORK_SRC  := server/store_sql.c server/store_sqlite.c server/store_pg.c server/worker.c \
                   server/issues_cache.c server/retention.c server/strset.c
SERVE_WORK_LIBS := -lsqlite3 -lpq
CPPFLAGS        += -I/usr/include/postgresql

SW_DIR        := $(BUILD)/serve
SW_SERVER_OBJ := $(SERVE_WORK_SRC:%.c=$(BUILD)/obj/%.o)
SW_TOOLS_OBJ  := $(addprefix $(BUILD)/obj/tools/,symbolize.o symbolize_llvm.o symbolize_macho.o cli_util.o)
SW_LINK        = $(SW_SERVER_OBJ) $(BUILD)/obj/server/blobs.o $(SW_TOOLS_OBJ) $(LIB_A) $(LDFLAGS) $(CLI_LIBS)

$(SW_DIR)/snapgen: tests/serve/snapgen.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)

$(SW_DIR)/store_suite: tests/serve/store_suite.c $(SW_SERVER_OBJ) $(BUILD)/obj/server/blobs.o $(SW_TOOLS_OBJ) $(LIB_A) tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ $< $(SW_LINK)

TEST_PROGS   += $(SW_DIR)/snapgen $(SW_DIR)/store_suite
TEST_SCRIPTS += tests/serve/store_both.sh
TEST_SCRIPTS += tests/serve/netns_workers.sh

# `make bench-serve` (in `make bench`): loopback only, bounded (bench/bench_serve.sh)
$(SW_DIR)/bench_serve: bench/bench_serve.c $(SW_SERVER_OBJ) $(BUILD)/obj/server/blobs.o $(SW_TOOLS_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(SW_LINK)

.PHONY: bench-serve
bench-serve: $(SW_DIR)/bench_serve $(SW_DIR)/snapgen $(CLI)
	sh bench/bench_serve.sh $(BUILD)
BENCH_TARGETS += bench-serve
