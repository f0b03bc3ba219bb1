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
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating the virtual environment in .venv"
  "$(find_python)" -m venv "$VENV"
fi
STAMP="$VENV/.reprogate-installed"
WANT="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "==> installing dependencies from pyproject.toml"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -m pip install --quiet -e ".[dev]" 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -c 'import django, celery, rest_framework, pytest' # fail loudly if it did not
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
