#!/usr/bin/env bash
# The newest Python pyproject.toml claims (3.13): install the package from this checkout into a fresh venv and
# run the numeric core's unit tests and the examples there. 3.12 changed sum() of floats (it now compensates), so a
# result that leaned on it would differ by Python version; the core uses numpy or math.fsum instead, and this
# step keeps it so. Called by .ci/run; skips (loudly) when no python3.13 is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$(command -v python3.13 2>/dev/null || true)"
if [ -z "$PY" ] || ! "$PY" -c 'import sys' 2>/dev/null; then
  for candidate in "$HOME"/.pyenv/versions/3.13*/bin/python3.13 /usr/bin/python3.13 /usr/local/bin/python3.13; do
    if [ -x "$candidate" ]; then PY="$candidate"; break; fi
  done
fi
if [ -z "$PY" ] || ! "$PY" -c 'import sys' 2>/dev/null; then
  echo "no python3.13 on this machine: the newest claimed Python is NOT tested here" >&2
  exit 0
fi
t=$(date +%s)
VENV="$(mktemp -d -t memrank-py313.XXXXXX)"
trap 'rm -rf "$VENV"' EXIT
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check . pytest 'hypothesis>=6,<7'
"$VENV/bin/memrank" --version
"$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version'
# The installed package, not the checkout: run from a directory where `server/` is not importable.
(cd "$VENV" && "$VENV/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$OLDPWD" \
  "$OLDPWD/tests/unit/core" "$OLDPWD/tests/server/test_examples.py" -k "not sidecar_values")
echo "python 3.13: installed and tested in $(( $(date +%s) - t )) s"
