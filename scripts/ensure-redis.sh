#!/usr/bin/env bash
# Multi-instance tests start their own redis-server; install Debian's when missing.
set -euo pipefail
command -v redis-server >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
else
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
# The package starts a system service; tests run their own servers on free ports.
command -v systemctl >/dev/null 2>&1 && systemctl stop redis-server >/dev/null 2>&1 || true
command -v redis-server >/dev/null
