#!/usr/bin/env bash
# Plugin workers run in a bubblewrap sandbox (docs/plugin-host.md § Isolation);
# install Debian's when missing and we are root. Elsewhere only say so: Parley
# then falls back to unshare (root) or no isolation, and logs which at start.
set -euo pipefail
command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }
  command -v bwrap >/dev/null && exit 0
fi
echo "ensure-bubblewrap: bwrap is not installed (Debian: apt-get install bubblewrap); plugin workers will be less isolated" >&2
