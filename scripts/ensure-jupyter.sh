#!/usr/bin/env bash
# The Jupyter engine's tests run a real jupyter_server with an ipykernel: both are
# installed into .venv-jupyter (git-ignored) from wherever pip is configured to
# (a local mirror's index becomes the index, as in scripts/setup-python.sh).
# Idempotent: quick when the venv already has them. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${JUPYTER_VENV:-.venv-jupyter}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import jupyter_server, ipykernel' 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
if [ -z "${PIP_INDEX_URL:-}" ]; then
  config=$("$venv/bin/python" -m pip config list 2>/dev/null || true)
  if ! grep -q 'index-url=' <<<"$(grep -v 'extra-index-url' <<<"$config")"; then
    extra=$(sed -n "s/^[^=]*extra-index-url='\([^' ]*\).*/\1/p" <<<"$config" | head -n1)
    if [ -n "$extra" ]; then export PIP_INDEX_URL=$extra; fi
  fi
fi
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet jupyter_server ipykernel >&2
"$venv/bin/python" -c 'import jupyter_server, ipykernel' >&2
echo "$venv/bin/python"
