# mk/serve.mk — `heapgraph serve` (server/, tools/cmd_serve.c) and the HTTP
# layer it shares with `heapgraph view` (web/). Both directories are linked
# into the CLI; docs/serve.md describes the server.
#
# The CLI links libmicrohttpd (mk/viewer.mk), GnuTLS (key hashes, TLS),
# zlib and libzstd (Content-Encoding), SQLite and libpq (server/store_*).

WEB_SRC     := $(sort $(wildcard web/*.c))
SERVER_SRC  := $(sort $(wildcard server/*.c))
SERVE_OBJ   := $(WEB_SRC:%.c=$(BUILD)/obj/%.o) $(SERVER_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ     += $(SERVE_OBJ)
CLI_LIBS    += -lgnutls -lzstd -lsqlite3 -lpq

$(CLI): $(SERVE_OBJ)

# intake tests (tests/serve/intake_*.sh): real HTTP with curl against the CLI
SERVE_MKMETA := $(BUILD)/tests/serve_mkmeta
TEST_PROGS   += $(SERVE_MKMETA)
TEST_SCRIPTS += tests/serve/intake_basic.sh tests/serve/intake_hostile.sh tests/serve/intake_faults.sh

$(SERVE_MKMETA): tests/serve/mkmeta.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS) $(LIBS)
# peak RSS of the server independent of the upload's size (uses snapgen, mk/serve_work.mk)
TEST_SCRIPTS += tests/serve/intake_memory.sh
