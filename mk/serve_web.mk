# mk/serve_web.mk — the read side of `heapgraph serve` (server/api_read.c,
# session.c, snap_view.c, dash_assets.c and the dashboard pages in
# server/pages/; docs/serve.md section 4). The pages and the viewer's shared
# files are built into the CLI by server/dash_assets.c (.incbin), so its
# object depends on them. Test: tests/serve/dashboard.sh — the whole flow
# over real HTTP (upload tests/fleet's snapshots, the issues API against
# `heapgraph fleet --json`) and Chromium (playwright-core) over every page.

DASH_FILES := $(sort $(wildcard server/pages/*)) viewer/util.js viewer/style.css viewer/icon.svg

$(BUILD)/obj/server/dash_assets.o: $(DASH_FILES)

TEST_PROGS   += $(BUILD)/fleet/fleet_app
TEST_SCRIPTS += tests/serve/dashboard.sh
