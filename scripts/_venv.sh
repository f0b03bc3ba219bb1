# Sourced by scripts/run and scripts/test: create or refresh .venv from pyproject.toml.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

find_python() {
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  echo "ReproGate needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)." >&2
  return 1
}

VENV="$ROOT/.venv"
# One line per step on the console; pip's own output goes to this log, shown on error.
PIP_LOG="$VENV/pip-install.log"

run_pip() {
  if ! "$VENV/bin/python" -m pip "$@" >>"$PIP_LOG" 2>&1; then
    echo "pip $* failed; the last lines of $PIP_LOG:" >&2
    tail -n 60 "$PIP_LOG" >&2
    return 1
  fi
}

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating the virtual environment in .venv (a few seconds)"
  "$(find_python)" -m venv "$VENV"
fi
STAMP="$VENV/.reprogate-installed"
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  : >"$PIP_LOG"
  echo "==> upgrading pip in .venv (a few seconds)"
  run_pip install --upgrade pip
  if [ -f "$STAMP" ]; then
    echo "==> pyproject.toml changed: updating dependencies (usually under a minute)"
  else
    echo "==> installing dependencies from pyproject.toml (first time: 1 to 3 minutes, mostly downloads; log: .venv/pip-install.log)"
  fi
  run_pip install -e ".[dev]"
  echo "==> checking the installation"
  "$VENV/bin/python" -c 'import django, celery, sqlalchemy, rest_framework, pytest' # fail loudly if it did not
  echo "$WANT" >"$STAMP"
fi
export PATH="$VENV/bin:$PATH"
