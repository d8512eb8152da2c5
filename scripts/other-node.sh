#!/usr/bin/env bash
# Prepares the second Node runtime the tests run on (scripts/test.sh): Node 24 LTS when the
# machine's Node is 20 (PARLEY_OTHER_NODE=<major> picks another), from the npm registry's
# node-<platform>-<arch> package, which ships the binary and the headers for native addons.
# better-sqlite3's addon is compiled for one Node ABI, so a copy of it is compiled for this
# runtime into .tmp/better-sqlite3-abi<N>/, where scripts/native-addon-hook.mjs finds it.
# Both are kept under .tmp/ (git-ignored) and reused. Prints the runtime's bin folder.
set -euo pipefail
cd "$(dirname "$0")/.."

current=$(node -p 'process.versions.node.split(".")[0]')
major=${PARLEY_OTHER_NODE:-$([ "$current" = 24 ] && echo 20 || echo 24)}
package="node-$(node -p 'process.platform + "-" + process.arch')"
version=$(npm view "$package@$major" version --json | node -e '
const parts = (v) => v.split(".").map(Number);
const newest = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")))
  .sort((a, b) => parts(a).reduce((d, n, i) => d || n - parts(b)[i], 0)).pop();
console.log(newest)')
runtime=.tmp/node-$version

if [ ! -x "$runtime/bin/node" ]; then
  rm -rf "$runtime" && mkdir -p "$runtime"
  tarball=$(npm pack "$package@$version" --pack-destination "$runtime" --silent)
  tar xzf "$runtime/$tarball" -C "$runtime" --strip-components=1
  rm "$runtime/$tarball"
fi

abi=$("$runtime/bin/node" -p process.versions.modules)
addon=.tmp/better-sqlite3-abi$abi
wanted="better-sqlite3 $(node -p 'require("better-sqlite3/package.json").version') abi $abi"
if [ "$(cat "$addon/.parley-built" 2>/dev/null)" != "$wanted" ]; then
  rm -rf "$addon" && mkdir -p "$addon"
  cp -r node_modules/better-sqlite3/{binding.gyp,deps,src,package.json} "$addon/"
  gyp="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
  (cd "$addon" && PATH="$PWD/../../$runtime/bin:$PATH" node "$gyp" rebuild --release --nodedir="$PWD/../../$runtime" >build.log 2>&1) ||
    { tail -n 30 "$addon/build.log" >&2; echo "other-node: better-sqlite3 did not compile for Node $version" >&2; exit 1; }
  echo "$wanted" >"$addon/.parley-built"
fi
echo "$PWD/$runtime/bin"
