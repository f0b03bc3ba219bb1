"""``reprogate bundle build`` and ``bundle verify`` run in a fresh interpreter
where importing Django, DRF or Celery fails: the CLI needs only the Django-free
libraries (``artifacts.lib``). ``evidence verify`` and ``gate evaluate`` are run
the same way by ``tests/escrow/test_evidence_cli.py::test_cli_runs_without_django``,
``tests/cli/test_gate_evaluate.py::test_runs_without_django`` and
``tests/cli/test_gate_evaluate_from_api.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.architecture.imports import ROOT
from tests.artifacts.keys import ssh_keygen_key
from tests.cli.test_bundle_build import make_source

# Each of these modules fails to import in the CLI's interpreter.
NO_SERVER = (
    "import sys\n"
    "for name in ('django', 'rest_framework', 'celery'):\n"
    "    sys.modules[name] = None\n"
)
MAIN = "from reprogate_cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


def reprogate(*args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI with ``args`` (after the code ``before``, if any)."""
    return subprocess.run(
        [sys.executable, "-c", NO_SERVER + before + MAIN, *args],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_bundle_build_and_verify_run_without_django(tmp_path: Path) -> None:
    key = ssh_keygen_key(tmp_path, "ed25519", "acme-flash@example")
    allowed = tmp_path / "allowed_signers"
    public = Path(f"{key}.pub").read_text().strip()
    allowed.write_text(f'acme-flash namespaces="reprogate-bundle" {public}\n')
    bundle = tmp_path / "bundle.tar.gz"

    built = reprogate(
        "bundle", "build", str(make_source(tmp_path / "src")),
        "--key", str(key), "-o", str(bundle),
    )  # fmt: skip
    verified = reprogate(
        "bundle", "verify", str(bundle), "--allowed-signers", str(allowed)
    )

    assert built.returncode == 0, built.stderr
    assert bundle.is_file()
    assert verified.returncode == 0, verified.stderr


def test_the_guard_stops_a_cli_that_imports_django() -> None:
    """The interpreter above really refuses Django (so the test can fail)."""
    done = reprogate("--help", before="import django.conf\n")

    assert done.returncode != 0
    assert "ModuleNotFoundError" in done.stderr
