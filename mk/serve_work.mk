# mk/serve_work.mk — the store, workers, issues cache and retention of
# `heapgraph serve` (server/store*.c, worker.c, issues_cache.c, retention.c;
# docs/serve.md section 3): their libraries, the store test suite run on
# SQLite and PostgreSQL, the multi-host (netns) test and `make bench-serve`.

SERVE_WORK_SRC  := server/store_sql.c server/store_sqlite.c server/store_pg.c server/worker.c \
                   server/issues_cache.c server/retention.c
SERVE_WORK_LIBS := -lsqlite3 -lpq
CPPFLAGS        += -I/usr/include/postgresql
