"""For the tests of the Django-free cores (what outsiders recompute offline):
which web-framework modules a fresh interpreter has loaded after some imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = """
web = {"django", "rest_framework"}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in web)
print(",".join(loaded) or "none")
"""


def web_modules_loaded_by(imports: str) -> str:
    """``imports`` run in a new interpreter; the web modules it loaded, or "none"."""
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{imports}\n{REPORT}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
