#!/usr/bin/env bash
# Runs every test: once on SQLite, then again on a throwaway PostgreSQL 15.
# Prints one closing line `N passed, N failed` over both runs.
set -uo pipefail
cd "$(dirname "$0")/.."

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
status=0

run_suite() { # name, then env assignments
  local name=$1; shift
  echo "=== tests on $name ==="
  env "$@" npx vitest run --reporter=default --reporter=json --outputFile="$results/$name.json" || status=1
}

bash scripts/ensure-redis.sh || { echo "redis-server could not be installed" >&2; exit 1; }
bash scripts/setup-python.sh || { echo "Python for the plugin host could not be prepared" >&2; exit 1; }

run_suite sqlite TEST_DIALECT=sqlite

if [ "${PARLEY_SKIP_POSTGRES:-}" != 1 ]; then
  if started=$(bash scripts/postgres.sh start); then
    read -r pgdir pgport <<<"$started"
    run_suite postgres TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pgport/postgres"
    bash scripts/postgres.sh stop "$pgdir"
  else
    echo "PostgreSQL could not be started; the PostgreSQL run failed" >&2
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
