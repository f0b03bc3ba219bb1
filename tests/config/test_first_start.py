"""The first start: package metadata that setuptools takes without deprecation
banners, and a virtualenv set-up that says one line per step and shows pip's own
output only when pip fails. ``scripts/_venv.sh`` runs here against a stand-in
Python whose ``-m venv`` makes a ``.venv`` with a scripted ``pip`` (no network)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIP_NOISE = "Collecting django (from reprogate==0.1.0)"

FAKE_PYTHON = """#!/usr/bin/env bash
# A stand-in python3: 'version check' passes, '-m venv DIR' makes DIR/bin/python.
if [ "$1" = "-c" ]; then exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cat > "$3/bin/python" <<'INNER'
#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "PIP_NOISE"
  echo "  BuildBackendWarning: a banner"
  [ -n "${FAIL_PIP:-}" ] && [ "$3" = "install" ] && [ "$4" = "-e" ] && {
    echo "ERROR: No matching distribution found for nothing-here"; exit 1; }
  exit 0
fi
exit 0
INNER
  chmod +x "$3/bin/python"
  exit 0
fi
exit 1
"""


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "_venv.sh", root / "scripts" / "_venv.sh")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON.replace("PIP_NOISE", PIP_NOISE))
    python.chmod(0o755)
    return root


def _source(root: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "source scripts/_venv.sh"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHON": str(tmp_path / "python3"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_license_is_an_spdx_string_for_a_setuptools_that_reads_it() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())

    assert isinstance(pyproject["project"]["license"], str)
    assert "setuptools>=77" in pyproject["build-system"]["requires"]


def test_a_first_install_says_one_line_per_step_and_keeps_pip_quiet(
    tmp_path: Path,
) -> None:
    root = _checkout(tmp_path)

    done = _source(root, tmp_path)

    assert done.returncode == 0, done.stderr
    steps = done.stdout.splitlines()
    assert all(line.startswith("==> ") for line in steps), steps
    assert any("installing dependencies" in line for line in steps)
    assert PIP_NOISE not in done.stdout + done.stderr
    assert PIP_NOISE in (root / ".venv" / "pip-install.log").read_text()
    assert _source(root, tmp_path).stdout == ""  # installed: nothing to say


def test_a_failing_install_shows_pip_output_and_fails(tmp_path: Path) -> None:
    root = _checkout(tmp_path)

    done = _source(root, tmp_path, FAIL_PIP="1")

    assert done.returncode != 0
    assert "No matching distribution found" in done.stderr
    assert not (root / ".venv" / ".reprogate-installed").exists()
