#!/usr/bin/env bash
# Prepares the Python the plugin host runs tool code with: a virtual environment
# in .venv-plugin-host (git-ignored) holding pydantic 2, which tools declare their
# Valves with, and requests, which the web UI's new-tool boilerplate imports.
# Idempotent and quick when everything is already there. Debian's python3-pydantic
# is 1.x, too old; this uses pip from the venv instead.
#
# Environment: PYTHON_BOOTSTRAP (the interpreter to make the venv from, default
# python3), PLUGIN_HOST_VENV (default .venv-plugin-host).
set -euo pipefail
cd "$(dirname "$0")/.."

bootstrap=${PYTHON_BOOTSTRAP:-python3}
venv=${PLUGIN_HOST_VENV:-.venv-plugin-host}
packages=("pydantic>=2.13.4,<2.14" "requests")

ready() {
  "$venv/bin/python" - <<'PY' 2>/dev/null
import sys
import pydantic, requests
sys.exit(0 if pydantic.VERSION.startswith("2.") else 1)
PY
}

if [ -x "$venv/bin/python" ] && ready; then
  echo "plugin host Python ready: $venv/bin/python"
  exit 0
fi

if ! command -v "$bootstrap" >/dev/null 2>&1; then
  echo "setup-python: $bootstrap not found; install Python 3.9+ (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! "$bootstrap" -m venv "$venv"; then
    rm -rf "$venv"
    echo "setup-python: could not create $venv; on Debian/Ubuntu install python3-venv" >&2
    exit 1
  fi
fi

# A machine whose pip is configured with only extra (local mirror) indexes would
# still try the default index first and stall when it is unreachable: use the
# first configured extra index as the index then.
if [ -z "${PIP_INDEX_URL:-}" ]; then
  config=$("$venv/bin/python" -m pip config list 2>/dev/null || true)
  if ! grep -q 'index-url=' <<<"$(grep -v 'extra-index-url' <<<"$config")"; then
    extra=$(sed -n "s/^[^=]*extra-index-url='\([^' ]*\).*/\1/p" <<<"$config" | head -n1)
    if [ -n "$extra" ]; then export PIP_INDEX_URL=$extra; fi
  fi
fi

"$venv/bin/python" -m pip install --disable-pip-version-check --quiet "${packages[@]}"
if ! ready; then
  echo "setup-python: pydantic 2 is still not importable by $venv/bin/python" >&2
  exit 1
fi
echo "plugin host Python ready: $venv/bin/python ($("$venv/bin/python" -c 'import pydantic; print("pydantic", pydantic.VERSION)'))"
