"""The evaluation engine is usable with nothing but Python and numpy: the
offline ``reprogate gate evaluate`` imports it without Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import sys
import gates.engine
from gates.engine import documents, evaluate, reasons, statistics, validate
web = {"django", "rest_framework"}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in web)
print(",".join(loaded) or "none")
"""


def test_the_engine_imports_no_django() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"
