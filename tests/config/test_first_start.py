"""The first start: package metadata that setuptools takes without deprecation
banners, and a virtualenv set-up that says one line per step and shows pip's own
output only when pip fails; the product alone for scripts/run, the test tools too
for scripts/test, neither installed twice. ``scripts/_venv.sh`` runs here against a
stand-in Python whose ``-m venv`` makes a ``.venv`` with a scripted ``pip`` that
notes its calls (no network)."""

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
  shift 2
  echo "$*" >> "$(dirname "$0")/../pip-calls"
  set -- -m pip "$@"
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


def _installs(root: Path) -> list[str]:
    calls = root / ".venv" / "pip-calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return [line for line in lines if not line.endswith("--upgrade pip")]


def test_scripts_run_installs_the_product_alone_and_the_tests_add_their_tools(
    tmp_path: Path,
) -> None:
    root = _checkout(tmp_path)

    product = _source(root, tmp_path, VENV_INSTALL="product")
    product_installs = _installs(root)
    dev = _source(root, tmp_path)  # scripts/test: the default
    dev_installs = _installs(root)
    again = _source(root, tmp_path, VENV_INSTALL="product")

    assert product.returncode == 0, product.stderr
    assert product_installs == ["install -e ."]
    assert dev.returncode == 0, dev.stderr
    assert dev_installs == ["install -e .[dev]"]
    assert again.stdout == ""  # the dev install includes the product
    assert _installs(root) == []


def test_after_the_test_tools_the_product_installs_nothing(tmp_path: Path) -> None:
    root = _checkout(tmp_path)

    _source(root, tmp_path)
    _installs(root)
    product = _source(root, tmp_path, VENV_INSTALL="product")

    assert product.returncode == 0, product.stderr
    assert product.stdout == ""
    assert _installs(root) == []


def test_an_unknown_install_kind_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path)

    done = _source(root, tmp_path, VENV_INSTALL="everything")

    assert done.returncode == 2
    assert "VENV_INSTALL=everything" in done.stderr
    assert _installs(root) == []


def test_the_product_scripts_ask_for_the_product_alone() -> None:
    for name in ("run", "manage", "celery"):
        text = (ROOT / "scripts" / name).read_text()
        assert 'VENV_INSTALL=product source "$(dirname "$0")/_venv.sh"' in text, name
    assert "VENV_INSTALL" not in (ROOT / "scripts" / "test").read_text()
