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
# Fetches node-<platform>-<arch>@<version> into .tmp/node-<version>/ once; prints that folder.
fetch_node() {
  local dir=.tmp/node-$1
  if [ ! -x "$dir/bin/node" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    local tarball
    tarball=$(npm pack "$package@$1" --pack-destination "$dir" --silent)
    tar xzf "$dir/$tarball" -C "$dir" --strip-components=1
    rm "$dir/$tarball"
  fi
  echo "$PWD/$dir"
}
runtime=$(fetch_node "$version")

# better-sqlite3 12 wraps its objects in node::ObjectWrap, which from Node 24.19's headers on
# removes a cleanup hook in its destructor and aborts the process when V8 collects a statement
# outside a JavaScript context (nodejs/node#65446). Compiled against 24.18.1's headers, the same
# ABI, it runs cleanly on every 24.x. PARLEY_ADDON_HEADERS=<version> chooses other headers.
headers_version=${PARLEY_ADDON_HEADERS:-$([ "$major" = 24 ] && echo 24.18.1 || echo "$version")}
headers=$(fetch_node "$headers_version")

abi=$("$runtime/bin/node" -p process.versions.modules)
addon=.tmp/better-sqlite3-abi$abi
wanted="better-sqlite3 $(node -p 'require("better-sqlite3/package.json").version') abi $abi headers $headers_version"
if [ "$(cat "$addon/.parley-built" 2>/dev/null)" != "$wanted" ]; then
  rm -rf "$addon" && mkdir -p "$addon"
  cp -r node_modules/better-sqlite3/{binding.gyp,deps,src,package.json} "$addon/"
  gyp="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
  # Under `npm test`, npm exports its own `nodedir` (the machine's Node) as npm_config_nodedir,
  # which node-gyp prefers to its command line: name the headers there too.
  (cd "$addon" && PATH="$runtime/bin:$PATH" npm_config_nodedir="$headers" node "$gyp" rebuild --release --nodedir="$headers" >build.log 2>&1) ||
    { tail -n 30 "$addon/build.log" >&2; echo "other-node: better-sqlite3 did not compile for Node $version" >&2; exit 1; }
  echo "$wanted" >"$addon/.parley-built"
fi
echo "$runtime/bin"
