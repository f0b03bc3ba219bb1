# Sourced by scripts/run, scripts/manage, scripts/celery and scripts/test (and CI):
# create or refresh .venv from pyproject.toml. VENV_INSTALL says what to install:
#   product  the product alone, `pip install -e .` (scripts/run, manage, celery)
#   dev      also the test and check tools, `pip install -e ".[dev]"` (scripts/test,
#            CI; the default)
# Each has its own stamp; "dev" includes the product, so switching between the
# scripts installs nothing twice.
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
VENV_INSTALL="${VENV_INSTALL:-dev}"
STAMP="$VENV/.reprogate-installed"      # the product, from this pyproject.toml
DEV_STAMP="$VENV/.reprogate-installed-dev" # and the dev extras
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
case "$VENV_INSTALL" in
product)
  NEEDED="$STAMP"
  TARGET="."
  WHAT="dependencies from pyproject.toml (first time: about a minute with a warm pip cache, a few minutes downloading them; log: .venv/pip-install.log)"
  CHECK="import django, celery, sqlalchemy, rest_framework"
  ;;
dev)
  NEEDED="$DEV_STAMP"
  TARGET=".[dev]"
  WHAT="dependencies and the test tools from pyproject.toml (first time: 1 to 3 minutes, mostly downloads; log: .venv/pip-install.log)"
  CHECK="import django, celery, sqlalchemy, rest_framework, pytest"
  ;;
*)
  echo "VENV_INSTALL=$VENV_INSTALL: expected product or dev." >&2
  return 2 2>/dev/null || exit 2
  ;;
esac
if [ ! -f "$NEEDED" ] || [ "$(cat "$NEEDED")" != "$WANT" ]; then
  : >"$PIP_LOG"
  echo "==> upgrading pip in .venv (a few seconds)"
  run_pip install --upgrade pip
  if [ -f "$NEEDED" ]; then
    echo "==> pyproject.toml changed: updating dependencies (usually under a minute)"
  else
    echo "==> installing $WHAT"
  fi
  run_pip install -e "$TARGET"
  echo "==> checking the installation"
  "$VENV/bin/python" -c "$CHECK" # fail loudly if it did not
  echo "$WANT" >"$STAMP"
  if [ "$VENV_INSTALL" = dev ]; then echo "$WANT" >"$DEV_STAMP"; fi
fi
export PATH="$VENV/bin:$PATH"
