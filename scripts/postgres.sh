#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 from the machine's binaries on a free port and
# prints its URL; `postgres.sh stop DIR` stops it and removes its files.
# PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.
set -euo pipefail

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do [ -x "$dir/initdb" ] && { echo "$dir"; return; }; done
  command -v initdb >/dev/null && dirname "$(command -v initdb)" && return
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

case "${1:-}" in
  start)
    bin=$(pg_bin) || { echo "postgres.sh: PostgreSQL binaries not found" >&2; exit 3; }
    dir=$(mktemp -d /tmp/parley-pg.XXXXXX)
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    port=$(free_port)
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
    echo "$dir $port"
    ;;
  stop)
    dir=${2:?usage: postgres.sh stop DIR}
    bin=$(pg_bin)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: postgres.sh start | stop DIR" >&2
    exit 2
    ;;
esac
