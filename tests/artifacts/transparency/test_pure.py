"""The log's core is usable with nothing but Python and ``cryptography``: the
offline verifier (``reprogate evidence verify``) imports it without Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import sys
from artifacts.transparency import keyfile, merkle, note, tree
web = {"django", "rest_framework"}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in web)
print(",".join(loaded) or "none")
"""


def test_the_transparency_package_imports_no_django() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"
