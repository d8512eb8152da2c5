#!/usr/bin/env bash
# LDAP tests start their own slapd with a throwaway configuration; install Debian's (and ldap-utils) when missing.
set -euo pipefail
SLAPD=/usr/sbin/slapd
[ -x "$SLAPD" ] && command -v ldapadd >/dev/null 2>&1 && exit 0
# Preseed so the package's configure step asks nothing and sets up no directory of its own.
preseed='slapd slapd/no_configuration boolean true'
if [ "$(id -u)" = 0 ]; then
  echo "$preseed" | debconf-set-selections
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slapd ldap-utils >/dev/null
else
  echo "$preseed" | sudo debconf-set-selections
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slapd ldap-utils >/dev/null
fi
# The package may start a system service; tests run their own servers on free ports.
command -v systemctl >/dev/null 2>&1 && systemctl stop slapd >/dev/null 2>&1 || true
[ -x "$SLAPD" ] && command -v ldapadd >/dev/null
