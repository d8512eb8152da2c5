#!/usr/bin/env bash
# Runs every test: type checking, then the suite on SQLite and again on a throwaway PostgreSQL 15
# with the machine's Node, then a smoke run (SMOKE_TESTS, on SQLite) on the second Node runtime
# (Node 24 LTS beside Node 20; scripts/other-node.sh). Prints one closing line
# `N passed, N failed` over all runs.
# PARLEY_SKIP_POSTGRES=1 skips the PostgreSQL run, PARLEY_SKIP_OTHER_NODE=1 the smoke run.
set -uo pipefail
cd "$(dirname "$0")/.."

# What the second runtime runs: start-up and the bundle, the SQLite driver (its native addon), sign-in,
# the SDK-facing routes, tools in the Python host, sockets and events.
SMOKE_TESTS=(
  test/core/bundle.test.ts test/core/build-output.test.ts test/core/database.test.ts test/core/realtime/socket.test.ts
  test/core/events/publish.test.ts test/areas/auths/session.test.ts test/areas/openai/sdk.test.ts
  test/areas/completions/api-client.test.ts test/areas/tools/execution.test.ts
)

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
status=0

run_suite() { # name, env assignments, then -- and what vitest runs (default: everything)
  local name=$1; shift
  local assignments=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do assignments+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  echo "=== tests on $name ==="
  env "${assignments[@]}" npx vitest run --reporter=default --reporter=json --outputFile="$results/$name.json" "$@" || status=1
}

echo "=== type check ==="
npx tsc -p tsconfig.json --noEmit || { echo "type check failed" >&2; status=1; }

bash scripts/ensure-redis.sh || { echo "redis-server could not be installed" >&2; exit 1; }
bash scripts/setup-python.sh || { echo "Python for the plugin host could not be prepared" >&2; exit 1; }

run_suite sqlite TEST_DIALECT=sqlite

if [ "${PARLEY_SKIP_POSTGRES:-}" != 1 ]; then
  if started=$(bash scripts/postgres.sh start); then
    read -r pgdir pgport <<<"$started"
    # The install test does not depend on the database: once is enough.
    run_suite postgres TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pgport/postgres" PARLEY_SKIP_INSTALL_TEST=1
    bash scripts/postgres.sh stop "$pgdir"
  else
    echo "PostgreSQL could not be started; the PostgreSQL run failed" >&2
    status=1
  fi
fi

if [ "${PARLEY_SKIP_OTHER_NODE:-}" != 1 ]; then
  if bin=$(bash scripts/other-node.sh); then
    run_suite "node-$("$bin/node" -p 'process.versions.node')" PATH="$bin:$PATH" NODE_OPTIONS="--import=$PWD/scripts/native-addon-hook.mjs" \
      TEST_DIALECT=sqlite PARLEY_SKIP_INSTALL_TEST=1 -- "${SMOKE_TESTS[@]}"
  else
    echo "the second Node runtime could not be prepared; its run failed" >&2
    status=1
  fi
fi

node -e '
const fs = require("fs"), path = require("path");
let passed = 0, failed = 0;
for (const file of fs.readdirSync(process.argv[1])) {
  const report = JSON.parse(fs.readFileSync(path.join(process.argv[1], file), "utf8"));
  passed += report.numPassedTests;
  // A suite that fails to load has no failed tests of its own; count it so it is seen.
  failed += report.numFailedTests + (report.success || report.numFailedTests ? 0 : Math.max(1, report.numFailedTestSuites));
}
console.log(`${passed} passed, ${failed} failed`);
' "$results"
exit $status
