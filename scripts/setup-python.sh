#!/usr/bin/env bash
# Prepares the standard tool environment the plugin host runs tool code in: a
# virtual environment in .venv-plugin-host (git-ignored) holding the packages
# listed in plugin-host/requirements.txt (pydantic 2, which tools declare their
# Valves with, and the libraries community tools import most). See
# docs/plugin-compat.md. Idempotent: quick when the environment already matches
# the list (a stamp of the list is kept in the venv). Debian's python3-pydantic
# is 1.x, too old; this uses pip from the venv instead.
#
# pip installs from wherever pip is configured to (`pip config list`, PIP_*
# variables): PyPI, or a local mirror. A machine whose pip has only extra
# (mirror) indexes would still try the default index first and stall when it is
# unreachable, so the first configured extra index becomes the index then.
#
# Also installs bubblewrap when missing and root (scripts/ensure-bubblewrap.sh).
#
# Environment: PYTHON_BOOTSTRAP (the interpreter to make the venv from, default
# python3), PLUGIN_HOST_VENV (default .venv-plugin-host).
set -euo pipefail
cd "$(dirname "$0")/.."

# The sandbox the workers run in (never fatal: Parley says at start what isolation it has).
bash scripts/ensure-bubblewrap.sh || true

bootstrap=${PYTHON_BOOTSTRAP:-python3}
venv=${PLUGIN_HOST_VENV:-.venv-plugin-host}
requirements=plugin-host/requirements.txt
stamp="$venv/.parley-requirements"
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)

pydantic_ready() {
  "$venv/bin/python" -c 'import sys, pydantic; sys.exit(0 if pydantic.VERSION.startswith("2.") else 1)' 2>/dev/null
}

# The stamp is written only after pydantic 2 imported, so a matching stamp is enough here:
# this runs at every `npm start`, and starting Python to check again would cost ~0.1 s.
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
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

if [ -z "${PIP_INDEX_URL:-}" ]; then
  config=$("$venv/bin/python" -m pip config list 2>/dev/null || true)
  if ! grep -q 'index-url=' <<<"$(grep -v 'extra-index-url' <<<"$config")"; then
    extra=$(sed -n "s/^[^=]*extra-index-url='\([^' ]*\).*/\1/p" <<<"$config" | head -n1)
    if [ -n "$extra" ]; then export PIP_INDEX_URL=$extra; fi
  fi
fi

rm -f "$stamp"
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements"
if ! pydantic_ready; then
  echo "setup-python: pydantic 2 is still not importable by $venv/bin/python" >&2
  exit 1
fi
echo "$wanted" >"$stamp"
echo "plugin host Python ready: $venv/bin/python ($("$venv/bin/python" -c 'import pydantic; print("pydantic", pydantic.VERSION)'))"
