# browser_env.sh — sourced by the browser tests (tests/viewer/test_viewer.sh,
# tests/serve/dashboard.sh) with $here (the tree) and $name (the test's
# summary name) set: finds playwright-core@1.65.1, pinned in scripts/deps.sh
# (.deps/devtools, shared with the export tests; .deps/viewer from older
# trees also works) and sets $pw, or says what is missing and exits failed.
pw="$here/.deps/viewer/node_modules/playwright-core"
[ -f "$pw/package.json" ] || pw="$here/.deps/devtools/node_modules/playwright-core"
if [ ! -f "$pw/package.json" ] || [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null; then
  echo "$name: playwright-core, chromium or node missing (scripts/deps.sh check)"
  echo "$name: 0 passed, 1 failed"
  exit 1
fi
